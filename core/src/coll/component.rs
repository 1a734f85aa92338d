//! The component framework: components are queried once per communicator and answer with
//! a priority and a module (state precomputed for that communicator); for every operation
//! the highest-priority module that implements it is selected, lower ones fill the gaps,
//! and an operation nobody implements fails selection by name. The resulting
//! [`CollTable`] dispatches a call with one table lookup and one `match`: no search, no
//! allocation.

use heapless::Vec;

use super::algo::Ctx;
use super::args::{Algorithm, CollArgs, CollOp};
use super::control::{Control, Force, MAX_FORCES};
use super::ctor::{constructor, Ctor};
use super::error::CollError;
use super::layout::NodeLayout;
use super::schedule::Schedule;
use super::tuned::{self, Plan};

/// The MPI thread level a communicator is used at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadLevel {
    /// MPI_THREAD_SINGLE.
    Single,
    /// MPI_THREAD_FUNNELED.
    Funneled,
    /// MPI_THREAD_SERIALIZED.
    Serialized,
    /// MPI_THREAD_MULTIPLE.
    Multiple,
}

/// Intra- or inter-communicator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommKind {
    /// One group.
    Intra,
    /// Two groups; the local one has `size` ranks, the remote one `remote_size`.
    Inter {
        /// Ranks in the remote group.
        remote_size: u32,
    },
}

/// What a component may know of a communicator when it is queried.
#[derive(Clone, Copy, Debug)]
pub struct CommInfo<'a> {
    /// This process's rank (in the local group).
    pub rank: u32,
    /// Ranks (in the local group).
    pub size: u32,
    /// Intra or inter.
    pub kind: CommKind,
    /// Which node each rank runs on, when the platform knows.
    pub layout: Option<NodeLayout<'a>>,
    /// Thread level.
    pub thread_level: ThreadLevel,
}

impl<'a> CommInfo<'a> {
    /// An intra-communicator of `size` ranks, no node layout, single-threaded.
    pub fn intra(rank: u32, size: u32) -> Self {
        Self { rank, size, kind: CommKind::Intra, layout: None, thread_level: ThreadLevel::Single }
    }

    /// An inter-communicator with a local group of `size` and a remote group of
    /// `remote_size`.
    pub fn inter(rank: u32, size: u32, remote_size: u32) -> Self {
        Self { kind: CommKind::Inter { remote_size }, ..Self::intra(rank, size) }
    }

    /// With a node layout.
    pub fn with_layout(mut self, layout: NodeLayout<'a>) -> Self {
        self.layout = Some(layout);
        self
    }

    fn ctx(&self) -> Result<Ctx, CollError> {
        Ctx::new(self.rank, self.size)
    }
}

/// Identifies the built-in components.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComponentId {
    /// Linear algorithms for few ranks, logarithmic ones above; every operation, intra and
    /// inter.
    Basic,
    /// The decision table of [`tuned`].
    Tuned,
    /// Hierarchical collectives over a node layout.
    Hier,
    /// Inter-communicator collectives.
    Inter,
}

/// The operations every module may implement: per operation, a bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpSet(u32);

impl OpSet {
    /// Every operation.
    pub const ALL: OpSet = OpSet((1 << CollOp::COUNT) - 1);

    /// The set of `ops`.
    pub const fn of(ops: &[CollOp]) -> Self {
        let mut bits = 0;
        let mut i = 0;
        while i < ops.len() {
            bits |= 1 << ops[i] as u32;
            i += 1;
        }
        OpSet(bits)
    }

    /// Without `ops`.
    pub const fn without(self, ops: OpSet) -> Self {
        OpSet(self.0 & !ops.0)
    }

    /// Whether `op` is in the set.
    #[inline]
    pub const fn contains(self, op: CollOp) -> bool {
        self.0 & (1 << op as u32) != 0
    }
}

const SCANS: OpSet = OpSet::of(&[CollOp::Scan, CollOp::Exscan]);
const HIER_OPS: OpSet = OpSet::of(&[
    CollOp::Barrier,
    CollOp::Bcast,
    CollOp::Reduce,
    CollOp::Allreduce,
    CollOp::Allgather,
]);

