//! The engine between two shared-memory views of one region, in one process: eager
//! messages, matching order, streamed messages, single copy with and without a split, and
//! truncation.

use super::*;
use crate::runtime::error::P2pError;
use crate::shm::Ring;
use crate::transport::shm::{test_pair, ShmTransport};

const CONTEXT: u32 = 4;

fn pattern(source: Option<usize>, tag: Option<i32>) -> Pattern {
    Pattern { context: CONTEXT, source: source.map(Peer::Shm), tag }
}

fn outbound(tag: i32, source: u32) -> Outbound {
    Outbound { context: CONTEXT, tag, source }
}

/// Progresses both engines until `done` holds, or fails after many rounds.
fn until(
    pair: (&mut Engine, &ShmTransport),
    other: (&mut Engine, &ShmTransport),
    mut done: impl FnMut(&mut Engine, &ShmTransport) -> bool,
) {
    let (engine, fabric) = pair;
    for _ in 0..100_000 {
        other.0.progress(other.1, None, None).unwrap();
        if done(engine, fabric) {
            return;
        }
    }
    panic!("no progress");
}

#[test]
fn an_eager_message_reports_the_rank_from_its_header() {
    let (a, b) = test_pair();
    let (mut sender, mut receiver) = (Engine::new(None, None, None), Engine::new(None, None, None));
    let start = sender.start_send_shm(&a, 1, outbound(3, 42), b"hello", false);
    assert_eq!(start, Ok(SendStart::Done));
    let mut buf = [0u8; 8];
    match receiver.try_direct_recv(&b, &pattern(Some(0), None), &mut buf) {
        Direct::Done(Ok(envelope)) => {
            assert_eq!(envelope, Envelope { source: 42, tag: 3, len: 5 });
            assert_eq!(&buf[..5], b"hello");
        }
        _ => panic!("the message waits at the head of the ring"),
    }
    assert!(matches!(receiver.try_direct_recv(&b, &pattern(None, None), &mut buf), Direct::Empty));
}

#[test]
fn messages_of_one_pair_match_in_order_and_receives_in_posting_order() {
    let (a, b) = test_pair();
    let (mut sender, mut receiver) = (Engine::new(None, None, None), Engine::new(None, None, None));
    for (tag, byte) in [(1, b'a'), (2, b'b'), (1, b'c')] {
        sender.start_send_shm(&a, 1, outbound(tag, 0), &[byte], false).unwrap();
    }
    // The tag-2 receive is posted first but matches only the second message.
    let second = receiver.post_recv(pattern(None, Some(2)));
    let first = receiver.post_recv(pattern(Some(0), None));
    let third = receiver.post_recv(pattern(Some(0), Some(1)));
    receiver.progress(&b, None, None).unwrap();
    for (recv, expected, tag) in [(first, b'a', 1), (second, b'b', 2), (third, b'c', 1)] {
        let mut buf = [0u8; 1];
        let mut sink = Sink::new(recv, &mut buf, false);
        let envelope = receiver.finish_recv(&b, &mut sink).unwrap().unwrap();
        assert_eq!((buf[0], envelope.tag), (expected, tag));
    }
}

#[test]
fn a_message_longer_than_a_cell_streams_through_the_ring() {
    let (a, b) = test_pair();
    let (mut sender, mut receiver) = (Engine::new(None, None, None), Engine::new(None, None, None));
    let message: Vec<u8> = (0..5 * Ring::PAYLOAD_BYTES + 17).map(|i| (i % 251) as u8).collect();
    sender.start_send_owned(&a, Peer::Shm(1), outbound(9, 1), message.clone()).unwrap();
    let recv = receiver.post_recv(pattern(Some(0), Some(9)));
    let mut buf = vec![0u8; message.len()];
    let mut envelope = None;
    until((&mut receiver, &b), (&mut sender, &a), |engine, fabric| {
        let mut sink = Sink::new(recv, &mut buf, false);
        engine.progress(fabric, Some(&mut sink), None).unwrap();
        envelope = engine.finish_recv(fabric, &mut sink).unwrap();
        envelope.is_some()
    });
    assert_eq!(envelope.unwrap().len, message.len());
    assert_eq!(buf, message);
    assert!(!sender.has_outbound());
}

