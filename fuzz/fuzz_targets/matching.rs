#![no_main]
//! Arbitrary posts, arrivals, cancels and probes on a small matcher, against a model that
//! keeps everything in one list in arrival order and takes the first entry that matches.
//! Every outcome, error and queue length must agree; every receive and message matches at
//! most once.

use arbitrary::Arbitrary;
use commcore::matching::{
    Arrival, Envelope, MatchError, Matched, Matcher, Pattern, Posting, RecvId, SourceSel, TagSel,
};
use libfuzzer_sys::fuzz_target;

const POSTED: usize = 5;
const UNEXPECTED: usize = 7;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Op {
    Post { context: u8, source: Option<u8>, tag: Option<i8>, capacity: u8 },
    Arrive { context: u8, source: u8, tag: i8, len: u8 },
    Cancel(u8),
    Probe { context: u8, source: Option<u8>, tag: Option<i8> },
}

fn pattern(context: u8, source: Option<u8>, tag: Option<i8>) -> Pattern {
    Pattern {
        context: u32::from(context % 3),
        source: source.map_or(SourceSel::Any, |s| SourceSel::Rank(u32::from(s % 4))),
        tag: tag.map_or(TagSel::Any, |t| TagSel::Tag(i32::from(t % 4))),
    }
}

/// One list of everything waiting, in the order it was queued.
#[derive(Clone, Copy)]
enum Waiting {
    Recv { id: u64, pattern: Pattern, capacity: u64, handle: u32 },
    Msg { envelope: Envelope, len: u64, handle: u32 },
}

#[derive(Default)]
struct Model {
    waiting: Vec<Waiting>,
    next_id: u64,
}

impl Model {
    fn count(&self, recvs: bool) -> usize {
        self.waiting.iter().filter(|w| matches!(w, Waiting::Recv { .. }) == recvs).count()
    }

    fn matched(
        recv: u32,
        capacity: u64,
        message: u32,
        envelope: Envelope,
        len: u64,
    ) -> Matched<u32, u32> {
        Matched {
            recv,
            message,
            envelope,
            len,
            received: len.min(capacity),
            truncated: len > capacity,
        }
    }

    fn post(
        &mut self,
        pattern: Pattern,
        capacity: u64,
        handle: u32,
    ) -> Result<Posting<u32, u32>, MatchError> {
        let hit = self.waiting.iter().position(|w| match w {
            Waiting::Msg { envelope, .. } => pattern.matches(envelope),
            Waiting::Recv { .. } => false,
        });
        if let Some(k) = hit {
            let Waiting::Msg { envelope, len, handle: m } = self.waiting.remove(k) else {
                unreachable!()
            };
            return Ok(Posting::Matched(Self::matched(handle, capacity, m, envelope, len)));
        }
        if self.count(true) == POSTED {
            return Err(MatchError::PostedFull { capacity: POSTED });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.waiting.push(Waiting::Recv { id, pattern, capacity, handle });
        Ok(Posting::Queued(RecvId(id)))
    }

    fn arrive(
        &mut self,
        envelope: Envelope,
        len: u64,
        handle: u32,
    ) -> Result<Arrival<u32, u32>, MatchError> {
        let hit = self.waiting.iter().position(|w| match w {
            Waiting::Recv { pattern, .. } => pattern.matches(&envelope),
            Waiting::Msg { .. } => false,
        });
        if let Some(k) = hit {
            let Waiting::Recv { capacity, handle: r, .. } = self.waiting.remove(k) else {
                unreachable!()
            };
            return Ok(Arrival::Matched(Self::matched(r, capacity, handle, envelope, len)));
        }
        if self.count(false) == UNEXPECTED {
            return Err(MatchError::UnexpectedFull { capacity: UNEXPECTED });
        }
        self.waiting.push(Waiting::Msg { envelope, len, handle });
        Ok(Arrival::Queued)
    }

    fn cancel(&mut self, target: u64) -> Option<u32> {
        let k = self
            .waiting
            .iter()
            .position(|w| matches!(w, Waiting::Recv { id, .. } if *id == target))?;
        match self.waiting.remove(k) {
            Waiting::Recv { handle, .. } => Some(handle),
            Waiting::Msg { .. } => None,
        }
    }

    fn probe(&self, pattern: &Pattern) -> Option<(Envelope, u64)> {
        self.waiting.iter().find_map(|w| match w {
            Waiting::Msg { envelope, len, .. } if pattern.matches(envelope) => {
                Some((*envelope, *len))
            }
            _ => None,
        })
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let mut m = Matcher::<u32, u32, POSTED, UNEXPECTED>::new();
    let mut model = Model::default();
    let mut used_recvs = std::collections::HashSet::new();
    let mut used_msgs = std::collections::HashSet::new();
    for (handle, op) in ops.into_iter().take(1000).enumerate() {
        let handle = handle as u32;
        let matched = match op {
            Op::Post { context, source, tag, capacity } => {
                let p = pattern(context, source, tag);
                let got = m.post_recv(p, u64::from(capacity), handle);
                assert_eq!(got, model.post(p, u64::from(capacity), handle), "{op:?}");
                match got {
                    Ok(Posting::Matched(x)) => Some(x),
                    _ => None,
                }
            }
            Op::Arrive { context, source, tag, len } => {
                let e = Envelope {
                    context: u32::from(context % 3),
                    source: u32::from(source % 4),
                    tag: i32::from(tag % 4),
                };
                let got = m.arrive(e, u64::from(len), handle);
                assert_eq!(got, model.arrive(e, u64::from(len), handle), "{op:?}");
                match got {
                    Ok(Arrival::Matched(x)) => Some(x),
                    _ => None,
                }
            }
            Op::Cancel(id) => {
                let id = u64::from(id);
                assert_eq!(m.cancel(RecvId(id)), model.cancel(id), "{op:?}");
                None
            }
            Op::Probe { context, source, tag } => {
                let p = pattern(context, source, tag);
                assert_eq!(m.probe(&p), model.probe(&p), "{op:?}");
                None
            }
        };
        if let Some(x) = matched {
            assert!(used_recvs.insert(x.recv) && used_msgs.insert(x.message));
            assert!(x.received <= x.len && x.truncated == (x.received < x.len));
        }
        assert_eq!(m.posted_len(), model.count(true));
        assert_eq!(m.unexpected_len(), model.count(false));
    }
});
