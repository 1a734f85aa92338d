//! What the simulated threads do: communicators, allocations and frees.

use commcore::cid::Cid;

/// A communicator of the script, by index.
pub type CommId = usize;
/// An allocation of the script, by index.
pub type OpId = usize;

/// A communicator that exists before the run (world, self), claimed at every member.
#[derive(Clone, Debug)]
pub struct Predefined {
    /// Its id in the script.
    pub comm: CommId,
    /// Its CID on every member.
    pub cid: Cid,
    /// Member ranks.
    pub members: Vec<usize>,
}

/// One CID allocation: a collective over `members` (the parent's ranks for a split, the
/// group for a group-collective creation) under the parent's CID and `tag`.
#[derive(Clone, Debug)]
pub struct Allocation {
    /// The parent communicator; its CID orders concurrent requests.
    pub parent: CommId,
    /// 0 for communicator-collective creation, the user's tag for a group creation.
    pub tag: u32,
    /// Ranks taking part in the allreduces.
    pub members: Vec<usize>,
    /// Ranks that become members of the new communicator; the others free the CID at once
    /// (as `comm_split` does for a rank with an undefined colour).
    pub keep: Vec<usize>,
    /// The communicator created.
    pub comm: CommId,
}

/// A step of one thread's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Take part in an allocation.
    Allocate(OpId),
    /// Free a communicator (local: only this rank's CID is released).
    Free(CommId),
}

/// A whole program: who exists, what is allocated, and each thread's sequence.
#[derive(Clone, Debug, Default)]
pub struct Script {
    /// Ranks in the world.
    pub ranks: usize,
    /// Threads per rank.
    pub threads: usize,
    /// Communicators that exist at the start.
    pub predefined: Vec<Predefined>,
    /// Every allocation.
    pub allocations: Vec<Allocation>,
    /// `programs[rank][thread]`: the actions of that thread, in order.
    pub programs: Vec<Vec<Vec<Action>>>,
    /// How many communicators the script names (predefined and allocated).
    pub comms: usize,
}

impl Script {
    /// An empty script of `ranks` × `threads` with world (CID 0) and each rank's self
    /// (CID 1) predefined, as comms `0` and `1 + rank`.
    pub fn new(ranks: usize, threads: usize) -> Self {
        let mut predefined = vec![Predefined { comm: 0, cid: 0, members: (0..ranks).collect() }];
        predefined.extend((0..ranks).map(|r| Predefined { comm: 1 + r, cid: 1, members: vec![r] }));
        Self {
            ranks,
            threads,
            predefined,
            allocations: Vec::new(),
            programs: vec![vec![Vec::new(); threads]; ranks],
            comms: 1 + ranks,
        }
    }

    /// The world communicator.
    pub const WORLD: CommId = 0;

    /// The self communicator of `rank`.
    pub fn self_comm(rank: usize) -> CommId {
        1 + rank
    }

    /// Adds a communicator that exists from the start with `cid` on `members`.
    pub fn predefine(&mut self, cid: Cid, members: Vec<usize>) -> CommId {
        let comm = self.comms;
        self.comms += 1;
        self.predefined.push(Predefined { comm, cid, members });
        comm
    }

    /// Adds an allocation and appends it to `thread`'s program on every member; returns
    /// the new communicator.
    pub fn allocate(
        &mut self,
        thread: usize,
        parent: CommId,
        tag: u32,
        members: Vec<usize>,
        keep: Vec<usize>,
    ) -> CommId {
        let comm = self.comms;
        self.comms += 1;
        let op = self.allocations.len();
        for &rank in &members {
            self.programs[rank][thread].push(Action::Allocate(op));
        }
        self.allocations.push(Allocation { parent, tag, members, keep, comm });
        comm
    }

    /// Appends a free of `comm` to `thread`'s program on each of `members`.
    pub fn free(&mut self, thread: usize, comm: CommId, members: &[usize]) {
        for &rank in members {
            self.programs[rank][thread].push(Action::Free(comm));
        }
    }
}