/// A module supplied from outside commcore: its own decision logic over commcore's
/// schedules (the extension point for third-party components). `Sync`, so that a table
/// holding one can be shared by the threads of a process.
pub trait ExternalModule: Sync {
    /// The operations it implements.
    fn ops(&self) -> OpSet;
    /// The schedule for one call, which may borrow the call's block lists for as long as
    /// the call lasts.
    fn schedule<'c>(&'c self, op: CollOp, args: &CollArgs<'c>) -> Result<Schedule<'c>, CollError>;
}

/// A component's module for one communicator, with the state it precomputed.
#[derive(Clone, Copy)]
pub enum Module<'a> {
    /// `basic` on an intra-communicator.
    Basic(Ctx),
    /// `basic` or `inter` on an inter-communicator: local group and remote size.
    Inter(Ctx, u32),
    /// `tuned`.
    Tuned(Ctx),
    /// `hier`: this rank and the node layout; non-commutative reductions fall back to
    /// `tuned`'s flat choice.
    Hier(Ctx, NodeLayout<'a>),
    /// A module from outside commcore.
    External(&'a dyn ExternalModule),
    /// Operations the platform runs itself for this communicator, with no schedule (e.g.
    /// over shared memory): where it wins, the table also keeps the next module that
    /// schedules the operation, for the calls the platform declines.
    Native(OpSet),
}

impl core::fmt::Debug for Module<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Basic(c) => write!(f, "Basic({c:?})"),
            Self::Inter(c, r) => write!(f, "Inter({c:?}, {r})"),
            Self::Tuned(c) => write!(f, "Tuned({c:?})"),
            Self::Hier(c, _) => write!(f, "Hier({c:?})"),
            Self::External(_) => f.write_str("External"),
            Self::Native(ops) => write!(f, "Native({ops:?})"),
        }
    }
}

impl<'a> Module<'a> {
    /// The operations this module implements.
    pub fn ops(&self) -> OpSet {
        match self {
            Self::Basic(_) | Self::Tuned(_) => OpSet::ALL,
            Self::Inter(..) => OpSet::ALL.without(SCANS),
            Self::Hier(..) => HIER_OPS,
            Self::External(m) => m.ops(),
            Self::Native(ops) => *ops,
        }
    }

    /// The schedule of one call.
    #[inline]
    pub fn schedule(&self, op: CollOp, args: &CollArgs<'a>) -> Result<Schedule<'a>, CollError> {
        match self {
            Self::Basic(ctx) => Schedule::intra(op, tuned::basic(op, ctx.size), *ctx, args),
            Self::Tuned(ctx) => Schedule::intra(op, tuned_choice(op, ctx.size, args), *ctx, args),
            Self::Inter(ctx, remote) => Schedule::inter(op, *ctx, *remote, args),
            Self::Hier(ctx, layout) => {
                if op.reduces() && !args.op.is_commutative() {
                    Schedule::intra(op, tuned_choice(op, ctx.size, args), *ctx, args)
                } else {
                    Schedule::hier(op, ctx.rank, *layout, args)
                }
            }
            Self::External(m) => m.schedule(op, args),
            // The platform runs these itself; a table schedules them with the next module.
            Self::Native(_) => Err(CollError::NoModule(op)),
        }
    }
}

impl Module<'_> {
    /// How a table reaches this module for `op`, decided once at selection: the path and,
    /// for flat algorithms, the constructor of every plan slot.
    fn route(&self, op: CollOp, index: u8) -> Result<Route, CollError> {
        let (path, plan) = match self {
            Self::Basic(ctx) => (Path::Flat, Some(Plan::fixed(tuned::basic(op, ctx.size)))),
            Self::Tuned(ctx) => (Path::Flat, Some(tuned::plan(op, ctx.size))),
            Self::Hier(ctx, _) => (Path::Hier, Some(tuned::plan(op, ctx.size))),
            Self::Inter(..) => (Path::Inter, None),
            Self::External(_) | Self::Native(_) => (Path::External, None),
        };
        let mut route = Route { path, fallback: path, module: index, ..UNDEFINED };
        if let Some(plan) = plan {
            route.splits = plan.splits;
            for i in 0..3 {
                route.commutative[i] = constructor(op, plan.commutative[i])?;
                route.ordered[i] = constructor(op, plan.ordered[i])?;
            }
        }
        Ok(route)
    }
}

#[inline]
fn tuned_choice(op: CollOp, size: u32, args: &CollArgs<'_>) -> Algorithm {
    tuned::decide(op, size, args.selection_bytes(op), args.op.is_commutative())
}

