//! Gives the shared library the soname that programs built with Debian's MPICH load, and
//! builds the C reductions on types Rust has no arithmetic for (`src/wide_ops.c`) and the
//! per-thread communicator of the current call (`src/call_comm.c`).

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpich.so.12");
    }
    println!("cargo:rerun-if-changed=src/wide_ops.c");
    println!("cargo:rerun-if-changed=src/call_comm.c");
    cc::Build::new()
        .file("src/wide_ops.c")
        .file("src/call_comm.c")
        .std("c11")
        .warnings_into_errors(true)
        .compile("wide_ops");
}
