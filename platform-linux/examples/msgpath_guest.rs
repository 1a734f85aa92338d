//! The per-message path to a peer of another group, counted under callgrind as `msgpath`
//! counts it to a peer of this job: one 8-byte send, and one receive of an 8-byte message
//! already here, each in a function of its own for `--toggle-collect`. `msgpath_guest
//! spawned` (one rank) spawns one child and counts on the parent's side, over the
//! inter-communicator; `msgpath_guest home` (two ranks) counts the same rounds on rank 0
//! of the world, so that both figures come from rank 0 of one program.

use commcore_linux::runtime::{Comm, P2pError, SpawnOptions, World};

const N: usize = 2000;
/// Messages per round: few enough that no ring fills, so a send never waits.
const ROUND: usize = 25;

#[inline(never)]
fn probe_send(comm: &Comm, buf: &[u8], peer: usize, i: usize) -> Result<(), P2pError> {
    comm.send(buf, peer, (i & 1023) as i32)
}

#[inline(never)]
fn probe_recv(comm: &Comm, buf: &mut [u8], peer: usize, i: usize) -> Result<(), P2pError> {
    comm.recv(buf, peer, (i & 1023) as i32).map(|_| ())
}

/// Rounds of `ROUND` messages from the counted side to `peer`, then back; only the counted
/// side's calls go through the probes.
fn rounds(comm: &Comm, peer: usize, counted: bool) -> Result<(), Box<dyn std::error::Error>> {
    let mut buf = [1u8; 8];
    comm.barrier()?;
    for _ in 0..N / ROUND {
        for counted_sends in [true, false] {
            if counted_sends == counted {
                for i in 0..ROUND {
                    if counted {
                        probe_send(comm, &buf, peer, i)?;
                    } else {
                        comm.send(&buf, peer, (i & 1023) as i32)?;
                    }
                }
            }
            comm.barrier()?;
            if counted_sends != counted {
                for i in 0..ROUND {
                    if counted {
                        probe_recv(comm, &mut buf, peer, i)?;
                    } else {
                        comm.recv(&mut buf, peer, (i & 1023) as i32)?;
                    }
                }
            }
            comm.barrier()?;
        }
    }
    Ok(())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut world = World::init()?;
    let mode = std::env::args().nth(1).unwrap_or_default();
    match mode.as_str() {
        "spawned" if world.size() == 1 => {
            let me = std::env::current_exe()?.to_string_lossy().into_owned();
            let inter = world.comm().spawn(&me, &["child"], 1, &SpawnOptions::default(), 0)?;
            rounds(&inter, 0, true)?;
            inter.disconnect()?;
        }
        "child" => {
            let parent = world.parent().ok_or("a child without parents")?;
            rounds(parent, 0, false)?;
            world.disconnect_parent()?;
        }
        "home" if world.size() == 2 => {
            let comm = world.comm();
            rounds(comm, 1 - comm.rank(), comm.rank() == 0)?;
        }
        _ => return Err("usage: msgpath_guest spawned (one rank) | home (two ranks)".into()),
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("msgpath_guest: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
