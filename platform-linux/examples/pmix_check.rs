//! PMIx against a real server: `mpirun.openmpi -n 3 target/debug/examples/pmix_check`.
//! Every rank prints its rank, size, local ranks and node through
//! `commcore_linux::launch::pmix`, puts a value, fences, reads every rank's value back and
//! checks that a key nobody put reads as none; rank 0 publishes a name that the others look
//! up, then withdraws it, and spawns one copy of this program (`pmix_check child`, which
//! only initializes and prints). A server that refuses the name service or spawn is
//! reported as such; anything else that fails exits non-zero with the error. Rank 0 ends
//! with "pmix_check: N ranks ok". `pmix_check abort`: one rank aborts the job (status 3).

use commcore_linux::launch::pmix::{PmixClient, PmixError};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn client() -> Result<PmixClient> {
    Ok(PmixClient::from_env()?
        .ok_or("PMIX_NAMESPACE is not set: start this with a PMIx server (mpirun -n 3 ...)")?)
}

/// The spawned copy: initializes, checks the variable its parent set, prints who it is,
/// finalizes.
fn child() -> Result<()> {
    let pmix = client()?;
    if std::env::var("PMIX_CHECK_PARENT").as_deref() != Ok("rank 0") {
        return Err("the spawned child did not get PMIX_CHECK_PARENT=rank 0".into());
    }
    println!(
        "pmix_check child: rank {} of {} in namespace {}",
        pmix.rank(),
        pmix.size(),
        pmix.namespace()
    );
    Ok(())
}

/// `abort`: rank 1 (or 0 alone) aborts the job with status 3 while the others wait in a
/// fence; the server must end every rank.
fn abort() -> Result<()> {
    let mut pmix = client()?;
    if pmix.rank() == pmix.size().min(2) - 1 {
        return Err(pmix.abort(3, "pmix_check: aborting on purpose").into());
    }
    pmix.fence()?;
    Err("the fence ended although a rank aborted the job".into())
}

fn run() -> Result<()> {
    let mut pmix = client()?;
    let (rank, size) = (pmix.rank(), pmix.size());
    let local = pmix.local_ranks()?;
    if !local.contains(&rank) {
        return Err(format!("rank {rank} is not among its local ranks {local:?}").into());
    }
    println!(
        "pmix_check: rank {rank} of {size} in namespace {}, local ranks {local:?}, node {}",
        pmix.namespace(),
        pmix.node_of(rank)?
    );
    for peer in 0..size {
        pmix.node_of(peer)?;
    }
    if PmixClient::from_env().is_ok() {
        return Err("a second PmixClient::from_env was not refused".into());
    }

    pmix.put("greeting", &format!("hello from {rank} of {size}"))?;
    pmix.fence()?;
    for peer in 0..size {
        let value = pmix.get(peer, "greeting")?;
        if value != Some(format!("hello from {peer} of {size}")) {
            return Err(format!("rank {rank} read {value:?} for rank {peer}").into());
        }
        if let Some(value) = pmix.get(peer, "nobody-put-this")? {
            return Err(
                format!("rank {rank} read {value:?} for a key rank {peer} never put").into()
            );
        }
    }

    let name = format!("pmix-check-{}", pmix.namespace());
    let published = if rank == 0 { Some(pmix.publish(&name, "published by rank 0")) } else { None };
    pmix.fence()?;
    match published {
        Some(Err(PmixError::Refused(why))) => println!("pmix_check: publish refused: {why}"),
        Some(Err(error)) => return Err(error.into()),
        Some(Ok(())) | None => {
            if rank != 0 {
                let value = pmix.lookup(&name)?;
                if value.as_deref() != Some("published by rank 0") {
                    return Err(format!("rank {rank} looked up {value:?} for {name}").into());
                }
            }
            pmix.fence()?;
            if rank == 0 {
                pmix.unpublish(&name)?;
            }
            pmix.fence()?;
            if let Some(value) = pmix.lookup(&name)? {
                return Err(format!("rank {rank} still looks up {value:?} for {name}").into());
            }
            if rank == 0 {
                println!("pmix_check: published, looked up and withdrew {name}");
            }
        }
    }

    if rank == 0 {
        let program = std::env::current_exe()?.to_string_lossy().into_owned();
        match pmix.spawn(
            &program,
            &["child".into()],
            &[("PMIX_CHECK_PARENT".into(), "rank 0".into())],
            1,
        ) {
            Ok(nspace) => println!("pmix_check: spawned 1 child in namespace {nspace}"),
            Err(PmixError::Refused(why)) => println!("pmix_check: spawn refused: {why}"),
            Err(error) => return Err(error.into()),
        }
    }
    pmix.fence()?;
    if rank == 0 {
        println!("pmix_check: {size} ranks ok");
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let result = match std::env::args().nth(1).as_deref() {
        Some("child") => child(),
        Some("abort") => abort(),
        _ => run(),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("pmix_check: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
