//! The commcore-bare test kernel: booted by QEMU (PVH), no heap, no libc. It runs
//! `commcore_bare::selftest` at full size, prints one JSON line of figures on COM1 and exits
//! QEMU with a status `scripts/bare.sh` checks.
#![no_std]
#![no_main]

mod hot;
mod io;

use core::fmt::Write;

use commcore::cid::store::{CidStore, Flat};
use commcore::cid::{words_for, CidSpace, ReduceOp, SpaceConfig};
use commcore::coll::{Algorithm, CollArgs, CollOp, Ctx, Datatype, Schedule};
use commcore::rankmap::RankMap;
use commcore_bare::selftest::{self, CidReport, CollBuffers, CollReport, RankmapReport};
use commcore_bare::{
    av_storage, Allreduce, AvStorage, Executor, Job, Mailboxes, StaticCell, TableWords,
};

use io::Serial;

core::arch::global_asm!(include_str!("boot.s"), options(att_syntax));

/// The job: 786,432 processes (e.g. 16,384 nodes of 48).
const PROCESSES: usize = 786_432;
/// Odd/even splits of its world.
const SPLITS: usize = 100;
/// Ranks hosted for the CID agreement, each with its own space.
const CID_RANKS: usize = 64;
/// Communicators created and freed per algorithm.
const CID_CREATIONS: u32 = 1_000;
/// CIDs per space.
const CID_WIDTH: u32 = 2048;
const CID_WORDS: usize = words_for(CID_WIDTH);
/// Ranks of the collective self-test.
const COLL_RANKS: usize = 17;
/// Per-pair queues of the in-memory executor: depth and largest message.
const QUEUE_DEPTH: usize = 4;
const QUEUE_BYTES: usize = 512;
const SEED: u64 = 0x5eed_0021;
const CONFIG: SpaceConfig = SpaceConfig { width: CID_WIDTH, eager: 64, threaded: false };

