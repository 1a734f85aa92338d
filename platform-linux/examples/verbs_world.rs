//! A job of three processes whose ranks talk over verbs (`COMMCORE_TRANSPORT=verbs`)
//! through the runtime: started without arguments it launches itself as the job (the
//! launcher's exchange carries the verbs addresses). Ranks 0 and 1 echo messages of 8 B,
//! 20 kB (by copy past the eager size) and 1 MiB (RDMA read into the receive's buffer),
//! checking every byte; then every rank takes part in a barrier, a 1 MiB broadcast and an
//! allreduce of 100,000 words, checked. Prints one line, `VERBS-WORLD-RESULT {...}`.
//! Needs a device (the guest of `scripts/verbs-guest.sh`).

use commcore::coll::{Datatype, ReduceOp};
use commcore_linux::launch::{run_job, JobSpec};
use commcore_linux::runtime::World;

const SIZES: [usize; 3] = [8, 20_000, 1 << 20];
const RANKS: usize = 3;

fn main() -> std::process::ExitCode {
    if std::env::var_os("COMMCORE_RANK").is_some() {
        return match rank() {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("verbs_world: {error}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let program = std::env::current_exe().expect("the program's own path");
    let mut spec = JobSpec::new(RANKS, program);
    spec.env.push(("COMMCORE_TRANSPORT".into(), "verbs".into()));
    spec.timeout = Some(std::time::Duration::from_secs(60));
    let (ok, error) = match run_job(&spec) {
        Ok(_) => (true, String::new()),
        Err(failure) => (false, failure.to_string().replace('"', "'")),
    };
    println!("VERBS-WORLD-RESULT {{\"ok\": {ok}, \"ranks\": {RANKS}, \"error\": \"{error}\"}}");
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// One rank: echo each size ten times between ranks 0 and 1, checking every byte; then
/// the collectives.
fn rank() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    if world.tcp_links() != 1 {
        return Err("the job's ranks are not reached through a message link".into());
    }
    let comm = world.comm();
    for size in SIZES {
        let mut buf = vec![0u8; size];
        for round in 0..10u8 {
            let fill = |buf: &mut [u8], from: u8| {
                buf.iter_mut().enumerate().for_each(|(i, b)| *b = (i as u8) ^ round ^ from);
            };
            let check = |buf: &[u8], from: u8| {
                buf.iter().enumerate().all(|(i, &b)| b == (i as u8) ^ round ^ from)
            };
            if comm.rank() == 0 {
                fill(&mut buf, 0);
                comm.send(&buf, 1, 1)?;
                comm.recv(&mut buf, 1, 2)?;
                if !check(&buf, 1) {
                    return Err(format!("{size} B came back changed in round {round}").into());
                }
            } else if comm.rank() == 1 {
                comm.recv(&mut buf, 0, 1)?;
                if !check(&buf, 0) {
                    return Err(format!("{size} B arrived changed in round {round}").into());
                }
                fill(&mut buf, 1);
                comm.send(&buf, 0, 2)?;
            }
        }
        comm.barrier()?;
    }
    let mut block: Vec<u8> = (0..1 << 20).map(|i| (i % 241) as u8).collect();
    if comm.rank() != 0 {
        block.fill(0);
    }
    comm.bcast(&mut block, 0)?;
    if block.iter().enumerate().any(|(i, &b)| b != (i % 241) as u8) {
        return Err("the broadcast arrived changed".into());
    }
    let words: Vec<u8> =
        (0..100_000u64).flat_map(|i| (i + comm.rank() as u64).to_le_bytes()).collect();
    let mut sums = vec![0u8; words.len()];
    comm.allreduce(&words, &mut sums, Datatype::U64, ReduceOp::Sum)?;
    let ranks = comm.size() as u64;
    let expected = |i: u64| ranks * i + ranks * (ranks - 1) / 2;
    let wrong = sums
        .chunks_exact(8)
        .enumerate()
        .any(|(i, w)| u64::from_le_bytes(w.try_into().unwrap_or_default()) != expected(i as u64));
    if wrong {
        return Err("the allreduce's sums are wrong".into());
    }
    Ok(())
}
