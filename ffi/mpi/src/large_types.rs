//! The large-count datatype constructors (`MPI_Type_contiguous_c`, ...): where every count
//! fits an int they are the int forms; where one does not (a type of 2^31 bytes or more),
//! the type is built from the wide counts and its contents keep them as MPI-4's large
//! counts.

use std::ffi::{c_int, c_long};

use crate::call;
use crate::consts::*;
use crate::contents::*;
use crate::derived::*;
use crate::error::{fail, MpiResult};
use crate::large_count::MpiCount;
use crate::ptr::{array, put};
use crate::typemap::{self, layout, Builder};

/// A count or block length, not negative.
fn wide(value: MpiCount) -> MpiResult<usize> {
    usize::try_from(value).or_else(|_| fail(MPI_ERR_COUNT, format!("count {value} is negative")))
}

/// `values` narrowed to ints, if every one fits.
fn narrow(values: &[MpiCount]) -> Option<Vec<c_int>> {
    values.iter().map(|&v| c_int::try_from(v).ok()).collect()
}

/// Notes the contents of a type made from counts beyond an int.
///
/// # Safety
/// `newtype` holds the new datatype's handle.
unsafe fn made_large(
    newtype: *mut c_int,
    combiner: c_int,
    large: Vec<MpiCount>,
    types: Vec<c_int>,
) -> MpiResult {
    let contents = Contents { combiner, large, ints: vec![], aints: vec![], types };
    // SAFETY: the caller's contract.
    unsafe { made(newtype, contents) }
}

/// Where `narrowed` (which reads the arguments) finds that they fit ints, the int form
/// `int_form` runs on them and reports its own errors; else `wide` builds the type, its
/// errors this call's (`name`).
fn either<T>(
    name: &str,
    narrowed: impl FnOnce() -> MpiResult<Option<T>>,
    int_form: impl FnOnce(T) -> c_int,
    wide: impl FnOnce() -> MpiResult,
) -> c_int {
    match narrowed() {
        Ok(Some(ints)) => int_form(ints),
        Ok(None) => call::run(name, wide),
        Err(error) => call::run(name, || Err(error)),
    }
}

