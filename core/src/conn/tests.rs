//! Two endpoints wired by hand: the handshake's steps, repeats, ties, timeouts, forgeries.

use std::vec::Vec;

use super::*;

const TOKEN: u128 = 0xfeed_beef;
const CONFIG: Config = Config { token: TOKEN, initial_retry: 10, max_retry: 40, timeout: 500 };

type Ep = Endpoint<4>;

fn id(lpid: u32) -> Identity {
    Identity::new(0, lpid)
}

fn ep(lpid: u32) -> Ep {
    Endpoint::new(id(lpid), Addr::from_u64(lpid.into()), CONFIG, 1000 + u64::from(lpid)).unwrap()
}

fn drain(e: &mut Ep, now: u64) -> Vec<Datagram> {
    core::iter::from_fn(|| e.poll_transmit(now)).collect()
}

fn events(e: &mut Ep) -> Vec<Event> {
    core::iter::from_fn(|| e.poll_event()).collect()
}

/// Hands every datagram `from` owes to `to`, `copies` times each; returns how many.
fn deliver(from: &mut Ep, to: &mut Ep, now: u64, copies: usize) -> usize {
    let src = Addr::from_u64(from.local().lpid.into());
    let out = drain(from, now);
    for d in &out {
        for _ in 0..copies {
            to.handle_datagram(now, src, d.payload());
        }
    }
    out.len()
}

fn connected(events: &[Event]) -> Vec<Connection> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Connected(c) => Some(*c),
            Event::Failed { .. } | Event::Superseded { .. } => None,
        })
        .collect()
}

#[test]
fn three_datagrams_connect_both_ends_with_one_id_and_their_addresses() {
    let (mut a, mut b) = (ep(1), ep(2));
    assert_eq!(a.connect(0, id(2), Addr::from_u64(2)), Ok(ConnectOutcome::Started));
    assert_eq!(deliver(&mut a, &mut b, 0, 1), 1);
    assert_eq!(b.peer_state(id(1)), Some(PeerState::Accepting));
    assert_eq!(deliver(&mut b, &mut a, 1, 1), 1);
    assert_eq!(deliver(&mut a, &mut b, 2, 1), 1);
    let (ca, cb) = (connected(&events(&mut a)), connected(&events(&mut b)));
    assert_eq!((ca.len(), cb.len()), (1, 1));
    assert_eq!(ca[0].id, cb[0].id);
    assert_eq!(ca[0].id.initiator, id(1));
    assert_eq!((ca[0].peer, ca[0].peer_addr), (id(2), Addr::from_u64(2)));
    assert_eq!((cb[0].peer, cb[0].peer_addr), (id(1), Addr::from_u64(1)));
    assert_eq!(a.poll_timeout(), None, "no timer once connected");
    assert_eq!(a.connect(3, id(2), Addr::from_u64(2)), Ok(ConnectOutcome::Connected(ca[0])));
}

#[test]
fn every_datagram_twice_still_makes_one_connection() {
    let (mut a, mut b) = (ep(1), ep(2));
    a.connect(0, id(2), Addr::from_u64(2)).unwrap();
    for now in 0..4 {
        deliver(&mut a, &mut b, now, 2);
        deliver(&mut b, &mut a, now, 2);
    }
    assert_eq!(connected(&events(&mut a)).len(), 1);
    assert_eq!(connected(&events(&mut b)).len(), 1);
    assert!(a.stats().duplicates + b.stats().duplicates >= 2);
    assert!(events(&mut a).is_empty());
}

#[test]
fn a_lost_confirm_is_recovered_by_the_repeated_accept() {
    let (mut a, mut b) = (ep(1), ep(2));
    a.connect(0, id(2), Addr::from_u64(2)).unwrap();
    deliver(&mut a, &mut b, 0, 1);
    deliver(&mut b, &mut a, 0, 1);
    assert_eq!(drain(&mut a, 0).len(), 1, "the confirm, lost");
    let retry = b.poll_timeout().unwrap();
    assert_eq!(retry, CONFIG.initial_retry);
    b.handle_timeout(retry);
    deliver(&mut b, &mut a, retry, 1);
    deliver(&mut a, &mut b, retry, 1);
    assert_eq!(b.peer_state(id(1)), Some(PeerState::Established));
    let (ca, cb) = (connected(&events(&mut a)), connected(&events(&mut b)));
    assert_eq!((ca.len(), cb.len()), (1, 1));
    assert_eq!(ca[0].id, cb[0].id);
}

