//! A communicator's collective framework instance: components queried once, one module
//! selected per operation, under the user's control string.

use core::ffi::{c_char, CStr};
use std::sync::Arc;

use commcore_core::coll::component::BUILTIN;
use commcore_core::coll::component::BUILTIN_NAMES;
use commcore_core::coll::{
    CollOp, CollTable, CommInfo, CommKind, Control, NodeLayout, ThreadLevel,
};

use crate::handle::{self, handle, Shell};
use crate::result::*;
use crate::schedule::{build_schedule, commcore_coll_args, fill_blocks, CallBlocks};
use crate::storage::Storage;

/// A collective operation (`commcore_coll_args.coll_op`).
pub type commcore_coll_op = u32;
/// MPI_Barrier.
pub const COMMCORE_COLL_BARRIER: commcore_coll_op = 0;
/// MPI_Bcast.
pub const COMMCORE_COLL_BCAST: commcore_coll_op = 1;
/// MPI_Reduce.
pub const COMMCORE_COLL_REDUCE: commcore_coll_op = 2;
/// MPI_Allreduce.
pub const COMMCORE_COLL_ALLREDUCE: commcore_coll_op = 3;
/// MPI_Allgather.
pub const COMMCORE_COLL_ALLGATHER: commcore_coll_op = 4;
/// MPI_Allgatherv.
pub const COMMCORE_COLL_ALLGATHERV: commcore_coll_op = 5;
/// MPI_Alltoall.
pub const COMMCORE_COLL_ALLTOALL: commcore_coll_op = 6;
/// MPI_Alltoallv.
pub const COMMCORE_COLL_ALLTOALLV: commcore_coll_op = 7;
/// MPI_Gather.
pub const COMMCORE_COLL_GATHER: commcore_coll_op = 8;
/// MPI_Gatherv.
pub const COMMCORE_COLL_GATHERV: commcore_coll_op = 9;
/// MPI_Scatter.
pub const COMMCORE_COLL_SCATTER: commcore_coll_op = 10;
/// MPI_Scatterv.
pub const COMMCORE_COLL_SCATTERV: commcore_coll_op = 11;
/// MPI_Reduce_scatter.
pub const COMMCORE_COLL_REDUCE_SCATTER: commcore_coll_op = 12;
/// MPI_Reduce_scatter_block.
pub const COMMCORE_COLL_REDUCE_SCATTER_BLOCK: commcore_coll_op = 13;
/// MPI_Scan.
pub const COMMCORE_COLL_SCAN: commcore_coll_op = 14;
/// MPI_Exscan.
pub const COMMCORE_COLL_EXSCAN: commcore_coll_op = 15;

/// The MPI thread level a communicator is used at.
pub type commcore_thread_level = u32;
/// MPI_THREAD_SINGLE.
pub const COMMCORE_THREAD_SINGLE: commcore_thread_level = 0;
/// MPI_THREAD_FUNNELED.
pub const COMMCORE_THREAD_FUNNELED: commcore_thread_level = 1;
/// MPI_THREAD_SERIALIZED.
pub const COMMCORE_THREAD_SERIALIZED: commcore_thread_level = 2;
/// MPI_THREAD_MULTIPLE.
pub const COMMCORE_THREAD_MULTIPLE: commcore_thread_level = 3;

/// What the host knows of a communicator when it creates its framework instance.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct commcore_coll_config {
    /// This process's rank in its (local) group.
    pub rank: u32,
    /// Ranks in the local group.
    pub size: u32,
    /// 0 for an intra-communicator; the remote group's size for an inter-communicator.
    pub remote_size: u32,
    /// A `COMMCORE_THREAD_*` level.
    pub thread_level: commcore_thread_level,
    /// The node of every local rank (`size` entries; equal ids share memory), or NULL when
    /// unknown (then no hierarchical algorithm is chosen). Copied.
    pub node_ids: *const u32,
    /// The node of every remote rank (`remote_size` entries), or NULL. Copied.
    pub remote_node_ids: *const u32,
    /// The control string (NUL-terminated; e.g. `"coll=^hier; allreduce:ring@4k-inf"`), or
    /// NULL for none. Read during the call only.
    pub control: *const c_char,
}

/// A communicator's collective framework instance (opaque). Created by
/// `commcore_coll_create`, owned by the caller, freed by `commcore_coll_free`; schedules
/// built from it keep what they need alive, so it may be freed while they run. Every
/// function taking a `const commcore_coll *` is thread-safe.
pub struct commcore_coll {
    shell: Shell<Arc<CollValue>>,
}
handle!(commcore_coll, Arc<CollValue>, 0xC0C0_0007);

/// The table first: it borrows the layout storage.
pub(crate) struct CollValue {
    pub(crate) table: CollTable<'static>,
    pub(crate) rank: u32,
    pub(crate) size: u32,
    pub(crate) remote_size: u32,
    thread_level: commcore_thread_level,
    node_ids: Box<[u32]>,
    remote_node_ids: Box<[u32]>,
    _layout: Option<Storage<u32>>,
}