crate::large_count::large_by_hand! {
    fn MPI_Type_contiguous_c / PMPI_Type_contiguous_c(count: MpiCount, oldtype: c_int, newtype: *mut c_int) {
        either("MPI_Type_contiguous_c", || Ok(c_int::try_from(count).ok()),
            |n| PMPI_Type_contiguous(n, oldtype, newtype),
            || {
                build(oldtype, std::iter::once(Ok((0, wide(count)?))), newtype)?;
                made_large(newtype, MPI_COMBINER_CONTIGUOUS, vec![count], vec![oldtype])
            })
    }

    fn MPI_Type_vector_c / PMPI_Type_vector_c(count: MpiCount, blocklength: MpiCount, stride: MpiCount, oldtype: c_int, newtype: *mut c_int) {
        either("MPI_Type_vector_c", || Ok(narrow(&[count, blocklength, stride])),
            |ints| PMPI_Type_vector(ints[0], ints[1], ints[2], oldtype, newtype),
            || {
                let (n, len, step) = (wide(count)?, wide(blocklength)?, scaled(stride, unit(oldtype)?)?);
                build(oldtype, (0..n).map(|j| Ok((scaled(j, step)?, len))), newtype)?;
                made_large(newtype, MPI_COMBINER_VECTOR, vec![count, blocklength, stride], vec![oldtype])
            })
    }

    fn MPI_Type_create_hvector_c / PMPI_Type_create_hvector_c(count: MpiCount, blocklength: MpiCount, stride: MpiCount, oldtype: c_int, newtype: *mut c_int) {
        either("MPI_Type_create_hvector_c", || Ok(narrow(&[count, blocklength])),
            |ints| PMPI_Type_create_hvector(ints[0], ints[1], stride as c_long, oldtype, newtype),
            || {
                let (n, len) = (wide(count)?, wide(blocklength)?);
                build(oldtype, (0..n).map(|j| Ok((scaled(j, stride as isize)?, len))), newtype)?;
                made_large(newtype, MPI_COMBINER_HVECTOR, vec![count, blocklength, stride], vec![oldtype])
            })
    }

    fn MPI_Type_indexed_c / PMPI_Type_indexed_c(count: MpiCount, blocklengths: *const MpiCount, displacements: *const MpiCount, oldtype: c_int, newtype: *mut c_int) {
        let arrays = || -> MpiResult<(&[MpiCount], &[MpiCount])> {
            let n = wide(count)?;
            Ok((array(blocklengths, n)?, array(displacements, n)?))
        };
        either("MPI_Type_indexed_c",
            || { let (lens, displs) = arrays()?; Ok(narrow(&[count]).zip(narrow(lens)).zip(narrow(displs))) },
            |((n, lens), displs)| PMPI_Type_indexed(n[0], lens.as_ptr(), displs.as_ptr(), oldtype, newtype),
            || {
                let ((lens, displs), u) = (arrays()?, unit(oldtype)?);
                build(oldtype, lens.iter().zip(displs).map(|(&l, &d)| Ok((scaled(d, u)?, wide(l)?))), newtype)?;
                let large = [count].iter().chain(lens).chain(displs).copied().collect();
                made_large(newtype, MPI_COMBINER_INDEXED, large, vec![oldtype])
            })
    }

    fn MPI_Type_create_hindexed_c / PMPI_Type_create_hindexed_c(count: MpiCount, blocklengths: *const MpiCount, displacements: *const c_long, oldtype: c_int, newtype: *mut c_int) {
        let arrays = || -> MpiResult<(&[MpiCount], &[c_long])> {
            let n = wide(count)?;
            Ok((array(blocklengths, n)?, array(displacements, n)?))
        };
        either("MPI_Type_create_hindexed_c",
            || { let (lens, _) = arrays()?; Ok(narrow(&[count]).zip(narrow(lens))) },
            |(n, lens)| PMPI_Type_create_hindexed(n[0], lens.as_ptr(), displacements, oldtype, newtype),
            || {
                let (lens, displs) = arrays()?;
                build(oldtype, lens.iter().zip(displs).map(|(&l, &d)| Ok((d as isize, wide(l)?))), newtype)?;
                let large = [count].iter().chain(lens).chain(displs).copied().collect();
                made_large(newtype, MPI_COMBINER_HINDEXED, large, vec![oldtype])
            })
    }

    fn MPI_Type_create_indexed_block_c / PMPI_Type_create_indexed_block_c(count: MpiCount, blocklength: MpiCount, displacements: *const MpiCount, oldtype: c_int, newtype: *mut c_int) {
        let displs = || array(displacements, wide(count)?);
        either("MPI_Type_create_indexed_block_c",
            || Ok(narrow(&[count, blocklength]).zip(narrow(displs()?))),
            |(ints, displs)| PMPI_Type_create_indexed_block(ints[0], ints[1], displs.as_ptr(), oldtype, newtype),
            || {
                let (displs, len, u) = (displs()?, wide(blocklength)?, unit(oldtype)?);
                build(oldtype, displs.iter().map(|&d| Ok((scaled(d, u)?, len))), newtype)?;
                let large = [count, blocklength].iter().chain(displs).copied().collect();
                made_large(newtype, MPI_COMBINER_INDEXED_BLOCK, large, vec![oldtype])
            })
    }

    fn MPI_Type_create_hindexed_block_c / PMPI_Type_create_hindexed_block_c(count: MpiCount, blocklength: MpiCount, displacements: *const c_long, oldtype: c_int, newtype: *mut c_int) {
        either("MPI_Type_create_hindexed_block_c", || Ok(narrow(&[count, blocklength])),
            |ints| PMPI_Type_create_hindexed_block(ints[0], ints[1], displacements, oldtype, newtype),
            || {
                let (n, len) = (wide(count)?, wide(blocklength)?);
                let displs = array(displacements, n)?;
                build(oldtype, displs.iter().map(|&d| Ok((d as isize, len))), newtype)?;
                let large = [count, blocklength].iter().chain(displs).copied().collect();
                made_large(newtype, MPI_COMBINER_HINDEXED_BLOCK, large, vec![oldtype])
            })
    }

    fn MPI_Type_create_struct_c / PMPI_Type_create_struct_c(count: MpiCount, blocklengths: *const MpiCount, displacements: *const c_long, types: *const c_int, newtype: *mut c_int) {
        let lens = || array(blocklengths, wide(count)?);
        either("MPI_Type_create_struct_c",
            || Ok(narrow(&[count]).zip(narrow(lens()?))),
            |(n, lens)| PMPI_Type_create_struct(n[0], lens.as_ptr(), displacements, types, newtype),
            || {
                let n = wide(count)?;
                let (lens, displs, types) = (lens()?, array(displacements, n)?, array(types, n)?);
                if newtype.is_null() {
                    return fail(MPI_ERR_ARG, "newtype is NULL");
                }
                let mut builder = Builder::new();
                for i in 0..n {
                    builder.place(&layout(types[i])?, displs[i] as isize, wide(lens[i])?)?;
                }
                let (info, segments) = builder.finish(true);
                put(newtype, typemap::add(info, segments))?;
                let large = [count].iter().chain(lens).chain(displs).copied().collect();
                made_large(newtype, MPI_COMBINER_STRUCT, large, types.to_vec())
            })
    }
}
