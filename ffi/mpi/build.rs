//! Gives the shared library the soname that programs built with Debian's MPICH load.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpich.so.12");
    }
}
