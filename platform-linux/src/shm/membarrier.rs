//! Asymmetric memory barriers between the processes of a job (`membarrier(2)`, global
//! expedited): the rare side calls [`global`], which makes every CPU that runs a registered
//! process execute a full barrier, so that the frequent side needs only a compiler fence.

// From <linux/membarrier.h>.
const CMD_GLOBAL_EXPEDITED: libc::c_long = 1 << 1;
const CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_long = 1 << 2;

/// Registers this process as a target of [`global`]. `false` when the kernel does not offer
/// expedited global barriers (too old, or filtered): then the job must not rely on them.
pub fn register() -> bool {
    // SAFETY: membarrier takes no pointers; an unknown command only fails with EINVAL.
    unsafe { libc::syscall(libc::SYS_membarrier, CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0 }
}

/// A full memory barrier on every CPU that runs a registered process, ordered after this
/// thread's earlier accesses and before its later ones. Call only after every process of
/// the job registered.
pub fn global() {
    // SAFETY: as in register. It cannot fail once this process registered; if it did, the
    // waiter's sleep is bounded by its time slice, so a lost wake-up costs time, not a hang.
    unsafe {
        libc::syscall(libc::SYS_membarrier, CMD_GLOBAL_EXPEDITED, 0, 0);
    }
}
