//! The user's control string: which components may run, their priorities, and algorithms
//! forced per operation and message-size range. A platform reads it from the environment
//! or a communicator's info key; nothing needs recompiling.
//!
//! Grammar: items separated by `;` (blanks around items are ignored):
//! - `coll=^a,b` excludes components `a` and `b`; `coll=a,b` allows only `a` and `b`
//!   (Open MPI's `--mca coll` lists);
//! - `NAME.priority=N` sets component `NAME`'s priority (0–100);
//! - `OP:ALG[@LO-HI][,ALG@LO-HI]…` forces algorithm `ALG` for operation `OP` when the
//!   message size in bytes is in `[LO, HI]` (UCC's `coll:range` tune strings); bounds take a
//!   `k`/`m`/`g` suffix, `HI` may be `inf`, no range means every size.
//!
//! Example: `coll=^hier; tuned.priority=90; allreduce:recursive_doubling@0-4k,ring@4k-inf`.

use core::fmt;

use heapless::Vec;

use super::args::{Algorithm, CollOp};

/// Components an include or exclude list may name.
pub const MAX_NAMES: usize = 8;
/// Forced ranges over all operations.
pub const MAX_FORCES: usize = 32;

/// Why a control string was refused; `token` is the offending part of the string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlError<'s> {
    /// What is wrong.
    pub kind: ControlErrorKind,
    /// The offending token.
    pub token: &'s str,
}

/// What is wrong with a control string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlErrorKind {
    /// An item is none of the three forms.
    BadItem,
    /// A component name that no component has.
    UnknownComponent,
    /// An operation name that does not exist.
    UnknownOperation,
    /// An algorithm name that does not exist.
    UnknownAlgorithm,
    /// The algorithm does not implement the operation.
    AlgorithmNotForOperation,
    /// A priority that is not an integer in 0–100.
    BadPriority,
    /// A size range that does not parse or is empty.
    BadRange,
    /// Both an include list and an exclude list.
    IncludeAndExclude,
    /// More names or ranges than fit.
    TooMany,
}

impl fmt::Display for ControlError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            ControlErrorKind::BadItem => "not a component list, priority or algorithm item",
            ControlErrorKind::UnknownComponent => "unknown collective component",
            ControlErrorKind::UnknownOperation => "unknown collective operation",
            ControlErrorKind::UnknownAlgorithm => "unknown algorithm",
            ControlErrorKind::AlgorithmNotForOperation => "algorithm does not implement operation",
            ControlErrorKind::BadPriority => "priority must be an integer from 0 to 100",
            ControlErrorKind::BadRange => "bad message size range",
            ControlErrorKind::IncludeAndExclude => "cannot both include and exclude components",
            ControlErrorKind::TooMany => "too many entries",
        };
        write!(f, "{what}: `{}`", self.token)
    }
}

/// One forced algorithm: `alg` for `op` when the message is `lo..=hi` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Force {
    /// The operation.
    pub op: CollOp,
    /// The algorithm.
    pub alg: Algorithm,
    /// Smallest message, bytes.
    pub lo: usize,
    /// Largest message, bytes.
    pub hi: usize,
}

/// A parsed control string; borrows names from it.
#[derive(Clone, Debug, Default)]
pub struct Control<'s> {
    include: Option<Vec<&'s str, MAX_NAMES>>,
    exclude: Vec<&'s str, MAX_NAMES>,
    priorities: Vec<(&'s str, u8), MAX_NAMES>,
    forces: Vec<Force, MAX_FORCES>,
}

fn err(kind: ControlErrorKind, token: &str) -> ControlError<'_> {
    ControlError { kind, token }
}

impl<'s> Control<'s> {
    /// No control: every component at its default priority, nothing forced.
    pub fn none() -> Self {
        Self::default()
    }

    /// Parses `text`; component names must be among `components`.
    pub fn parse(text: &'s str, components: &[&str]) -> Result<Self, ControlError<'s>> {
        let mut out = Self::default();
        for item in text.split(';').map(str::trim).filter(|i| !i.is_empty()) {
            if let Some(list) = item.strip_prefix("coll=") {
                out.components(list.trim(), components)?;
            } else if let Some((name, value)) = item.split_once(".priority=") {
                let name = name.trim();
                if !components.contains(&name) {
                    return Err(err(ControlErrorKind::UnknownComponent, name));
                }
                let value = value.trim();
                let p: u8 = value.parse().map_err(|_| err(ControlErrorKind::BadPriority, value))?;
                if p > 100 {
                    return Err(err(ControlErrorKind::BadPriority, value));
                }
                out.priorities.push((name, p)).map_err(|_| err(ControlErrorKind::TooMany, item))?;
            } else if let Some((op, algs)) = item.split_once(':') {
                let op_name = op.trim();
                let op = CollOp::from_name(op_name)
                    .ok_or(err(ControlErrorKind::UnknownOperation, op_name))?;
                for part in algs.split(',').map(str::trim) {
                    out.force(op, part)?;
                }
            } else {
                return Err(err(ControlErrorKind::BadItem, item));
            }
        }
        Ok(out)
    }

    fn components(&mut self, list: &'s str, known: &[&str]) -> Result<(), ControlError<'s>> {
        let (excluding, names) = match list.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, list),
        };
        if (excluding && self.include.is_some()) || (!excluding && !self.exclude.is_empty()) {
            return Err(err(ControlErrorKind::IncludeAndExclude, list));
        }
        let mut include: Vec<&'s str, MAX_NAMES> = self.include.take().unwrap_or_default();
        for name in names.split(',').map(str::trim) {
            if !known.contains(&name) {
                return Err(err(ControlErrorKind::UnknownComponent, name));
            }
            let target = if excluding { &mut self.exclude } else { &mut include };
            target.push(name).map_err(|_| err(ControlErrorKind::TooMany, name))?;
        }
        if !excluding {
            self.include = Some(include);
        }
        Ok(())
    }

