//! The engine's message path over the verbs transport on the in-process fabric: the path
//! TCP takes, with a second transport behind it (eager, copied long and lent long
//! messages, the long ones read by RDMA into the receive's buffer).

use super::*;
use crate::transport::shm::{test_pair, ShmTransport};
use crate::transport::verbs::fabric::{Fabric, FabricDevice, Faults};
use crate::transport::verbs::{VerbsSettings, VerbsTransport};

const CONTEXT: u32 = 6;

/// Two engines whose job link is verbs, ranks 0 and 1 of one fabric.
fn verbs_pair(fabric: &Fabric) -> (Engine, Engine) {
    let settings = VerbsSettings::new(0x7e57);
    let mut ts: Vec<VerbsTransport<FabricDevice>> = (0..2)
        .map(|r| VerbsTransport::new(fabric.device(), 0, r, settings, 90 + r as u64).unwrap())
        .collect();
    let addrs: Vec<_> = ts.iter().map(VerbsTransport::address).collect();
    for t in &mut ts {
        t.set_peers(addrs.clone()).unwrap();
    }
    let b = ts.pop().unwrap();
    let a = ts.pop().unwrap();
    let engine = |t| Engine::new(None, None, Some(MessageLink::fabric(t)));
    (engine(a), engine(b))
}

/// Progresses both engines until `done` holds for the first, or fails after 5 s.
fn until(
    first: &mut Engine,
    second: &mut Engine,
    fabric: &ShmTransport,
    mut done: impl FnMut(&mut Engine) -> bool,
) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(5) {
        second.progress(fabric, None, None).unwrap();
        if done(first) {
            return;
        }
    }
    panic!("no progress");
}

#[test]
fn messages_of_every_length_go_over_verbs_through_the_message_path() {
    let fabric = Fabric::new(11, Faults::default());
    let (mut sender, mut receiver) = verbs_pair(&fabric);
    let (shm, _) = test_pair();
    let to = Peer::Message(message_peer(0, 1));
    let from = Peer::Message(message_peer(0, 0));
    // Eager, long by copy (over the eager limit), long lent (the request borrows it).
    let lengths = [8, 20_000, 300_000];
    let messages: Vec<Vec<u8>> =
        lengths.iter().map(|&n| (0..n).map(|i| (i % 249) as u8).collect()).collect();
    let mut lent = None;
    for (tag, message) in messages.iter().enumerate() {
        let envelope = Outbound { context: CONTEXT, tag: tag as i32, source: 0 };
        let start = sender.start_send(&shm, to, envelope, message, false).unwrap();
        if let SendStart::Rendezvous(id) = start {
            lent = Some(id);
        }
    }
    let lent = lent.expect("the longest message is lent");
    for (tag, message) in messages.iter().enumerate() {
        let pattern = Pattern { context: CONTEXT, source: Some(from), tag: Some(tag as i32) };
        let recv = receiver.post_recv(pattern);
        let mut buf = vec![0u8; message.len()];
        let mut envelope = None;
        until(&mut receiver, &mut sender, &shm, |engine| {
            let mut sink = Sink::new(recv, &mut buf, false);
            engine.progress(&shm, Some(&mut sink), None).unwrap();
            envelope = engine.finish_recv(&shm, &mut sink).unwrap();
            envelope.is_some()
        });
        assert_eq!(envelope.unwrap(), Envelope { source: 0, tag: tag as i32, len: message.len() });
        assert!(buf == *message, "message {tag} arrived changed");
    }
    until(&mut sender, &mut receiver, &shm, |engine| {
        engine.progress(&shm, None, None).unwrap();
        engine.send_finished(lent) && !engine.has_outbound()
    });
}
