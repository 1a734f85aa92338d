//! Component selection: priorities, gap filling, exclusion and inclusion, forcing per
//! operation and size range, third-party modules, and every kind of bad control string.

mod coll_support;

use coll_support::AFFINE;
use commcore::coll::component::{Component, ExternalModule, OpSet, BUILTIN, BUILTIN_NAMES};
use commcore::coll::control::ControlErrorKind;
use commcore::coll::{
    tuned, Algorithm, CollArgs, CollError, CollOp, CollTable, CommInfo, Control, Ctx, Datatype,
    Module, NodeLayout, Schedule,
};

fn steps(s: Schedule<'_>) -> Vec<String> {
    s.map(|step| format!("{step:?}")).collect()
}

fn table<'a>(comm: &CommInfo<'a>, control: &str) -> Result<CollTable<'a>, CollError> {
    let control = Control::parse(control, &BUILTIN_NAMES).expect("valid control string");
    CollTable::select(comm, &BUILTIN, &control)
}

fn layout(ids: &'static [u32]) -> NodeLayout<'static> {
    let storage = Box::leak(vec![0u32; 4 * ids.len() + 1].into_boxed_slice());
    NodeLayout::build(ids, storage).unwrap()
}

#[test]
fn highest_priority_wins_and_lower_modules_fill_gaps() {
    let flat = table(&CommInfo::intra(2, 8), "").unwrap();
    assert!(CollOp::ALL.iter().all(|&op| flat.provider(op) == Some("tuned")));
    assert_eq!(flat.modules().len(), 2, "tuned and basic answer an intra-communicator");

    let two_nodes = CommInfo::intra(2, 8).with_layout(layout(&[0, 0, 0, 0, 1, 1, 1, 1]));
    let t = table(&two_nodes, "").unwrap();
    for op in CollOp::ALL {
        let hier = matches!(
            op,
            CollOp::Barrier
                | CollOp::Bcast
                | CollOp::Reduce
                | CollOp::Allreduce
                | CollOp::Allgather
        );
        assert_eq!(t.provider(op), Some(if hier { "hier" } else { "tuned" }), "{op}");
    }
}

#[test]
fn hier_answers_only_multi_node_layouts_with_shared_nodes() {
    for ids in [&[0u32, 0, 0, 0][..], &[0, 1, 2, 3][..]] {
        let ids: &'static [u32] = Box::leak(ids.to_vec().into_boxed_slice());
        let t = table(&CommInfo::intra(0, 4).with_layout(layout(ids)), "").unwrap();
        assert_eq!(t.provider(CollOp::Bcast), Some("tuned"));
    }
}

#[test]
fn exclusion_inclusion_and_priority_overrides() {
    let comm = CommInfo::intra(1, 8).with_layout(layout(&[0, 0, 0, 0, 1, 1, 1, 1]));
    let t = table(&comm, "coll=^tuned").unwrap();
    assert_eq!(t.provider(CollOp::Bcast), Some("hier"));
    assert_eq!(t.provider(CollOp::Alltoall), Some("basic"));

    let t = table(&comm, "coll=^hier,tuned").unwrap();
    assert!(CollOp::ALL.iter().all(|&op| t.provider(op) == Some("basic")));

    let t = table(&comm, "basic.priority=99").unwrap();
    assert!(CollOp::ALL.iter().all(|&op| t.provider(op) == Some("basic")));

    let t = table(&comm, "tuned.priority=60").unwrap();
    assert_eq!(t.provider(CollOp::Bcast), Some("tuned"));

    // Only hier: the operations it lacks fail selection, named.
    let err = table(&comm, "coll=hier").unwrap_err();
    assert_eq!(err, CollError::NoModule(CollOp::Allgatherv));
    assert!(err.to_string().contains("allgatherv"), "{err}");

    // Nothing at all.
    let err = table(&CommInfo::intra(0, 4), "coll=hier").unwrap_err();
    assert_eq!(err, CollError::NoModule(CollOp::Barrier));
}

#[test]
fn basic_and_tuned_pick_what_their_tables_say() {
    let comm = CommInfo::intra(3, 16);
    let ctx = Ctx::new(3, 16).unwrap();
    let args = CollArgs::new(100_000, Datatype::F64);
    let t = table(&comm, "").unwrap();
    let b = table(&comm, "coll=basic").unwrap();
    for op in [CollOp::Bcast, CollOp::Allreduce, CollOp::Reduce, CollOp::Alltoall] {
        let alg = tuned::decide(op, 16, args.message_bytes(), true);
        let direct = Schedule::intra(op, alg, ctx, &args).unwrap();
        assert_eq!(steps(t.schedule(op, &args).unwrap()), steps(direct), "{op}");
        let direct = Schedule::intra(op, tuned::basic(op, 16), ctx, &args).unwrap();
        assert_eq!(steps(b.schedule(op, &args).unwrap()), steps(direct), "{op}");
    }
}

#[test]
fn forcing_applies_within_its_size_range_only() {
    let comm = CommInfo::intra(0, 6);
    let ctx = Ctx::new(0, 6).unwrap();
    let t = table(&comm, "allreduce:ring@0-1k,rabenseifner@4k-inf; bcast:linear").unwrap();
    let small = CollArgs::new(16, Datatype::I32);
    let middle = CollArgs::new(512, Datatype::I32);
    let large = CollArgs::new(8192, Datatype::I32);
    let ring = Schedule::intra(CollOp::Allreduce, Algorithm::Ring, ctx, &small).unwrap();
    assert_eq!(steps(t.schedule(CollOp::Allreduce, &small).unwrap()), steps(ring));
    let rab = Schedule::intra(CollOp::Allreduce, Algorithm::Rabenseifner, ctx, &large).unwrap();
    assert_eq!(steps(t.schedule(CollOp::Allreduce, &large).unwrap()), steps(rab));
    let chosen = tuned::decide(CollOp::Allreduce, 6, 2048, true);
    let tuned_mid = Schedule::intra(CollOp::Allreduce, chosen, ctx, &middle).unwrap();
    assert_eq!(steps(t.schedule(CollOp::Allreduce, &middle).unwrap()), steps(tuned_mid));
    let lin = Schedule::intra(CollOp::Bcast, Algorithm::Linear, ctx, &large).unwrap();
    assert_eq!(steps(t.schedule(CollOp::Bcast, &large).unwrap()), steps(lin));

    // A forced reordering algorithm yields to the module for a non-commutative operation.
    let affine = CollArgs::new(16, Datatype::U64).with_op(AFFINE);
    let chosen = tuned::decide(CollOp::Allreduce, 6, 128, false);
    let ordered = Schedule::intra(CollOp::Allreduce, chosen, ctx, &affine).unwrap();
    assert_eq!(steps(t.schedule(CollOp::Allreduce, &affine).unwrap()), steps(ordered));
}

#[test]
fn inter_communicators_select_inter_and_refuse_scans() {
    let t = table(&CommInfo::inter(1, 3, 5), "").unwrap();
    assert_eq!(t.provider(CollOp::Allreduce), Some("inter"));
    assert_eq!(t.provider(CollOp::Scan), None);
    assert!(t.is_inter());
    let t = table(&CommInfo::inter(1, 3, 5), "coll=^inter").unwrap();
    assert_eq!(t.provider(CollOp::Allreduce), Some("basic"));
    assert_eq!(
        t.schedule(CollOp::Exscan, &CollArgs::new(1, Datatype::I32)).unwrap_err(),
        CollError::NotOnInterComm(CollOp::Exscan)
    );
}

struct FastBcast;

impl ExternalModule for FastBcast {
    fn ops(&self) -> OpSet {
        OpSet::of(&[CollOp::Bcast])
    }
    fn schedule<'c>(&'c self, op: CollOp, args: &CollArgs<'c>) -> Result<Schedule<'c>, CollError> {
        Schedule::intra(op, Algorithm::ScatterAllgather, Ctx::new(0, 4)?, args)
    }
}

struct ThirdParty;

static FAST: FastBcast = FastBcast;

impl Component for ThirdParty {
    fn name(&self) -> &'static str {
        "fast"
    }
    fn default_priority(&self) -> u8 {
        90
    }
    fn query<'a>(&self, comm: &CommInfo<'a>) -> Option<Module<'a>> {
        (comm.size == 4 && comm.rank == 0).then_some(Module::External(&FAST))
    }
}