#[test]
fn simultaneous_connects_converge_on_the_lower_identity() {
    let (mut a, mut b) = (ep(1), ep(2));
    a.connect(0, id(2), Addr::from_u64(2)).unwrap();
    b.connect(0, id(1), Addr::from_u64(1)).unwrap();
    let (to_b, to_a) = (drain(&mut a, 0), drain(&mut b, 0));
    for d in &to_a {
        a.handle_datagram(0, Addr::from_u64(2), d.payload());
    }
    for d in &to_b {
        b.handle_datagram(0, Addr::from_u64(1), d.payload());
    }
    assert_eq!(a.peer_state(id(2)), Some(PeerState::Connecting), "the lower end keeps its own");
    assert_eq!(b.peer_state(id(1)), Some(PeerState::Accepting), "the higher end yields");
    for now in 1..4 {
        deliver(&mut b, &mut a, now, 1);
        deliver(&mut a, &mut b, now, 1);
    }
    let (ca, cb) = (connected(&events(&mut a)), connected(&events(&mut b)));
    assert_eq!((ca.len(), cb.len()), (1, 1));
    assert_eq!(ca[0].id, cb[0].id);
    assert_eq!(ca[0].id.initiator, id(1));
}

#[test]
fn a_silent_peer_fails_at_the_deadline_after_backed_off_retries() {
    let mut a = ep(1);
    a.connect(100, id(2), Addr::from_u64(2)).unwrap();
    let mut sent_at: Vec<u64> = drain(&mut a, 100).iter().map(|_| 100).collect();
    while let Some(t) = a.poll_timeout() {
        assert!(t <= 100 + CONFIG.timeout);
        a.handle_timeout(t);
        sent_at.extend(drain(&mut a, t).iter().map(|_| t));
        if !events(&mut a).is_empty() {
            assert_eq!(t, 100 + CONFIG.timeout);
            break;
        }
    }
    assert_eq!(a.peers(), 0, "a polled failure leaves no state");
    // Retries after 10, 20, 40, then every 40 (the cap) until the deadline at 600.
    assert_eq!(&sent_at[..5], &[100, 110, 130, 170, 210]);
    assert_eq!(*sent_at.last().unwrap(), 570);
}

#[test]
fn forged_misdirected_and_stale_datagrams_change_nothing() {
    let (mut a, mut b) = (ep(1), ep(2));
    let mut thief =
        Endpoint::<4>::new(id(1), Addr::from_u64(9), Config { token: 7, ..CONFIG }, 5).unwrap();
    thief.connect(0, id(2), Addr::from_u64(2)).unwrap();
    deliver(&mut thief, &mut b, 0, 1);
    assert_eq!((b.peers(), b.stats().bad_token), (0, 1));

    a.connect(0, id(2), Addr::from_u64(2)).unwrap();
    let request = drain(&mut a, 0).pop().unwrap();
    let mut c = ep(3);
    c.handle_datagram(0, Addr::from_u64(1), request.payload());
    assert_eq!((c.peers(), c.stats().misdirected), (0, 1));

    b.handle_datagram(0, Addr::from_u64(1), request.payload());
    let accept = drain(&mut b, 0).pop().unwrap();
    let mut forged = std::vec::Vec::from(accept.payload());
    forged[33] ^= 1; // the initiator nonce
    a.handle_datagram(0, Addr::from_u64(2), &forged);
    assert_eq!((a.peer_state(id(2)), a.stats().bad_nonce), (Some(PeerState::Connecting), 1));
    a.handle_datagram(0, Addr::from_u64(2), &forged[..20]);
    assert_eq!(a.stats().malformed, 1);
    // The real accept still works, and a confirm for a handshake nobody began does nothing.
    a.handle_datagram(0, Addr::from_u64(2), accept.payload());
    let confirm = drain(&mut a, 0).pop().unwrap();
    c.handle_datagram(0, Addr::from_u64(1), confirm.payload());
    assert_eq!(c.stats().misdirected, 2);
    b.handle_datagram(0, Addr::from_u64(1), confirm.payload());
    b.handle_datagram(0, Addr::from_u64(1), request.payload());
    assert_eq!(b.stats().duplicates, 1, "a late request of the finished handshake");
    assert_eq!(connected(&events(&mut b)).len(), 1);
}

