//! Ping-pong between ranks 0 and 1: `commcore run -n 2 -- target/debug/examples/ping_pong`.
//! Sizes from 8 B to 1 MiB; prints the half round-trip time of each.

use std::time::Instant;

use commcore_linux::runtime::World;

fn main() -> std::process::ExitCode {
    // Errors as one readable line (a `Result` from main would print their Debug form).
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("ping_pong: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    let comm = world.comm();
    if comm.size() < 2 {
        println!(
            "ping_pong needs two ranks: commcore run -n 2 -- {}",
            std::env::args().next().unwrap_or_default()
        );
        return Ok(());
    }
    if world.rank() == 0 {
        println!("transfers: {}", world.single_copy());
    }
    for size in [8usize, 1024, 16 * 1024, 64 * 1024, 256 * 1024, 1024 * 1024, 4096 * 1024] {
        let mut buf = vec![0u8; size];
        let iterations = if size > 65536 { 100 } else { 2000 };
        comm.barrier()?;
        let start = Instant::now();
        for i in 0..iterations {
            match comm.rank() {
                0 => {
                    buf[0] = i as u8;
                    comm.send(&buf, 1, 0)?;
                    comm.recv(&mut buf, 1, 0)?;
                    assert_eq!(buf[0], i as u8 ^ 1, "rank 1 echoes the byte with its bit flipped");
                }
                1 => {
                    comm.recv(&mut buf, 0, 0)?;
                    buf[0] ^= 1;
                    comm.send(&buf, 0, 0)?;
                }
                _ => {}
            }
        }
        let half_rtt = start.elapsed().as_secs_f64() / iterations as f64 / 2.0;
        if comm.rank() == 0 {
            println!("{size:>8} B  {:>10.2} us", half_rtt * 1e6);
        }
    }
    Ok(())
}
