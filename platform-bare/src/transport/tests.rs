use std::string::ToString;
use std::vec;
use std::vec::Vec;

use commcore::coll::{Algorithm, CollArgs, CollOp, Ctx, Datatype};

use super::*;

/// Records sends; delivers queued messages; refuses the first `refuse` sends.
#[derive(Default)]
struct Fake {
    sent: Vec<(u32, Vec<u8>)>,
    inbox: Vec<(u32, Vec<u8>)>,
    refuse: u32,
}

impl Transport for Fake {
    type Error = &'static str;
    fn send(&mut self, to: Peer, bytes: &[u8]) -> Result<bool, Self::Error> {
        if self.refuse > 0 {
            self.refuse -= 1;
            return Ok(false);
        }
        self.sent.push((to.rank, bytes.to_vec()));
        Ok(true)
    }
    fn recv(&mut self, from: Peer, into: &mut [u8]) -> Result<bool, Self::Error> {
        let Some(i) = self.inbox.iter().position(|(f, _)| *f == from.rank) else {
            return Ok(false);
        };
        let (_, msg) = self.inbox.remove(i);
        if msg.len() != into.len() {
            return Err("length");
        }
        into.copy_from_slice(&msg);
        Ok(true)
    }
}

fn bcast(rank: u32) -> Schedule<'static> {
    let args = CollArgs::new(2, Datatype::U32);
    Schedule::intra(CollOp::Bcast, Algorithm::Linear, Ctx::new(rank, 3).unwrap(), &args).unwrap()
}

#[test]
fn a_root_sends_through_the_callbacks_and_retries_a_refused_send() {
    let mut recv = [1, 0, 0, 0, 2, 0, 0, 0];
    let mut bufs = RankBufs { send: &[], recv: &mut recv, scratch: &mut [] };
    // Refused twice while the sends are started, twice more at the end of the schedule.
    let mut net = Fake { refuse: 5, ..Fake::default() };
    let mut run: RankRun<'_, 4> = RankRun::new(bcast(0));
    assert_eq!(run.poll(&mut bufs, &mut net, &mut []), Ok(RunStatus::Blocked));
    assert_eq!(run.poll(&mut bufs, &mut net, &mut []), Ok(RunStatus::Done));
    let payload = vec![1, 0, 0, 0, 2, 0, 0, 0];
    assert_eq!(net.sent, vec![(1, payload.clone()), (2, payload)]);
    assert_eq!(run.poll(&mut bufs, &mut net, &mut []), Ok(RunStatus::Done));
}

#[test]
fn a_receiver_blocks_until_its_message_arrives() {
    let mut recv = [0u8; 8];
    let mut bufs = RankBufs { send: &[], recv: &mut recv, scratch: &mut [] };
    let mut net = Fake::default();
    let mut run: RankRun<'_, 4> = RankRun::new(bcast(2));
    assert_eq!(run.poll(&mut bufs, &mut net, &mut []), Ok(RunStatus::Blocked));
    let events = run.events();
    assert_eq!(run.poll(&mut bufs, &mut net, &mut []), Ok(RunStatus::Blocked));
    assert_eq!(run.events(), events, "an idle poll makes no progress");
    net.inbox.push((0, vec![9; 8]));
    assert_eq!(run.run(&mut bufs, &mut net, &mut [], 3), Ok(run.steps()));
    assert_eq!(recv, [9; 8]);
}

#[test]
fn a_missing_peer_stalls_within_the_bound() {
    let mut recv = [0u8; 8];
    let mut bufs = RankBufs { send: &[], recv: &mut recv, scratch: &mut [] };
    let mut run: RankRun<'_, 4> = RankRun::new(bcast(1));
    let e = run.run(&mut bufs, &mut Fake::default(), &mut [], 5).unwrap_err();
    assert_eq!(e, RunError::Stalled { steps: 1, polls: 5 });
    assert!(e.to_string().contains("5 polls"));
}

