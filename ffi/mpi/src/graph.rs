//! Graph topologies: the whole graph every rank is given (`MPI_Graph_create`) and the
//! distributed graph, where each rank knows only its own edges (`MPI_Dist_graph_create`,
//! `_adjacent`). The new communicator's ranks are the old ones in order (no reordering).
//! Neighborhood collectives on them are in `neighbor`.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Mutex, PoisonError};

use commcore::coll::{Blocks, CollArgs, CollOp, Datatype};
use commcore_linux::runtime::{Comm, UNDEFINED};

use crate::call::mpi_fn;
use crate::comm::add;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::externs::{MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY};
use crate::p2p::on_comm;
use crate::ptr::{array, array_mut, count, put};

#[derive(Clone, Debug)]
enum Graph {
    /// Node `i`'s neighbors are `edges[index[i - 1]..index[i]]` (`index[-1]` is 0).
    Whole {
        index: Vec<usize>,
        edges: Vec<c_int>,
    },
    Distributed(Dist),
}

/// A rank's own edges in a distributed graph, in and out, with their weights.
#[derive(Clone, Debug)]
struct Dist {
    sources: Vec<c_int>,
    source_weights: Vec<c_int>,
    destinations: Vec<c_int>,
    destination_weights: Vec<c_int>,
    weighted: bool,
}

impl Graph {
    fn neighbors(index: &[usize], edges: &[c_int], node: usize) -> Vec<c_int> {
        let start = if node == 0 { 0 } else { index[node - 1] };
        edges[start..index[node]].to_vec()
    }
}

/// A rank's neighbors for the neighborhood collectives: the ranks it receives from and
/// sends to, in slot order, each with a label; between two ranks, the sender's blocks and
/// the receiver's slots meet in the order of their labels (then of their slots).
#[derive(Clone, Debug)]
pub(crate) struct Neighbors {
    pub ins: Vec<(c_int, u32)>,
    pub outs: Vec<(c_int, u32)>,
}

static GRAPHS: Mutex<Option<HashMap<c_int, Graph>>> = Mutex::new(None);

fn graph(comm: c_int) -> Option<Graph> {
    GRAPHS.lock().unwrap_or_else(PoisonError::into_inner).as_ref()?.get(&comm).cloned()
}

fn store(comm: c_int, graph: Graph) {
    let mut guard = GRAPHS.lock().unwrap_or_else(PoisonError::into_inner);
    guard.get_or_insert_with(HashMap::new).insert(comm, graph);
}

/// `MPI_GRAPH` or `MPI_DIST_GRAPH` if `comm` has a graph topology.
pub(crate) fn kind(comm: c_int) -> Option<c_int> {
    graph(comm).map(|g| match g {
        Graph::Whole { .. } => MPI_GRAPH,
        Graph::Distributed(_) => MPI_DIST_GRAPH,
    })
}

/// A duplicate keeps the topology (`MPI_Comm_dup`).
pub(crate) fn copy(old: c_int, new: c_int) {
    if let Some(g) = graph(old) {
        store(new, g);
    }
}

/// A freed communicator's topology goes.
pub(crate) fn forget(comm: c_int) {
    if let Some(graphs) = GRAPHS.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
        graphs.remove(&comm);
    }
}

/// The neighbors of `rank` on `comm`'s graph, if it has one (edges between the same pair
/// meet in the order given).
pub(crate) fn graph_neighbors(comm: c_int, rank: usize) -> Option<Neighbors> {
    let label = |ranks: &[c_int]| ranks.iter().map(|&r| (r, 0)).collect::<Vec<_>>();
    match graph(comm)? {
        Graph::Whole { index, edges } if rank < index.len() => {
            let around = label(&Graph::neighbors(&index, &edges, rank));
            Some(Neighbors { ins: around.clone(), outs: around })
        }
        Graph::Whole { .. } => None,
        Graph::Distributed(d) => {
            Some(Neighbors { ins: label(&d.sources), outs: label(&d.destinations) })
        }
    }
}

fn whole(comm: c_int) -> MpiResult<(Vec<usize>, Vec<c_int>)> {
    match graph(comm) {
        Some(Graph::Whole { index, edges }) => Ok((index, edges)),
        _ => fail(MPI_ERR_TOPOLOGY, "the communicator has no graph topology"),
    }
}

fn distributed(comm: c_int) -> MpiResult<Dist> {
    match graph(comm) {
        Some(Graph::Distributed(dist)) => Ok(dist),
        _ => fail(MPI_ERR_TOPOLOGY, "the communicator has no distributed graph topology"),
    }
}

/// The ranks of `comm` with `color` (all ranks keep their order), the graph stored.
fn make(comm: c_int, color: c_int, graph: Graph) -> MpiResult<c_int> {
    let part = on_comm(comm, |c| Ok(c.split(color, c.rank() as c_int)?))?;
    let handle = add(comm, part)?;
    if handle != MPI_COMM_NULL {
        store(handle, graph);
    }
    Ok(handle)
}

