//! PMI-1 over a real launcher: `mpiexec.mpich -n 3 target/release/examples/pmi_check`.
//! Every rank puts a value, fences, and reads every rank's value back through
//! `commcore_linux::launch::pmi1`; rank 0 prints one line when all agree. Exits non-zero
//! (with the error) otherwise, and when not started by a PMI launcher.

use std::time::Duration;

use commcore_linux::launch::pmi1::Pmi1Client;

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let mut pmi = Pmi1Client::from_env(Duration::from_secs(30))?
        .ok_or("PMI_FD is not set: start this with a PMI launcher (mpiexec.mpich -n 3 ...)")?;
    let (rank, size) = (pmi.rank(), pmi.size());
    pmi.put("greeting", &format!("hello from {rank} of {size}"))?;
    pmi.fence()?;
    for peer in 0..size {
        let value = pmi.get(peer, "greeting")?;
        if value != format!("hello from {peer} of {size}") {
            return Err(format!("rank {rank} read {value:?} for rank {peer}").into());
        }
    }
    pmi.fence()?;
    pmi.finalize()?;
    Ok(format!("pmi_check: {size} ranks put, fenced and read every value"))
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(line) => {
            if std::env::var("PMI_RANK").as_deref() == Ok("0") {
                println!("{line}");
            }
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("pmi_check: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