#[test]
fn bad_buffers_and_transport_failures_are_errors() {
    let args = CollArgs::new(64, Datatype::U32);
    let ctx = Ctx::new(0, 2).unwrap();
    let schedule =
        Schedule::intra(CollOp::Allreduce, Algorithm::RecursiveDoubling, ctx, &args).unwrap();
    let needed = schedule.scratch_bytes();
    assert!(needed > 0);
    let (send, mut recv) = ([0u8; 256], [0u8; 256]);
    let mut bufs = RankBufs { send: &send, recv: &mut recv, scratch: &mut [] };
    let mut run: RankRun<'_, 4> = RankRun::new(schedule);
    let e = run.poll(&mut bufs, &mut Fake::default(), &mut []).unwrap_err();
    assert_eq!(e, RunError::ScratchTooSmall { needed, given: 0 });

    let mut small = [0u8; 4];
    let mut bufs = RankBufs { send: &[], recv: &mut small, scratch: &mut [] };
    let mut run: RankRun<'_, 4> = RankRun::new(bcast(0));
    let e = run.poll(&mut bufs, &mut Fake::default(), &mut []).unwrap_err();
    assert!(matches!(e, RunError::OutOfBounds { .. }), "{e:?}");

    let mut recv = [0u8; 8];
    let mut bufs = RankBufs { send: &[], recv: &mut recv, scratch: &mut [] };
    let mut net = Fake { inbox: vec![(0, vec![1; 3])], ..Fake::default() };
    let mut run: RankRun<'_, 4> = RankRun::new(bcast(1));
    assert_eq!(run.poll(&mut bufs, &mut net, &mut []), Err(RunError::Transport("length")));
}

/// One kernel's link to the others: a channel to each peer and one from each.
struct Link {
    to: Vec<std::sync::mpsc::Sender<Vec<u8>>>,
    from: Vec<std::sync::mpsc::Receiver<Vec<u8>>>,
}

impl Transport for Link {
    type Error = &'static str;
    fn send(&mut self, to: Peer, bytes: &[u8]) -> Result<bool, Self::Error> {
        let peer = self.to.get(to.rank as usize).ok_or("no such peer")?;
        peer.send(bytes.to_vec()).map_err(|_| "peer gone")?;
        Ok(true)
    }
    fn recv(&mut self, from: Peer, into: &mut [u8]) -> Result<bool, Self::Error> {
        let peer = self.from.get(from.rank as usize).ok_or("no such peer")?;
        match peer.try_recv() {
            Ok(msg) if msg.len() == into.len() => {
                into.copy_from_slice(&msg);
                Ok(true)
            }
            Ok(_) => Err("length"),
            Err(_) => {
                // Nothing yet: let the other kernels run (bounded by `run`'s idle limit).
                std::thread::sleep(std::time::Duration::from_micros(200));
                Ok(false)
            }
        }
    }
}

#[test]
fn kernels_on_threads_run_collectives_through_their_own_callbacks() {
    const P: usize = 5;
    for (op, alg) in [
        (CollOp::Allreduce, Algorithm::Ring),
        (CollOp::Allreduce, Algorithm::RecursiveDoubling),
        (CollOp::Allreduce, Algorithm::Rabenseifner),
    ] {
        let (mut tx, mut rx): (Vec<Vec<_>>, Vec<Vec<_>>) = (Vec::new(), Vec::new());
        for _ in 0..P {
            let (row_tx, row_rx): (Vec<_>, Vec<_>) =
                (0..P).map(|_| std::sync::mpsc::channel()).unzip();
            tx.push(row_tx);
            rx.push(row_rx);
        }
        // Kernel r sends to s on tx[r][s]; s receives from r on rx[r][s].
        let mut links: Vec<Link> = tx.into_iter().map(|to| Link { to, from: Vec::new() }).collect();
        for row in rx {
            for (s, channel) in row.into_iter().enumerate() {
                links[s].from.push(channel);
            }
        }
        let kernels: Vec<_> = links
            .into_iter()
            .enumerate()
            .map(|(r, mut link)| {
                std::thread::spawn(move || {
                    let args = CollArgs::new(8, Datatype::U32);
                    let ctx = Ctx::new(r as u32, P as u32).unwrap();
                    let schedule = Schedule::intra(op, alg, ctx, &args).unwrap();
                    let send: Vec<u8> =
                        (0..8u32).flat_map(|i| (i * 10 + r as u32).to_ne_bytes()).collect();
                    let mut recv = vec![0u8; 32];
                    let mut scratch = vec![0u8; schedule.scratch_bytes()];
                    let mut bufs = RankBufs { send: &send, recv: &mut recv, scratch: &mut scratch };
                    let mut run: RankRun<'_, 16> = RankRun::new(schedule);
                    run.run(&mut bufs, &mut link, &mut [0u8; 64], 150_000).unwrap();
                    recv
                })
            })
            .collect();
        // Sum over ranks of i * 10 + r.
        let want: Vec<u8> =
            (0..8u32).flat_map(|i| (P as u32 * i * 10 + 10).to_ne_bytes()).collect();
        for kernel in kernels {
            assert_eq!(kernel.join().unwrap(), want, "{op} {}", alg.name());
        }
    }
}