/// `n` weights at `weights`: `None` for `MPI_UNWEIGHTED`, ones for `MPI_WEIGHTS_EMPTY`.
///
/// # Safety
/// `weights` holds `n` ints, or is one of the two sentinels.
unsafe fn weights(weights: *const c_int, n: usize) -> MpiResult<Option<Vec<c_int>>> {
    if weights == MPI_UNWEIGHTED.addr() {
        return Ok(None);
    }
    if weights == MPI_WEIGHTS_EMPTY.addr() || n == 0 {
        return Ok(Some(vec![1; n]));
    }
    // SAFETY: the caller's contract.
    Ok(Some(unsafe { array(weights, n) }?.to_vec()))
}

/// Ranks `ranks` all name ranks of a communicator of `size`.
fn check_ranks(ranks: &[c_int], size: usize) -> MpiResult {
    match ranks.iter().find(|&&r| usize::try_from(r).map_or(true, |r| r >= size)) {
        Some(bad) => fail(MPI_ERR_RANK, format!("{bad} is not a rank of the communicator")),
        None => Ok(()),
    }
}

/// Every rank's edges `(source, destination, weight)`, gathered to all.
fn gather_edges(c: &Comm, mine: &[[c_int; 3]]) -> MpiResult<Vec<[c_int; 3]>> {
    let bytes: Vec<u8> = mine.iter().flatten().flat_map(|v| v.to_ne_bytes()).collect();
    let mut lens = vec![0u8; 8 * c.size()];
    let args = CollArgs::new(8, Datatype::U8);
    c.collective(CollOp::Allgather, &args, &(bytes.len() as u64).to_ne_bytes(), &mut lens)?;
    let counts: Vec<usize> = lens
        .chunks_exact(8)
        .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default()) as usize)
        .collect();
    let displs: Vec<usize> =
        counts.iter().scan(0, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
    let mut all = vec![0u8; counts.iter().sum()];
    let args = CollArgs::new(bytes.len(), Datatype::U8)
        .with_recv(Blocks { counts: &counts, displs: &displs });
    c.collective(CollOp::Allgatherv, &args, &bytes, &mut all)?;
    let ints: Vec<c_int> = all
        .chunks_exact(4)
        .map(|b| c_int::from_ne_bytes(b.try_into().unwrap_or_default()))
        .collect();
    Ok(ints.chunks_exact(3).map(|e| [e[0], e[1], e[2]]).collect())
}

/// Writes the first `max` of `values` to `out`.
///
/// # Safety
/// `out` holds `max` ints (it may be NULL or a sentinel when `max` is 0).
unsafe fn put_some(out: *mut c_int, max: c_int, values: &[c_int]) -> MpiResult {
    let n = values.len().min(count(max)?);
    if n == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract.
    unsafe { array_mut(out, n) }?.copy_from_slice(&values[..n]);
    Ok(())
}