#[test]
fn a_third_party_component_serves_what_it_implements() {
    let components: [&dyn Component; 5] =
        [BUILTIN[0], BUILTIN[1], BUILTIN[2], BUILTIN[3], &ThirdParty];
    let names = ["basic", "tuned", "hier", "inter", "fast"];
    let comm = CommInfo::intra(0, 4);
    let t = CollTable::select(&comm, &components, &Control::none()).unwrap();
    assert_eq!(t.provider(CollOp::Bcast), Some("fast"));
    assert_eq!(t.provider(CollOp::Allreduce), Some("tuned"));
    let off = Control::parse("coll=^fast", &names).unwrap();
    let t = CollTable::select(&comm, &components, &off).unwrap();
    assert_eq!(t.provider(CollOp::Bcast), Some("tuned"));
}

/// A platform's own implementation of bcast and allreduce (as the runtime's shared-memory
/// areas), above `tuned`.
struct Areas;

impl Component for Areas {
    fn name(&self) -> &'static str {
        "areas"
    }
    fn default_priority(&self) -> u8 {
        60
    }
    fn query<'a>(&self, _: &CommInfo<'a>) -> Option<Module<'a>> {
        Some(Module::Native(OpSet::of(&[CollOp::Bcast, CollOp::Allreduce])))
    }
}

