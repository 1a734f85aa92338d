//! How a rank waits in a shared-memory collective: poll, then yield its core, then sleep on
//! its doorbell; and how a rank that publishes wakes sleepers.
//!
//! With a core per rank, polling for the runtime's poll time (200 µs by default) answers
//! fastest. With more ranks than cores every poll steals the core from the rank we wait
//! for, so the waiter does not poll at all (unlike point-to-point waits, which poll 2 µs):
//! it yields at once, the ranks sharing a core take turns, and a collective costs about
//! one scheduling of each rank. Measured at 8 ranks on 2 cores, polling 2 µs first made
//! barrier and allreduce 3–4 times slower. Only after the yield time (`COMMCORE_YIELD_US`,
//! 2 ms by default) does it sleep, so a long wait does not burn a core.
//! `COMMCORE_COLL_SPIN_US` overrides the poll time of these waits. A waiter does not poll
//! either when another member last waited on its CPU: on a busy machine two ranks may
//! share a core even when there are as many cores as ranks, and then polling only delays
//! the rank it waits for (by the whole poll time, 200 µs, per wait). The one exception is
//! a call every member of the job takes part in, once all members it waits for run on
//! other CPUs: then it polls briefly ([`Awaited::Spread`]; 8 ranks on 2 cores, barrier,
//! allreduce and alltoall at 8 B, interleaved runs: 7–12 % faster).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::runtime::Runtime;
use crate::shm::coll_area::current_cpu;
use crate::shm::CollArea;

/// Polls of the condition between two reads of the clock.
const POLLS_PER_CHECK: u32 = 64;

/// How long a shared-memory collective polls before it yields (`COMMCORE_COLL_SPIN_US`;
/// default: the runtime's poll time with a core per process, 0 with more processes than
/// cores, counting the connected groups' processes that share this node).
fn poll_time(runtime: &Runtime) -> Duration {
    static OVERRIDE: OnceLock<Option<Duration>> = OnceLock::new();
    let set = OVERRIDE.get_or_init(|| {
        crate::runtime::settings::current().coll_spin_us.map(Duration::from_micros)
    });
    match set {
        Some(poll) => *poll,
        None if runtime.crowded() => Duration::ZERO,
        None => runtime.spin.poll,
    }
}

/// With more ranks than cores, how long a member that waits in an all-to-all area call
/// polls while every member it waits for runs on other CPUs (see [`Awaited::Spread`]).
const SPREAD_POLL: Duration = Duration::from_micros(5);

/// Whom a wait waits for, which decides whether it may poll with more ranks than cores.
pub(super) enum Awaited<'f> {
    /// Any member: the wait yields at once when ranks outnumber cores.
    Anyone,
    /// The members for which the function holds, in a call every member of a communicator
    /// that spans the whole job takes part in (barrier, allreduce, alltoall). A member that
    /// waits there polls for up to [`SPREAD_POLL`] while none of them last ran on its CPU:
    /// the members that share its CPU have all arrived and wait as it does, so yielding
    /// to them only costs a context switch each (0.55 µs here), and the call completes as
    /// soon as the other CPUs' members arrive. A short bcast's readers wait for the root
    /// so too: it publishes its next message sooner than a context switch takes.
    Spread(&'f dyn Fn(usize) -> bool),
}

/// Returns once `ready()` holds. `me` is this member; the wait polls only while no other
/// member last ran on this CPU: one that shares our core cannot make progress while we poll.
#[inline]
pub(super) fn wait_until(
    runtime: &Runtime,
    area: &CollArea<'_>,
    me: usize,
    awaited: Awaited<'_>,
    ready: impl Fn() -> bool,
) {
    if !ready() {
        wait_slowly(runtime, area, me, awaited, &ready);
    }
}

/// [`wait_until`] once the first look found it not ready: out of line, so that a call
/// that need not wait does not pay for setting up the loop.
#[cold]
#[inline(never)]
fn wait_slowly(
    runtime: &Runtime,
    area: &CollArea<'_>,
    me: usize,
    awaited: Awaited<'_>,
    ready: &dyn Fn() -> bool,
) {
    let spread_poll = match awaited {
        Awaited::Spread(awaited) if area.members() == runtime.fabric.size => {
            let here = current_cpu().map_or(0, |cpu| cpu + 1);
            let awaited_here = (0..area.members())
                .any(|m| m != me && awaited(m) && area.cpu(m).load(Relaxed) == here);
            if here == 0 || awaited_here {
                Duration::ZERO
            } else {
                SPREAD_POLL
            }
        }
        _ => Duration::ZERO,
    };
    let poll = if shares_cpu(area, me) { spread_poll } else { poll_time(runtime).max(spread_poll) };
    let start = Instant::now();
    loop {
        let waited = start.elapsed();
        // Sends an earlier schedule left queued move on only while their sender drives
        // them, and their receiver may be what we wait for.
        let sending = push_queued_sends(runtime);
        if sending && waited < poll {
            // Push again as soon as the receiver makes room.
            std::hint::spin_loop();
        } else if waited < poll {
            for _ in 0..POLLS_PER_CHECK {
                if ready() {
                    return;
                }
                std::hint::spin_loop();
            }
        } else if sending || waited < runtime.spin.yield_until {
            std::thread::yield_now();
        } else {
            // Publishers read the area's sleeper count after `ShmTransport::waker_fence`; the
            // fabric's sleep fences (or barriers) after our increment, so one of us sees
            // the other.
            // A peer's send may wait on a receive posted here before this call.
            runtime.engine().pull_matched_remotes(&runtime.fabric);
            area.sleepers().fetch_add(1, Relaxed);
            runtime.fabric.sleep(ready);
            area.sleepers().fetch_sub(1, Relaxed);
        }
        if ready() {
            return;
        }
    }
}

/// Records this member's CPU in the area; whether another member last waited on it.
fn shares_cpu(area: &CollArea<'_>, me: usize) -> bool {
    let cpu = current_cpu().map_or(0, |cpu| cpu + 1);
    if area.cpu(me).load(Relaxed) != cpu {
        area.cpu(me).store(cpu, Relaxed);
    }
    cpu != 0 && (0..area.members()).any(|m| m != me && area.cpu(m).load(Relaxed) == cpu)
}

/// Moves point-to-point traffic on while we wait: pushes what sends still queue into the
/// rings and takes what peers put in ours or on TCP (a peer may block until its long sends
/// leave its queue). Returns whether sends remain queued.
fn push_queued_sends(runtime: &Runtime) -> bool {
    let fabric = &runtime.fabric;
    let mut engine = runtime.engine();
    if !runtime.links_up() && !engine.has_outbound() && !engine.inbound_anywhere(fabric) {
        return false;
    }
    // A failure belongs to the message's own operation, which reports it when it next
    // looks; here the traffic only moves.
    let _ = engine.progress(fabric, None, None);
    engine.has_outbound()
}

/// Call after publishing: wakes the members (world ranks `world`) if any of them sleeps in
/// a wait on `area`.
pub(super) fn wake_sleepers(runtime: &Runtime, area: &CollArea<'_>, world: &[usize]) {
    // Sleepers count themselves in the area before `ShmTransport::sleep`'s fence or barrier.
    runtime.fabric.waker_fence();
    if area.sleepers().load(Relaxed) != 0 {
        for &rank in world {
            if rank != runtime.fabric.rank {
                runtime.fabric.notify(rank);
            }
        }
    }
}
