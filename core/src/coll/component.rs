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
use super::error::CollError;
use super::layout::NodeLayout;
use super::schedule::Schedule;
use super::tuned;

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
/// schedules (the extension point for third-party components).
pub trait ExternalModule<'a> {
    /// The operations it implements.
    fn ops(&self) -> OpSet;
    /// The schedule for one call.
    fn schedule(&self, op: CollOp, args: &CollArgs<'a>) -> Result<Schedule<'a>, CollError>;
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
    External(&'a dyn ExternalModule<'a>),
}

impl core::fmt::Debug for Module<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Basic(c) => write!(f, "Basic({c:?})"),
            Self::Inter(c, r) => write!(f, "Inter({c:?}, {r})"),
            Self::Tuned(c) => write!(f, "Tuned({c:?})"),
            Self::Hier(c, _) => write!(f, "Hier({c:?})"),
            Self::External(_) => f.write_str("External"),
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
        }
    }
}

#[inline]
fn tuned_choice(op: CollOp, size: u32, args: &CollArgs<'_>) -> Algorithm {
    tuned::decide(op, size, args.message_bytes(), args.op.is_commutative())
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    Module(u8),
    Undefined,
}

/// The collectives of one communicator on one rank: for every operation the module that
/// serves it, plus any forced algorithms.
#[derive(Clone, Debug)]
pub struct CollTable<'a> {
    modules: Vec<Selected<'a>, MAX_MODULES>,
    entries: [Entry; CollOp::COUNT],
    forced: [Option<(u8, u8)>; CollOp::COUNT],
    forces: Vec<Force, MAX_FORCES>,
    ctx: Ctx,
    layout: Option<NodeLayout<'a>>,
    inter: bool,
}

impl<'a> CollTable<'a> {
    /// Queries `components` for `comm` under `control` and selects, per operation, the
    /// highest-priority module implementing it (ties go to the earlier component). An
    /// operation defined on this kind of communicator that no module implements is
    /// [`CollError::NoModule`].
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
                    .map_err(|_| CollError::TooLarge)?;
            }
        }
        let inter = matches!(comm.kind, CommKind::Inter { .. });
        let mut entries = [Entry::Undefined; CollOp::COUNT];
        for op in CollOp::ALL {
            if inter && SCANS.contains(op) {
                continue;
            }
            let i = modules
                .iter()
                .position(|m| m.module.ops().contains(op))
                .ok_or(CollError::NoModule(op))?;
            entries[op as usize] = Entry::Module(i as u8);
        }
        let mut forces: Vec<Force, MAX_FORCES> = Vec::new();
        let mut forced = [None; CollOp::COUNT];
        if !inter {
            for op in CollOp::ALL {
                let first = forces.len() as u8;
                for f in control.forces().iter().filter(|f| f.op == op) {
                    forces.push(*f).map_err(|_| CollError::TooLarge)?;
                }
                if forces.len() as u8 > first {
                    forced[op as usize] = Some((first, forces.len() as u8));
                }
            }
        }
        Ok(Self { modules, entries, forced, forces, ctx, layout: comm.layout, inter })
    }

    /// The schedule for one call of `op`: one table lookup and one dispatch.
    #[inline]
    pub fn schedule(&self, op: CollOp, args: &CollArgs<'a>) -> Result<Schedule<'a>, CollError> {
        if let Some((a, b)) = self.forced[op as usize] {
            if let Some(s) = self.forced_schedule(op, a, b, args) {
                return s;
            }
        }
        match self.entries[op as usize] {
            Entry::Module(i) => self.modules[i as usize].module.schedule(op, args),
            Entry::Undefined => Err(CollError::NotOnInterComm(op)),
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
        let bytes = args.message_bytes();
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

    /// The name of the component serving `op` (`None` where `op` is undefined).
    pub fn provider(&self, op: CollOp) -> Option<&'static str> {
        match self.entries[op as usize] {
            Entry::Module(i) => Some(self.modules[i as usize].name),
            Entry::Undefined => None,
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
}
