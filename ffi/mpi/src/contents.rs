//! What each derived datatype was made of (`MPI_Type_get_envelope`, `MPI_Type_get_contents`):
//! the constructor's combiner and its integer, address and datatype arguments.

use std::collections::HashMap;
use std::ffi::{c_int, c_long};
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::datatype::padded_pair;
use crate::error::{fail, MpiError, MpiResult};
use crate::large_count::MpiCount;
use crate::ptr::{array_mut, get, put};
use crate::typemap::{self, is_derived, layout};

pub(crate) const MPI_COMBINER_NAMED: c_int = 1;
pub(crate) const MPI_COMBINER_DUP: c_int = 2;
pub(crate) const MPI_COMBINER_CONTIGUOUS: c_int = 3;
pub(crate) const MPI_COMBINER_VECTOR: c_int = 4;
pub(crate) const MPI_COMBINER_HVECTOR: c_int = 6;
pub(crate) const MPI_COMBINER_INDEXED: c_int = 7;
pub(crate) const MPI_COMBINER_HINDEXED: c_int = 9;
pub(crate) const MPI_COMBINER_INDEXED_BLOCK: c_int = 10;
pub(crate) const MPI_COMBINER_STRUCT: c_int = 12;
pub(crate) const MPI_COMBINER_SUBARRAY: c_int = 13;
pub(crate) const MPI_COMBINER_DARRAY: c_int = 14;
pub(crate) const MPI_COMBINER_RESIZED: c_int = 18;
pub(crate) const MPI_COMBINER_HINDEXED_BLOCK: c_int = 19;

#[derive(Clone)]
pub(crate) struct Contents {
    pub combiner: c_int,
    /// The counts of a large-count constructor (`MPI_Type_contiguous_c`, ...) that does
    /// not fit the int form: MPI-4's large counts, in the int form's order followed by any
    /// displacements; empty otherwise.
    pub large: Vec<i64>,
    pub ints: Vec<c_int>,
    pub aints: Vec<c_long>,
    pub types: Vec<c_int>,
}

static CONTENTS: Mutex<Option<HashMap<c_int, Contents>>> = Mutex::new(None);

pub(crate) fn lookup(handle: c_int) -> Option<Contents> {
    CONTENTS.lock().unwrap_or_else(PoisonError::into_inner).as_ref()?.get(&handle).cloned()
}

fn store(handle: c_int, contents: Contents) {
    let mut guard = CONTENTS.lock().unwrap_or_else(PoisonError::into_inner);
    guard.get_or_insert_with(HashMap::new).insert(handle, contents);
}

/// Notes what the datatype just written to `newtype` was made of.
///
/// # Safety
/// `newtype` holds the new datatype's handle.
pub(crate) unsafe fn made(newtype: *mut c_int, contents: Contents) -> MpiResult {
    // SAFETY: the caller's contract.
    store(unsafe { get(newtype) }?, contents);
    Ok(())
}

/// Forgets freed datatype `handle`.
pub(crate) fn forget(handle: c_int) {
    CONTENTS.lock().unwrap_or_else(PoisonError::into_inner).as_mut().map(|t| t.remove(&handle));
}

/// The contents of derived datatype `handle`.
fn of(handle: c_int) -> MpiResult<Contents> {
    layout(handle)?;
    lookup(handle).map_or_else(|| fail(MPI_ERR_TYPE, format!("{handle:#x} has no contents")), Ok)
}

/// Fails for a type whose constructor's counts do not fit the int queries.
fn beyond_int(found: &Contents) -> MpiResult {
    if found.large.is_empty() {
        return Ok(());
    }
    let message = "the datatype was made with counts from 2^31 on: MPI_Type_get_envelope_c \
                   and MPI_Type_get_contents_c describe it";
    fail(MPI_ERR_UNSUPPORTED_OPERATION, message)
}

/// The basic elements in the first `bytes` packed bytes of one `datatype`, walked in type
/// map order through the constructors; `None` when they end inside one (or the walk cannot
/// follow the constructors).
pub(crate) fn elements_in(datatype: c_int, bytes: usize) -> Option<usize> {
    match walk(datatype, bytes) {
        Walk::Whole(elements) => Some(elements),
        Walk::Inside | Walk::Unknown => None,
    }
}