/// A single-copy message, read whole or split between both sides.
fn single_copy(split_above: Option<usize>) {
    let (a, b) = test_pair();
    let mut sender = Engine::new(Some(1024), split_above, None);
    let mut receiver = Engine::new(Some(1024), split_above, None);
    let message: Vec<u8> = (0..100_000).map(|i| (i % 253) as u8).collect();
    sender.start_send_owned(&a, Peer::Shm(1), outbound(5, 0), message.clone()).unwrap();
    let recv = receiver.post_recv(pattern(None, None));
    let mut buf = vec![0u8; message.len()];
    until((&mut receiver, &b), (&mut sender, &a), |engine, fabric| {
        let mut sink = Sink::new(recv, &mut buf, true);
        engine.progress(fabric, Some(&mut sink), None).unwrap();
        engine.finish_recv(fabric, &mut sink).unwrap().is_some()
    });
    assert_eq!(buf, message);
    until((&mut sender, &a), (&mut receiver, &b), |engine, fabric| {
        engine.progress(fabric, None, None).unwrap();
        !engine.has_outbound()
    });
}

#[test]
fn a_long_message_is_read_by_single_copy() {
    single_copy(None);
}

#[test]
fn a_split_single_copy_has_each_side_copy_a_half() {
    single_copy(Some(4096));
}

#[test]
fn a_longer_message_than_the_buffer_is_a_truncation_error() {
    let (a, b) = test_pair();
    let (mut sender, mut receiver) = (Engine::new(None, None, None), Engine::new(None, None, None));
    sender.start_send_shm(&a, 1, outbound(0, 0), &[7; 10], false).unwrap();
    let mut buf = [0u8; 4];
    match receiver.try_direct_recv(&b, &pattern(None, None), &mut buf) {
        Direct::Done(Err(P2pError::Truncated { message_len: 10, buffer_len: 4, .. })) => {}
        _ => panic!("a truncation error"),
    }
    assert_eq!(buf, [7; 4]);
}

#[test]
fn a_receive_takes_the_oldest_unexpected_message_it_accepts_straight_from_the_queue() {
    let (a, b) = test_pair();
    let (mut sender, mut receiver) = (Engine::new(None, None, None), Engine::new(None, None, None));
    for (tag, bytes) in [(1, &b"first"[..]), (2, b"second"), (1, b"third!"), (3, b"long message")] {
        sender.start_send_shm(&a, 1, outbound(tag, 0), bytes, false).unwrap();
    }
    // A posted receive for tag 2 takes the second message as it arrives; the rest queue.
    let second = receiver.post_recv(pattern(Some(0), Some(2)));
    receiver.progress(&b, None, None).unwrap();
    let mut buf = [0u8; 8];
    for (tag, expected) in [(None, &b"first"[..]), (Some(1), b"third!")] {
        match receiver.try_direct_recv(&b, &pattern(Some(0), tag), &mut buf) {
            Direct::Done(Ok(envelope)) => {
                assert_eq!(&buf[..envelope.len], expected);
                assert_eq!(envelope.tag, 1);
            }
            _ => panic!("{expected:?} waits whole in the unexpected queue"),
        }
    }
    // Too long for the buffer: an error that still consumes the message.
    match receiver.try_direct_recv(&b, &pattern(None, Some(3)), &mut buf) {
        Direct::Done(Err(P2pError::Truncated { message_len: 12, buffer_len: 8, .. })) => {}
        _ => panic!("a truncation error"),
    }
    assert_eq!(&buf, b"long mes");
    let mut sink = Sink::new(second, &mut buf, false);
    let envelope = receiver.finish_recv(&b, &mut sink).unwrap().unwrap();
    assert_eq!((&buf[..envelope.len], envelope.tag), (&b"second"[..], 2));
    // Nothing queued: with a receive posted before, the ring's next message may be its.
    let posted = receiver.post_recv(pattern(None, Some(9)));
    assert!(matches!(receiver.try_direct_recv(&b, &pattern(None, None), &mut buf), Direct::Slow));
    receiver.cancel_recv(&b, posted);
    assert!(matches!(receiver.try_direct_recv(&b, &pattern(None, None), &mut buf), Direct::Empty));
}