mpi_fn! {
    fn MPI_Graph_create / PMPI_Graph_create(comm_old: c_int, nnodes: c_int, index: *const c_int, edges: *const c_int, _reorder: c_int, comm_graph: *mut c_int) {
        let nodes = count(nnodes)?;
        let index: Vec<usize> = array(index, nodes)?.iter().map(|&i| count(i)).collect::<MpiResult<_>>()?;
        if index.windows(2).any(|w| w[0] > w[1]) {
            return fail(MPI_ERR_ARG, "index must not decrease");
        }
        let edges = array(edges, index.last().copied().unwrap_or(0))?.to_vec();
        check_ranks(&edges, nodes)?;
        let (rank, size) = on_comm(comm_old, |c| Ok((c.rank(), c.size())))?;
        if nodes > size {
            return fail(MPI_ERR_ARG, format!("a graph of {nodes} nodes does not fit {size} ranks"));
        }
        let color = if rank < nodes { 0 } else { UNDEFINED };
        put(comm_graph, make(comm_old, color, Graph::Whole { index, edges })?)
    }

    fn MPI_Graphdims_get / PMPI_Graphdims_get(comm: c_int, nnodes: *mut c_int, nedges: *mut c_int) {
        let (index, edges) = whole(comm)?;
        put(nnodes, index.len() as c_int)?;
        put(nedges, edges.len() as c_int)
    }

    fn MPI_Graph_get / PMPI_Graph_get(comm: c_int, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) {
        let (nodes, all) = whole(comm)?;
        let nodes: Vec<c_int> = nodes.iter().map(|&i| i as c_int).collect();
        put_some(index, maxindex, &nodes)?;
        put_some(edges, maxedges, &all)
    }

    fn MPI_Graph_neighbors_count / PMPI_Graph_neighbors_count(comm: c_int, rank: c_int, nneighbors: *mut c_int) {
        let (index, edges) = whole(comm)?;
        let Some(node) = usize::try_from(rank).ok().filter(|&r| r < index.len()) else {
            return fail(MPI_ERR_RANK, format!("{rank} is not a node of the graph"));
        };
        put(nneighbors, Graph::neighbors(&index, &edges, node).len() as c_int)
    }

    fn MPI_Graph_neighbors / PMPI_Graph_neighbors(comm: c_int, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int) {
        let (index, edges) = whole(comm)?;
        let Some(node) = usize::try_from(rank).ok().filter(|&r| r < index.len()) else {
            return fail(MPI_ERR_RANK, format!("{rank} is not a node of the graph"));
        };
        put_some(neighbors, maxneighbors, &Graph::neighbors(&index, &edges, node))
    }

    fn MPI_Dist_graph_create_adjacent / PMPI_Dist_graph_create_adjacent(comm_old: c_int, indegree: c_int, sources: *const c_int, sourceweights: *const c_int, outdegree: c_int, destinations: *const c_int, destweights: *const c_int, _info: c_int, _reorder: c_int, comm_dist_graph: *mut c_int) {
        let (ins, outs) = (count(indegree)?, count(outdegree)?);
        let size = on_comm(comm_old, |c| Ok(c.size()))?;
        let sources = if ins == 0 { Vec::new() } else { array(sources, ins)?.to_vec() };
        let destinations = if outs == 0 { Vec::new() } else { array(destinations, outs)?.to_vec() };
        check_ranks(&sources, size)?;
        check_ranks(&destinations, size)?;
        let (sw, dw) = (weights(sourceweights, ins)?, weights(destweights, outs)?);
        // An empty side's pointer says nothing (it may be NULL or either sentinel).
        let weighted = match (ins, outs) {
            (0, 0) => sw.is_some() && dw.is_some(),
            (0, _) => dw.is_some(),
            _ => sw.is_some(),
        };
        let graph = Graph::Distributed(Dist {
            weighted,
            source_weights: sw.unwrap_or_else(|| vec![1; ins]),
            destination_weights: dw.unwrap_or_else(|| vec![1; outs]),
            sources,
            destinations,
        });
        put(comm_dist_graph, make(comm_old, 0, graph)?)
    }

    /// Each rank names edges from any sources; every rank learns the edges into and out of
    /// it (all ranks' edges gathered to all, then kept where they touch this rank).
    fn MPI_Dist_graph_create / PMPI_Dist_graph_create(comm_old: c_int, n: c_int, sources: *const c_int, degrees: *const c_int, destinations: *const c_int, weights_in: *const c_int, _info: c_int, _reorder: c_int, comm_dist_graph: *mut c_int) {
        let n = count(n)?;
        let sources = if n == 0 { Vec::new() } else { array(sources, n)?.to_vec() };
        let degrees: Vec<usize> = if n == 0 { Vec::new() } else { array(degrees, n)?.iter().map(|&d| count(d)).collect::<MpiResult<_>>()? };
        let total: usize = degrees.iter().sum();
        let targets = if total == 0 { Vec::new() } else { array(destinations, total)?.to_vec() };
        let weighted_here = weights(weights_in, total)?;
        let (rank, size) = on_comm(comm_old, |c| Ok((c.rank(), c.size())))?;
        check_ranks(&sources, size)?;
        check_ranks(&targets, size)?;
        let mut mine = Vec::with_capacity(total);
        let mut next = 0;
        for (&s, &d) in sources.iter().zip(&degrees) {
            for _ in 0..d {
                let w = weighted_here.as_ref().map_or(1, |w| w[next]);
                mine.push([s, targets[next], w]);
                next += 1;
            }
        }
        let all = on_comm(comm_old, |c| gather_edges(c, &mine))?;
        let me = rank as c_int;
        let ins: Vec<&[c_int; 3]> = all.iter().filter(|e| e[1] == me).collect();
        let outs: Vec<&[c_int; 3]> = all.iter().filter(|e| e[0] == me).collect();
        let graph = Graph::Distributed(Dist {
            sources: ins.iter().map(|e| e[0]).collect(),
            source_weights: ins.iter().map(|e| e[2]).collect(),
            destinations: outs.iter().map(|e| e[1]).collect(),
            destination_weights: outs.iter().map(|e| e[2]).collect(),
            weighted: weighted_here.is_some(),
        });
        put(comm_dist_graph, make(comm_old, 0, graph)?)
    }

    fn MPI_Dist_graph_neighbors_count / PMPI_Dist_graph_neighbors_count(comm: c_int, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) {
        let dist = distributed(comm)?;
        put(indegree, dist.sources.len() as c_int)?;
        put(outdegree, dist.destinations.len() as c_int)?;
        put(weighted, dist.weighted as c_int)
    }

    fn MPI_Dist_graph_neighbors / PMPI_Dist_graph_neighbors(comm: c_int, maxindegree: c_int, sources: *mut c_int, sourceweights: *mut c_int, maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int) {
        let dist = distributed(comm)?;
        put_some(sources, maxindegree, &dist.sources)?;
        put_some(destinations, maxoutdegree, &dist.destinations)?;
        // Unweighted, the weight arrays are not the program's to fill.
        if dist.weighted {
            put_some(sourceweights, maxindegree, &dist.source_weights)?;
            put_some(destweights, maxoutdegree, &dist.destination_weights)?;
        }
        Ok(())
    }
}
