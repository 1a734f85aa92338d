//! The per-message path counted under callgrind, as `scripts/peers/msgpath.c` counts the
//! peers': one 8-byte send, one receive of an 8-byte message already here, and a window of
//! 64 nonblocking sends (or receives) and their wait, each in a function of its own for
//! `--toggle-collect` (`scripts/instructions.sh peers` runs both). `msgpath single`: in rounds
//! of 25, rank 0 sends, then after a barrier rank 1 receives them (2,000 in all); `msgpath window`: rank 0's window,
//! a barrier, then rank 1's.

use commcore_linux::runtime::{Comm, P2pError, Request, World};

const N: usize = 2000;
/// Messages per round: few enough that no ring fills, so a send never waits.
const ROUND: usize = 25;
const WINDOW: usize = 64;
const WINDOWS: usize = 200;

#[inline(never)]
fn probe_send(comm: &Comm, buf: &[u8], i: usize) -> Result<(), P2pError> {
    comm.send(buf, 1, (i & 1023) as i32)
}

#[inline(never)]
fn probe_recv(comm: &Comm, buf: &mut [u8], i: usize) -> Result<(), P2pError> {
    comm.recv(buf, 0, (i & 1023) as i32).map(|_| ())
}

#[inline(never)]
fn probe_window(comm: &Comm, bufs: &mut [u8]) -> Result<(), P2pError> {
    let mut requests = Vec::with_capacity(WINDOW);
    if comm.rank() == 0 {
        for chunk in bufs.chunks(8) {
            requests.push(comm.isend(chunk, 1, 2)?);
        }
    } else {
        for chunk in bufs.chunks_mut(8) {
            requests.push(comm.irecv(chunk, 0, 2)?);
        }
    }
    Request::wait_all(requests).map(|_| ())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    let comm = world.comm();
    if comm.size() != 2 {
        return Err("msgpath runs on two ranks: commcore run -n 2 -- msgpath single|window".into());
    }
    let mut buf = vec![1u8; 8 * WINDOW];
    let window = std::env::args().nth(1).as_deref() == Some("window");
    comm.barrier()?;
    if !window {
        for _ in 0..N / ROUND {
            if comm.rank() == 0 {
                for i in 0..ROUND {
                    probe_send(comm, &buf[..8], i)?;
                }
            }
            comm.barrier()?;
            if comm.rank() == 1 {
                for i in 0..ROUND {
                    probe_recv(comm, &mut buf[..8], i)?;
                }
            }
            comm.barrier()?;
        }
    } else {
        for _ in 0..WINDOWS {
            if comm.rank() == 0 {
                probe_window(comm, &mut buf)?;
            }
            comm.barrier()?;
            if comm.rank() == 1 {
                probe_window(comm, &mut buf)?;
            }
            comm.barrier()?;
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("msgpath: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
