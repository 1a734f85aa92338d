//! Communicator creation under stress: `commcore run -n 8 -- target/debug/examples/cid_stress`
//! (`COMMCORE_CID_ALGORITHM=lowest|mask|highest` picks the algorithm). Splits the world
//! by a changing color again and again, keeps a few communicators alive, and reports the
//! allreduces each context id took.

use std::time::Instant;

use commcore_linux::runtime::World;

fn main() -> std::process::ExitCode {
    // Errors as one readable line (a `Result` from main would print their Debug form).
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cid_stress: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    const ROUNDS: usize = 500;
    let world = World::init()?;
    let comm = world.comm();
    let me = comm.rank();
    let mut alive = Vec::new();
    let before = comm.context_id_allreduces();
    let start = Instant::now();
    for round in 0..ROUNDS {
        let child =
            comm.split(((me + round) % 3) as i32, me as i32)?.expect("every rank has a color");
        // A message round the new communicator proves it works.
        let (next, prev) =
            ((child.rank() + 1) % child.size(), (child.rank() + child.size() - 1) % child.size());
        let mut got = [0u8; 4];
        child.sendrecv(&child.context_id().to_le_bytes(), next, 0, &mut got, prev, 0)?;
        assert_eq!(u32::from_le_bytes(got), child.context_id(), "members agree on the id");
        alive.push(child);
        if alive.len() > 8 {
            alive.remove(round % 8);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let allreduces = comm.context_id_allreduces() - before;
    if me == 0 {
        println!(
            "{ROUNDS} splits with {:?}: {:.1} us each, {:.2} allreduces per context id",
            comm.context_id_algorithm(),
            seconds * 1e6 / ROUNDS as f64,
            allreduces as f64 / ROUNDS as f64
        );
    }
    Ok(())
}