#[test]
fn a_full_table_refuses_with_its_capacity() {
    let mut a = ep(0);
    for p in 1..=4 {
        a.connect(0, id(p), Addr::from_u64(p.into())).unwrap();
    }
    let err = a.connect(0, id(5), Addr::from_u64(5)).unwrap_err();
    assert_eq!(err, ConnError::TableFull { capacity: 4 });
    assert!(std::format!("{err}").contains("4 peers"));
    let mut e = ep(5);
    e.connect(0, id(0), Addr::from_u64(0)).unwrap();
    deliver(&mut e, &mut a, 0, 1);
    assert_eq!(a.stats().table_full, 1);
    assert_eq!(a.connect(0, id(0), Addr::from_u64(0)), Err(ConnError::SelfConnect));
    assert!(a.close(id(4)));
    assert_eq!(a.connect(0, id(5), Addr::from_u64(5)), Ok(ConnectOutcome::Started));
}

#[test]
fn timers_must_be_ordered() {
    for bad in [
        Config { initial_retry: 0, ..CONFIG },
        Config { max_retry: 5, ..CONFIG },
        Config { timeout: 20, ..CONFIG },
    ] {
        assert_eq!(Ep::new(id(0), Addr::EMPTY, bad, 0).unwrap_err(), ConnError::BadConfig);
    }
    assert_eq!(Config::micros(1).retry_after(200), Config::micros(1).max_retry);
}

fn connect_pair(a: &mut Ep, b: &mut Ep, now: u64) {
    a.connect(now, b.local(), Addr::from_u64(b.local().lpid.into())).unwrap();
    for _ in 0..3 {
        deliver(a, b, now, 1);
        deliver(b, a, now, 1);
    }
    assert!(a.connection(b.local()).is_some() && b.connection(a.local()).is_some());
}

#[test]
fn a_request_begun_before_the_connection_is_stale_and_one_begun_after_supersedes_it() {
    let (mut a, mut b) = (ep(1), ep(2));
    // b's own attempt loses the tie-break; its request arrives after the connection is up.
    b.connect(0, id(1), Addr::from_u64(1)).unwrap();
    let late = drain(&mut b, 0);
    connect_pair(&mut a, &mut b, 0);
    let _ = events(&mut a);
    let old = a.connection(id(2)).unwrap().id;
    for d in &late {
        a.handle_datagram(1, Addr::from_u64(2), d.payload());
    }
    assert_eq!(a.connection(id(2)).map(|c| c.id), Some(old), "a stale request changes nothing");
    assert_eq!(a.stats().unsolicited, 1);
    // b closes its side and connects again: a reports the old connection gone, then the new.
    assert!(b.close(id(1)));
    b.connect(5, id(1), Addr::from_u64(1)).unwrap();
    for _ in 0..3 {
        deliver(&mut b, &mut a, 5, 1);
        deliver(&mut a, &mut b, 5, 1);
    }
    let got = events(&mut a);
    assert_eq!(got[0], Event::Superseded { peer: id(2), id: old });
    let Event::Connected(new) = got[1] else { panic!("{got:?}") };
    assert_eq!(new.id.initiator, id(2));
    assert_eq!(Some(new.id), b.connection(id(1)).map(|c| c.id));
}

