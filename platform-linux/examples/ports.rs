//! Two independently started jobs meet through a port: `ports accept FILE` opens a port and
//! writes its name to FILE; `ports connect FILE` reads the name and connects. Both then
//! exchange messages over the inter-communicator, run collectives on it, merge it into one
//! intra-communicator, and disconnect.
//!
//! ```sh
//! commcore run -n 2 -- target/release/examples/ports accept /tmp/port &
//! commcore run -n 3 -- target/release/examples/ports connect /tmp/port
//! ```

use std::time::{Duration, Instant};

use commcore::coll::{Datatype, ReduceOp};
use commcore_linux::runtime::World;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(role), Some(file)) = (args.get(1), args.get(2)) else {
        return Err("usage: ports accept|connect FILE".into());
    };
    let world = World::init()?;
    let comm = world.comm();
    let timeout = Duration::from_secs(20);
    let inter = match role.as_str() {
        "accept" => {
            let name = world.open_port()?;
            if comm.rank() == 0 {
                std::fs::write(format!("{file}.tmp"), &name)?;
                std::fs::rename(format!("{file}.tmp"), file)?;
            }
            let inter = comm.accept(&name, 0, timeout)?;
            world.close_port(&name)?;
            inter
        }
        "connect" => {
            let start = Instant::now();
            let name = loop {
                match std::fs::read_to_string(file) {
                    Ok(name) => break name,
                    Err(_) if start.elapsed() < timeout => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(e) => return Err(format!("no port name in {file}: {e}").into()),
                }
            };
            comm.connect(&name, 0, timeout)?
        }
        _ => return Err(format!("unknown role {role:?}").into()),
    };
    let (me, remote) = (comm.rank(), inter.remote_size().unwrap_or(0));
    // Every rank sends its rank to the remote rank of the same number, if there is one.
    if me < remote {
        let mut buf = [0u8; 8];
        let status = inter.sendrecv(&(me as u64).to_le_bytes(), me, 0, &mut buf, me, 0)?;
        assert_eq!((u64::from_le_bytes(buf), status.source), (me as u64, me));
    }
    inter.barrier()?;
    let merged = inter.intercomm_merge(role == "connect")?;
    let mut sum = [0u8; 8];
    let mine = (merged.rank() as u64 + 1).to_le_bytes();
    merged.allreduce(&mine, &mut sum, Datatype::U64, ReduceOp::Sum)?;
    let n = merged.size() as u64;
    assert_eq!(u64::from_le_bytes(sum), n * (n + 1) / 2);
    if merged.rank() == 0 {
        println!(
            "{role}: merged {} ranks ({} + {}), allreduce ok",
            merged.size(),
            comm.size(),
            remote
        );
    }
    drop(merged);
    inter.disconnect()?;
    Ok(())
}