/// A collective component: asked once per communicator whether it wants to serve it.
pub trait Component {
    /// The name control strings use.
    fn name(&self) -> &'static str;
    /// The priority it answers with unless the user overrides it (0–100).
    fn default_priority(&self) -> u8;
    /// A module for `comm`, or `None` when the component does not apply.
    fn query<'a>(&self, comm: &CommInfo<'a>) -> Option<Module<'a>>;
}

/// `basic`.
#[derive(Clone, Copy, Debug)]
pub struct Basic;
/// `tuned`.
#[derive(Clone, Copy, Debug)]
pub struct Tuned;
/// `hier`.
#[derive(Clone, Copy, Debug)]
pub struct Hier;
/// `inter`.
#[derive(Clone, Copy, Debug)]
pub struct Inter;

impl Component for Basic {
    fn name(&self) -> &'static str {
        "basic"
    }
    fn default_priority(&self) -> u8 {
        10
    }
    fn query<'a>(&self, comm: &CommInfo<'a>) -> Option<Module<'a>> {
        let ctx = comm.ctx().ok()?;
        Some(match comm.kind {
            CommKind::Intra => Module::Basic(ctx),
            CommKind::Inter { remote_size } => Module::Inter(ctx, remote_size),
        })
    }
}

impl Component for Tuned {
    fn name(&self) -> &'static str {
        "tuned"
    }
    fn default_priority(&self) -> u8 {
        30
    }
    fn query<'a>(&self, comm: &CommInfo<'a>) -> Option<Module<'a>> {
        match comm.kind {
            CommKind::Intra => Some(Module::Tuned(comm.ctx().ok()?)),
            CommKind::Inter { .. } => None,
        }
    }
}

impl Component for Hier {
    fn name(&self) -> &'static str {
        "hier"
    }
    fn default_priority(&self) -> u8 {
        50
    }
    fn query<'a>(&self, comm: &CommInfo<'a>) -> Option<Module<'a>> {
        let layout = comm.layout?;
        let applies =
            comm.kind == CommKind::Intra && layout.size() == comm.size && layout.is_hierarchical();
        applies.then_some(Module::Hier(comm.ctx().ok()?, layout))
    }
}

impl Component for Inter {
    fn name(&self) -> &'static str {
        "inter"
    }
    fn default_priority(&self) -> u8 {
        40
    }
    fn query<'a>(&self, comm: &CommInfo<'a>) -> Option<Module<'a>> {
        match comm.kind {
            CommKind::Inter { remote_size } => Some(Module::Inter(comm.ctx().ok()?, remote_size)),
            CommKind::Intra => None,
        }
    }
}

// Tables and schedules are plain data: threads may share and move them.
static_assertions::assert_impl_all!(CollTable<'static>: Send, Sync);

/// A table selected once for a communicator serves calls whose block lists live only as
/// long as the call (a v-collective's counts): it is covariant in its lifetime, which
/// this function would not compile without.
#[allow(dead_code)]
fn shortens<'call, 'table: 'call>(table: &'call CollTable<'table>) -> &'call CollTable<'call> {
    table
}
static_assertions::assert_impl_all!(Schedule<'static>: Send, Sync);

/// The built-in components.
pub const BUILTIN: [&dyn Component; 4] = [&Basic, &Tuned, &Hier, &Inter];
/// Their names, for [`Control::parse`].
pub const BUILTIN_NAMES: [&str; 4] = ["basic", "tuned", "hier", "inter"];

/// Modules a table holds at most.
pub const MAX_MODULES: usize = 8;

/// A selected module and where it came from.
#[derive(Clone, Copy, Debug)]
pub struct Selected<'a> {
    /// The component's name.
    pub name: &'static str,
    /// Its effective priority.
    pub priority: u8,
    /// The module.
    pub module: Module<'a>,
}

/// How a call of one operation reaches its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    /// A flat algorithm picked by the precomputed plan (`basic`, `tuned`).
    Flat,
    /// Hierarchical; non-commutative reductions take the plan's flat algorithm.
    Hier,
    /// Inter-communicator.
    Inter,
    /// Through the external module.
    External,
    /// Not defined on this communicator (scan on an inter-communicator).
    Undefined,
    /// The user forced algorithms for some sizes: checked first, then `Forced.1` applies.
    Forced,
}

