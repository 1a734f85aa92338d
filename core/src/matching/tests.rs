//! Unit tests of the matching rules, and a property test against a naive model.

use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;

type Small = Matcher<u32, u32, 4, 4>;

fn env(context: u32, source: u32, tag: i32) -> Envelope {
    Envelope { context, source, tag }
}

fn any_any(context: u32) -> Pattern {
    Pattern { context, source: SourceSel::Any, tag: TagSel::Any }
}

fn matched<R, M>(p: Posting<R, M>) -> Matched<R, M> {
    match p {
        Posting::Matched(m) => m,
        Posting::Queued(_) => panic!("expected a match"),
    }
}

fn arrived<R, M>(a: Arrival<R, M>) -> Matched<R, M> {
    match a {
        Arrival::Matched(m) => m,
        Arrival::Queued => panic!("expected a match"),
    }
}

#[test]
fn messages_of_one_sender_are_received_in_order_by_a_wildcard() {
    let mut m = Small::new();
    m.arrive(env(1, 3, 7), 8, 100).unwrap();
    m.arrive(env(1, 3, 9), 8, 101).unwrap();
    let first = matched(m.post_recv(any_any(1), 8, 0).unwrap());
    let second = matched(m.post_recv(any_any(1), 8, 1).unwrap());
    assert_eq!((first.message, first.envelope.tag), (100, 7));
    assert_eq!((second.message, second.envelope.tag), (101, 9));
}

#[test]
fn a_specific_tag_skips_older_messages_of_other_tags() {
    let mut m = Small::new();
    m.arrive(env(1, 3, 7), 8, 100).unwrap();
    m.arrive(env(1, 3, 9), 8, 101).unwrap();
    let nine = matched(m.post_recv(Pattern::exact(1, 3, 9), 8, 0).unwrap());
    assert_eq!(nine.message, 101);
    assert_eq!(m.probe(&any_any(1)), Some((env(1, 3, 7), 8)));
}

#[test]
fn receives_are_satisfied_in_posting_order() {
    let mut m = Small::new();
    let Posting::Queued(_) = m.post_recv(any_any(1), 8, 10).unwrap() else { panic!() };
    let Posting::Queued(_) = m.post_recv(Pattern::exact(1, 2, 5), 8, 11).unwrap() else { panic!() };
    assert_eq!(arrived(m.arrive(env(1, 2, 5), 8, 100).unwrap()).recv, 10);
    assert_eq!(arrived(m.arrive(env(1, 2, 5), 8, 101).unwrap()).recv, 11);
    assert_eq!(m.posted_len(), 0);
}

#[test]
fn contexts_never_match_each_other() {
    let mut m = Small::new();
    m.post_recv(any_any(1), 8, 10).unwrap();
    assert_eq!(m.arrive(env(2, 0, 0), 8, 100).unwrap(), Arrival::Queued);
    assert_eq!(m.probe(&any_any(1)), None);
    assert_eq!(m.probe(&any_any(2)), Some((env(2, 0, 0), 8)));
}

#[test]
fn a_long_message_is_truncated_to_the_capacity() {
    let mut m = Small::new();
    m.arrive(env(0, 0, 0), 100, 1).unwrap();
    let t = matched(m.post_recv(any_any(0), 40, 0).unwrap());
    assert!(t.truncated);
    assert_eq!((t.len, t.received), (100, 40));
    m.post_recv(any_any(0), 100, 0).unwrap();
    let exact = arrived(m.arrive(env(0, 0, 0), 100, 2).unwrap());
    assert!(!exact.truncated);
    assert_eq!(exact.received, 100);
}