#[test]
fn connect_while_accepting_a_stale_request_begins_its_own_attempt_when_that_one_fails() {
    let (mut a, mut b) = (ep(1), ep(2));
    // A request of b's that b no longer waits on (b's side was closed since).
    b.connect(0, id(1), Addr::from_u64(1)).unwrap();
    let stale = drain(&mut b, 0).pop().unwrap();
    b.close(id(1));
    a.handle_datagram(0, Addr::from_u64(2), stale.payload());
    assert_eq!(a.connect(10, id(2), Addr::from_u64(2)), Ok(ConnectOutcome::InProgress));
    drain(&mut a, 10); // accepts to b, which has forgotten the attempt
    a.handle_timeout(CONFIG.timeout);
    assert_eq!(a.peer_state(id(2)), Some(PeerState::Connecting));
    assert!(events(&mut a).is_empty(), "no failure: the own attempt goes on");
    for _ in 0..3 {
        deliver(&mut a, &mut b, CONFIG.timeout, 1);
        deliver(&mut b, &mut a, CONFIG.timeout, 1);
    }
    let c = connected(&events(&mut a));
    assert_eq!(c.len(), 1);
    assert_eq!(Some(c[0].id), b.connection(id(1)).map(|c| c.id));
}

#[test]
fn confirms_answer_the_path_the_latest_accept_came_by() {
    let (mut a, mut b) = (ep(1), ep(2));
    a.connect(0, id(2), Addr::from_u64(2)).unwrap();
    deliver(&mut a, &mut b, 0, 1);
    let accept = drain(&mut b, 0).pop().unwrap();
    // A copy replayed from elsewhere arrives first; the confirm goes there and is lost.
    a.handle_datagram(0, Addr::from_u64(99), accept.payload());
    assert_eq!(drain(&mut a, 0)[0].to, Addr::from_u64(99));
    // b repeats its accept; a answers where the repeat came from.
    b.handle_timeout(b.poll_timeout().unwrap());
    deliver(&mut b, &mut a, 20, 1);
    let confirm = drain(&mut a, 20).pop().unwrap();
    assert_eq!(confirm.to, Addr::from_u64(2));
    b.handle_datagram(20, Addr::from_u64(1), confirm.payload());
    assert_eq!(b.peer_state(id(1)), Some(PeerState::Established));
}

#[test]
fn a_superseded_connection_is_reported_even_when_events_wait_through_more_handshakes() {
    let (mut a, mut b) = (ep(1), ep(2));
    connect_pair(&mut a, &mut b, 0);
    let first = connected(&events(&mut a))[0].id;
    // b reconnects twice while a polls no event in between.
    for now in [5, 10] {
        b.close(id(1));
        b.connect(now, id(1), Addr::from_u64(1)).unwrap();
        for _ in 0..3 {
            deliver(&mut b, &mut a, now, 1);
            deliver(&mut a, &mut b, now, 1);
        }
    }
    let newest = b.connection(id(1)).unwrap().id;
    let got = events(&mut a);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], Event::Superseded { peer: id(2), id: first });
    assert!(matches!(got[1], Event::Connected(c) if c.id == newest), "{got:?}");
}

#[test]
fn a_confirm_sent_before_the_peer_reconnected_does_not_revive_its_old_connection() {
    for confirmed_first in [false, true] {
        let (mut a, mut b) = (ep(1), ep(2));
        a.connect(0, id(2), Addr::from_u64(2)).unwrap();
        deliver(&mut a, &mut b, 0, 1);
        deliver(&mut b, &mut a, 0, 1);
        // a is connected on the accept; its confirm is held back (delayed on an old path).
        let old_confirm = drain(&mut a, 0).pop().unwrap();
        let old = connected(&events(&mut a))[0].id;
        if confirmed_first {
            b.handle_datagram(0, Addr::from_u64(1), old_confirm.payload());
            assert_eq!(connected(&events(&mut b))[0].id, old);
        }
        // a closes its side and connects again; b answers the new request.
        assert!(a.close(id(2)));
        a.connect(1, id(2), Addr::from_u64(2)).unwrap();
        deliver(&mut a, &mut b, 1, 1);
        assert_eq!(b.peer_state(id(1)), Some(PeerState::Accepting));
        deliver(&mut b, &mut a, 1, 1);
        let new = a.connection(id(2)).unwrap().id;
        let new_confirm = drain(&mut a, 1).pop().unwrap();
        // The old confirm arrives late: a gave that connection up, so b must not take it.
        let bad_nonce = b.stats().bad_nonce;
        b.handle_datagram(2, Addr::from_u64(1), old_confirm.payload());
        assert_eq!(b.peer_state(id(1)), Some(PeerState::Accepting), "revived {old:?}");
        assert_eq!(b.stats().bad_nonce, bad_nonce + 1);
        b.handle_datagram(2, Addr::from_u64(1), new_confirm.payload());
        assert_eq!(b.connection(id(1)).map(|c| c.id), Some(new));
        let got = events(&mut b);
        let want_connected = Event::Connected(b.connection(id(1)).unwrap());
        if confirmed_first {
            assert_eq!(got, [Event::Superseded { peer: id(1), id: old }, want_connected]);
        } else {
            assert_eq!(got, [want_connected]);
        }
    }
}

