//! Rank maps: a communicator's ranks to processes `(pgid, lpid)`, through core's
//! compressed models.

use core::ffi::{c_char, c_void};
use std::sync::Arc;

use commcore_core::av::{Lpid, Pgid};
use commcore_core::rankmap::{self as rm, InterMaps, RankMap, RankMapError};

use crate::groups::{commcore_entry, commcore_groups, entry_of, GroupsShared, GroupsState};
use crate::handle::{self, handle, Shell};
use crate::result::*;

/// A communicator's rank map (opaque): rank → process, in the registry it was made from.
///
/// Created by the `commcore_rankmap_*` constructors, owned by the caller, freed by
/// `commcore_rankmap_free`. Reading functions (translate, entry, size, kind, bytes) are
/// thread-safe; free must not run concurrently with any other use of the same map.
pub struct commcore_rankmap {
    shell: Shell<MapValue>,
}
handle!(commcore_rankmap, MapValue, 0xC0C0_0002);

/// The map first: it borrows the registry's storage, which the `Arc` keeps alive.
pub(crate) struct MapValue {
    map: RankMap<'static>,
    groups: Arc<GroupsShared>,
}

/// A process as one word: the group id in bits 32–47, the lpid in bits 0–31
/// (`COMMCORE_PROCESS_PGID` / `COMMCORE_PROCESS_LPID` take it apart).
pub type commcore_process = u64;

/// The process word of `(pgid, lpid)`.
#[inline(always)]
fn word(pgid: Pgid, lpid: Lpid) -> u64 {
    ((pgid.0 as u64) << 32) | lpid as u64
}

fn map_fail(e: RankMapError) -> Fail {
    let code = match e {
        RankMapError::ParentRankOutOfRange { .. }
        | RankMapError::LpidOutOfRange { .. }
        | RankMapError::UnknownGroup(_)
        | RankMapError::RankOutOfRange { .. } => COMMCORE_ERR_RANGE,
        RankMapError::TooLarge
        | RankMapError::OutputLength { .. }
        | RankMapError::BatchLength { .. } => COMMCORE_ERR_LENGTH,
        RankMapError::ArenaFull { .. } | RankMapError::ArenaTablesFull => COMMCORE_ERR_FULL,
        RankMapError::ForeignTable => COMMCORE_ERR_ARG,
    };
    Fail::new(code, e.to_string())
}

/// Builds a map under the registry's lock and hands it out.
fn build(
    groups: &Arc<GroupsShared>,
    out: *mut *mut commcore_rankmap,
    make: impl FnOnce(&mut GroupsState) -> Result<RankMap<'static>, RankMapError>,
) -> Outcome<()> {
    if out.is_null() {
        return Err(Fail::null("out"));
    }
    let map = make(&mut groups.lock()).map_err(map_fail)?;
    let value = MapValue { map, groups: Arc::clone(groups) };
    // SAFETY: `out` checked above, valid by the caller's contract.
    unsafe { handle::put(out, handle::create::<commcore_rankmap>(value), "out") }
}

/// The world map of group `pgid`: rank r is process r (`MPI_COMM_WORLD`).
#[no_mangle]
pub extern "C" fn commcore_rankmap_world(
    groups: *const commcore_groups,
    pgid: u16,
    out: *mut *mut commcore_rankmap,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let shared = unsafe { handle::get::<commcore_groups>(groups, "groups")? };
        build(shared, out, |s| {
            if !s.groups.contains(Pgid(pgid)) {
                return Err(RankMapError::UnknownGroup(Pgid(pgid)));
            }
            Ok(RankMap::direct(Pgid(pgid), s.groups.av(Pgid(pgid))))
        })
    })
}