#[test]
fn cancel_removes_only_an_unmatched_receive() {
    let mut m = Small::new();
    let Posting::Queued(a) = m.post_recv(any_any(0), 8, 10).unwrap() else { panic!() };
    let Posting::Queued(b) = m.post_recv(any_any(0), 8, 11).unwrap() else { panic!() };
    assert_eq!(m.cancel(a), Some(10));
    assert_eq!(m.cancel(a), None);
    assert_eq!(arrived(m.arrive(env(0, 0, 0), 8, 100).unwrap()).recv, 11);
    assert_eq!(m.cancel(b), None, "b matched already");
}

#[test]
fn full_queues_name_their_capacity_and_still_match() {
    let mut m = Matcher::<u32, u32, 2, 3>::new();
    for i in 0..2 {
        m.post_recv(Pattern::exact(0, 9, 9), 8, i).unwrap();
    }
    let err = m.post_recv(any_any(0), 8, 2).unwrap_err();
    assert_eq!(err, MatchError::PostedFull { capacity: 2 });
    assert!(std::format!("{err}").contains("2 receives"));
    for i in 0..3 {
        m.arrive(env(0, 1, 1), 8, i).unwrap();
    }
    assert_eq!(
        m.arrive(env(0, 1, 1), 8, 3).unwrap_err(),
        MatchError::UnexpectedFull { capacity: 3 }
    );
    // A message that matches a posted receive needs no room in the unexpected queue.
    assert_eq!(arrived(m.arrive(env(0, 9, 9), 8, 4).unwrap()).recv, 0);
    // A receive that matches an unexpected message needs no room in the posted queue.
    m.post_recv(Pattern::exact(0, 9, 9), 8, 5).unwrap();
    assert_eq!(matched(m.post_recv(any_any(0), 8, 6).unwrap()).message, 0);
}

fn model_match(
    recv: u32,
    cap: u64,
    message: u32,
    envelope: Envelope,
    len: u64,
) -> Matched<u32, u32> {
    Matched { recv, message, envelope, len, received: len.min(cap), truncated: len > cap }
}

/// The naive model: every receive and message carries a global sequence number in a
/// `BTreeMap`, and a match takes the lowest sequence number that matches.
#[derive(Default)]
struct Model {
    seq: u64,
    posted: BTreeMap<u64, (RecvId, Pattern, u64, u32)>,
    unexpected: BTreeMap<u64, (Envelope, u64, u32)>,
    next_id: u64,
}

impl Model {
    fn post(
        &mut self,
        p: Pattern,
        cap: u64,
        h: u32,
        room: usize,
    ) -> Result<Posting<u32, u32>, MatchError> {
        let hit = self.unexpected.iter().find(|(_, (e, _, _))| p.matches(e)).map(|(s, _)| *s);
        if let Some(s) = hit {
            let (e, len, mh) = self.unexpected.remove(&s).unwrap();
            return Ok(Posting::Matched(model_match(h, cap, mh, e, len)));
        }
        if self.posted.len() == room {
            return Err(MatchError::PostedFull { capacity: room });
        }
        let id = RecvId(self.next_id);
        self.next_id += 1;
        self.seq += 1;
        self.posted.insert(self.seq, (id, p, cap, h));
        Ok(Posting::Queued(id))
    }

    fn arrive(
        &mut self,
        e: Envelope,
        len: u64,
        h: u32,
        room: usize,
    ) -> Result<Arrival<u32, u32>, MatchError> {
        let hit = self.posted.iter().find(|(_, (_, p, _, _))| p.matches(&e)).map(|(s, _)| *s);
        if let Some(s) = hit {
            let (_, _, cap, rh) = self.posted.remove(&s).unwrap();
            return Ok(Arrival::Matched(model_match(rh, cap, h, e, len)));
        }
        if self.unexpected.len() == room {
            return Err(MatchError::UnexpectedFull { capacity: room });
        }
        self.seq += 1;
        self.unexpected.insert(self.seq, (e, len, h));
        Ok(Arrival::Queued)
    }

