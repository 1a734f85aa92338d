//! Derived datatypes (contiguous, vector, indexed, structure, resized, dup) and the type
//! queries: size, extents, commit, free, addresses.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_long, c_void};
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::contents::*;
use crate::error::{fail, MpiResult};
use crate::ptr::{array, c_str, count, get, put, put_text};
use crate::typemap::{self, bounds, layout, Builder};

/// Builds a type from `blocks` (displacement in bytes, elements) of `old`, and stores it.
///
/// # Safety
/// `newtype` is valid for a write, or NULL.
pub(crate) unsafe fn build(
    old: c_int,
    blocks: impl Iterator<Item = MpiResult<(isize, usize)>>,
    newtype: *mut c_int,
) -> MpiResult {
    if newtype.is_null() {
        return fail(MPI_ERR_ARG, "newtype is NULL");
    }
    let old = layout(old)?;
    let mut builder = Builder::new();
    for block in blocks {
        let (disp, n) = block?;
        builder.place(&old, disp, n)?;
    }
    let (info, segments) = builder.finish(false);
    // SAFETY: the caller's contract.
    unsafe { put(newtype, typemap::add(info, segments)) }
}

/// `MPI_Type_create_hindexed` (and MPI-1's `MPI_Type_hindexed`).
///
/// # Safety
/// The arrays hold `n` values; `newtype` is valid for a write, or NULL.
pub(crate) unsafe fn hindexed(
    n: c_int,
    blocklengths: *const c_int,
    displacements: *const c_long,
    oldtype: c_int,
    newtype: *mut c_int,
) -> MpiResult {
    let n = count(n)?;
    // SAFETY: the caller's contract.
    let (lens, displs) = unsafe { (array(blocklengths, n)?, array(displacements, n)?) };
    let blocks = lens.iter().zip(displs).map(|(&l, &d)| Ok((d as isize, count(l)?)));
    // SAFETY: the caller's contract.
    unsafe { build(oldtype, blocks, newtype) }?;
    let ints = std::iter::once(n as c_int).chain(lens.iter().copied()).collect();
    let contents = Contents {
        combiner: MPI_COMBINER_HINDEXED,
        large: vec![],
        ints,
        aints: displs.to_vec(),
        types: vec![oldtype],
    };
    // SAFETY: the caller's contract.
    unsafe { made(newtype, contents) }
}

/// The extent of `old` as a displacement unit.
pub(crate) fn unit(old: c_int) -> MpiResult<isize> {
    Ok(layout(old)?.0.extent)
}

/// `n` units of `unit` bytes (either may be negative): an error past the address space.
pub(crate) fn scaled(n: impl TryInto<isize>, unit: isize) -> MpiResult<isize> {
    match n.try_into().ok().and_then(|n| n.checked_mul(unit)) {
        Some(bytes) => Ok(bytes),
        None => fail(MPI_ERR_ARG, "a displacement lies past the address space"),
    }
}