/// The child of `parent` whose rank i is the parent's rank `indirect[i]` (`n` entries;
/// `MPI_Comm_split`, `MPI_Comm_create`, `MPI_Group_incl`). The pattern is detected and
/// composed with the parent's model; only irregular maps take a table from the arena.
///
/// ```c
/// #include <commcore.h>
/// int example_split(commcore_rankmap *world) {
///     uint32_t odd[4] = {1, 3, 5, 7};
///     commcore_rankmap *child = NULL;
///     if (commcore_rankmap_create(world, odd, 4, &child) != COMMCORE_OK) return 1;
///     int64_t process = commcore_rankmap_translate(child, 2); // world rank 5
///     int wrong = process < 0 || COMMCORE_PROCESS_LPID(process) != 5;
///     return commcore_rankmap_free(child) || wrong;
/// }
/// ```
#[no_mangle]
pub extern "C" fn commcore_rankmap_create(
    parent: *const commcore_rankmap,
    indirect: *const u32,
    n: usize,
    out: *mut *mut commcore_rankmap,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let (parent, indirect) = unsafe {
            (
                handle::get::<commcore_rankmap>(parent, "parent")?,
                handle::slice(indirect, n, "indirect")?,
            )
        };
        build(&parent.groups, out, |s| rm::create(&parent.map, indirect, &s.groups, &mut s.arena))
    })
}

/// The map of processes `lpids[0..n]` of group `pgid` (e.g. a remote group learnt on
/// connect): a regular model when the lpids are regular, a lut otherwise.
#[no_mangle]
pub extern "C" fn commcore_rankmap_from_group(
    groups: *const commcore_groups,
    pgid: u16,
    lpids: *const u32,
    n: usize,
    out: *mut *mut commcore_rankmap,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let (shared, lpids) = unsafe {
            (handle::get::<commcore_groups>(groups, "groups")?, handle::slice(lpids, n, "lpids")?)
        };
        build(shared, out, |s| rm::from_group(Pgid(pgid), lpids, &s.groups, &mut s.arena))
    })
}

/// The map of processes `processes[0..n]` (process words, possibly from several groups):
/// an mlut unless they share one group.
#[no_mangle]
pub extern "C" fn commcore_rankmap_from_processes(
    groups: *const commcore_groups,
    processes: *const commcore_process,
    n: usize,
    out: *mut *mut commcore_rankmap,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let (shared, words) = unsafe {
            (
                handle::get::<commcore_groups>(groups, "groups")?,
                handle::slice(processes, n, "processes")?,
            )
        };
        let members = unpack_all(words)?;
        build(shared, out, |s| rm::from_processes(&members, &s.groups, &mut s.arena))
    })
}

fn unpack_all(words: &[u64]) -> Outcome<Vec<(Pgid, Lpid)>> {
    words
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            if w >> 48 != 0 {
                return Err(Fail::arg(format!("process word {i} ({w:#x}) has bits above 47 set")));
            }
            Ok((Pgid((w >> 32) as u16), w as u32))
        })
        .collect()
}

/// The host's own description of a communicator, as UCC's `ep_map` callback: rank →
/// process word. Called once per rank, in order, during `commcore_rankmap_from_callback`
/// only; a return value with bits above 47 set fails the construction.
pub type commcore_rank_callback = Option<unsafe extern "C" fn(ctx: *mut c_void, rank: u32) -> u64>;

/// The map of a communicator of `n` ranks that the host describes by `callback(ctx, rank)`.
/// The processes are read once and stored in the most compact model that fits.
#[no_mangle]
pub extern "C" fn commcore_rankmap_from_callback(
    groups: *const commcore_groups,
    n: u32,
    callback: commcore_rank_callback,
    ctx: *mut c_void,
    out: *mut *mut commcore_rankmap,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let shared = unsafe { handle::get::<commcore_groups>(groups, "groups")? };
        let callback = callback.ok_or_else(|| Fail::null("callback"))?;
        let mut words: Vec<u64> = Vec::new();
        words.try_reserve_exact(n as usize).map_err(|_| {
            Fail::new(COMMCORE_ERR_FULL, format!("no memory to read the processes of {n} ranks"))
        })?;
        // SAFETY: the host's callback with the host's context, as documented.
        words.extend((0..n).map(|r| unsafe { callback(ctx, r) }));
        let members = unpack_all(&words)?;
        build(shared, out, |s| rm::from_processes(&members, &s.groups, &mut s.arena))
    })
}