static AV: AvStorage<PROCESSES> = av_storage();
/// The working list communicators are built from (and the random permutation).
static SCRATCH: StaticCell<[u32; PROCESSES]> = StaticCell::new([0; PROCESSES]);
/// Rank-map tables: room for one lut over every process (the random communicator).
static TABLES: TableWords<PROCESSES> = TableWords::new();
static MAPS: StaticCell<[Option<RankMap<'static>>; SPLITS]> =
    StaticCell::new([const { None }; SPLITS]);
static CID_SLOTS: StaticCell<[Option<u16>; CID_RANKS * CID_WIDTH as usize]> =
    StaticCell::new([None; CID_RANKS * CID_WIDTH as usize]);
static COLL_BUFFERS: StaticCell<CollBuffers<COLL_RANKS>> = StaticCell::new(CollBuffers::new());
static MAILBOXES: StaticCell<Mailboxes<COLL_RANKS, QUEUE_DEPTH, QUEUE_BYTES>> =
    StaticCell::new(Mailboxes::new());
/// The CID store the hot-path check looks up in.
static HOT_SLOTS: StaticCell<[Option<u16>; CID_WIDTH as usize]> =
    StaticCell::new([None; CID_WIDTH as usize]);

/// The kernel's allreduce over kernels: this kernel is the whole job, so the words are
/// already reduced; it counts the calls.
struct OneKernel {
    calls: u32,
}

impl Allreduce for OneKernel {
    type Error = core::convert::Infallible;
    fn allreduce(&mut self, _: ReduceOp, _: &mut [u32]) -> Result<(), Self::Error> {
        self.calls += 1;
        Ok(())
    }
}

/// How many answers of each hot-path wrapper were checked.
struct HotReport {
    translations: u64,
    lookups: u64,
    steps: u64,
}

#[no_mangle]
pub extern "C" fn kernel_main() -> ! {
    let mut out = Serial;
    let _ = writeln!(out, "# commcore-bare test kernel: {PROCESSES} processes, {SPLITS} splits");
    match run(&mut out) {
        Ok(()) => io::exit(io::EXIT_OK),
        Err(error) => {
            let _ = writeln!(out, "# self-test failed: {error}");
            let _ = writeln!(out, "{{\"ok\": false, \"error\": \"self-test\"}}");
            io::exit(io::EXIT_FAILED)
        }
    }
}

fn run(out: &mut Serial) -> Result<(), selftest::SelftestError> {
    let taken =
        |_| selftest::SelftestError::TooSmall { what: "static cell taken twice", needed: 1 };
    let av = AV.take().map_err(taken)?;
    let scratch = SCRATCH.take().map_err(taken)?;
    let maps = MAPS.take().map_err(taken)?;
    let mut job: Job<'static, 2, 4> = Job::new(TABLES.words());
    let rankmaps = selftest::rankmaps(&mut job, av, maps, scratch, SEED)?;
    let _ = writeln!(out, "# rank maps: {} translations checked", rankmaps.translations);

    let mut spaces: [CidSpace<CID_WORDS>; CID_RANKS] = core::array::from_fn(|_| {
        CidSpace::new(CONFIG).unwrap_or_else(|_| io::exit(io::EXIT_FAILED))
    });
    let slots = CID_SLOTS.take().map_err(taken)?;
    let mut net = OneKernel { calls: 0 };
    let cids = selftest::cids(&mut spaces, slots, CONFIG, CID_CREATIONS, &mut net, SEED)?;
    let _ = writeln!(out, "# cids: {} agreements, {} allreduces", 3 * cids.creations, net.calls);

    let bufs = COLL_BUFFERS.take().map_err(taken)?;
    let boxes = MAILBOXES.take().map_err(taken)?;
    let colls = selftest::collectives(bufs, &mut Executor::new(boxes))?;
    let _ = writeln!(out, "# collectives: {} runs of {} pairs", colls.runs, colls.pairs);

    let hot = hot_paths(&mut job, HOT_SLOTS.take().map_err(taken)?)?;
    print_json(out, &rankmaps, &cids, net.calls, &colls, &hot);
    Ok(())
}

/// Runs each hot-path wrapper and checks it: every world rank translates to itself, every
/// mapped CID finds its communicator, a schedule yields the same steps through the wrapper.
fn hot_paths(
    job: &mut Job<'static, 2, 4>,
    slots: &'static mut [Option<u16>],
) -> Result<HotReport, selftest::SelftestError> {
    let wrong = |comm| selftest::SelftestError::Translate { comm, rank: 0 };
    let world = job.world(commcore::av::Pgid(0))?;
    let mut translations = 0;
    for rank in 0..world.size() {
        match hot::commcore_hot_translate(&world, rank) {
            Some((_, lpid)) if lpid == rank => translations += 1,
            _ => return Err(wrong("hot translate")),
        }
    }
    let mut store = Flat::new(slots);
    for cid in (0..CID_WIDTH).step_by(3) {
        store.insert(cid, cid as u16).map_err(|_| wrong("hot cid store"))?;
    }
    let mut lookups = 0;
    for cid in 0..CID_WIDTH {
        let want = (cid % 3 == 0).then_some(cid as u16);
        if hot::commcore_hot_cid_lookup(&store, cid) != want {
            return Err(wrong("hot cid lookup"));
        }
        lookups += 1;
    }
    let args = CollArgs::new(1024, Datatype::U32);
    let ctx = Ctx::new(5, COLL_RANKS as u32).map_err(|_| wrong("hot schedule"))?;
    let schedule = Schedule::intra(CollOp::Allreduce, Algorithm::Rabenseifner, ctx, &args)
        .map_err(|_| wrong("hot schedule"))?;
    let (mut through, mut direct) = (schedule, schedule);
    let mut steps = 0;
    while let Some(step) = hot::commcore_hot_schedule_step(&mut through) {
        if direct.next().map(|s| format_eq(&s, &step)) != Some(true) {
            return Err(wrong("hot schedule step"));
        }
        steps += 1;
    }
    if direct.next().is_some() || steps == 0 {
        return Err(wrong("hot schedule step"));
    }
    Ok(HotReport { translations, lookups, steps })
}

/// Steps compare by their debug form (`Step` has no `PartialEq`): written into two
/// fixed buffers, no heap.
fn format_eq(a: &commcore::coll::Step, b: &commcore::coll::Step) -> bool {
    let (mut x, mut y) = (FixedText::new(), FixedText::new());
    let _ = write!(x, "{a:?}");
    let _ = write!(y, "{b:?}");
    x.as_bytes() == y.as_bytes() && !x.overflowed
}

/// 256 bytes of text.
struct FixedText {
    bytes: [u8; 256],
    len: usize,
    overflowed: bool,
}

impl FixedText {
    fn new() -> Self {
        Self { bytes: [0; 256], len: 0, overflowed: false }
    }
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl core::fmt::Write for FixedText {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.bytes.len() - self.len;
        let n = s.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        self.overflowed |= n < s.len();
        Ok(())
    }
}

fn print_json(
    out: &mut Serial,
    r: &RankmapReport,
    c: &CidReport,
    allreduce_calls: u32,
    k: &CollReport,
    hot: &HotReport,
) {
    let statics = core::mem::size_of_val(&AV)
        + core::mem::size_of_val(&SCRATCH)
        + core::mem::size_of_val(&TABLES)
        + core::mem::size_of_val(&MAPS)
        + core::mem::size_of_val(&CID_SLOTS)
        + core::mem::size_of_val(&HOT_SLOTS)
        + core::mem::size_of_val(&COLL_BUFFERS)
        + core::mem::size_of_val(&MAILBOXES);
    let _ = writeln!(
        out,
        "{{\"processes\": {}, \"splits\": {}, \"av_bytes\": {}, \"split_map_bytes\": {}, \
         \"job_with_splits_bytes\": {}, \"reversed_bytes\": {}, \"random_bytes\": {}, \
         \"translations_checked\": {}, \"cid_ranks\": {}, \"cid_creations_per_algorithm\": {}, \
         \"cid_frees_per_algorithm\": {}, \"cid_allreduces\": {{\"lowest\": {}, \"mask\": {}, \
         \"highest\": {}}}, \"cid_kernel_allreduce_calls\": {}, \"cid_highest\": {{\"lowest\": {}, \
         \"mask\": {}, \"highest\": {}}}, \"cid_lookups_checked\": {}, \"coll_ranks\": {}, \
         \"coll_pairs\": {}, \"coll_runs\": {}, \"coll_steps\": {}, \"coll_messages\": {}, \
         \"coll_bytes\": {}, \"hot_checks\": {{\"translate\": {}, \"cid_lookup\": {}, \
         \"schedule_step\": {}}}, \"kernel_static_bytes\": {}, \"ok\": true}}",
        r.processes,
        r.splits,
        r.av_bytes,
        r.split_map_bytes,
        r.job_bytes,
        r.reversed_bytes,
        r.random_bytes,
        r.translations,
        c.ranks,
        c.creations,
        c.frees,
        c.allreduces[0],
        c.allreduces[1],
        c.allreduces[2],
        allreduce_calls,
        c.highest[0],
        c.highest[1],
        c.highest[2],
        c.lookups,
        k.ranks,
        k.pairs,
        k.runs,
        k.steps,
        k.messages,
        k.bytes,
        hot.translations,
        hot.lookups,
        hot.steps,
        statics,
    );
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let _ = writeln!(Serial, "# panic: {info}");
    let _ = writeln!(Serial, "{{\"ok\": false, \"error\": \"panic\"}}");
    io::exit(io::EXIT_PANIC)
}