/// Everything a call of one operation needs, precomputed at selection: where to go, the
/// constructor for each message-size range of the plan (for commutative and for ordered
/// reductions), and the forced ranges (an index span into the table's forces).
#[derive(Clone, Copy, Debug)]
struct Route {
    path: Path,
    /// The path behind forced ranges (`path` is then [`Path::Forced`]).
    fallback: Path,
    module: u8,
    forced: (u8, u8),
    splits: [usize; 2],
    commutative: [Ctor; 3],
    ordered: [Ctor; 3],
}

impl Route {
    #[inline(always)]
    fn pick(&self, op: CollOp, args: &CollArgs<'_>) -> Ctor {
        let bytes = args.selection_bytes(op);
        let i = (bytes >= self.splits[0]) as usize + (bytes >= self.splits[1]) as usize;
        if args.op.is_commutative() {
            self.commutative[i]
        } else {
            self.ordered[i]
        }
    }
}

/// A placeholder constructor for routes that never call one.
fn no_flat<'a>(_: Ctx, _: &CollArgs<'a>) -> Result<Schedule<'a>, CollError> {
    Err(CollError::AlgorithmNotFor(Algorithm::Leaders, CollOp::Barrier))
}

const UNDEFINED: Route = Route {
    path: Path::Undefined,
    fallback: Path::Undefined,
    module: 0,
    forced: (0, 0),
    splits: [usize::MAX; 2],
    commutative: [no_flat; 3],
    ordered: [no_flat; 3],
};

/// The collectives of one communicator on one rank: for every operation the module that
/// serves it, plus any forced algorithms.
#[derive(Clone, Debug)]
pub struct CollTable<'a> {
    modules: Vec<Selected<'a>, MAX_MODULES>,
    routes: [Route; CollOp::COUNT],
    /// Per operation, the native module that wins it (see [`Module::Native`]), if any.
    native: [Option<u8>; CollOp::COUNT],
    forces: Vec<Force, MAX_FORCES>,
    ctx: Ctx,
    layout: Option<NodeLayout<'a>>,
    inter: bool,
    remote: u32,
}

impl<'a> CollTable<'a> {
    /// Queries `components` for `comm` under `control` and selects, per operation, the
    /// highest-priority module implementing it (ties go to the earlier component). An
    /// operation defined on this kind of communicator that no module implements is
    /// [`CollError::NoModule`]. Where a native module wins, the schedule comes from the
    /// next module that implements the operation, and [`CollTable::native`] names the
    /// winner; an operation with forced algorithms is always scheduled.
    pub fn select(
        comm: &CommInfo<'a>,
        components: &[&dyn Component],
        control: &Control<'_>,
    ) -> Result<Self, CollError> {
        let ctx = comm.ctx()?;
        let mut modules: Vec<Selected<'a>, MAX_MODULES> = Vec::new();
        for c in components {
            if !control.allows(c.name()) {
                continue;
            }
            let priority = control.priority(c.name()).unwrap_or(c.default_priority());
            if let Some(module) = c.query(comm) {
                let at =
                    modules.iter().position(|m| m.priority < priority).unwrap_or(modules.len());
                modules
                    .insert(at, Selected { name: c.name(), priority, module })
                    .map_err(|_| CollError::Capacity)?;
            }
        }
        let inter = matches!(comm.kind, CommKind::Inter { .. });
        let mut routes = [UNDEFINED; CollOp::COUNT];
        let mut native = [None; CollOp::COUNT];
        let is_native = |m: &Selected<'_>| matches!(m.module, Module::Native(_));
        for op in CollOp::ALL {
            if inter && SCANS.contains(op) {
                continue;
            }
            let serves = |m: &Selected<'_>| m.module.ops().contains(op);
            let winner = modules.iter().position(serves).ok_or(CollError::NoModule(op))?;
            let forced = control.forces().iter().any(|f| f.op == op);
            if is_native(&modules[winner]) && !forced {
                native[op as usize] = Some(winner as u8);
            }
            let i = modules
                .iter()
                .position(|m| serves(m) && !is_native(m))
                .ok_or(CollError::NoModule(op))?;
            routes[op as usize] = modules[i].module.route(op, i as u8)?;
        }
        let mut forces: Vec<Force, MAX_FORCES> = Vec::new();
        if !inter {
            for op in CollOp::ALL {
                let first = forces.len() as u8;
                for f in control.forces().iter().filter(|f| f.op == op) {
                    forces.push(*f).map_err(|_| CollError::Capacity)?;
                }
                if forces.len() as u8 > first {
                    let route = &mut routes[op as usize];
                    route.forced = (first, forces.len() as u8);
                    route.path = Path::Forced;
                }
            }
        }
        let remote = match comm.kind {
            CommKind::Inter { remote_size } => remote_size,
            CommKind::Intra => 0,
        };
        Ok(Self { modules, routes, native, forces, ctx, layout: comm.layout, inter, remote })
    }

