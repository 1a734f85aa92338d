//! Completing requests: the `MPI_Wait` and `MPI_Test` families.

use std::ffi::c_int;

use commcore_linux::runtime::Request;

use crate::call::{self, mpi_fn};
use crate::consts::*;
use crate::error::{fail, MpiError, MpiResult};
use crate::persist::Persist;
use crate::ptr::{array_mut, get, put, put_status, statuses};
use crate::request::{take_ending, Pending, Work};
use crate::request_table::{self, InPlace};
use crate::state;
use crate::status;

/// Takes request `handle` out as it completes: a persistent one keeps its handle.
fn take_done(handle: c_int) -> MpiResult<Option<Pending>> {
    take_ending(handle, |pending| pending.persist.is_none())
}

/// What handle `handle` becomes once its request completed: `MPI_REQUEST_NULL`, or itself
/// for a persistent request, inactive again.
fn retire(handle: c_int, comm: c_int, persist: Option<Box<Persist>>) -> MpiResult<c_int> {
    let Some(persist) = persist else { return Ok(MPI_REQUEST_NULL) };
    state::with(|s| {
        let inactive = Pending::new(comm, Work::Done(status::inactive()));
        s.requests.insert(handle, Pending { persist: Some(persist), ..inactive });
        Ok(handle)
    })
}

/// Waits for request `handle`: its outcome, and what the handle becomes.
fn complete(handle: c_int) -> MpiResult<(MpiResult<MpiStatus>, c_int)> {
    // Most requests of a window have finished by their wait: they end in their slot.
    if handle != MPI_REQUEST_NULL {
        if let InPlace::Ended(comm, outcome) = state::with(|s| Ok(s.requests.end_in_place(handle)))?
        {
            call::on_comm(comm);
            return Ok((outcome, MPI_REQUEST_NULL));
        }
    }
    let Some(pending) = take_done(handle)? else {
        return Ok((Ok(status::inactive()), MPI_REQUEST_NULL));
    };
    let (comm, persist) = (pending.comm, pending.persist.clone());
    let outcome = pending.wait();
    Ok((outcome, retire(handle, comm, persist)?))
}

/// Tests request `handle`: once complete, its status and what the handle becomes.
fn test_one(handle: c_int) -> MpiResult<Option<(MpiStatus, c_int)>> {
    if handle == MPI_REQUEST_NULL {
        return Ok(Some((status::inactive(), MPI_REQUEST_NULL)));
    }
    // Tested in place: an unfinished request stays in the table under its handle; a
    // finished send or receive ends there (`Err(outcome)`); the rest are tested there
    // (`Ok(found)`) and end below.
    let found = state::with(|s| match s.requests.end_in_place(handle) {
        InPlace::Ended(comm, outcome) => {
            call::on_comm(comm);
            Ok(Err(outcome))
        }
        InPlace::Running(comm) => {
            call::on_comm(comm);
            Ok(Ok(Ok(None)))
        }
        InPlace::NotHere => match s.requests.get_mut(&handle) {
            Some(pending) => {
                call::on_comm(pending.comm);
                Ok(Ok(pending.test()))
            }
            None => fail(MPI_ERR_REQUEST, format!("{handle:#x} is not an active request")),
        },
    })?;
    let found = match found {
        Err(ended) => return ended.map(|status| Some((status, MPI_REQUEST_NULL))),
        Ok(found) => found,
    };
    if let Ok(None) = found {
        return Ok(None);
    }
    let Some(pending) = take_done(handle)? else { return Ok(None) };
    let after = retire(handle, pending.comm, pending.persist)?;
    found.map(|status| status.map(|status| (status, after)))
}

/// Whether request `handle` has completed (kept in the table either way).
fn peek(handle: c_int) -> MpiResult<bool> {
    if handle == MPI_REQUEST_NULL {
        return Ok(true);
    }
    state::with(|s| match s.requests.get_mut(&handle) {
        // A request that failed has completed: its error comes with its end.
        Some(pending) => Ok(pending.test().map_or(true, |found| found.is_some())),
        None => fail(MPI_ERR_REQUEST, format!("{handle:#x} is not an active request")),
    })
}