#[test]
fn a_native_module_wins_its_operations_and_the_next_module_schedules_them() {
    let components: [&dyn Component; 5] = [BUILTIN[0], BUILTIN[1], BUILTIN[2], BUILTIN[3], &Areas];
    let names = ["basic", "tuned", "hier", "inter", "areas"];
    let comm = CommInfo::intra(1, 8);
    let t = CollTable::select(&comm, &components, &Control::none()).unwrap();
    // One selection: the platform runs bcast itself, and the fallback is tuned's schedule.
    assert_eq!(
        (t.native(CollOp::Bcast), t.provider(CollOp::Bcast)),
        (Some("areas"), Some("areas"))
    );
    assert_eq!(t.scheduler(CollOp::Bcast), Some("tuned"));
    let args = CollArgs::new(64, Datatype::U8).with_root(commcore::coll::Root::Rank(0));
    let flat = table(&comm, "").unwrap();
    assert_eq!(
        steps(t.schedule(CollOp::Bcast, &args).unwrap()),
        steps(flat.schedule(CollOp::Bcast, &args).unwrap()),
        "a declined call gets the schedule the table would give without the native module"
    );
    assert_eq!((t.native(CollOp::Alltoall), t.provider(CollOp::Alltoall)), (None, Some("tuned")));
    // Forcing an algorithm schedules the operation; excluding the component drops it.
    let forced = Control::parse("bcast:binomial@0-inf", &names).unwrap();
    let t = CollTable::select(&comm, &components, &forced).unwrap();
    assert_eq!((t.native(CollOp::Bcast), t.native(CollOp::Allreduce)), (None, Some("areas")));
    let off = Control::parse("coll=^areas", &names).unwrap();
    let t = CollTable::select(&comm, &components, &off).unwrap();
    assert_eq!(t.native(CollOp::Allreduce), None);
    // A native module alone cannot serve: nothing would schedule the calls it declines.
    let only = Control::parse("coll=areas", &names).unwrap();
    assert!(matches!(
        CollTable::select(&comm, &components, &only),
        Err(CollError::NoModule(CollOp::Barrier))
    ));
}