/// A receive into `datatype` took the message `status` describes: an error if its bytes end
/// inside a basic element of the type map, where the sender's type signature cannot have
/// matched (an erroneous program, which MPICH reports too). Only derived datatypes are
/// judged, as MPICH does: bytes received as a predefined type are taken as they come (and so
/// are those of a derived type whose constructors the walk cannot follow).
/// `packed`: the datatype's packed bytes per element, which the receive's place knows (no
/// second lookup of the type on the message path).
pub(crate) fn whole_elements(
    datatype: c_int,
    packed: usize,
    status: MpiStatus,
) -> MpiResult<MpiStatus> {
    if !is_derived(datatype) {
        return Ok(status);
    }
    let bytes = crate::status::bytes(&status) as usize;
    let rest = bytes.checked_rem(packed).unwrap_or(0);
    if rest == 0 || !matches!(walk(datatype, rest), Walk::Inside) {
        return Ok(status);
    }
    let error = MpiError::new(
        MPI_ERR_TYPE,
        format!(
            "a message of {bytes} bytes ends inside a basic element of the receive datatype: \
             its type signature differs from the sender's"
        ),
    );
    Err(error.with_status(status))
}

/// Where the first bytes of one element of a datatype end.
enum Walk {
    /// After this many whole basic elements.
    Whole(usize),
    /// Inside a basic element.
    Inside,
    /// Not known: a constructor the walk does not follow.
    Unknown,
}

fn walk(datatype: c_int, bytes: usize) -> Walk {
    let Ok((info, _)) = layout(datatype) else { return Walk::Unknown };
    if !is_derived(datatype) {
        // A pair's first element is its value (half of an unpadded pair).
        let first = padded_pair(datatype).map_or(info.size / 2, |pair| pair[0].1);
        return match bytes {
            0 => Walk::Whole(0),
            b if b == info.size => Walk::Whole(info.elements),
            b if info.elements == 2 && b == first => Walk::Whole(1),
            _ => Walk::Inside,
        };
    }
    let Some(found) = lookup(datatype) else { return Walk::Unknown };
    // The large counts keep the int form's counts where it keeps them.
    let n = |i: usize| {
        if found.large.is_empty() {
            found.ints.get(i).map(|&v| v.max(0) as usize)
        } else {
            found.large.get(i).map(|&v| v.max(0) as usize)
        }
    };
    // The parts in type map order: (datatype, repetitions).
    let parts: Option<Vec<(c_int, usize)>> = match found.combiner {
        MPI_COMBINER_DUP | MPI_COMBINER_RESIZED => Some(vec![(found.types[0], 1)]),
        MPI_COMBINER_CONTIGUOUS => n(0).map(|reps| vec![(found.types[0], reps)]),
        MPI_COMBINER_VECTOR
        | MPI_COMBINER_HVECTOR
        | MPI_COMBINER_INDEXED_BLOCK
        | MPI_COMBINER_HINDEXED_BLOCK => {
            n(0).zip(n(1)).map(|(blocks, each)| vec![(found.types[0], blocks * each)])
        }
        MPI_COMBINER_INDEXED | MPI_COMBINER_HINDEXED => n(0)
            .and_then(|blocks| (1..=blocks).map(n).sum::<Option<usize>>())
            .map(|reps| vec![(found.types[0], reps)]),
        MPI_COMBINER_STRUCT => n(0).and_then(|parts| {
            (0..parts).map(|i| Some((found.types[i], n(i + 1)?))).collect::<Option<_>>()
        }),
        _ => None,
    };
    let Some(parts) = parts else { return Walk::Unknown };
    let (mut left, mut counted) = (bytes, 0);
    for (part, reps) in parts {
        let Ok((part_info, _)) = layout(part) else { return Walk::Unknown };
        let whole = left.checked_div(part_info.packed).map_or(reps, |w| reps.min(w));
        counted += whole * part_info.elements;
        left -= whole * part_info.packed;
        if left == 0 {
            return Walk::Whole(counted);
        }
        if whole < reps {
            return match walk(part, left) {
                Walk::Whole(more) => Walk::Whole(counted + more),
                other => other,
            };
        }
    }
    if left == 0 {
        Walk::Whole(counted)
    } else {
        Walk::Inside
    }
}

