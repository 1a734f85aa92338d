#![no_main]
//! Control strings through `Control::parse` and `CollTable::select`.
//!
//! Raw strings: parsing and selection never panic, and an error's offending token is a
//! substring of the input. Strings built from valid tokens: a model of the grammar predicts
//! whether the string parses; a parsed control allows, prioritises and forces exactly what
//! the string names, selection picks the highest-priority allowed component, and a forced
//! algorithm is the one a call in its size range gets.

use arbitrary::{Arbitrary, Unstructured};
use commcore::coll::component::{BUILTIN, BUILTIN_NAMES, MAX_MODULES};
use commcore::coll::control::{ControlErrorKind, Force, MAX_FORCES, MAX_NAMES};
use commcore::coll::{
    Algorithm, Blocks, CollArgs, CollError, CollOp, CollTable, CommInfo, Control, Ctx, Datatype,
    NodeLayout, Root, Schedule,
};
use libfuzzer_sys::fuzz_target;

/// A communicator a parsed control is selected over.
#[derive(Arbitrary, Debug)]
struct Comm {
    size: u8,
    rank: u8,
    remote: Option<u8>,
    nodes: Option<Vec<u8>>,
}

/// A size bound as text: a number with an optional suffix, or `inf`.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Bound {
    Bytes(u16),
    Kilo(u8),
    Mega(u8),
    Inf,
}

impl Bound {
    fn text(self) -> String {
        match self {
            Self::Bytes(n) => n.to_string(),
            Self::Kilo(n) => format!("{n}k"),
            Self::Mega(n) => format!("{n}M"),
            Self::Inf => "inf".into(),
        }
    }

    fn value(self) -> usize {
        match self {
            Self::Bytes(n) => n as usize,
            Self::Kilo(n) => (n as usize) << 10,
            Self::Mega(n) => (n as usize) << 20,
            Self::Inf => usize::MAX,
        }
    }
}

/// One item of a control string made of valid tokens.
#[derive(Arbitrary, Debug)]
enum Item {
    Include(Vec<u8>),
    Exclude(Vec<u8>),
    Priority(u8, u8),
    Force(u8, Vec<(u8, Option<(Bound, Bound)>)>),
}

#[derive(Arbitrary, Debug)]
enum Input {
    Raw(String, Vec<Comm>),
    Built(Vec<(Item, bool)>, u8, u8),
}

fn component(i: u8) -> &'static str {
    BUILTIN_NAMES[i as usize % BUILTIN_NAMES.len()]
}

/// What the built string must parse into, or the error kind it must fail with.
#[derive(Default)]
struct Model {
    include: Option<Vec<&'static str>>,
    exclude: Vec<&'static str>,
    priorities: Vec<(&'static str, u8)>,
    forces: Vec<Force>,
}

impl Model {
    fn allows(&self, name: &str) -> bool {
        !self.exclude.contains(&name) && self.include.as_ref().is_none_or(|l| l.contains(&name))
    }