    fn force(&mut self, op: CollOp, part: &'s str) -> Result<(), ControlError<'s>> {
        let (name, range) = match part.split_once('@') {
            Some((n, r)) => (n.trim(), Some(r.trim())),
            None => (part, None),
        };
        let alg =
            Algorithm::from_name(name).ok_or(err(ControlErrorKind::UnknownAlgorithm, name))?;
        if !alg.implements(op) {
            return Err(err(ControlErrorKind::AlgorithmNotForOperation, part));
        }
        let (lo, hi) = match range {
            None => (0, usize::MAX),
            Some(r) => {
                let bad = || err(ControlErrorKind::BadRange, r);
                let (lo, hi) = r.split_once('-').ok_or_else(bad)?;
                let lo = size(lo.trim()).ok_or_else(bad)?;
                let hi = size(hi.trim()).ok_or_else(bad)?;
                if lo > hi {
                    return Err(bad());
                }
                (lo, hi)
            }
        };
        self.forces
            .push(Force { op, alg, lo, hi })
            .map_err(|_| err(ControlErrorKind::TooMany, part))
    }

    /// Whether component `name` may be used.
    pub fn allows(&self, name: &str) -> bool {
        if self.exclude.contains(&name) {
            return false;
        }
        match &self.include {
            Some(list) => list.contains(&name),
            None => true,
        }
    }

    /// The priority set for `name`, if any.
    pub fn priority(&self, name: &str) -> Option<u8> {
        self.priorities.iter().rev().find(|(n, _)| *n == name).map(|(_, p)| *p)
    }

    /// Every forced range, in the order given.
    pub fn forces(&self) -> &[Force] {
        &self.forces
    }
}

/// A byte count with an optional `k`, `m` or `g` suffix (powers of 1024), or `inf`.
fn size(text: &str) -> Option<usize> {
    if text == "inf" {
        return Some(usize::MAX);
    }
    let (digits, shift) = match text.as_bytes().last()? {
        b'k' | b'K' => (&text[..text.len() - 1], 10),
        b'm' | b'M' => (&text[..text.len() - 1], 20),
        b'g' | b'G' => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    let value: usize = digits.parse().ok()?;
    value.checked_mul(1usize << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: [&str; 4] = ["basic", "tuned", "hier", "inter"];

    #[test]
    fn parses_every_item_kind() {
        let c = Control::parse(
            " coll=^hier ; tuned.priority=90; allreduce:recursive_doubling@0-4k,ring@4k-inf;bcast:linear",
            &KNOWN,
        )
        .unwrap();
        assert!(!c.allows("hier") && c.allows("tuned"));
        assert_eq!(c.priority("tuned"), Some(90));
        assert_eq!(c.forces().len(), 3);
        assert_eq!(
            c.forces()[1],
            Force { op: CollOp::Allreduce, alg: Algorithm::Ring, lo: 4096, hi: usize::MAX }
        );
        let only = Control::parse("coll=basic,tuned", &KNOWN).unwrap();
        assert!(only.allows("basic") && !only.allows("inter"));
    }

    #[test]
    fn errors_name_the_offending_token() {
        let cases = [
            ("coll=^fancy", ControlErrorKind::UnknownComponent, "fancy"),
            ("tuned.priority=101", ControlErrorKind::BadPriority, "101"),
            ("tuned.priority=x", ControlErrorKind::BadPriority, "x"),
            ("fancy.priority=1", ControlErrorKind::UnknownComponent, "fancy"),
            ("allreduse:ring", ControlErrorKind::UnknownOperation, "allreduse"),
            ("allreduce:rign", ControlErrorKind::UnknownAlgorithm, "rign"),
            ("bcast:ring", ControlErrorKind::AlgorithmNotForOperation, "ring"),
            ("bcast:linear@9-1", ControlErrorKind::BadRange, "9-1"),
            ("bcast:linear@1k", ControlErrorKind::BadRange, "1k"),
            ("gibberish", ControlErrorKind::BadItem, "gibberish"),
            ("coll=basic;coll=^tuned", ControlErrorKind::IncludeAndExclude, "^tuned"),
        ];
        for (text, kind, token) in cases {
            let e = Control::parse(text, &KNOWN).unwrap_err();
            assert_eq!((e.kind, e.token), (kind, token), "{text}");
        }
    }
}