mpi_fn! {
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(datatype: c_int, num_integers: *mut c_int, num_addresses: *mut c_int, num_datatypes: *mut c_int, combiner: *mut c_int) {
        let (n, a, d, c) = if is_derived(datatype) {
            let found = of(datatype)?;
            beyond_int(&found)?;
            (found.ints.len(), found.aints.len(), found.types.len(), found.combiner)
        } else {
            layout(datatype)?;
            (0, 0, 0, MPI_COMBINER_NAMED)
        };
        put(num_integers, n as c_int)?;
        put(num_addresses, a as c_int)?;
        put(num_datatypes, d as c_int)?;
        put(combiner, c)
    }

    /// The constructor's arguments (see [`hand_out`] for its datatypes).
    fn MPI_Type_get_contents / PMPI_Type_get_contents(datatype: c_int, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int, integers: *mut c_int, addresses: *mut c_long, datatypes: *mut c_int) {
        if !is_derived(datatype) {
            layout(datatype)?;
            return fail(MPI_ERR_TYPE, "a predefined datatype has no contents");
        }
        let found = of(datatype)?;
        beyond_int(&found)?;
        if (max_integers as usize) < found.ints.len() || (max_addresses as usize) < found.aints.len() || (max_datatypes as usize) < found.types.len() || max_integers < 0 || max_addresses < 0 || max_datatypes < 0 {
            return fail(MPI_ERR_ARG, "the arrays are shorter than the envelope says");
        }
        array_mut(integers, found.ints.len())?.copy_from_slice(&found.ints);
        array_mut(addresses, found.aints.len())?.copy_from_slice(&found.aints);
        hand_out(&found.types, array_mut(datatypes, found.types.len())?);
        Ok(())
    }

    /// As `MPI_Type_get_envelope`, with the large counts of a type made from counts
    /// beyond an int.
    fn MPI_Type_get_envelope_c / PMPI_Type_get_envelope_c(datatype: c_int, num_integers: *mut MpiCount, num_addresses: *mut MpiCount, num_large_counts: *mut MpiCount, num_datatypes: *mut MpiCount, combiner: *mut c_int) {
        let found = queried(datatype)?;
        put(num_integers, found.ints.len() as MpiCount)?;
        put(num_addresses, found.aints.len() as MpiCount)?;
        put(num_large_counts, found.large.len() as MpiCount)?;
        put(num_datatypes, found.types.len() as MpiCount)?;
        put(combiner, found.combiner)
    }

    fn MPI_Type_get_contents_c / PMPI_Type_get_contents_c(datatype: c_int, max_integers: MpiCount, max_addresses: MpiCount, max_large_counts: MpiCount, max_datatypes: MpiCount, integers: *mut c_int, addresses: *mut c_long, large_counts: *mut MpiCount, datatypes: *mut c_int) {
        if !is_derived(datatype) {
            layout(datatype)?;
            return fail(MPI_ERR_TYPE, "a predefined datatype has no contents");
        }
        let found = of(datatype)?;
        let room = |max: MpiCount, len: usize| usize::try_from(max).is_ok_and(|m| m >= len);
        if !(room(max_integers, found.ints.len()) && room(max_addresses, found.aints.len()) && room(max_large_counts, found.large.len()) && room(max_datatypes, found.types.len())) {
            return fail(MPI_ERR_ARG, "the arrays are shorter than the envelope says");
        }
        array_mut(integers, found.ints.len())?.copy_from_slice(&found.ints);
        array_mut(addresses, found.aints.len())?.copy_from_slice(&found.aints);
        array_mut(large_counts, found.large.len())?.copy_from_slice(&found.large);
        hand_out(&found.types, array_mut(datatypes, found.types.len())?);
        Ok(())
    }
}

/// The contents the envelope queries describe: none for a predefined datatype.
fn queried(datatype: c_int) -> MpiResult<Contents> {
    if is_derived(datatype) {
        return of(datatype);
    }
    layout(datatype)?;
    let none = Contents {
        combiner: MPI_COMBINER_NAMED,
        large: vec![],
        ints: vec![],
        aints: vec![],
        types: vec![],
    };
    Ok(none)
}

/// Writes a constructor's datatypes to `out` as the contents queries hand them out: a
/// derived one as a new handle the program frees (as MPI says), made of the same.
fn hand_out(types: &[c_int], out: &mut [c_int]) {
    for (slot, &t) in out.iter_mut().zip(types) {
        *slot = match typemap::lookup(t) {
            Some((info, segments)) if is_derived(t) => {
                let copy = typemap::add(info, segments);
                if let Some(inner) = lookup(t) {
                    store(copy, inner);
                }
                copy
            }
            _ => t,
        };
    }
}
