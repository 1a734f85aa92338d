//! Cartesian topologies: a communicator's ranks laid out on a grid (row-major), with the
//! calls that map ranks to coordinates and shift along a dimension. Graphs are in `graph`.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Mutex, PoisonError};

use commcore_linux::runtime::UNDEFINED;

use crate::call::mpi_fn;
use crate::comm::add;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::graph::Neighbors;
use crate::p2p::on_comm;
use crate::ptr::{array, array_mut, count, put};

#[derive(Clone, Debug)]
struct Cart {
    dims: Vec<usize>,
    periods: Vec<bool>,
}

impl Cart {
    fn coords(&self, mut rank: usize) -> Vec<usize> {
        let mut coords = vec![0; self.dims.len()];
        for (i, &d) in self.dims.iter().enumerate().rev() {
            coords[i] = rank % d.max(1);
            rank /= d.max(1);
        }
        coords
    }

    /// The rank at `coords` (periodic dimensions wrap); `None` off a non-periodic edge.
    fn rank(&self, coords: &[i64]) -> Option<usize> {
        let mut rank = 0usize;
        for ((&c, &d), &periodic) in coords.iter().zip(&self.dims).zip(&self.periods) {
            let d = d as i64;
            let c = if periodic {
                c.rem_euclid(d.max(1))
            } else if (0..d).contains(&c) {
                c
            } else {
                return None;
            };
            rank = rank * d as usize + c as usize;
        }
        Some(rank)
    }
}

static CARTS: Mutex<Option<HashMap<c_int, Cart>>> = Mutex::new(None);

fn cart(comm: c_int) -> MpiResult<Cart> {
    let guard = CARTS.lock().unwrap_or_else(PoisonError::into_inner);
    match guard.as_ref().and_then(|c| c.get(&comm)) {
        Some(cart) => Ok(cart.clone()),
        None => fail(MPI_ERR_TOPOLOGY, "the communicator has no Cartesian topology"),
    }
}

fn store(comm: c_int, cart: Cart) {
    CARTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(HashMap::new)
        .insert(comm, cart);
}

/// The neighbors of `rank` on `comm`'s grid, if it has one: per dimension the rank before
/// and the rank after (`MPI_PROC_NULL` off a non-periodic edge), each with the direction
/// its data travels, so that a block sent one way lands in the slot facing back.
pub(crate) fn cart_neighbors(comm: c_int, rank: usize) -> Option<Neighbors> {
    let grid = cart(comm).ok()?;
    let mine: Vec<i64> = grid.coords(rank).into_iter().map(|c| c as i64).collect();
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for dim in 0..grid.dims.len() {
        for (step, slot) in [(-1i64, 0u32), (1, 1)] {
            let mut at = mine.clone();
            at[dim] += step;
            let peer = grid.rank(&at).map_or(MPI_PROC_NULL, |r| r as c_int);
            // Out along `step`; in from `step`, which travelled the other way.
            let dim = dim as u32;
            outs.push((peer, 2 * dim + slot));
            ins.push((peer, 2 * dim + 1 - slot));
        }
    }
    Some(Neighbors { ins, outs })
}

/// A duplicate keeps the topology (`MPI_Comm_dup`).
pub(crate) fn copy(old: c_int, new: c_int) {
    if let Ok(cart) = cart(old) {
        store(new, cart);
    }
    crate::graph::copy(old, new);
}

/// A freed communicator's topology goes.
pub(crate) fn forget(comm: c_int) {
    if let Some(carts) = CARTS.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
        carts.remove(&comm);
    }
    crate::graph::forget(comm);
}

/// Splits `comm`: the first `members` ranks (or those of `color`) form the new grid.
fn make(comm: c_int, color: c_int, key: c_int, cart: Cart) -> MpiResult<c_int> {
    let part = on_comm(comm, |c| Ok(c.split(color, key)?))?;
    let handle = add(comm, part)?;
    if handle != MPI_COMM_NULL {
        store(handle, cart);
    }
    Ok(handle)
}

/// The most balanced `k` factors of `n`, largest first: the smallest spread between the
/// largest and the smallest, then the largest smallest, the largest next smallest, and so on
/// (as MPICH's tests ask).
fn balanced(n: usize, k: usize) -> Vec<usize> {
    let mut divisors: Vec<usize> =
        (1..).take_while(|d| d * d <= n).filter(|d| n % d == 0).collect();
    let large: Vec<usize> = divisors.iter().rev().map(|d| n / d).filter(|&d| d * d != n).collect();
    divisors.extend(large);
    divisors.reverse();
    let mut best: Option<Vec<usize>> = None;
    search(n, k, &divisors, &mut Vec::with_capacity(k), &mut best);
    best.unwrap_or_else(|| vec![1; k])
}

