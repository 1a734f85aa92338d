/* The communicator whose error handler the current call's errors go to, one per thread.
 * In C for its TLS model: initial-exec reads and writes it at a fixed offset from the
 * thread pointer, where Rust's thread_local! in a shared library calls __tls_get_addr on
 * every access (some 25 instructions, twice a call). Four bytes of the static TLS that
 * glibc keeps spare for libraries loaded later, so dlopen (mpi4py) still loads us.
 * 0 stands for MPI_COMM_WORLD (no handle is 0), so that a new thread needs no set-up. */
static __thread int call_comm __attribute__((tls_model("initial-exec")));

__attribute__((visibility("hidden"))) void commcore_mpi_set_call_comm(int comm) {
    call_comm = comm;
}

__attribute__((visibility("hidden"))) int commcore_mpi_call_comm(void) {
    return call_comm;
}