/// Completes every request of `handles` (each becomes what its request leaves), writing
/// their statuses; an error if any failed.
///
/// # Safety
/// `out` is NULL, `MPI_STATUSES_IGNORE` or has an entry per handle.
unsafe fn finish_all(handles: &mut [c_int], out: *mut MpiStatus) -> MpiResult {
    let n = handles.len();
    // SAFETY: the caller's contract.
    let mut out = unsafe { statuses(out, n) };
    let mut failed = None;
    // First null handles and sends that completed when they started (no slot, no lock).
    let mut rest = false;
    for (i, handle) in handles.iter_mut().enumerate() {
        if *handle != MPI_REQUEST_NULL && !request_table::is_sent(*handle) {
            rest = true;
            continue;
        }
        *handle = MPI_REQUEST_NULL;
        record(&mut out, i, Ok(status::inactive()), &mut failed);
    }
    if !rest {
        return in_status(failed, out.is_some());
    }
    // Then, under one taking of the lock, the receives whose messages wait in order in
    // their rings are taken in one run, and the sends and receives finished already (most
    // of a window) end in their slots.
    state::with(|s| {
        if let Some(mut window) = s.requests.window(handles).filter(|_| n > 1) {
            Request::complete_ready(&mut window);
        }
        for (i, handle) in handles.iter_mut().enumerate() {
            if *handle == MPI_REQUEST_NULL {
                continue;
            }
            let outcome = match s.requests.end_in_place(*handle) {
                InPlace::Ended(comm, outcome) => {
                    call::on_comm(comm);
                    outcome
                }
                InPlace::Running(_) | InPlace::NotHere => continue,
            };
            *handle = MPI_REQUEST_NULL;
            record(&mut out, i, outcome, &mut failed);
        }
        Ok(())
    })?;
    // Then the rest, each waited for outside the lock.
    for (i, handle) in handles.iter_mut().enumerate() {
        if *handle == MPI_REQUEST_NULL {
            continue;
        }
        let (outcome, after) = complete(*handle)?;
        *handle = after;
        record(&mut out, i, outcome, &mut failed);
    }
    in_status(failed, out.is_some())
}

/// The end of a multiple completion: `MPI_ERR_IN_STATUS` when a request failed and the
/// statuses say which (else that request's own error).
fn in_status(failed: Option<MpiError>, statuses: bool) -> MpiResult {
    match failed {
        None => Ok(()),
        Some(error) if statuses => Err(MpiError::new(MPI_ERR_IN_STATUS, error.into_message())),
        Some(error) => Err(error),
    }
}

/// Writes the status of entry `i` of a multiple completion; an error's is kept in
/// `failed` (the first) and in the status's error field.
fn record(
    out: &mut Option<&mut [MpiStatus]>,
    i: usize,
    outcome: MpiResult<MpiStatus>,
    failed: &mut Option<MpiError>,
) {
    let status = match outcome {
        Ok(status) => status,
        Err(error) => {
            let mut status = error.status.unwrap_or_else(status::empty);
            status.error = error.class;
            failed.get_or_insert(error);
            status
        }
    };
    if let Some(out) = out.as_deref_mut() {
        out[i] = status;
    }
}

/// Completes whichever of `handles` have completed (at least one if `block`): their
/// indices; `None` when every handle is `MPI_REQUEST_NULL`.
fn some_done(handles: &[c_int], block: bool, first_only: bool) -> MpiResult<Option<Vec<usize>>> {
    loop {
        let mut active = false;
        let mut done = Vec::new();
        for (i, &handle) in handles.iter().enumerate() {
            if handle == MPI_REQUEST_NULL {
                continue;
            }
            active = true;
            if peek(handle)? {
                done.push(i);
                if first_only {
                    break;
                }
            }
        }
        if !active {
            return Ok(None);
        }
        if !done.is_empty() || !block {
            return Ok(Some(done));
        }
        std::thread::yield_now();
    }
}