mpi_fn! {
    /// `n` elements of `oldtype` end to end.
    fn MPI_Type_contiguous / PMPI_Type_contiguous(n: c_int, oldtype: c_int, newtype: *mut c_int) {
        let n = count(n)?;
        build(oldtype, std::iter::once(Ok((0, n))), newtype)?;
        made(newtype, Contents { combiner: MPI_COMBINER_CONTIGUOUS, large: vec![], ints: vec![n as c_int], aints: vec![], types: vec![oldtype] })
    }

    /// `n` blocks of `blocklength` elements, `stride` elements apart.
    fn MPI_Type_vector / PMPI_Type_vector(n: c_int, blocklength: c_int, stride: c_int, oldtype: c_int, newtype: *mut c_int) {
        let (n, len, step) = (count(n)?, count(blocklength)?, scaled(stride, unit(oldtype)?)?);
        build(oldtype, (0..n).map(|j| Ok((scaled(j, step)?, len))), newtype)?;
        made(newtype, Contents { combiner: MPI_COMBINER_VECTOR, large: vec![], ints: vec![n as c_int, blocklength, stride], aints: vec![], types: vec![oldtype] })
    }

    /// As `MPI_Type_vector`, with `stride` in bytes.
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector(n: c_int, blocklength: c_int, stride: c_long, oldtype: c_int, newtype: *mut c_int) {
        let (n, len) = (count(n)?, count(blocklength)?);
        build(oldtype, (0..n).map(|j| Ok((scaled(j, stride as isize)?, len))), newtype)?;
        made(newtype, Contents { combiner: MPI_COMBINER_HVECTOR, large: vec![], ints: vec![n as c_int, blocklength], aints: vec![stride], types: vec![oldtype] })
    }

    fn MPI_Type_hvector / PMPI_Type_hvector(n: c_int, blocklength: c_int, stride: c_long, oldtype: c_int, newtype: *mut c_int) {
        let (n, len) = (count(n)?, count(blocklength)?);
        build(oldtype, (0..n).map(|j| Ok((scaled(j, stride as isize)?, len))), newtype)?;
        made(newtype, Contents { combiner: MPI_COMBINER_HVECTOR, large: vec![], ints: vec![n as c_int, blocklength], aints: vec![stride], types: vec![oldtype] })
    }

    /// Blocks of `blocklengths[i]` elements at `displacements[i]` elements.
    fn MPI_Type_indexed / PMPI_Type_indexed(n: c_int, blocklengths: *const c_int, displacements: *const c_int, oldtype: c_int, newtype: *mut c_int) {
        let n = count(n)?;
        let (lens, displs, u) = (array(blocklengths, n)?, array(displacements, n)?, unit(oldtype)?);
        build(oldtype, lens.iter().zip(displs).map(|(&l, &d)| Ok((scaled(d, u)?, count(l)?))), newtype)?;
        let ints = std::iter::once(n as c_int).chain(lens.iter().copied()).chain(displs.iter().copied()).collect();
        made(newtype, Contents { combiner: MPI_COMBINER_INDEXED, large: vec![], ints, aints: vec![], types: vec![oldtype] })
    }

    /// As `MPI_Type_indexed`, with displacements in bytes.
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed(n: c_int, blocklengths: *const c_int, displacements: *const c_long, oldtype: c_int, newtype: *mut c_int) {
        hindexed(n, blocklengths, displacements, oldtype, newtype)
    }

    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block(n: c_int, blocklength: c_int, displacements: *const c_int, oldtype: c_int, newtype: *mut c_int) {
        let (n, len) = (count(n)?, count(blocklength)?);
        let (displs, u) = (array(displacements, n)?, unit(oldtype)?);
        build(oldtype, displs.iter().map(|&d| Ok((scaled(d, u)?, len))), newtype)?;
        let ints = [n as c_int, blocklength].into_iter().chain(displs.iter().copied()).collect();
        made(newtype, Contents { combiner: MPI_COMBINER_INDEXED_BLOCK, large: vec![], ints, aints: vec![], types: vec![oldtype] })
    }

    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block(n: c_int, blocklength: c_int, displacements: *const c_long, oldtype: c_int, newtype: *mut c_int) {
        let (n, len) = (count(n)?, count(blocklength)?);
        let displs = array(displacements, n)?;
        build(oldtype, displs.iter().map(|&d| Ok((d as isize, len))), newtype)?;
        made(newtype, Contents { combiner: MPI_COMBINER_HINDEXED_BLOCK, large: vec![], ints: vec![n as c_int, blocklength], aints: displs.to_vec(), types: vec![oldtype] })
    }

    /// Blocks of different types at byte displacements; the extent is rounded up to the
    /// strictest alignment of its members.
    fn MPI_Type_create_struct / PMPI_Type_create_struct(n: c_int, blocklengths: *const c_int, displacements: *const c_long, types: *const c_int, newtype: *mut c_int) {
        if newtype.is_null() {
            return fail(MPI_ERR_ARG, "newtype is NULL");
        }
        let n = count(n)?;
        let (lens, displs, types) = (array(blocklengths, n)?, array(displacements, n)?, array(types, n)?);
        let mut builder = Builder::new();
        for i in 0..n {
            builder.place(&layout(types[i])?, displs[i] as isize, count(lens[i])?)?;
        }
        let (info, segments) = builder.finish(true);
        put(newtype, typemap::add(info, segments))?;
        let ints = std::iter::once(n as c_int).chain(lens.iter().copied()).collect();
        made(newtype, Contents { combiner: MPI_COMBINER_STRUCT, large: vec![], ints, aints: displs.to_vec(), types: types.to_vec() })
    }

    /// `oldtype` with lower bound `lb` and extent `extent`.
    fn MPI_Type_create_resized / PMPI_Type_create_resized(oldtype: c_int, lb: c_long, extent: c_long, newtype: *mut c_int) {
        if newtype.is_null() {
            return fail(MPI_ERR_ARG, "newtype is NULL");
        }
        // A negative extent (an upper bound below the lower) steps elements backwards.
        let (old, segments) = layout(oldtype)?;
        let (info, segments) = bounds(segments.to_vec(), lb as isize, extent as isize, old.into(), old.reduces_as);
        put(newtype, typemap::add(info, segments))?;
        made(newtype, Contents { combiner: MPI_COMBINER_RESIZED, large: vec![], ints: vec![], aints: vec![lb, extent], types: vec![oldtype] })
    }

    fn MPI_Type_dup / PMPI_Type_dup(oldtype: c_int, newtype: *mut c_int) {
        let (info, segments) = layout(oldtype)?;
        if newtype.is_null() {
            return fail(MPI_ERR_ARG, "newtype is NULL");
        }
        let handle = typemap::add(info, segments);
        if let Err(error) = crate::keyval::copy_all(oldtype, handle) {
            let _ = crate::keyval::delete_all(handle);
            typemap::remove(handle);
            return Err(error);
        }
        put(newtype, handle)?;
        made(newtype, Contents { combiner: MPI_COMBINER_DUP, large: vec![], ints: vec![], aints: vec![], types: vec![oldtype] })
    }

    /// Nothing to prepare: packing reads the layout as it is.
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut c_int) {
        layout(get(datatype)?).map(drop)
    }

    fn MPI_Type_free / PMPI_Type_free(datatype: *mut c_int) {
        let handle = get(datatype)?;
        if typemap::is_derived(handle) {
            crate::keyval::delete_all(handle)?;
        }
        crate::contents::forget(handle);
        NAMES.lock().unwrap_or_else(PoisonError::into_inner).as_mut().map(|n| n.remove(&handle));
        if !typemap::remove(handle) {
            return fail(MPI_ERR_TYPE, format!("{handle:#x} is not a derived datatype (predefined ones cannot be freed)"));
        }
        put(datatype, MPI_DATATYPE_NULL)
    }

    fn MPI_Type_size / PMPI_Type_size(datatype: c_int, size: *mut c_int) {
        let info = layout(datatype)?.0;
        put(size, c_int::try_from(info.size).unwrap_or(MPI_UNDEFINED))
    }

    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: c_int, size: *mut c_long) {
        put(size, layout(datatype)?.0.size as c_long)
    }

    fn MPI_Type_get_extent / PMPI_Type_get_extent(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        let info = layout(datatype)?.0;
        put(lb, info.lb as c_long)?;
        put(extent, info.extent as c_long)
    }

    fn MPI_Type_get_extent_x / PMPI_Type_get_extent_x(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        let info = layout(datatype)?.0;
        put(lb, info.lb as c_long)?;
        put(extent, info.extent as c_long)
    }

    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        let info = layout(datatype)?.0;
        put(lb, info.true_lb as c_long)?;
        put(extent, info.true_extent as c_long)
    }

    fn MPI_Type_get_true_extent_x / PMPI_Type_get_true_extent_x(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        let info = layout(datatype)?.0;
        put(lb, info.true_lb as c_long)?;
        put(extent, info.true_extent as c_long)
    }

    /// The address of `location`, as displacements are counted.
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut c_long) {
        put(address, location as c_long)
    }

    fn MPI_Address / PMPI_Address(location: *const c_void, address: *mut c_long) {
        put(address, location as c_long)
    }

    /// A predefined datatype's own name until the program sets one; a derived one's is
    /// empty until then.
    fn MPI_Type_get_name / PMPI_Type_get_name(datatype: c_int, type_name: *mut c_char, resultlen: *mut c_int) {
        layout(datatype)?;
        let set = NAMES.lock().unwrap_or_else(PoisonError::into_inner).as_ref().and_then(|n| n.get(&datatype).cloned());
        let name = set.unwrap_or_else(|| {
            let predefined = crate::type_names::TYPE_NAMES.iter().find(|(h, _)| *h == datatype as u32);
            predefined.map_or(String::new(), |(_, name)| name.to_string())
        });
        put_text(type_name, MPI_MAX_OBJECT_NAME, resultlen, &name)
    }

    fn MPI_Type_set_name / PMPI_Type_set_name(datatype: c_int, type_name: *const c_char) {
        layout(datatype)?;
        let name = c_str(type_name)?.chars().take(MPI_MAX_OBJECT_NAME - 1).collect();
        NAMES.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert_with(HashMap::new).insert(datatype, name);
        Ok(())
    }
}

/// Names the program gave datatypes.
static NAMES: Mutex<Option<HashMap<c_int, String>>> = Mutex::new(None);
