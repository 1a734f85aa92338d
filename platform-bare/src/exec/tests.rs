use std::boxed::Box;
use std::string::ToString;

use commcore::coll::{Algorithm, CollArgs, CollOp, Ctx, Datatype, Schedule};

use super::*;

fn bcast(rank: u32, size: u32, count: usize) -> Schedule<'static> {
    let args = CollArgs::new(count, Datatype::U32);
    Schedule::intra(CollOp::Bcast, Algorithm::Linear, Ctx::new(rank, size).unwrap(), &args).unwrap()
}

type Boxes = Mailboxes<4, 2, 64>;

fn run(schedules: [Schedule<'static>; 2], len: usize) -> Result<ExecStats, ExecError> {
    let mut boxes: Box<Boxes> = Box::default();
    let mut runs: [RankRun<'_, 4>; 2] = schedules.map(RankRun::new);
    let (mut a, mut b) = ([7u8; 256], [0u8; 256]);
    let mut bufs = [
        RankBufs { send: &[], recv: &mut a[..len], scratch: &mut [] },
        RankBufs { send: &[], recv: &mut b[..len], scratch: &mut [] },
    ];
    let stats = Executor::new(&mut boxes).run(&mut runs, &mut bufs, &mut [], 100);
    if stats.is_ok() {
        assert_eq!(b[..len], a[..len], "the broadcast arrived");
    }
    stats
}

#[test]
fn a_broadcast_moves_bytes_and_is_counted() {
    let stats = run([bcast(0, 2, 4), bcast(1, 2, 4)], 16).unwrap();
    assert_eq!((stats.messages, stats.bytes, stats.steps), (1, 16, 2));
}

#[test]
fn ranks_that_wait_for_each_other_are_a_deadlock_with_the_step_count() {
    // Both ranks run the receiving side: each waits for rank 0.
    let e = run([bcast(1, 2, 4), bcast(1, 2, 4)], 16).unwrap_err();
    assert_eq!(e, ExecError::Deadlock { steps: 2, blocked: 2, first: 0 });
    assert!(e.to_string().contains("after 2 steps"));
}

#[test]
fn unreceived_messages_and_oversized_ones_are_errors() {
    // Both ranks run the root's side: two messages nobody receives.
    assert_eq!(run([bcast(0, 2, 4), bcast(0, 2, 4)], 16), Err(ExecError::Leftover { messages: 2 }));
    let e = run([bcast(0, 2, 64), bcast(1, 2, 64)], 256).unwrap_err();
    let too_large = RunError::Transport(MailError::TooLarge { len: 256, max: 64 });
    assert_eq!(e, ExecError::Rank { rank: 0, error: too_large });
}

#[test]
fn a_peer_outside_the_communicator_is_an_error() {
    // Rank 0 of a 3-rank broadcast sends to rank 2, which this run of 2 lacks.
    let e = run([bcast(0, 3, 1), bcast(1, 3, 1)], 4).unwrap_err();
    assert!(matches!(
        e,
        ExecError::Rank { rank: 0, error: RunError::Transport(MailError::BadPeer(_)) }
    ));
}

#[test]
fn counts_that_do_not_fit_are_errors() {
    let mut boxes: Box<Mailboxes<1, 1, 8>> = Box::default();
    let mut exec = Executor::new(&mut boxes);
    let mut runs = [RankRun::<'_, 1>::new(bcast(0, 2, 1)), RankRun::new(bcast(1, 2, 1))];
    let e = exec.run(&mut runs, &mut [], &mut [], 10).unwrap_err();
    assert_eq!(e, ExecError::TooManyRanks { ranks: 2, max: 1 });
    let e = exec.run(&mut runs[..1], &mut [], &mut [], 10).unwrap_err();
    assert_eq!(e, ExecError::BufsMismatch { runs: 1, bufs: 0 });
    assert_eq!(Mailboxes::<1, 1, 8>::bytes(), core::mem::size_of::<Mailboxes<1, 1, 8>>());
}
