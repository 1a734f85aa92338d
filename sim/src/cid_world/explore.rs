//! Exhaustive exploration of a small world's interleavings.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::{SimFailure, World};

/// What exploring every interleaving found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exploration {
    /// Distinct world states reached.
    pub states: usize,
    /// States where every thread finished.
    pub finished: usize,
    /// The first failure: a check that failed on some path, a state where no thread can
    /// move, or a state from which no interleaving finishes (threads spin forever).
    pub failure: Option<SimFailure>,
    /// True when the state budget ran out before the exploration closed.
    pub truncated: bool,
}

fn fingerprint<const W: usize>(world: &World<W>) -> u64 {
    let mut hasher = DefaultHasher::new();
    world.hash(&mut hasher);
    hasher.finish()
}

/// Explores every scheduling choice from `start` (each step of each runnable thread), up
/// to `max_states` distinct states. Steps never read the random generator, so the
/// branching is exactly the choice of which thread moves.
pub fn explore<const W: usize>(start: World<W>, max_states: usize) -> Exploration {
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut successors: Vec<Vec<usize>> = Vec::new();
    let mut steps: Vec<u64> = Vec::new();
    let mut stuck: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut finished = Vec::new();
    // Spinning is judged below from the state graph, not by a step budget.
    let mut stack = vec![(start.with_stall_limit(u64::MAX), 0usize)];
    index.insert(fingerprint(&stack[0].0), 0);
    successors.push(Vec::new());
    steps.push(0);
    stuck.push(Vec::new());
    let mut truncated = false;
    while let Some((world, id)) = stack.pop() {
        match world.verdict() {
            Some(Ok(())) => {
                finished.push(id);
                continue;
            }
            Some(Err(failure)) => {
                return Exploration {
                    states: index.len(),
                    finished: finished.len(),
                    failure: Some(failure),
                    truncated,
                };
            }
            None => {}
        }
        for thread in world.runnable() {
            let mut next = world.clone();
            if let Err(failure) = next.step(thread) {
                return Exploration {
                    states: index.len(),
                    finished: finished.len(),
                    failure: Some(failure),
                    truncated,
                };
            }
            let key = fingerprint(&next);
            let next_id = match index.get(&key) {
                Some(&known) => known,
                None => {
                    if index.len() >= max_states {
                        truncated = true;
                        continue;
                    }
                    let new_id = index.len();
                    index.insert(key, new_id);
                    successors.push(Vec::new());
                    steps.push(next.steps());
                    stuck.push(next.unfinished());
                    stack.push((next, new_id));
                    new_id
                }
            };
            successors[id].push(next_id);
        }
    }
    // Every state must be able to reach a finished one; a state that cannot is a cycle of
    // retries that never lets an allocation complete.
    let mut predecessors = vec![Vec::new(); successors.len()];
    for (from, tos) in successors.iter().enumerate() {
        for &to in tos {
            predecessors[to].push(from);
        }
    }
    let mut can_finish = vec![false; successors.len()];
    let mut work = finished.clone();
    for &id in &finished {
        can_finish[id] = true;
    }
    while let Some(id) = work.pop() {
        for &from in &predecessors[id] {
            if !can_finish[from] {
                can_finish[from] = true;
                work.push(from);
            }
        }
    }
    let failure = if truncated {
        None
    } else {
        can_finish.iter().position(|ok| !ok).map(|id| SimFailure::Deadlock {
            steps: steps[id],
            spinning: true,
            stuck: stuck[id].clone(),
        })
    };
    Exploration { states: index.len(), finished: finished.len(), failure, truncated }
}
