//! Every collective once, checked: `commcore run -n 4 [--nodes 2] -- target/debug/examples/collectives`.

use commcore::coll::{CollOp, Datatype, ReduceOp};
use commcore_linux::runtime::World;

fn main() -> Result<(), Box<dyn std::error::Error>> {
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

    let mut ranks = vec![0u8; n];
    comm.allgather(&[me as u8], &mut ranks)?;
    assert_eq!(ranks, (0..n as u8).collect::<Vec<_>>());

    let mut gathered = vec![0u8; if me == 0 { n } else { 0 }];
    comm.gather(&[me as u8 * 2], &mut gathered, 0)?;
    if me == 0 {
        assert_eq!(gathered, (0..n as u8).map(|r| r * 2).collect::<Vec<_>>());
    }

    let mut mine = [0u8; 1];
    let pieces: Vec<u8> =
        if me == 0 { (0..n as u8).map(|r| r + 100).collect() } else { Vec::new() };
    comm.scatter(&pieces, &mut mine, 0)?;
    assert_eq!(mine[0], me as u8 + 100);

    // Block j goes to rank j: everyone receives its own rank from everyone.
    let send: Vec<u8> = (0..n as u8).collect();
    let mut got = vec![0u8; n];
    comm.alltoall(&send, &mut got)?;
    assert!(got.iter().all(|&b| b as usize == me));

    if me == 0 {
        let served = comm.collective_provider(CollOp::Allreduce).unwrap_or("none");
        println!(
            "every collective passed on {n} ranks over {} nodes (allreduce by {served})",
            world.nodes()
        );
    }
    Ok(())
}
