//! Two groups talking through an inter-communicator:
//! `commcore run -n 5 -- target/debug/examples/intercomm`. The world splits into a low group
//! of one rank and a high group of the rest; each rank greets one rank of the other group,
//! the groups exchange sums with an inter-communicator allreduce, split by parity, then merge
//! back.

use commcore::coll::{Datatype, ReduceOp};
use commcore_linux::runtime::World;

fn main() -> std::process::ExitCode {
    // Errors as one readable line (a `Result` from main would print their Debug form).
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("intercomm: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    let comm = world.comm();
    let (me, n) = (comm.rank(), comm.size());
    if n < 2 {
        return Err("run with at least 2 ranks".into());
    }
    let low = me == 0;
    let group = comm.split(i32::from(!low), me as i32)?.expect("every rank has a color");
    // The leaders are world ranks 0 and 1, rank 0 of their groups.
    let inter = group.intercomm_create(0, comm, if low { 1 } else { 0 }, 0)?;
    let remote = inter.remote_size().expect("an inter-communicator");

    // Point-to-point addresses the other group.
    let peer = inter.rank() % remote;
    // Remote rank j greets our rank j % (our size).
    let incoming = (0..remote).filter(|j| j % inter.size() == inter.rank()).count();
    let greeting = (me as u32).to_le_bytes();
    let request = inter.isend(&greeting, peer, 0)?;
    for _ in 0..incoming {
        let mut got = [0u8; 4];
        let status = inter.recv(&mut got, commcore_linux::runtime::ANY_SOURCE, 0)?;
        println!(
            "rank {me} heard from remote rank {}: world rank {}",
            status.source,
            u32::from_le_bytes(got)
        );
    }
    request.wait()?;

    // An inter-communicator allreduce gives each group the other's sum.
    let mut sum = [0u8; 8];
    inter.allreduce(&(me as u64).to_le_bytes(), &mut sum, Datatype::U64, ReduceOp::Sum)?;
    let other: u64 = if low { (1..n as u64).sum() } else { 0 };
    assert_eq!(u64::from_le_bytes(sum), other);

    // Splitting pairs colors across the groups: the even world ranks keep an
    // inter-communicator; the odd ones have no partner in the low group and get none.
    if let Some(even) = inter.split((me % 2) as i32, 0)? {
        let there = even.remote_size().unwrap_or(0);
        println!("rank {me}: even ranks, {} in this group and {there} in the other", even.size());
    }

    // Merging with the low group first gives back the world's order.
    let merged = inter.intercomm_merge(!low)?;
    assert_eq!(merged.rank(), me);
    merged.barrier()?;
    if me == 0 {
        println!("groups of 1 and {} merged back into {} ranks", n - 1, merged.size());
    }
    Ok(())
}
