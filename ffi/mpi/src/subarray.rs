//! `MPI_Type_create_subarray` (a block of an n-dimensional array, in C or Fortran order,
//! with the whole array's extent), `MPI_Type_match_size` and the MPI-1 `MPI_Type_hindexed`.

use std::ffi::{c_int, c_long};

use crate::call::mpi_fn;
use crate::consts::types::*;
use crate::consts::*;
use crate::contents::{made, Contents, MPI_COMBINER_SUBARRAY};
use crate::error::{fail, MpiResult};
use crate::ptr::{array, count, put};
use crate::typemap::{self, bounds, layout, Builder};

/// The dimensions, slowest first: (size, subsize, start) each, checked.
fn dimensions(
    sizes: &[c_int],
    subsizes: &[c_int],
    starts: &[c_int],
    order: c_int,
) -> MpiResult<Vec<(usize, usize, usize)>> {
    let mut dims = Vec::with_capacity(sizes.len());
    for i in 0..sizes.len() {
        let (size, sub, start) = (count(sizes[i])?, count(subsizes[i])?, count(starts[i])?);
        if size == 0 || sub == 0 || start + sub > size {
            return fail(MPI_ERR_ARG, format!("dimension {i}: a subarray of {sub} from {start} does not fit {size} (sizes and subsizes must be at least 1)"));
        }
        dims.push((size, sub, start));
    }
    match order {
        MPI_ORDER_C => Ok(dims),
        MPI_ORDER_FORTRAN => Ok(dims.into_iter().rev().collect()),
        other => {
            fail(MPI_ERR_ARG, format!("order {other} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN"))
        }
    }
}

/// The element strides of each dimension of an array of `sizes` (slowest first) and the
/// whole array's extent for elements `extent` bytes apart: an error if it spans more than
/// the address space.
pub(crate) fn strides_and_extent(sizes: &[usize], extent: isize) -> MpiResult<(Vec<usize>, isize)> {
    let too_big = || fail(MPI_ERR_ARG, "the array spans more than the address space");
    let mut strides = vec![1usize; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        let Some(stride) = strides[i + 1].checked_mul(sizes[i + 1]) else { return too_big() };
        strides[i] = stride;
    }
    let whole = match (strides.first(), sizes.first()) {
        (Some(&stride), Some(&n)) => stride
            .checked_mul(n)
            .and_then(|e| isize::try_from(e).ok())
            .and_then(|e| e.checked_mul(extent)),
        _ => Some(0),
    };
    whole.map_or_else(too_big, |bytes| Ok((strides, bytes)))
}

/// The byte displacement of element `index` of elements `extent` bytes apart (backwards
/// where the extent is negative): an error past the address space.
pub(crate) fn element_at(index: usize, extent: isize) -> MpiResult<isize> {
    match isize::try_from(index).ok().and_then(|i| i.checked_mul(extent)) {
        Some(at) => Ok(at),
        None => fail(MPI_ERR_ARG, "the array spans more than the address space"),
    }
}

mpi_fn! {
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray(ndims: c_int, array_of_sizes: *const c_int, array_of_subsizes: *const c_int, array_of_starts: *const c_int, order: c_int, oldtype: c_int, newtype: *mut c_int) {
        let n = count(ndims)?;
        if n == 0 || newtype.is_null() {
            return fail(MPI_ERR_ARG, "ndims must be at least 1 and newtype not NULL");
        }
        let (sizes, subsizes, starts) = (array(array_of_sizes, n)?, array(array_of_subsizes, n)?, array(array_of_starts, n)?);
        let dims = dimensions(sizes, subsizes, starts, order)?;
        let old = layout(oldtype)?;
        let extent = old.0.extent;
        let lengths: Vec<usize> = dims.iter().map(|d| d.0).collect();
        let (strides, whole) = strides_and_extent(&lengths, extent)?;
        // One run along the fastest dimension per index of the others, in array order.
        let (fast_sub, fast_start) = (dims[n - 1].1, dims[n - 1].2);
        let mut builder = Builder::new();
        let mut index = vec![0usize; n - 1];
        loop {
            let element: usize = (0..n - 1).map(|i| (dims[i].2 + index[i]) * strides[i]).sum::<usize>() + fast_start;
            builder.place(&old, element_at(element, extent)?, fast_sub)?;
            // The next index, the last of the slower dimensions moving fastest.
            let Some(i) = (0..n - 1).rev().find(|&i| index[i] + 1 < dims[i].1) else { break };
            index[i] += 1;
            index[i + 1..].iter_mut().for_each(|x| *x = 0);
        }
        let (info, segments) = builder.finish(false);
        let (info, segments) = bounds(segments.to_vec(), 0, whole, info.into(), info.reduces_as);
        put(newtype, typemap::add(info, segments))?;
        let ints = std::iter::once(ndims).chain(sizes.iter().copied()).chain(subsizes.iter().copied()).chain(starts.iter().copied()).chain(std::iter::once(order)).collect();
        made(newtype, Contents { combiner: MPI_COMBINER_SUBARRAY, large: vec![], ints, aints: vec![], types: vec![oldtype] })
    }

    /// A predefined C datatype of `typeclass` and `size` bytes.
    fn MPI_Type_match_size / PMPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut c_int) {
        let found = match (typeclass, size) {
            (MPI_TYPECLASS_REAL, 4) => MPI_FLOAT,
            (MPI_TYPECLASS_REAL, 8) => MPI_DOUBLE,
            (MPI_TYPECLASS_REAL, 16) => MPI_LONG_DOUBLE,
            (MPI_TYPECLASS_INTEGER, 1) => MPI_SIGNED_CHAR,
            (MPI_TYPECLASS_INTEGER, 2) => MPI_SHORT,
            (MPI_TYPECLASS_INTEGER, 4) => MPI_INT,
            (MPI_TYPECLASS_INTEGER, 8) => MPI_LONG,
            (MPI_TYPECLASS_COMPLEX, 8) => MPI_C_FLOAT_COMPLEX,
            (MPI_TYPECLASS_COMPLEX, 16) => MPI_C_DOUBLE_COMPLEX,
            (MPI_TYPECLASS_COMPLEX, 32) => MPI_C_LONG_DOUBLE_COMPLEX,
            (MPI_TYPECLASS_REAL | MPI_TYPECLASS_INTEGER | MPI_TYPECLASS_COMPLEX, s) => {
                return fail(MPI_ERR_ARG, format!("no predefined datatype of that class is {s} bytes"));
            }
            (class, _) => return fail(MPI_ERR_ARG, format!("{class} is not a type class")),
        };
        put(datatype, found)
    }

    /// MPI-1's name for `MPI_Type_create_hindexed`.
    fn MPI_Type_hindexed / PMPI_Type_hindexed(n: c_int, blocklengths: *const c_int, displacements: *const c_long, oldtype: c_int, newtype: *mut c_int) {
        crate::derived::hindexed(n, blocklengths, displacements, oldtype, newtype)
    }
}