/// The operation numbered `code`.
pub(crate) fn coll_op(code: commcore_coll_op) -> Outcome<CollOp> {
    CollOp::ALL.get(code as usize).copied().ok_or_else(|| {
        Fail::arg(format!("unknown collective operation {code}; see COMMCORE_COLL_*"))
    })
}

/// Creates the framework instance of a communicator: queries the built-in components
/// (basic, tuned, hier, inter) under the control string and selects a module per
/// operation. A refused control string is `COMMCORE_ERR_CONTROL` with the offending token
/// in `commcore_last_error()`.
///
/// ```c
/// #include <commcore.h>
/// int example_coll(void) {
///     uint32_t nodes[4] = {0, 0, 1, 1};
///     commcore_coll_config config = {
///         .rank = 1, .size = 4, .remote_size = 0,
///         .thread_level = COMMCORE_THREAD_SINGLE,
///         .node_ids = nodes, .remote_node_ids = NULL,
///         .control = "tuned.priority=90",
///     };
///     commcore_coll *coll = NULL;
///     if (commcore_coll_create(&config, &coll) != COMMCORE_OK) return 1;
///     const char *module = NULL;
///     if (commcore_coll_module(coll, COMMCORE_COLL_ALLREDUCE, &module)) return 1;
///     return commcore_coll_free(coll);
/// }
/// ```
#[no_mangle]
pub extern "C" fn commcore_coll_create(
    config: *const commcore_coll_config,
    out: *mut *mut commcore_coll,
) -> commcore_result {
    guard(|| {
        if config.is_null() {
            return Err(Fail::null("config"));
        }
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        // SAFETY: not NULL, valid by the caller's contract.
        let config = unsafe { *config };
        let thread_level = match config.thread_level {
            COMMCORE_THREAD_SINGLE => ThreadLevel::Single,
            COMMCORE_THREAD_FUNNELED => ThreadLevel::Funneled,
            COMMCORE_THREAD_SERIALIZED => ThreadLevel::Serialized,
            COMMCORE_THREAD_MULTIPLE => ThreadLevel::Multiple,
            other => return Err(Fail::arg(format!("unknown thread level {other}"))),
        };
        if config.size == 0 || config.rank >= config.size {
            return Err(Fail::new(
                COMMCORE_ERR_RANGE,
                format!("rank {} is not below size {}", config.rank, config.size),
            ));
        }
        // SAFETY: arrays of the documented lengths, or NULL.
        let node_ids: Box<[u32]> = unsafe { copied(config.node_ids, config.size, "node_ids")? };
        // SAFETY: as above.
        let remote_node_ids =
            unsafe { copied(config.remote_node_ids, config.remote_size, "remote_node_ids")? };
        let text = if config.control.is_null() {
            ""
        } else {
            // SAFETY: a NUL-terminated string by the caller's contract.
            unsafe { CStr::from_ptr(config.control) }
                .to_str()
                .map_err(|_| Fail::new(COMMCORE_ERR_CONTROL, "the control string is not UTF-8"))?
        };
        let control = Control::parse(text, &BUILTIN_NAMES)
            .map_err(|e| Fail::new(COMMCORE_ERR_CONTROL, e.to_string()))?;
        let kind = match config.remote_size {
            0 => CommKind::Intra,
            remote_size => CommKind::Inter { remote_size },
        };
        let mut info = CommInfo { kind, thread_level, ..CommInfo::intra(config.rank, config.size) };
        let mut layout_owner = None;
        if !node_ids.is_empty() && kind == CommKind::Intra {
            let words = 4 * node_ids.len() + 2;
            let (owner, storage) = Storage::new(vec![0u32; words]);
            let layout = NodeLayout::build(&node_ids, storage)
                .map_err(|e| Fail::new(COMMCORE_ERR_LENGTH, e.to_string()))?;
            info = info.with_layout(layout);
            layout_owner = Some(owner);
        }
        let table = CollTable::select(&info, &BUILTIN, &control)
            .map_err(|e| Fail::new(COMMCORE_ERR_COLL, e.to_string()))?;
        let value = CollValue {
            table,
            rank: config.rank,
            size: config.size,
            remote_size: config.remote_size,
            thread_level: config.thread_level,
            node_ids,
            remote_node_ids,
            _layout: layout_owner,
        };
        // SAFETY: checked above.
        unsafe { handle::put(out, handle::create::<commcore_coll>(Arc::new(value)), "out") }
    })
}

/// A copy of `ptr[..len]`, empty for NULL.
///
/// # Safety
/// As for `handle::slice`.
unsafe fn copied(ptr: *const u32, len: u32, what: &str) -> Outcome<Box<[u32]>> {
    if ptr.is_null() {
        return Ok(Box::new([]));
    }
    // SAFETY: forwarded.
    Ok(unsafe { handle::slice(ptr, len as usize, what)? }.into())
}

