//! The process groups this process knows (its world's, and every spawned or connected
//! group's), each with its address vector, how many communicators reach it, and what ties
//! it to this process (the bridge its processes are reached through). A group goes when the
//! last communicator that reaches it is freed or disconnected.
//!
//! Communicators keep a snapshot of the registry from when they were made: a rank map of a
//! merged communicator looks its groups up there, without a lock. Registering or releasing
//! a group makes a new snapshot for the communicators made afterwards.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use commcore::av::{Ave, Pgid, ProcessGroups};
use commcore::rankmap::RankMap;

use super::MAX_PROCESS_GROUPS;

/// A snapshot of the registry's groups.
pub(super) type Groups = ProcessGroups<'static, MAX_PROCESS_GROUPS>;

/// The groups a communicator reaches, one bit per process-group id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct GroupSet(pub(super) u64);

impl GroupSet {
    /// The set holding `pgid`.
    pub(super) fn of(pgid: Pgid) -> GroupSet {
        GroupSet(1 << pgid.0)
    }

    /// Both sets.
    pub(super) fn union(self, other: GroupSet) -> GroupSet {
        GroupSet(self.0 | other.0)
    }

    /// The groups `map` translates into (every rank of a multi-group map is looked at).
    pub(super) fn reached_by(map: &RankMap<'_>) -> GroupSet {
        match map.pgid() {
            Some(pgid) => GroupSet::of(pgid),
            None => (0..map.size())
                .filter_map(|r| map.translate(r))
                .fold(GroupSet::default(), |set, (pgid, _)| set.union(GroupSet::of(pgid))),
        }
    }

    fn pgids(self) -> impl Iterator<Item = usize> {
        (0..MAX_PROCESS_GROUPS).filter(move |&i| self.0 & (1 << i) != 0)
    }
}

/// What ties a group to this process, undone when the group goes.
pub(crate) struct GroupTie {
    /// How the engine reaches the group's processes.
    pub(crate) kind: TieKind,
    /// What to tell the launcher when the group goes.
    pub(crate) launcher: LauncherTie,
}

/// How the engine reaches a group's processes.
pub(crate) enum TieKind {
    /// Through a bridge on this host: guest indices `first..first + count`.
    Shm { first: usize, count: usize },
    /// Over message link `link` (TCP or verbs) of the group's own.
    Link { link: usize },
}

/// What the launcher knows of a group's bridge.
#[derive(Clone)]
pub(crate) enum LauncherTie {
    /// Nothing (no launcher, or another process of ours tells it).
    None,
    /// It spawned the group as job `job`: this process tells it the job is disconnected.
    Spawned(u64),
    /// This process registered the bridge under `id` (accept/connect).
    Registered(u64),
}

#[derive(Default)]
struct Entry {
    /// Communicators that reach the group.
    users: u32,
    tie: Option<GroupTie>,
}

/// The registry, shared by the process's threads.
pub(super) struct Registry {
    inner: Mutex<Inner>,
}

struct Inner {
    groups: Groups,
    snapshot: Arc<Groups>,
    entries: [Entry; MAX_PROCESS_GROUPS],
}

impl Registry {
    /// A registry holding the world's group, whose address vector is `world`.
    pub(super) fn new(world: &'static [Ave]) -> Result<Registry, commcore::av::GroupsError> {
        let mut groups = Groups::new();
        groups.register(world)?;
        let snapshot = Arc::new(groups.clone());
        let entries = std::array::from_fn(|_| Entry::default());
        Ok(Registry { inner: Mutex::new(Inner { groups, snapshot, entries }) })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current snapshot, for building rank maps and communicators.
    pub(super) fn snapshot(&self) -> Arc<Groups> {
        self.lock().snapshot.clone()
    }

    /// Registers a group whose address vector is `av`, tied by `tie`; it has no user until
    /// a communicator acquires it.
    pub(super) fn register(
        &self,
        av: &'static [Ave],
        tie: GroupTie,
    ) -> Result<Pgid, commcore::av::GroupsError> {
        let mut inner = self.lock();
        let pgid = inner.groups.register(av)?;
        inner.entries[pgid.0 as usize] = Entry { users: 0, tie: Some(tie) };
        inner.snapshot = Arc::new(inner.groups.clone());
        Ok(pgid)
    }

    /// Counts a new communicator in every group of `set`.
    pub(super) fn acquire(&self, set: GroupSet) {
        let mut inner = self.lock();
        for i in set.pgids() {
            inner.entries[i].users += 1;
        }
    }

    /// Counts a communicator out of every group of `set`; returns the ties of the groups
    /// nobody reaches any more (now unregistered), for the caller to undo.
    pub(super) fn release(&self, set: GroupSet) -> Vec<GroupTie> {
        let mut inner = self.lock();
        let mut gone = Vec::new();
        for i in set.pgids() {
            let entry = &mut inner.entries[i];
            entry.users = entry.users.saturating_sub(1);
            if entry.users == 0 && i != 0 {
                if let Some(tie) = entry.tie.take() {
                    gone.push(tie);
                    // Registered, so known: unregistering cannot fail.
                    let _ = inner.groups.unregister(Pgid(i as u16));
                }
            }
        }
        if !gone.is_empty() {
            inner.snapshot = Arc::new(inner.groups.clone());
        }
        gone
    }

    /// Takes back a group that no communicator came to reach (its set-up failed).
    pub(super) fn abandon(&self, pgid: Pgid) -> Option<GroupTie> {
        let mut inner = self.lock();
        let entry = inner.entries.get_mut(pgid.0 as usize)?;
        if entry.users != 0 {
            return None;
        }
        let tie = entry.tie.take();
        let _ = inner.groups.unregister(pgid);
        inner.snapshot = Arc::new(inner.groups.clone());
        tie
    }

    /// Groups registered now, the world's included.
    pub(super) fn len(&self) -> usize {
        self.lock().groups.len()
    }
}