    fn cancel(&mut self, id: RecvId) -> Option<u32> {
        let s = self.posted.iter().find(|(_, (i, ..))| *i == id).map(|(s, _)| *s)?;
        self.posted.remove(&s).map(|(.., h)| h)
    }
}

#[derive(Clone, Debug)]
enum Op {
    Post { context: u32, source: Option<u32>, tag: Option<i32>, cap: u64 },
    Arrive { context: u32, source: u32, tag: i32, len: u64 },
    Cancel(u64),
    Probe { context: u32, source: Option<u32>, tag: Option<i32> },
}

fn pattern(context: u32, source: Option<u32>, tag: Option<i32>) -> Pattern {
    Pattern {
        context,
        source: source.map_or(SourceSel::Any, SourceSel::Rank),
        tag: tag.map_or(TagSel::Any, TagSel::Tag),
    }
}

fn op() -> impl Strategy<Value = Op> {
    // Few contexts, sources and tags, so that matches and wildcard choices are frequent.
    prop_oneof![
        (0..2u32, proptest::option::of(0..3u32), proptest::option::of(0..3i32), 0..16u64)
            .prop_map(|(context, source, tag, cap)| Op::Post { context, source, tag, cap }),
        (0..2u32, 0..3u32, 0..3i32, 0..16u64).prop_map(|(context, source, tag, len)| Op::Arrive {
            context,
            source,
            tag,
            len
        }),
        (0..24u64).prop_map(Op::Cancel),
        (0..2u32, proptest::option::of(0..3u32), proptest::option::of(0..3i32))
            .prop_map(|(context, source, tag)| Op::Probe { context, source, tag }),
    ]
}

proptest! {
    // Slow under miri, and core has no unsafe code for it to check here.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn matcher_agrees_with_the_naive_model(ops in proptest::collection::vec(op(), 0..200)) {
        let mut m = Matcher::<u32, u32, 6, 5>::new();
        let mut model = Model::default();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (h, op) in ops.into_iter().enumerate() {
            let h = h as u32;
            match op {
                Op::Post { context, source, tag, cap } => {
                    let p = pattern(context, source, tag);
                    let got = m.post_recv(p, cap, h);
                    prop_assert_eq!(got, model.post(p, cap, h, 6));
                    if let Ok(Posting::Matched(x)) = got {
                        // Non-overtaking: no older message of this sender that the receive
                        // also matches is left behind (handles grow with arrival order).
                        let older = model.unexpected.values().any(|(e, _, mh)| {
                            e.source == x.envelope.source && p.matches(e) && *mh < x.message
                        });
                        prop_assert!(!older);
                        pairs.push((x.recv, x.message));
                    }
                }
                Op::Arrive { context, source, tag, len } => {
                    let e = env(context, source, tag);
                    let got = m.arrive(e, len, h);
                    prop_assert_eq!(got, model.arrive(e, len, h, 5));
                    if let Ok(Arrival::Matched(x)) = got { pairs.push((x.recv, x.message)); }
                }
                Op::Cancel(id) => prop_assert_eq!(m.cancel(RecvId(id)), model.cancel(RecvId(id))),
                Op::Probe { context, source, tag } => {
                    let p = pattern(context, source, tag);
                    let want = model
                        .unexpected
                        .values()
                        .find(|(e, ..)| p.matches(e))
                        .map(|(e, l, _)| (*e, *l));
                    prop_assert_eq!(m.probe(&p), want);
                }
            }
            prop_assert_eq!(m.posted_len(), model.posted.len());
            prop_assert_eq!(m.unexpected_len(), model.unexpected.len());
        }
        // Every handle matched at most once, on either side.
        let mut recvs: Vec<u32> = pairs.iter().map(|p| p.0).collect();
        let mut msgs: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        recvs.sort_unstable();
        msgs.sort_unstable();
        let n = recvs.len();
        recvs.dedup();
        msgs.dedup();
        prop_assert_eq!((recvs.len(), msgs.len()), (n, n));
    }
}
