//! Where `commcore run` finds commcore's MPI library (`libmpich.so.12`, built by
//! `ffi/mpi/build.sh`), so that MPICH-built programs it starts load it rather than MPICH's.

use std::path::{Path, PathBuf};

/// Names the library's directory; `none` starts programs with the library path as it is.
pub const ENV_MPI_LIBRARY: &str = "COMMCORE_MPI_LIBRARY";

/// The library's directory: `COMMCORE_MPI_LIBRARY`, else beside this executable
/// (`target/mpi` for `target/*/commcore`, `PREFIX/lib/commcore-mpi` for `PREFIX/bin/commcore`).
pub fn directory() -> Option<PathBuf> {
    match std::env::var(ENV_MPI_LIBRARY) {
        Ok(dir) if dir == "none" => return None,
        Ok(dir) => return Some(PathBuf::from(dir)),
        Err(_) => {}
    }
    let exe = std::env::current_exe().ok()?;
    let up = exe.parent()?.parent()?;
    [up.join("mpi"), up.join("lib").join("commcore-mpi")]
        .into_iter()
        .find(|dir| dir.join("libmpich.so.12").is_file())
}

/// `LD_LIBRARY_PATH` with `dir` first (`current` is this process's value, if any).
pub fn library_path(dir: &Path, current: Option<&str>) -> String {
    match current {
        Some(rest) if !rest.is_empty() => format!("{}:{rest}", dir.display()),
        _ => dir.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_comes_first() {
        let dir = Path::new("/opt/mpi");
        assert_eq!(library_path(dir, None), "/opt/mpi");
        assert_eq!(library_path(dir, Some("")), "/opt/mpi");
        assert_eq!(library_path(dir, Some("/usr/lib")), "/opt/mpi:/usr/lib");
    }
}