mpi_fn! {
    /// Whether the request has completed, and its status, leaving it as it is.
    fn MPI_Request_get_status / PMPI_Request_get_status(request: c_int, flag: *mut c_int, status: *mut MpiStatus) {
        let found = if request == MPI_REQUEST_NULL {
            Some(status::inactive())
        } else {
            state::with(|s| match s.requests.get_mut(&request) {
                Some(pending) => pending.test(),
                None => fail(MPI_ERR_REQUEST, format!("{request:#x} is not a request")),
            })?
        };
        put(flag, found.is_some() as c_int)?;
        if let Some(found) = found {
            put_status(status, found);
        }
        Ok(())
    }

    fn MPI_Wait / PMPI_Wait(request: *mut c_int, status: *mut MpiStatus) {
        let (outcome, after) = complete(get(request)?)?;
        put(request, after)?;
        put_status(status, status::of_outcome(&outcome));
        outcome.map(drop)
    }

    fn MPI_Test / PMPI_Test(request: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) {
        let handle = get(request)?;
        match test_one(handle)? {
            Some((result, after)) => {
                put(request, after)?;
                put_status(status, result);
                put(flag, 1)
            }
            None => put(flag, 0),
        }
    }

    fn MPI_Waitall / PMPI_Waitall(count: c_int, requests: *mut c_int, statuses: *mut MpiStatus) {
        let handles = array_mut(requests, crate::ptr::count(count)?)?;
        finish_all(handles, statuses)
    }

    fn MPI_Testall / PMPI_Testall(count: c_int, requests: *mut c_int, flag: *mut c_int, statuses: *mut MpiStatus) {
        let handles = array_mut(requests, crate::ptr::count(count)?)?;
        for &handle in handles.iter() {
            if !peek(handle)? {
                return put(flag, 0);
            }
        }
        put(flag, 1)?;
        finish_all(handles, statuses)
    }

    fn MPI_Waitany / PMPI_Waitany(count: c_int, requests: *mut c_int, index: *mut c_int, status: *mut MpiStatus) {
        any(count, requests, index, None, status)
    }

    fn MPI_Testany / PMPI_Testany(count: c_int, requests: *mut c_int, index: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) {
        if flag.is_null() {
            return fail(MPI_ERR_ARG, "flag is NULL");
        }
        any(count, requests, index, Some(flag), status)
    }

    fn MPI_Waitsome / PMPI_Waitsome(incount: c_int, requests: *mut c_int, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MpiStatus) {
        some(incount, requests, outcount, indices, statuses, true)
    }

    fn MPI_Testsome / PMPI_Testsome(incount: c_int, requests: *mut c_int, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MpiStatus) {
        some(incount, requests, outcount, indices, statuses, false)
    }
}

/// `MPI_Waitany` (`flag` None) and `MPI_Testany`.
///
/// # Safety
/// The arguments are valid as those calls require.
unsafe fn any(
    count: c_int,
    requests: *mut c_int,
    index: *mut c_int,
    flag: Option<*mut c_int>,
    status: *mut MpiStatus,
) -> MpiResult {
    // SAFETY: the caller's contract.
    let handles = unsafe { array_mut(requests, crate::ptr::count(count)?) }?;
    let block = flag.is_none();
    let (done, result) = match some_done(handles, block, true)? {
        None => (true, (MPI_UNDEFINED, status::inactive())),
        Some(found) => match found.first() {
            None => (false, (MPI_UNDEFINED, status::inactive())),
            Some(&i) => {
                let (outcome, after) = complete(handles[i])?;
                handles[i] = after;
                (true, (i as c_int, outcome?))
            }
        },
    };
    // SAFETY: the caller's contract.
    unsafe {
        if let Some(flag) = flag {
            put(flag, done as c_int)?;
        }
        put(index, result.0)?;
        if done {
            put_status(status, result.1);
        }
    }
    Ok(())
}

/// `MPI_Waitsome` (`block`) and `MPI_Testsome`.
///
/// # Safety
/// The arguments are valid as those calls require.
unsafe fn some(
    incount: c_int,
    requests: *mut c_int,
    outcount: *mut c_int,
    indices: *mut c_int,
    out: *mut MpiStatus,
    block: bool,
) -> MpiResult {
    let n = crate::ptr::count(incount)?;
    // SAFETY: the caller's contract.
    let handles = unsafe { array_mut(requests, n) }?;
    let Some(done) = some_done(handles, block, false)? else {
        // SAFETY: the caller's contract.
        return unsafe { put(outcount, MPI_UNDEFINED) };
    };
    // SAFETY: the caller's contract.
    let (slots, mut out) = unsafe { (array_mut(indices, done.len())?, statuses(out, n)) };
    let mut failed = None;
    for (k, &i) in done.iter().enumerate() {
        let (outcome, after) = complete(handles[i])?;
        handles[i] = after;
        slots[k] = i as c_int;
        record(&mut out, k, outcome, &mut failed);
    }
    // SAFETY: the caller's contract.
    unsafe { put(outcount, done.len() as c_int) }?;
    in_status(failed, out.is_some())
}