    fn priority(&self, name: &str) -> Option<u8> {
        self.priorities.iter().rev().find(|(n, _)| *n == name).map(|(_, p)| *p)
    }
}

/// Appends `item` to `text` and applies it to `model`; `Err` is the error the parser must
/// report.
fn build(item: &Item, text: &mut String, model: &mut Model) -> Result<(), ControlErrorKind> {
    match item {
        Item::Include(names) | Item::Exclude(names) => {
            let excluding = matches!(item, Item::Exclude(_));
            let names: Vec<&str> = names.iter().map(|&i| component(i)).collect();
            let names = if names.is_empty() { vec!["basic"] } else { names };
            text.push_str(if excluding { "coll=^" } else { "coll=" });
            text.push_str(&names.join(","));
            if (excluding && model.include.is_some()) || (!excluding && !model.exclude.is_empty()) {
                return Err(ControlErrorKind::IncludeAndExclude);
            }
            let list = if excluding {
                &mut model.exclude
            } else {
                model.include.get_or_insert_with(Vec::new)
            };
            for name in names {
                if list.len() == MAX_NAMES {
                    return Err(ControlErrorKind::TooMany);
                }
                list.push(name);
            }
        }
        Item::Priority(name, value) => {
            let name = component(*name);
            let value = value % 101;
            text.push_str(&format!("{name}.priority={value}"));
            if model.priorities.len() == MAX_NAMES {
                return Err(ControlErrorKind::TooMany);
            }
            model.priorities.push((name, value));
        }
        Item::Force(op, parts) => {
            let op = CollOp::ALL[*op as usize % CollOp::COUNT];
            let algs: Vec<Algorithm> =
                Algorithm::ALL.into_iter().filter(|a| a.implements(op)).collect();
            text.push_str(op.name());
            text.push(':');
            let parts = if parts.is_empty() { &[(0, None)][..] } else { parts };
            for (i, &(alg, range)) in parts.iter().enumerate() {
                let alg = algs[alg as usize % algs.len()];
                if i > 0 {
                    text.push(',');
                }
                text.push_str(alg.name());
                let (mut lo, mut hi) = (0, usize::MAX);
                if let Some((a, b)) = range {
                    // Order the bounds so that the range is never empty.
                    let (a, b) = if a.value() <= b.value() { (a, b) } else { (b, a) };
                    text.push_str(&format!("@{}-{}", a.text(), b.text()));
                    (lo, hi) = (a.value(), b.value());
                }
                if model.forces.len() == MAX_FORCES {
                    return Err(ControlErrorKind::TooMany);
                }
                model.forces.push(Force { op, alg, lo, hi });
            }
        }
    }
    Ok(())
}

/// An intra-communicator call of `op` with `count` i64 and SUM, block lists for the `v`
/// operations.
fn args<'a>(count: usize, blocks: Blocks<'a>) -> CollArgs<'a> {
    CollArgs::new(count, Datatype::I64).with_root(Root::Rank(0)).with_send(blocks).with_recv(blocks)
}

/// Steps of a schedule as text (steps hold function pointers, so they have no `Eq`).
fn steps(s: Result<Schedule<'_>, CollError>) -> Result<Vec<String>, CollError> {
    s.map(|s| s.take(100_000).map(|step| format!("{step:?}")).collect())
}

fn check_built(items: &[(Item, bool)], size: u8, rank: u8) {
    let mut text = String::new();
    let mut model = Model::default();
    let mut expected = Ok(());
    for (item, padded) in items {
        if !text.is_empty() {
            text.push_str(if *padded { " ; " } else { ";" });
        }
        if let Err(kind) = build(item, &mut text, &mut model) {
            expected = Err(kind);
            break;
        }
    }
    let control = match (Control::parse(&text, &BUILTIN_NAMES), expected) {
        (Ok(c), Ok(())) => c,
        (Err(e), Err(kind)) => {
            assert_eq!(e.kind, kind, "{text:?}");
            assert!(text.contains(e.token));
            return;
        }
        (got, want) => panic!("{text:?}: parsed {got:?}, model says {want:?}"),
    };
    for name in BUILTIN_NAMES {
        assert_eq!(control.allows(name), model.allows(name), "{text:?} allows {name}");
        assert_eq!(control.priority(name), model.priority(name), "{text:?} priority {name}");
    }
    assert_eq!(control.forces(), &model.forces[..], "{text:?}");

    // Selection on an intra-communicator without a layout: basic or tuned serve everything.
    // A call's block lists must outlive the table, so each forced range's call (at the
    // range's lower end) is laid out first.
    let size = size as u32 % 16 + 1;
    let ctx = Ctx::new(rank as u32 % size, size).unwrap();
    let calls: Vec<(&Force, Vec<usize>, Vec<usize>)> = model
        .forces
        .iter()
        .filter_map(|f| {
            let count = f.lo.div_ceil(8);
            (count <= 4096 && count * 8 <= f.hi).then(|| {
                let counts = vec![count; size as usize];
                let displs = (0..size as usize).map(|i| i * count).collect();
                (f, counts, displs)
            })
        })
        .collect();
    let comm = CommInfo::intra(ctx.rank, size);
    let table = match CollTable::select(&comm, &BUILTIN, &control) {
        Ok(t) => t,
        Err(CollError::NoModule(_)) => {
            assert!(!model.allows("basic") && !model.allows("tuned"), "{text:?}");
            return;
        }
        Err(e) => panic!("{text:?}: {e}"),
    };
    let effective =
        |name: &str| model.priority(name).unwrap_or(if name == "basic" { 10 } else { 30 });
    let serving = ["basic", "tuned"]
        .into_iter()
        .filter(|n| model.allows(n))
        .fold(None, |best: Option<&str>, n| match best {
            Some(b) if effective(b) >= effective(n) => Some(b),
            _ => Some(n),
        })
        .expect("selection succeeded, so basic or tuned is allowed");
    for op in CollOp::ALL {
        assert_eq!(table.provider(op), Some(serving), "{text:?} {op}");
    }

    // A call in a forced range gets the first forced algorithm whose range holds it.
    for (f, counts, displs) in &calls {
        let a = args(f.lo.div_ceil(8), Blocks { counts, displs });
        // Selection compares what every rank shares (selection_bytes): for the v operations
        // not always this call's lower end, so another range, or none, may hold it.
        let bytes = a.selection_bytes(f.op);
        let first = model.forces.iter().find(|g| g.op == f.op && g.lo <= bytes && bytes <= g.hi);
        let Some(alg) = first.map(|g| g.alg) else {
            assert!(matches!(
                f.op,
                CollOp::Gatherv | CollOp::Scatterv | CollOp::Alltoallv | CollOp::ReduceScatter
            ));
            continue;
        };
        if alg == Algorithm::Hierarchical {
            continue;
        }
        assert_eq!(
            steps(table.schedule(f.op, &a)),
            steps(Schedule::intra(f.op, alg, ctx, &a)),
            "{text:?}: {} at {bytes} bytes",
            f.op
        );
    }
}

