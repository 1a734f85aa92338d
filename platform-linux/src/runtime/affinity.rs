//! Binding each rank to a CPU, as Open MPI's launcher does for small jobs: left unbound, two ranks
//! of a job may end up sharing one core while another program runs on the other, and every wait
//! between them then costs a poll time (200 µs) instead of a cache-line transfer. With more ranks
//! than CPUs the ranks are dealt out in turn, so every CPU runs the same number (left to the
//! scheduler, the busier of two cores sets the pace, and ranks that migrate take their cache lines
//! along). Dealt out, the 8-rank split benchmark's median fell from 5.7–18 µs to 5.1–5.7
//! (small_comm) and 27–61 µs to 23–30 (large_comm), and barrier from 2.8–4.1 to 2.7–3.8 µs
//! (interleaved runs; the machine's slow and fast phases move both).

use super::settings::Bind;

/// Binds this thread (the process's main one, before it starts others) to the
/// `rank mod CPUs`-th CPU it may run on; returns that CPU.
pub(super) fn bind(rank: usize, bind: Bind) -> Option<usize> {
    if bind == Bind::None {
        return None;
    }
    // SAFETY: an all-zero cpu_set_t is an empty set.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let set_size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `allowed` is a writable cpu_set_t of `set_size` bytes; pid 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, set_size, &mut allowed) } != 0 {
        return None;
    }
    // SAFETY: CPU_ISSET reads the set for indices below CPU_SETSIZE.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &allowed) })
        .collect();
    let cpu = *cpus.get(rank % cpus.len().max(1))?;
    // SAFETY: an all-zero cpu_set_t is an empty set.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (it came from the loop above).
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // SAFETY: `one` is a valid cpu_set_t of `set_size` bytes; pid 0 is this thread.
    (unsafe { libc::sched_setaffinity(0, set_size, &one) } == 0).then_some(cpu)
}