#[test]
fn a_stale_request_and_confirm_after_the_responder_closed_do_not_revive_the_old_connection() {
    let (mut a, mut b) = (ep(1), ep(2));
    a.connect(0, id(2), Addr::from_u64(2)).unwrap();
    // The request and, later, the confirm are kept, as a network that duplicates would.
    let old_request = drain(&mut a, 0).pop().unwrap();
    b.handle_datagram(0, Addr::from_u64(1), old_request.payload());
    deliver(&mut b, &mut a, 0, 1);
    let old_confirm = drain(&mut a, 0).pop().unwrap();
    b.handle_datagram(0, Addr::from_u64(1), old_confirm.payload());
    let old = connected(&events(&mut a))[0].id;
    assert_eq!(connected(&events(&mut b))[0].id, old);
    // b closes its side; the copies of a's old request and confirm arrive after.
    assert!(b.close(id(1)));
    b.handle_datagram(1, Addr::from_u64(1), old_request.payload());
    assert_eq!(b.peer_state(id(1)), Some(PeerState::Accepting));
    let bad_nonce = b.stats().bad_nonce;
    b.handle_datagram(1, Addr::from_u64(1), old_confirm.payload());
    assert_eq!(b.connection(id(1)), None, "b took up {old:?} again, which a may have left");
    assert_eq!(b.stats().bad_nonce, bad_nonce + 1);
    assert!(events(&mut b).is_empty());
}

#[test]
fn per_peer_announced_addresses_reach_the_other_end_and_reset_with_the_handshake() {
    let (mut a, mut b) = (ep(1), ep(2));
    a.connect(0, id(2), Addr::from_u64(2)).unwrap();
    assert_eq!(a.unannounced(), Some((id(2), Addr::EMPTY)));
    assert!(a.announce(id(2), Addr::from_u64(0xa1)));
    assert_eq!(a.unannounced(), None);
    assert!(!a.announce(id(3), Addr::from_u64(0xa3)), "no state for 3");
    deliver(&mut a, &mut b, 0, 1);
    // b accepts: it is asked for its own address, and learns a's.
    assert_eq!(b.unannounced(), Some((id(1), Addr::from_u64(0xa1))));
    b.announce(id(1), Addr::from_u64(0xb1));
    deliver(&mut b, &mut a, 0, 1);
    deliver(&mut a, &mut b, 0, 1);
    let at_a = a.connection(id(2)).unwrap();
    let at_b = b.connection(id(1)).unwrap();
    assert_eq!(at_a.peer_addr, Addr::from_u64(0xb1));
    assert_eq!(at_b.peer_addr, Addr::from_u64(0xa1));
    assert_eq!((a.unannounced(), b.unannounced()), (None, None), "connected: nothing asked");
    // a closes and connects again: a fresh handshake asks for a fresh address on both ends.
    a.close(id(2));
    a.connect(1, id(2), Addr::from_u64(2)).unwrap();
    assert_eq!(a.unannounced(), Some((id(2), Addr::EMPTY)));
    a.announce(id(2), Addr::from_u64(0xa2));
    deliver(&mut a, &mut b, 1, 1);
    assert_eq!(b.unannounced(), Some((id(1), Addr::from_u64(0xa2))));
}

#[test]
fn without_announcing_the_endpoint_address_is_sent() {
    let (mut a, mut b) = (ep(1), ep(2));
    connect_pair(&mut a, &mut b, 0);
    assert_eq!(a.connection(id(2)).unwrap().peer_addr, Addr::from_u64(2));
    assert_eq!(b.connection(id(1)).unwrap().peer_addr, Addr::from_u64(1));
}