/// Tries every non-increasing factorization of `n` into `k` of `divisors` (largest first)
/// that extends `current`; keeps the best.
fn search(
    n: usize,
    k: usize,
    divisors: &[usize],
    current: &mut Vec<usize>,
    best: &mut Option<Vec<usize>>,
) {
    if k == 0 {
        let spread = |d: &[usize]| {
            (d[0] - d[d.len() - 1], std::cmp::Reverse(d.iter().rev().copied().collect::<Vec<_>>()))
        };
        if n == 1 && !best.as_ref().is_some_and(|b| spread(current) >= spread(b)) {
            *best = Some(current.clone());
        }
        return;
    }
    for (i, &d) in divisors.iter().enumerate() {
        // The largest of the rest is at least n^(1/k); a spread beyond the best's is hopeless.
        let too_small = d.checked_pow(k as u32).is_some_and(|p| p < n);
        let too_spread = match (best.as_ref(), current.first()) {
            (Some(b), Some(&first)) => first - d > b[0] - b[b.len() - 1],
            _ => false,
        };
        if too_small || too_spread {
            break;
        }
        if n % d == 0 {
            current.push(d);
            search(n / d, k - 1, &divisors[i..], current, best);
            current.pop();
        }
    }
}

/// `MPI_Cart_map` and `MPI_Graph_map`: this rank, or `MPI_UNDEFINED` outside `nodes`.
///
/// # Safety
/// `newrank` is valid for a write, or NULL.
unsafe fn map_to(comm: c_int, nodes: usize, newrank: *mut c_int) -> MpiResult {
    let (rank, size) = on_comm(comm, |c| Ok((c.rank(), c.size())))?;
    if nodes > size {
        return fail(MPI_ERR_ARG, format!("{nodes} nodes do not fit {size} ranks"));
    }
    // SAFETY: the caller's contract.
    unsafe { put(newrank, if rank < nodes { rank as c_int } else { MPI_UNDEFINED }) }
}

