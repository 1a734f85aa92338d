//! `MPI_Type_create_darray`: one process's part of an n-dimensional array distributed over
//! a grid of processes, block or cyclic along each dimension, with the whole array's
//! extent. The process grid is numbered in C order whatever the array's order.

use std::ffi::c_int;
use std::ops::Range;

use crate::call::mpi_fn;
use crate::consts::*;
use crate::contents::{made, Contents, MPI_COMBINER_DARRAY};
use crate::error::{fail, MpiResult};
use crate::ptr::{array, count, put};
use crate::typemap::{self, bounds, layout, Builder};

/// The runs of indices one process holds along one dimension, in increasing order.
fn runs(
    gsize: usize,
    distrib: c_int,
    darg: c_int,
    psize: usize,
    coord: usize,
    dim: usize,
) -> MpiResult<Vec<Range<usize>>> {
    let dflt = darg == MPI_DISTRIBUTE_DFLT_DARG;
    if !dflt && darg < 1 {
        return fail(MPI_ERR_ARG, format!("dimension {dim}: distribution argument {darg} is neither positive nor MPI_DISTRIBUTE_DFLT_DARG"));
    }
    match distrib {
        MPI_DISTRIBUTE_NONE => {
            if psize != 1 {
                return fail(MPI_ERR_ARG, format!("dimension {dim} is not distributed (MPI_DISTRIBUTE_NONE) but has {psize} processes"));
            }
            Ok(std::iter::once(0..gsize).collect())
        }
        MPI_DISTRIBUTE_BLOCK => {
            let block = if dflt { gsize.div_ceil(psize) } else { darg as usize };
            if block.saturating_mul(psize) < gsize {
                return fail(MPI_ERR_ARG, format!("dimension {dim}: blocks of {block} on {psize} processes do not cover {gsize} elements"));
            }
            let start = (coord * block).min(gsize);
            Ok(std::iter::once(start..(start + block).min(gsize)).collect())
        }
        MPI_DISTRIBUTE_CYCLIC => {
            let block = if dflt { 1 } else { darg as usize };
            let period = block.saturating_mul(psize);
            let mut runs = Vec::new();
            let mut start = coord * block;
            while start < gsize {
                runs.push(start..(start + block).min(gsize));
                start = start.saturating_add(period);
            }
            Ok(runs)
        }
        other => fail(
            MPI_ERR_ARG,
            format!("dimension {dim}: {other} is not MPI_DISTRIBUTE_BLOCK, _CYCLIC or _NONE"),
        ),
    }
}

/// This process's coordinates in the grid of `psizes` processes (C order).
fn coordinates(rank: usize, psizes: &[usize]) -> Vec<usize> {
    let mut coords = vec![0; psizes.len()];
    let mut rest = rank;
    for (c, &p) in coords.iter_mut().zip(psizes).rev() {
        *c = rest % p;
        rest /= p;
    }
    coords
}

mpi_fn! {
    fn MPI_Type_create_darray / PMPI_Type_create_darray(size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const c_int, array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int, order: c_int, oldtype: c_int, newtype: *mut c_int) {
        let (n, procs, me) = (count(ndims)?, count(size)?, count(rank)?);
        if n == 0 || newtype.is_null() {
            return fail(MPI_ERR_ARG, "ndims must be at least 1 and newtype not NULL");
        }
        if me >= procs {
            return fail(MPI_ERR_ARG, format!("rank {rank} is not below size {size}"));
        }
        let (gsizes, distribs, dargs, psizes_in) = (array(array_of_gsizes, n)?, array(array_of_distribs, n)?, array(array_of_dargs, n)?, array(array_of_psizes, n)?);
        let mut psizes = Vec::with_capacity(n);
        for (i, &p) in psizes_in.iter().enumerate() {
            let p = count(p)?;
            if p == 0 || count(gsizes[i])? == 0 {
                return fail(MPI_ERR_ARG, format!("dimension {i}: global sizes and process counts must be at least 1"));
            }
            psizes.push(p);
        }
        if psizes.iter().try_fold(1usize, |a, &p| a.checked_mul(p)) != Some(procs) {
            return fail(MPI_ERR_ARG, format!("the process grid {psizes:?} does not hold {size} processes"));
        }
        let coords = coordinates(me, &psizes);
        let mut dims = Vec::with_capacity(n);
        for i in 0..n {
            let gsize = gsizes[i] as usize;
            dims.push((gsize, runs(gsize, distribs[i], dargs[i], psizes[i], coords[i], i)?));
        }
        // Slowest dimension first.
        match order {
            MPI_ORDER_C => {}
            MPI_ORDER_FORTRAN => dims.reverse(),
            other => return fail(MPI_ERR_ARG, format!("order {other} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN")),
        }
        let old = layout(oldtype)?;
        let extent = old.0.extent;
        let lengths: Vec<usize> = dims.iter().map(|d| d.0).collect();
        let (strides, whole) = crate::subarray::strides_and_extent(&lengths, extent)?;
        // Every index this process holds along each slower dimension, in increasing order.
        let slow: Vec<Vec<usize>> = dims[..n - 1].iter().map(|(_, runs)| runs.iter().cloned().flatten().collect()).collect();
        let mut builder = Builder::new();
        if slow.iter().all(|held| !held.is_empty()) {
            let mut at = vec![0usize; n - 1];
            loop {
                let base: usize = (0..n - 1).map(|i| slow[i][at[i]] * strides[i]).sum();
                for run in &dims[n - 1].1 {
                    builder.place(&old, crate::subarray::element_at(base + run.start, extent)?, run.len())?;
                }
                let Some(i) = (0..n - 1).rev().find(|&i| at[i] + 1 < slow[i].len()) else { break };
                at[i] += 1;
                at[i + 1..].iter_mut().for_each(|x| *x = 0);
            }
        }
        let (info, segments) = builder.finish(false);
        let (info, segments) = bounds(segments.to_vec(), 0, whole, info.into(), info.reduces_as);
        put(newtype, typemap::add(info, segments))?;
        let ints = [size, rank, ndims].into_iter()
            .chain(gsizes.iter().copied()).chain(distribs.iter().copied())
            .chain(dargs.iter().copied()).chain(psizes_in.iter().copied())
            .chain(std::iter::once(order)).collect();
        made(newtype, Contents { combiner: MPI_COMBINER_DARRAY, large: vec![], ints, aints: vec![], types: vec![oldtype] })
    }
}