fn check_raw(text: &str, comms: &[Comm]) {
    let control = match Control::parse(text, &BUILTIN_NAMES) {
        Ok(c) => c,
        Err(e) => {
            assert!(text.contains(e.token), "{e}");
            // The token lies inside the input, not merely equal to some part of it.
            let (start, end) = (text.as_ptr() as usize, text.as_ptr() as usize + text.len());
            let at = e.token.as_ptr() as usize;
            assert!(start <= at && at + e.token.len() <= end, "{e}");
            let _ = e.to_string();
            return;
        }
    };
    assert!(control.forces().len() <= MAX_FORCES);
    for comm in comms.iter().take(4) {
        let size = comm.size as u32 % 40;
        let rank = comm.rank as u32 % (size + 1);
        let ids: Vec<u32> = match &comm.nodes {
            Some(n) => (0..size as usize).map(|i| n.get(i).copied().unwrap_or(0) as u32).collect(),
            None => Vec::new(),
        };
        let mut storage = vec![0u32; 4 * ids.len() + 1];
        let counts = vec![1usize; size as usize];
        let displs: Vec<usize> = (0..size as usize).collect();
        let layout = NodeLayout::build(&ids, &mut storage).ok();
        let mut info = match comm.remote {
            Some(r) => CommInfo::inter(rank, size, r as u32 % 40),
            None => CommInfo::intra(rank, size),
        };
        if let Some(l) = layout {
            info = info.with_layout(l);
        }
        let Ok(table) = CollTable::select(&info, &BUILTIN, &control) else { continue };
        assert!(table.modules().len() <= MAX_MODULES);
        let blocks = Blocks { counts: &counts, displs: &displs };
        for op in CollOp::ALL {
            for count in [0, 1, 100, 1 << 20] {
                let a = args(count, blocks);
                let a = if comm.remote.is_some() { a.with_root(Root::Elsewhere) } else { a };
                if let Ok(s) = table.schedule(op, &a) {
                    assert!(s.take(1_000_000).count() < 1_000_000, "{op}: endless schedule");
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    match Input::arbitrary(&mut u) {
        Ok(Input::Raw(text, comms)) => check_raw(&text, &comms),
        Ok(Input::Built(items, size, rank)) => check_built(&items, size, rank),
        Err(_) => {}
    }
});