mpi_fn! {
    /// Fills the zero entries of `dims` so that their product is `nnodes`, as balanced as
    /// the factors allow, largest first.
    fn MPI_Dims_create / PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) {
        let (nnodes, dims) = (count(nnodes)?, array_mut(dims, count(ndims)?)?);
        let fixed: usize = dims.iter().filter(|&&d| d > 0).map(|&d| d as usize).product();
        if dims.iter().any(|&d| d < 0) || fixed == 0 || nnodes % fixed != 0 {
            return fail(MPI_ERR_DIMS, format!("{nnodes} nodes do not fit the given dimensions"));
        }
        let free: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == 0).collect();
        if free.is_empty() {
            return if fixed == nnodes { Ok(()) } else { fail(MPI_ERR_DIMS, "the dimensions do not make nnodes") };
        }
        let sizes = balanced(nnodes / fixed, free.len());
        for (slot, size) in free.into_iter().zip(sizes) {
            dims[slot] = size as c_int;
        }
        Ok(())
    }

    fn MPI_Cart_create / PMPI_Cart_create(comm_old: c_int, ndims: c_int, dims: *const c_int, periods: *const c_int, _reorder: c_int, comm_cart: *mut c_int) {
        let n = count(ndims)?;
        let dims: Vec<usize> = array(dims, n)?.iter().map(|&d| count(d)).collect::<MpiResult<_>>()?;
        let periods: Vec<bool> = array(periods, n)?.iter().map(|&p| p != 0).collect();
        let cells: usize = dims.iter().product();
        let (rank, size) = on_comm(comm_old, |c| Ok((c.rank(), c.size())))?;
        if cells > size {
            // The program's handle is MPI_COMM_NULL after the failure, as MPICH leaves it.
            put(comm_cart, MPI_COMM_NULL)?;
            return fail(MPI_ERR_ARG, format!("a grid of {cells} does not fit {size} ranks"));
        }
        let color = if rank < cells { 0 } else { UNDEFINED };
        put(comm_cart, make(comm_old, color, rank as c_int, Cart { dims, periods })?)
    }

    /// The identity placement: ranks below the grid's size keep theirs.
    fn MPI_Cart_map / PMPI_Cart_map(comm: c_int, ndims: c_int, dims: *const c_int, _periods: *const c_int, newrank: *mut c_int) {
        let dims = array(dims, count(ndims)?)?;
        let cells = dims.iter().map(|&d| count(d)).product::<MpiResult<usize>>()?;
        map_to(comm, cells, newrank)
    }

    /// The identity placement: ranks below the graph's size keep theirs.
    fn MPI_Graph_map / PMPI_Graph_map(comm: c_int, nnodes: c_int, _index: *const c_int, _edges: *const c_int, newrank: *mut c_int) {
        map_to(comm, count(nnodes)?, newrank)
    }

    fn MPI_Cartdim_get / PMPI_Cartdim_get(comm: c_int, ndims: *mut c_int) {
        put(ndims, cart(comm)?.dims.len() as c_int)
    }

    fn MPI_Topo_test / PMPI_Topo_test(comm: c_int, status: *mut c_int) {
        on_comm(comm, |_| Ok(()))?;
        let kind = if cart(comm).is_ok() { MPI_CART } else { crate::graph::kind(comm).unwrap_or(MPI_UNDEFINED) };
        put(status, kind)
    }

    fn MPI_Cart_get / PMPI_Cart_get(comm: c_int, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) {
        let grid = cart(comm)?;
        let rank = on_comm(comm, |c| Ok(c.rank()))?;
        let n = grid.dims.len().min(count(maxdims)?);
        let (d, p, c) = (array_mut(dims, n)?, array_mut(periods, n)?, array_mut(coords, n)?);
        let mine = grid.coords(rank);
        for i in 0..n {
            d[i] = grid.dims[i] as c_int;
            p[i] = grid.periods[i] as c_int;
            c[i] = mine[i] as c_int;
        }
        Ok(())
    }

    fn MPI_Cart_rank / PMPI_Cart_rank(comm: c_int, coords: *const c_int, rank: *mut c_int) {
        let grid = cart(comm)?;
        let at: Vec<i64> = array(coords, grid.dims.len())?.iter().map(|&c| c as i64).collect();
        match grid.rank(&at) {
            Some(r) => put(rank, r as c_int),
            None => fail(MPI_ERR_ARG, "the coordinates are off the grid"),
        }
    }

    fn MPI_Cart_coords / PMPI_Cart_coords(comm: c_int, rank: c_int, maxdims: c_int, coords: *mut c_int) {
        let grid = cart(comm)?;
        let cells: usize = grid.dims.iter().product();
        let Some(rank) = usize::try_from(rank).ok().filter(|&r| r < cells) else {
            return fail(MPI_ERR_RANK, format!("rank {rank} is not on the grid"));
        };
        let out = array_mut(coords, grid.dims.len().min(count(maxdims)?))?;
        for (slot, c) in out.iter_mut().zip(grid.coords(rank)) {
            *slot = c as c_int;
        }
        Ok(())
    }

    /// The ranks `disp` before and after this one along `direction`
    /// (`MPI_PROC_NULL` off a non-periodic edge).
    fn MPI_Cart_shift / PMPI_Cart_shift(comm: c_int, direction: c_int, disp: c_int, rank_source: *mut c_int, rank_dest: *mut c_int) {
        let grid = cart(comm)?;
        let Some(dir) = usize::try_from(direction).ok().filter(|&d| d < grid.dims.len()) else {
            return fail(MPI_ERR_ARG, format!("direction {direction} is not a dimension"));
        };
        let rank = on_comm(comm, |c| Ok(c.rank()))?;
        let mine: Vec<i64> = grid.coords(rank).into_iter().map(|c| c as i64).collect();
        let along = |step: i64| {
            let mut at = mine.clone();
            at[dir] += step;
            grid.rank(&at).map_or(MPI_PROC_NULL, |r| r as c_int)
        };
        put(rank_source, along(-(disp as i64)))?;
        put(rank_dest, along(disp as i64))
    }

    /// The sub-grids that keep the dimensions `remain_dims` marks.
    fn MPI_Cart_sub / PMPI_Cart_sub(comm: c_int, remain_dims: *const c_int, newcomm: *mut c_int) {
        let grid = cart(comm)?;
        let keep: Vec<bool> = array(remain_dims, grid.dims.len())?.iter().map(|&k| k != 0).collect();
        let rank = on_comm(comm, |c| Ok(c.rank()))?;
        let mine = grid.coords(rank);
        // The color: this rank's place among the dropped dimensions.
        let mut color = 0usize;
        for i in (0..grid.dims.len()).filter(|&i| !keep[i]) {
            color = color * grid.dims[i] + mine[i];
        }
        let sub = Cart {
            dims: (0..grid.dims.len()).filter(|&i| keep[i]).map(|i| grid.dims[i]).collect(),
            periods: (0..grid.dims.len()).filter(|&i| keep[i]).map(|i| grid.periods[i]).collect(),
        };
        put(newcomm, make(comm, color as c_int, rank as c_int, sub)?)
    }
}