    /// The schedule for one call of `op`: one table lookup and one dispatch.
    #[inline(always)]
    pub fn schedule(&self, op: CollOp, args: &CollArgs<'a>) -> Result<Schedule<'a>, CollError> {
        let route = &self.routes[op as usize];
        self.follow(route.path, route, op, args)
    }

    #[inline(always)]
    fn follow(
        &self,
        path: Path,
        route: &Route,
        op: CollOp,
        args: &CollArgs<'a>,
    ) -> Result<Schedule<'a>, CollError> {
        match path {
            Path::Flat => (route.pick(op, args))(self.ctx, args),
            Path::Hier => match self.layout {
                Some(layout) if !op.reduces() || args.op.is_commutative() => {
                    Schedule::hier(op, self.ctx.rank, layout, args)
                }
                _ => (route.pick(op, args))(self.ctx, args),
            },
            Path::Inter => Schedule::inter(op, self.ctx, self.remote, args),
            Path::External => self.modules[route.module as usize].module.schedule(op, args),
            Path::Undefined => Err(CollError::NotOnInterComm(op)),
            Path::Forced => self.forced_or_fallback(route, op, args),
        }
    }

    /// The cold path of an operation with forced ranges.
    #[cold]
    #[inline(never)]
    fn forced_or_fallback(
        &self,
        route: &Route,
        op: CollOp,
        args: &CollArgs<'a>,
    ) -> Result<Schedule<'a>, CollError> {
        let (a, b) = route.forced;
        match self.forced_schedule(op, a, b, args) {
            Some(s) => s,
            None if route.fallback == Path::Forced => Err(CollError::NoModule(op)),
            None => self.follow(route.fallback, route, op, args),
        }
    }

    /// The forced algorithm whose range holds this call, if any. A forced algorithm that
    /// cannot take the operation (a reordering one with a non-commutative op, `hier` without
    /// a layout) yields to the selected module.
    #[cold]
    fn forced_schedule(
        &self,
        op: CollOp,
        a: u8,
        b: u8,
        args: &CollArgs<'a>,
    ) -> Option<Result<Schedule<'a>, CollError>> {
        let bytes = args.selection_bytes(op);
        let f =
            self.forces[a as usize..b as usize].iter().find(|f| f.lo <= bytes && bytes <= f.hi)?;
        if op.reduces() && f.alg.reorders() && !args.op.is_commutative() {
            return None;
        }
        if f.alg == Algorithm::Hierarchical {
            return self.layout.map(|l| Schedule::hier(op, self.ctx.rank, l, args));
        }
        Some(Schedule::intra(op, f.alg, self.ctx, args))
    }

    /// The name of the component serving `op`: the native one where one wins, else the one
    /// scheduling it (`None` where `op` is undefined).
    pub fn provider(&self, op: CollOp) -> Option<&'static str> {
        self.native(op).or_else(|| self.scheduler(op))
    }

    /// The native module's component that wins `op`, if one does: the platform runs the
    /// call itself, and [`CollTable::schedule`] serves the calls it declines.
    #[inline]
    pub fn native(&self, op: CollOp) -> Option<&'static str> {
        self.native[op as usize].map(|i| self.modules[i as usize].name)
    }

    /// The name of the component whose schedules serve `op` (`None` where `op` is
    /// undefined).
    pub fn scheduler(&self, op: CollOp) -> Option<&'static str> {
        match self.routes[op as usize].fallback {
            Path::Undefined => None,
            _ => Some(self.modules[self.routes[op as usize].module as usize].name),
        }
    }

    /// The selected modules, highest priority first.
    pub fn modules(&self) -> &[Selected<'a>] {
        &self.modules
    }

    /// Whether this is an inter-communicator's table.
    pub fn is_inter(&self) -> bool {
        self.inter
    }

    /// Ranks of the (local) group the table was selected for.
    pub fn size(&self) -> u32 {
        self.ctx.size
    }
}