/// The intra-communicator `MPI_Intercomm_merge` makes from an inter-communicator's two
/// maps (`local`: this side's group, `remote`: the other's), local ranks first when
/// `local_first` is non-zero. Both maps must come from the same registry.
#[no_mangle]
pub extern "C" fn commcore_rankmap_merge(
    local: *const commcore_rankmap,
    remote: *const commcore_rankmap,
    local_first: i32,
    out: *mut *mut commcore_rankmap,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let (local, remote) = unsafe {
            (
                handle::get::<commcore_rankmap>(local, "local")?,
                handle::get::<commcore_rankmap>(remote, "remote")?,
            )
        };
        if !Arc::ptr_eq(&local.groups, &remote.groups) {
            return Err(Fail::arg("`local` and `remote` come from different registries"));
        }
        build(&local.groups, out, |s| {
            let first = local.map.dup(&mut s.arena)?;
            let second = match remote.map.dup(&mut s.arena) {
                Ok(second) => second,
                Err(e) => {
                    first.free(&mut s.arena)?;
                    return Err(e);
                }
            };
            let pair = InterMaps { local: first, remote: second };
            let merged = pair.merge(local_first != 0, &s.groups, &mut s.arena);
            pair.free(&mut s.arena)?;
            merged
        })
    })
}

/// A duplicate of `map` (`MPI_Comm_dup`), sharing its table.
#[no_mangle]
pub extern "C" fn commcore_rankmap_dup(
    map: *const commcore_rankmap,
    out: *mut *mut commcore_rankmap,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_rankmap>(map, "map")? };
        build(&value.groups, out, |s| value.map.dup(&mut s.arena))
    })
}

/// Frees a map; its table returns to the registry's arena with its last user. NULL is a
/// no-op.
#[no_mangle]
pub extern "C" fn commcore_rankmap_free(map: *mut commcore_rankmap) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let Some(MapValue { map, groups }) =
            (unsafe { handle::take::<commcore_rankmap>(map, "map")? })
        else {
            return Ok(());
        };
        let result = map.free(&mut groups.lock().arena);
        result.map_err(map_fail)
    })
}

/// The process behind `rank`: its process word (pgid in bits 32–47, lpid in bits 0–31,
/// so non-negative), or a negative result code: `-COMMCORE_ERR_RANGE` for a rank at or
/// past the size, `-COMMCORE_ERR_NULL`, `-COMMCORE_ERR_HANDLE`, `-COMMCORE_ERR_FREED`.
/// The hot path: one handle compare, then the model's lookup. Thread-safe.
#[no_mangle]
pub extern "C" fn commcore_rankmap_translate(map: *const commcore_rankmap, rank: u32) -> i64 {
    let body = || {
        // SAFETY: as documented.
        match unsafe { handle::live::<commcore_rankmap>(map) } {
            Some(value) => match value.map.translate(rank) {
                Some((pgid, lpid)) => word(pgid, lpid) as i64,
                None => out_of_range(map, rank),
            },
            None => translate_failed(map),
        }
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(process) => process,
        Err(payload) => -(panicked(payload) as i64),
    }
}

/// A rank at or past the size, out of the hot path (`extern "C"`, as `translate_failed`).
#[cold]
#[inline(never)]
extern "C" fn out_of_range(map: *const commcore_rankmap, rank: u32) -> i64 {
    -(guard(|| {
        // SAFETY: as documented on `commcore_rankmap_translate`.
        let size = unsafe { handle::get::<commcore_rankmap>(map, "map")? }.map.size();
        Err(Fail::new(COMMCORE_ERR_RANGE, format!("rank {rank}, the map has {size} ranks")))
    }) as i64)
}

