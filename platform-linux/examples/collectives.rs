//! Every collective once, checked: `commcore run -n 4 [--nodes 2] -- target/debug/examples/collectives`.

use commcore::coll::{CollOp, Datatype, ReduceOp};
use commcore_linux::runtime::World;

fn main() -> std::process::ExitCode {
    // Errors as one readable line (a `Result` from main would print their Debug form).
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("collectives: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    let comm = world.comm();
    let (me, n) = (comm.rank(), comm.size());

    comm.barrier()?;

    let mut greeting = if me == 0 { *b"hello from 0" } else { [0u8; 12] };
    comm.bcast(&mut greeting, 0)?;
    assert_eq!(&greeting, b"hello from 0");

    let mut sum = [0u8; 8];
    comm.allreduce(&(me as u64).to_le_bytes(), &mut sum, Datatype::U64, ReduceOp::Sum)?;
    assert_eq!(u64::from_le_bytes(sum), (n * (n - 1) / 2) as u64);

    let mut total = [0u8; 8];
    comm.reduce(&1u64.to_le_bytes(), &mut total, Datatype::U64, ReduceOp::Sum, n - 1)?;
    if me == n - 1 {
        assert_eq!(u64::from_le_bytes(total), n as u64);
    }

    // Ranks travel as 4-byte words, so any job size fits.
    let me32 = me as u32;
    let mut ranks = vec![0u8; 4 * n];
    comm.allgather(&words([me32]), &mut ranks)?;
    assert_eq!(values(&ranks), (0..n as u32).collect::<Vec<_>>());

    let mut gathered = vec![0u8; if me == 0 { 4 * n } else { 0 }];
    comm.gather(&words([me32 * 2]), &mut gathered, 0)?;
    if me == 0 {
        assert_eq!(values(&gathered), (0..n as u32).map(|r| r * 2).collect::<Vec<_>>());
    }

    let mut mine = [0u8; 4];
    let pieces = if me == 0 { words((0..n as u32).map(|r| r + 100)) } else { Vec::new() };
    comm.scatter(&pieces, &mut mine, 0)?;
    assert_eq!(values(&mine), [me32 + 100]);

    // Block j goes to rank j: everyone receives its own rank from everyone.
    let send = words(0..n as u32);
    let mut got = vec![0u8; 4 * n];
    comm.alltoall(&send, &mut got)?;
    assert!(values(&got).iter().all(|&r| r == me32));

    if me == 0 {
        let served = comm.collective_provider(CollOp::Allreduce).unwrap_or("none");
        println!(
            "every collective passed on {n} ranks over {} nodes (allreduce by {served})",
            world.nodes()
        );
    }
    Ok(())
}

fn words(values: impl IntoIterator<Item = u32>) -> Vec<u8> {
    values.into_iter().flat_map(u32::to_le_bytes).collect()
}

fn values(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()
}
