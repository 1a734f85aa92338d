//! A rank program for the TCP transport's job tests: `tcp_rank SCENARIO`, started by the
//! launcher (on one host with `COMMCORE_TRANSPORT=tcp`, or across `--hosts`). Ranks reach
//! each other through `commcore_linux::tcp` directly: the runtime's communicators do not
//! select TCP yet. Rank 0 prints `ok` or `error after MS ms: WHAT` on its standard output.

use std::time::{Duration, Instant};

use commcore::wire::{Header, Kind};
use commcore_linux::tcp::{TcpError, TcpSettings, TcpTransport};

/// What the job does; `tcp_rank NAME` picks one by its name.
#[derive(Clone, Copy)]
enum Scenario {
    /// Every rank sends every other rank messages of several sizes, then a ring passes a
    /// token around three times; every byte is checked.
    Exchange,
    /// After the exchange rank 1 kills itself with SIGKILL.
    Killed,
    /// After the exchange rank 1 resets its connection to rank 0 and stays.
    Reset,
    /// After the exchange rank 1 stops reading and stays; rank 0 keeps sending 1 MiB.
    StopsReading,
}

impl Scenario {
    fn parse(name: &str) -> Option<Scenario> {
        Some(match name {
            "exchange" => Scenario::Exchange,
            "killed" => Scenario::Killed,
            "reset" => Scenario::Reset,
            "stops-reading" => Scenario::StopsReading,
            _ => return None,
        })
    }
}

const SIZES: [usize; 3] = [8, 100_000, 1 << 20];
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(10);

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(scenario) = Scenario::parse(&name) else {
        eprintln!("tcp_rank: unknown scenario {name:?}: exchange, killed, reset or stops-reading");
        std::process::exit(2);
    };
    let mut settings = TcpSettings::new(0);
    // Short where the test waits for it; long elsewhere, so a loaded machine is not taken
    // for a rank that stopped reading.
    let stops_reading = matches!(scenario, Scenario::StopsReading);
    settings.send_timeout = Duration::from_millis(if stops_reading { 400 } else { 5000 });
    let mut t = TcpTransport::join(settings).unwrap_or_else(|e| {
        eprintln!("tcp_rank: {e}");
        std::process::exit(2)
    });
    let faulty = !matches!(scenario, Scenario::Exchange);
    if let Err(error) = exchange(&mut t) {
        // Ranks beyond 1 may see rank 1's fault at their last step of the exchange: the
        // job's failure is rank 0's to report.
        assert!(faulty && t.rank() >= 2, "exchange: {error}");
        std::thread::sleep(Duration::from_secs(60));
    }
    // Rank 1 makes its fault only once rank 0 is through the exchange.
    if faulty && t.rank() == 1 {
        let (from, tag, _) = receive(&mut t).expect("go");
        assert_eq!((from, tag), (0, 200));
    }
    let outcome = match scenario {
        Scenario::Exchange => Ok(()),
        Scenario::Killed | Scenario::Reset | Scenario::StopsReading if t.rank() == 1 => {
            match scenario {
                // SAFETY: kill only sends a signal to this very process.
                Scenario::Killed => unsafe {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                },
                Scenario::Reset => {
                    t.reset(0);
                }
                _ => {}
            }
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        }
        _ if t.rank() == 0 => push_until_error(&mut t),
        // The other ranks wait for the launcher to end the job.
        _ => {
            std::thread::sleep(Duration::from_secs(60));
            Ok(())
        }
    };
    if t.rank() == 0 {
        match outcome {
            Ok(()) => println!("ok"),
            Err((ms, error)) => {
                let report = format!("error after {ms} ms: {error}");
                println!("{report}");
                // A failed job's output is not kept: tests read the report from a file.
                if let Ok(path) = std::env::var("TCP_RANK_REPORT") {
                    let _ = std::fs::write(path, &report);
                }
                std::process::exit(1);
            }
        }
    }
    t.finish(Instant::now() + Duration::from_secs(5)).expect("finish");
}

fn header(tag: i32, length: usize) -> Header {
    Header { kind: Kind::Eager, context: 0, source: 0, tag, sequence: 0, length: length as u64 }
}

fn bytes(from: usize, to: usize, size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u8) ^ (from as u8).wrapping_mul(7) ^ (to as u8).wrapping_mul(13))
        .collect()
}

fn receive(t: &mut TcpTransport) -> Result<(usize, i32, Vec<u8>), TcpError> {
    let deadline = Instant::now() + RECEIVE_TIMEOUT;
    loop {
        if let Some(a) = t.poll()? {
            return Ok((a.from, a.header.tag, a.payload));
        }
        assert!(t.wait(deadline)? || Instant::now() < deadline, "nothing arrived in 10 s");
    }
}

fn exchange(t: &mut TcpTransport) -> Result<(), TcpError> {
    let (rank, size) =
        (t.rank(), std::env::var("COMMCORE_SIZE").unwrap().parse::<usize>().unwrap());
    for peer in (0..size).filter(|&p| p != rank) {
        for (i, &s) in SIZES.iter().enumerate() {
            t.send(peer, &header(i as i32, s), &bytes(rank, peer, s))?;
        }
    }
    let mut seen = vec![0usize; size];
    // A rank that is done may start the ring before the others' messages all came.
    let mut ring = Vec::new();
    let mut left = (size - 1) * SIZES.len();
    while left > 0 {
        let (from, tag, payload) = receive(t)?;
        if tag >= 100 {
            ring.push((from, tag, payload));
            continue;
        }
        left -= 1;
        assert_eq!(tag as usize, seen[from], "order from rank {from}");
        assert!(payload == bytes(from, rank, SIZES[seen[from]]), "payload from rank {from}");
        seen[from] += 1;
    }
    let mut ring = ring.into_iter();
    let mut next = |t: &mut TcpTransport| ring.next().map_or_else(|| receive(t), Ok);
    for round in 0..3 {
        if rank == 0 {
            t.send(1 % size, &header(100 + round, 4), &[round as u8; 4])?;
            let (from, tag, _) = next(t)?;
            assert_eq!((from, tag), (size - 1, 100 + round));
        } else {
            let (from, tag, payload) = next(t)?;
            assert_eq!((from, tag, payload), (rank - 1, 100 + round, vec![round as u8; 4]));
            t.send((rank + 1) % size, &header(tag, 4), &[round as u8; 4])?;
        }
    }
    Ok(())
}

/// Rank 0 tells rank 1 to make its fault, then keeps sending 1 MiB messages to rank 1 and polling until an error: how long it
/// took and what it was.
fn push_until_error(t: &mut TcpTransport) -> Result<(), (u128, TcpError)> {
    let start = Instant::now();
    // The go for rank 1's fault; the fault may already show in this send.
    if let Err(error) = t.send(1, &header(200, 0), &[]) {
        return Err((start.elapsed().as_millis(), error));
    }
    let payload = vec![0u8; 1 << 20];
    loop {
        let step = t
            .send(1, &header(7, payload.len()), &payload)
            .and_then(|()| t.wait(Instant::now() + Duration::from_millis(5)).map(drop));
        if let Err(error) = step {
            return Err((start.elapsed().as_millis(), error));
        }
        if start.elapsed() > Duration::from_secs(20) {
            return Ok(());
        }
    }
}
