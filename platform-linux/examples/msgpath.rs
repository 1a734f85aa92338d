//! The per-message path counted under callgrind, as `scripts/peers/msgpath.c` counts the
//! peers': one 8-byte send, one receive of an 8-byte message already here, and a window of
//! 64 nonblocking sends (or receives) and their wait, each in a function of its own for
//! `--toggle-collect` (`scripts/instructions.sh peers` runs both). `msgpath single`: in rounds
//! of 25, rank 0 sends, then after a barrier rank 1 receives them (2,000 in all); `msgpath window`: rank 0's window,
//! a barrier, then rank 1's; `msgpath posted`: rank 1 posts its window of receives, rank 0
//! sends its window, then rank 1 waits (the message-rate benchmark's receive side);
//! `msgpath posted-ring`: the same, but rank 1 sleeps instead of entering a barrier before
//! its wait, so the window waits in the ring (as it does in the benchmark, where no barrier
//! drains it first).

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

/// Rank 1's receives posted before the window is sent (as in the message-rate benchmark,
/// whose receiver posts its next window while the sender still waits for the reply).
#[inline(never)]
fn probe_post<'b>(comm: &Comm, bufs: &'b mut [u8]) -> Result<Vec<Request<'b>>, P2pError> {
    let mut requests = Vec::with_capacity(WINDOW);
    for chunk in bufs.chunks_mut(8) {
        requests.push(comm.irecv(chunk, 0, 2)?);
    }
    Ok(requests)
}

#[inline(never)]
fn probe_wait_posted(requests: Vec<Request<'_>>) -> Result<(), P2pError> {
    Request::wait_all(requests).map(|_| ())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    let comm = world.comm();
    if comm.size() != 2 {
        return Err("msgpath runs on two ranks: commcore run -n 2 -- msgpath single|window".into());
    }
    let mut buf = vec![1u8; 8 * WINDOW];
    let mode = std::env::args().nth(1).unwrap_or_default();
    let window = mode == "window";
    comm.barrier()?;
    if mode == "posted-ring" {
        for _ in 0..WINDOWS {
            if comm.rank() == 1 {
                let requests = probe_post(comm, &mut buf)?;
                comm.barrier()?;
                // Long enough for rank 0's window, even under callgrind.
                std::thread::sleep(std::time::Duration::from_millis(20));
                probe_wait_posted(requests)?;
            } else {
                comm.barrier()?;
                probe_window(comm, &mut buf)?;
            }
            comm.barrier()?;
        }
    } else if mode == "posted" {
        for _ in 0..WINDOWS {
            if comm.rank() == 1 {
                let requests = probe_post(comm, &mut buf)?;
                comm.barrier()?;
                comm.barrier()?;
                probe_wait_posted(requests)?;
            } else {
                comm.barrier()?;
                probe_window(comm, &mut buf)?;
                comm.barrier()?;
            }
            comm.barrier()?;
        }
    } else if !window {
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