/// The error of a translation through a bad handle, out of the hot path. `extern "C"`, so
/// that it cannot unwind (it catches its own panics) and the hot path needs no landing pad.
#[cold]
#[inline(never)]
extern "C" fn translate_failed(map: *const commcore_rankmap) -> i64 {
    // SAFETY: as documented on `commcore_rankmap_translate`.
    -(guard(|| unsafe { handle::get::<commcore_rankmap>(map, "map") }.map(drop)) as i64)
}

/// Translates `ranks[0..n]` into `processes[0..n]` (process words). Stops at the first
/// rank out of range with `COMMCORE_ERR_RANGE` (the detail names its index).
#[no_mangle]
pub extern "C" fn commcore_rankmap_translate_batch(
    map: *const commcore_rankmap,
    ranks: *const u32,
    n: usize,
    processes: *mut commcore_process,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let (value, ranks, out) = unsafe {
            (
                handle::get::<commcore_rankmap>(map, "map")?,
                handle::slice(ranks, n, "ranks")?,
                handle::slice_mut(processes, n, "processes")?,
            )
        };
        // The core's batch path: one model dispatch, then a tight loop per model.
        value.map.translate_batch(ranks, out).map_err(map_fail)
    })
}

/// Reads the address-vector entry of the process behind `rank` into `*out`.
#[no_mangle]
pub extern "C" fn commcore_rankmap_entry(
    map: *const commcore_rankmap,
    rank: u32,
    out: *mut commcore_entry,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_rankmap>(map, "map")? };
        let state = value.groups.lock();
        let ave = value.map.entry(&state.groups, rank).ok_or_else(|| {
            Fail::new(
                COMMCORE_ERR_RANGE,
                format!("rank {rank}, the map has {} ranks", value.map.size()),
            )
        })?;
        // SAFETY: as documented.
        unsafe { handle::put(out, entry_of(ave), "out") }
    })
}

/// Writes the number of ranks to `*size`.
#[no_mangle]
pub extern "C" fn commcore_rankmap_size(
    map: *const commcore_rankmap,
    size: *mut u32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_rankmap>(map, "map")? };
        // SAFETY: as documented.
        unsafe { handle::put(size, value.map.size(), "size") }
    })
}

/// Writes the model's name ("direct", "offset", "stride", "blockstride", "lut",
/// "lut_stride_view", "mlut", "mlut_stride_view"; static) to `*name`.
#[no_mangle]
pub extern "C" fn commcore_rankmap_model(
    map: *const commcore_rankmap,
    name: *mut *const c_char,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_rankmap>(map, "map")? };
        let text: &'static core::ffi::CStr = match value.map.kind() {
            rm::ModelKind::Direct => c"direct",
            rm::ModelKind::Offset => c"offset",
            rm::ModelKind::Stride => c"stride",
            rm::ModelKind::BlockStride => c"blockstride",
            rm::ModelKind::Lut => c"lut",
            rm::ModelKind::LutStrideView => c"lut_stride_view",
            rm::ModelKind::Mlut => c"mlut",
            rm::ModelKind::MlutStrideView => c"mlut_stride_view",
        };
        // SAFETY: as documented.
        unsafe { handle::put(name, text.as_ptr(), "name") }
    })
}

/// Writes the bytes the map uses to `*bytes`: the map itself plus its table (a table
/// shared with views or duplicates is counted in full by each).
#[no_mangle]
pub extern "C" fn commcore_rankmap_bytes(
    map: *const commcore_rankmap,
    bytes: *mut usize,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let value = unsafe { handle::get::<commcore_rankmap>(map, "map")? };
        let table = value.map.table().map_or(0, |t| t.len() * 4);
        // SAFETY: as documented.
        unsafe { handle::put(bytes, core::mem::size_of::<RankMap<'static>>() + table, "bytes") }
    })
}