#[test]
fn every_kind_of_bad_string_names_its_token() {
    let cases = [
        ("coll=^smp", ControlErrorKind::UnknownComponent, "smp"),
        ("coll=basic,,tuned", ControlErrorKind::UnknownComponent, ""),
        ("smp.priority=5", ControlErrorKind::UnknownComponent, "smp"),
        ("tuned.priority=-1", ControlErrorKind::BadPriority, "-1"),
        ("tuned.priority=200", ControlErrorKind::BadPriority, "200"),
        ("alltoal:bruck", ControlErrorKind::UnknownOperation, "alltoal"),
        ("alltoall:brook", ControlErrorKind::UnknownAlgorithm, "brook"),
        ("scan:bruck", ControlErrorKind::AlgorithmNotForOperation, "bruck"),
        ("bcast:binomial@x-9", ControlErrorKind::BadRange, "x-9"),
        ("bcast:binomial@10-2", ControlErrorKind::BadRange, "10-2"),
        (
            "bcast:binomial@1-99999999999999999999g",
            ControlErrorKind::BadRange,
            "1-99999999999999999999g",
        ),
        ("priority", ControlErrorKind::BadItem, "priority"),
        ("coll=^basic;coll=tuned", ControlErrorKind::IncludeAndExclude, "tuned"),
    ];
    for (text, kind, token) in cases {
        let e = Control::parse(text, &BUILTIN_NAMES).unwrap_err();
        assert_eq!((e.kind, e.token), (kind, token), "{text}");
        assert!(e.to_string().contains(&format!("`{token}`")), "{e}");
    }
    let many: String = (0..40).map(|_| "bcast:linear;").collect();
    assert_eq!(Control::parse(&many, &BUILTIN_NAMES).unwrap_err().kind, ControlErrorKind::TooMany);
}

/// Ranks that pick different algorithms for one call never match, so selection may only
/// look at what every rank passes alike: for allgatherv and reduce_scatter the receive
/// counts, never a rank's own count (half the ranks with 16 KiB and half with none once
/// chose ring on one half and recursive doubling on the other, and hung).
#[test]
fn every_rank_of_a_v_call_picks_the_same_algorithm() {
    let counts = [16384usize, 16384, 0, 0];
    let displs = [0usize, 16384, 32768, 32768];
    let blocks = commcore::coll::Blocks { counts: &counts, displs: &displs };
    for control in ["", "allgatherv:ring@0-4k,recursive_doubling@4k-inf"] {
        for op in [CollOp::Allgatherv, CollOp::ReduceScatter] {
            let picks: Vec<Algorithm> = (0..4u32)
                .map(|r| {
                    let t = table(&CommInfo::intra(r, 4), control).unwrap();
                    let args = CollArgs::new(counts[r as usize], Datatype::U8).with_recv(blocks);
                    t.schedule(op, &args).unwrap().algorithm()
                })
                .collect();
            assert!(picks.iter().all(|&a| a == picks[0]), "{control:?} {op}: {picks:?}");
        }
    }
    // The receive layout decides: a mean block of 16 KiB is ring's, of 1 KiB recursive
    // doubling's, under the forced ranges.
    let t =
        table(&CommInfo::intra(2, 4), "allgatherv:ring@4k-inf,recursive_doubling@0-4k").unwrap();
    let args = CollArgs::new(0, Datatype::U8).with_recv(blocks);
    assert_eq!(t.schedule(CollOp::Allgatherv, &args).unwrap().algorithm(), Algorithm::Ring);
    let small = [1024usize; 4];
    let sd = [0usize, 1024, 2048, 3072];
    let args = CollArgs::new(0, Datatype::U8)
        .with_recv(commcore::coll::Blocks { counts: &small, displs: &sd });
    assert_eq!(
        t.schedule(CollOp::Allgatherv, &args).unwrap().algorithm(),
        Algorithm::RecursiveDoubling
    );
}
