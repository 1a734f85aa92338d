//! With the `pmix` feature: links libpmix and checks the hand-written declarations of
//! `src/launch/pmix/ffi.rs` against the C headers (see `src/launch/pmix/header.c`). Without
//! it: nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "pmix")]
    pmix::main();
}

#[cfg(feature = "pmix")]
mod pmix {
    use std::path::PathBuf;
    use std::process::Command;

    /// Debian's libpmix-dev (libpmix2 4.2) installs here; `PMIX_DIR` overrides.
    const DEBIAN: &str = "/usr/lib/x86_64-linux-gnu/pmix2";

    pub fn main() {
        println!("cargo:rerun-if-changed=src/launch/pmix/header.c");
        println!("cargo:rerun-if-env-changed=PMIX_DIR");
        let dir = PathBuf::from(std::env::var("PMIX_DIR").unwrap_or_else(|_| DEBIAN.into()));
        let include = dir.join("include");
        if !include.join("pmix.h").exists() {
            fail(&format!(
                "the pmix feature needs libpmix's headers: no {} (install libpmix-dev, or set \
                 PMIX_DIR to the prefix holding include/pmix.h and lib/libpmix.so)",
                include.join("pmix.h").display()
            ));
        }
        let (host, target) = (var("HOST"), var("TARGET"));
        if host != target {
            fail("the pmix feature runs a C program against the headers: no cross-compiling");
        }
        let out = PathBuf::from(var("OUT_DIR"));
        let program = out.join("pmix_header");
        let compiler = cc::Build::new().cargo_metadata(false).get_compiler();
        let status = compiler
            .to_command()
            .arg("-I")
            .arg(&include)
            .arg("src/launch/pmix/header.c")
            .arg("-o")
            .arg(&program)
            .status();
        if !matches!(status, Ok(s) if s.success()) {
            fail(&format!("cannot compile src/launch/pmix/header.c against {}", include.display()));
        }
        match Command::new(&program).output() {
            Ok(o) if o.status.success() => {
                if let Err(e) = std::fs::write(out.join("pmix_header.rs"), o.stdout) {
                    fail(&format!("cannot write pmix_header.rs: {e}"));
                }
            }
            _ => fail("the compiled src/launch/pmix/header.c did not run"),
        }
        println!("cargo:rustc-link-search=native={}", dir.join("lib").display());
        println!("cargo:rustc-link-lib=dylib=pmix");
    }

    fn var(name: &str) -> String {
        std::env::var(name).unwrap_or_default()
    }

    fn fail(message: &str) -> ! {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}
