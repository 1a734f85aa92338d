//! What each rank of the demo's job does. Rank 0 prints; every rank checks its results, and
//! a wrong one ends the job with an error.

use std::error::Error;
use std::time::Instant;

use commcore::coll::{CollOp, Datatype, ReduceOp};

use commcore_linux::runtime::{Comm, World};

type DemoResult = Result<(), Box<dyn Error>>;

/// Runs one rank of the demo.
pub fn run() -> DemoResult {
    let world = World::init()?;
    let comm = world.comm();
    let lead = comm.rank() == 0;
    if lead {
        println!("transfers: {}", world.single_copy());
        println!("address vector (process group 0), one {}-byte entry per process:", 12);
        for (rank, entry) in world.address_vector().iter().enumerate() {
            println!(
                "  rank {rank}: address {:#x}, transport {}, node {}",
                entry.address_word(),
                entry.transport().0,
                entry.node().0
            );
        }
    }
    ping_pong(comm)?;
    collectives(comm, "world", lead)?;

    let color = (comm.rank() % 2) as i32;
    let half = comm.split(color, -(comm.rank() as i32))?.ok_or("split left this rank out")?;
    let expected: Vec<usize> =
        (0..comm.size()).filter(|r| r % 2 == comm.rank() % 2).rev().collect();
    let members: Vec<usize> = (0..half.size()).filter_map(|r| half.world_rank(r)).collect();
    if members != expected {
        return Err(format!("split members {members:?}, expected {expected:?}").into());
    }
    if lead {
        println!(
            "split by parity, keys reversed: context id {} agreed by {} ({} allreduce(s)); \
             rank map {}",
            half.context_id(),
            format!("{:?}", comm.context_id_algorithm()).to_lowercase(),
            comm.context_id_allreduces(),
            half.rank_map().kind().name()
        );
    }
    collectives(&half, "split", lead)?;
    comm.barrier()?;
    if lead {
        println!("every result checked on every rank");
    }
    Ok(())
}

/// 8-byte ping-pong between ranks 0 and 1; rank 0 prints the half round trip.
fn ping_pong(comm: &Comm) -> DemoResult {
    const ROUNDS: u32 = 10_000;
    if comm.size() < 2 {
        return Ok(());
    }
    let mut buf = [0u8; 8];
    comm.barrier()?;
    let start = Instant::now();
    for round in 0..ROUNDS {
        match comm.rank() {
            0 => {
                buf = u64::from(round).to_le_bytes();
                comm.send(&buf, 1, 0)?;
                comm.recv(&mut buf, 1, 0)?;
                if u64::from_le_bytes(buf) != u64::from(round) + 1 {
                    return Err("ping-pong: rank 1 did not answer round + 1".into());
                }
            }
            1 => {
                comm.recv(&mut buf, 0, 0)?;
                buf = (u64::from_le_bytes(buf) + 1).to_le_bytes();
                comm.send(&buf, 0, 0)?;
            }
            _ => break,
        }
    }
    if comm.rank() == 0 {
        let half_rtt = start.elapsed().as_secs_f64() / f64::from(ROUNDS) / 2.0;
        println!("8-byte ping-pong, ranks 0 and 1: {:.2} us one way", half_rtt * 1e6);
    }
    Ok(())
}

/// Allreduce, bcast and allgather on `comm`, each checked against its expected result;
/// `lead` prints.
fn collectives(comm: &Comm, name: &str, lead: bool) -> DemoResult {
    let (rank, size) = (comm.rank(), comm.size());
    let mine = (rank as i64 + 1).to_le_bytes();
    let mut sum = [0u8; 8];
    comm.allreduce(&mine, &mut sum, Datatype::I64, ReduceOp::Sum)?;
    let want = (size * (size + 1) / 2) as i64;
    if i64::from_le_bytes(sum) != want {
        return Err(
            format!("{name}: allreduce gave {}, not {want}", i64::from_le_bytes(sum)).into()
        );
    }
    let mut word = if rank == size - 1 { *b"from top" } else { [0u8; 8] };
    comm.bcast(&mut word, size - 1)?;
    if &word != b"from top" {
        return Err(format!("{name}: bcast delivered {word:?}").into());
    }
    let mut all = vec![0u8; size];
    comm.allgather(&[rank as u8], &mut all)?;
    if all.iter().enumerate().any(|(r, &b)| b != r as u8) {
        return Err(format!("{name}: allgather gave {all:?}").into());
    }
    if lead {
        let provider = |op| comm.collective_provider(op).unwrap_or("?");
        println!(
            "{name} ({size} ranks): allreduce = {want} via {}, bcast via {}, allgather via {}",
            provider(CollOp::Allreduce),
            provider(CollOp::Bcast),
            provider(CollOp::Allgather)
        );
    }
    Ok(())
}
