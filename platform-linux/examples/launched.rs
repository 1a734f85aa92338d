//! What the launcher gave this job, checked: each rank says which transport reaches every
//! other rank (shared memory on its node, TCP across nodes), every pair exchanges a message
//! over it, and rank 0 prints one line per rank and the bytes the bootstrap exchanged.
//! Runs under any launcher the runtime joins:
//! `mpiexec.mpich -n 4 target/debug/examples/launched`, `commcore run -n 4 -- ...`.
//! With an argument `abort`, the last rank aborts the job through the launcher instead.

use commcore::coll::{Datatype, ReduceOp};
use commcore_linux::runtime::World;
use commcore_linux::transport;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("launched: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    let (me, n) = (world.rank(), world.size());
    if std::env::args().nth(1).as_deref() == Some("abort") && me == n - 1 {
        world.abort(7, "the launched example was asked to abort");
    }
    let comm = world.comm();
    // One byte per peer: 's' shared memory, 't' TCP, '-' itself.
    let row: Vec<u8> = (0..n)
        .map(|r| match world.address_vector()[r].transport() {
            _ if r == me => b'-',
            t if t == transport::TCP => b't',
            _ => b's',
        })
        .collect();
    // Every pair talks over what its row says.
    for step in 1..n {
        let (to, from) = ((me + step) % n, (me + n - step) % n);
        let mut got = [0u8; 8];
        let status = comm.sendrecv(&(me as u64).to_le_bytes(), to, 9, &mut got, from, 9)?;
        if u64::from_le_bytes(got) as usize != from || status.source != from {
            return Err(
                format!("rank {me} got {got:?} from {}, not rank {from}", status.source).into()
            );
        }
    }
    let mut rows = vec![0u8; n * n];
    comm.gather(&row, &mut rows, 0)?;
    let host = world.host_of(me).unwrap_or(0) as u64;
    let mut hosts = [0u8; 8];
    comm.allreduce(&(host + 1).to_le_bytes(), &mut hosts, Datatype::U64, ReduceOp::Max)?;
    if me == 0 {
        println!(
            "launcher: {}; {n} ranks on {} node(s)",
            world.launcher(),
            u64::from_le_bytes(hosts)
        );
        for (r, row) in rows.chunks(n).enumerate() {
            let names: Vec<String> = row
                .iter()
                .enumerate()
                .filter(|&(peer, _)| peer != r)
                .map(|(peer, &t)| format!("{peer}:{}", if t == b't' { "tcp" } else { "shm" }))
                .collect();
            println!("rank {r} reaches {}", names.join(" "));
        }
        if let Some((published, fetched)) = world.exchanged_bytes() {
            println!("rank 0 exchanged: {published} B published, {fetched} B fetched");
        }
        println!("launched: every pair talked");
    }
    Ok(())
}