/// Frees a framework instance. NULL is a no-op.
#[no_mangle]
pub extern "C" fn commcore_coll_free(coll: *mut commcore_coll) -> commcore_result {
    // SAFETY: as documented.
    guard(|| unsafe { handle::take::<commcore_coll>(coll, "coll").map(drop) })
}

/// Writes the name of the component serving `coll_op` ("basic", "tuned", "hier",
/// "inter"; static) to `*module`. `COMMCORE_ERR_COLL` for an operation not defined on
/// this communicator (scan on an inter-communicator).
#[no_mangle]
pub extern "C" fn commcore_coll_module(
    coll: *const commcore_coll,
    operation: commcore_coll_op,
    module: *mut *const c_char,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_coll>(coll, "coll")? };
        let op = coll_op(operation)?;
        let name = value.table.provider(op).ok_or_else(|| {
            Fail::new(COMMCORE_ERR_COLL, format!("{op} is not defined on this communicator"))
        })?;
        // SAFETY: as documented.
        unsafe { handle::put(module, static_name(name), "module") }
    })
}

/// The NUL-terminated copy of a static name.
pub(crate) fn static_name(name: &str) -> *const c_char {
    let known: &[&'static CStr] = &[
        c"basic",
        c"tuned",
        c"hier",
        c"inter",
        c"linear",
        c"binomial",
        c"dissemination",
        c"recursive_doubling",
        c"ring",
        c"rabenseifner",
        c"scatter_allgather",
        c"reduce_scatter_gather",
        c"bruck",
        c"pairwise",
        c"reduce_then_scatter",
        c"leaders",
    ];
    known
        .iter()
        .find(|c| c.to_bytes() == name.as_bytes())
        .map_or(c"unknown".as_ptr(), |c| c.as_ptr())
}

/// Writes the provider of one call, as a report names it: the component's name to
/// `*module` and the algorithm's ("ring", "recursive_doubling", "hier", "leaders", …) to
/// `*algorithm` (both static). Builds the call's schedule to find out, so the arguments are
/// checked as `commcore_coll_schedule` checks them.
#[no_mangle]
pub extern "C" fn commcore_coll_provider(
    coll: *const commcore_coll,
    args: *const commcore_coll_args,
    module: *mut *const c_char,
    algorithm: *mut *const c_char,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_coll>(coll, "coll")? };
        if args.is_null() {
            return Err(Fail::null("args"));
        }
        // SAFETY: not NULL; valid by the caller's contract.
        let args = unsafe { &*args };
        let mut blocks = CallBlocks::default();
        fill_blocks(args, &mut blocks)?;
        let built = build_schedule(value, args, &blocks)?;
        let op = coll_op(args.coll_op)?;
        let name = value.table.provider(op).unwrap_or("none");
        // SAFETY: as documented.
        unsafe {
            handle::put(module, static_name(name), "module")?;
            handle::put(algorithm, static_name(built.algorithm().name()), "algorithm")
        }
    })
}

/// Writes the node id of `rank` in the local group (`remote` zero) or the remote group
/// (`remote` non-zero) to `*node`. `COMMCORE_ERR_NOT_FOUND` when the host gave no node ids
/// for that group.
#[no_mangle]
pub extern "C" fn commcore_coll_node(
    coll: *const commcore_coll,
    remote: i32,
    rank: u32,
    node: *mut u32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_coll>(coll, "coll")? };
        let (ids, size) = if remote != 0 {
            (&value.remote_node_ids, value.remote_size)
        } else {
            (&value.node_ids, value.size)
        };
        if rank >= size {
            return Err(Fail::new(COMMCORE_ERR_RANGE, format!("rank {rank} is not below {size}")));
        }
        let id = ids.get(rank as usize).copied().ok_or_else(|| {
            Fail::new(COMMCORE_ERR_NOT_FOUND, "no node ids were given for this group")
        })?;
        // SAFETY: as documented.
        unsafe { handle::put(node, id, "node") }
    })
}

/// Writes the instance's rank, size, remote size (0: intra) and thread level to the
/// non-NULL pointers among `rank`, `size`, `remote_size`, `thread_level`.
#[no_mangle]
pub extern "C" fn commcore_coll_info(
    coll: *const commcore_coll,
    rank: *mut u32,
    size: *mut u32,
    remote_size: *mut u32,
    thread_level: *mut commcore_thread_level,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_coll>(coll, "coll")? };
        for (out, v) in [
            (rank, value.rank),
            (size, value.size),
            (remote_size, value.remote_size),
            (thread_level, value.thread_level),
        ] {
            if !out.is_null() {
                // SAFETY: not NULL; valid by the caller's contract.
                unsafe { out.write(v) };
            }
        }
        Ok(())
    })
}
