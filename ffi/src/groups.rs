//! Process groups: the registry of address vectors, the address side table and the arena
//! that rank-map tables live in.

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, MutexGuard};

use commcore_core::av::TransportId;
use commcore_core::av::{Address, AddressHandle, AddressStore, Ave, NodeId, Pgid, ProcessGroups};
use commcore_core::rankmap::TableArena;

use crate::handle::{self, handle, Shell};
use crate::result::*;
use crate::storage::Storage;

/// Process groups a registry holds at most (a power of two: mlut lookups mask the index).
pub const COMMCORE_MAX_GROUPS: u32 = 64;
/// Rank-map tables a registry's arena tracks at most.
pub const COMMCORE_MAX_TABLES: u32 = 4096;

const GROUPS: usize = COMMCORE_MAX_GROUPS as usize;
const TABLES: usize = COMMCORE_MAX_TABLES as usize;

/// A registry of process groups (opaque). Each group has an address vector of 12-byte
/// entries; rank maps made from the registry draw their tables from its arena.
///
/// Created by `commcore_groups_create`, owned by the caller, freed by
/// `commcore_groups_free` once every rank map made from it is freed. Every function on a
/// registry but its free is thread-safe (an internal lock); free must not run concurrently
/// with any other use of the registry.
pub struct commcore_groups {
    shell: Shell<Arc<GroupsShared>>,
}
handle!(commcore_groups, Arc<GroupsShared>, 0xC0C0_0001);

/// One process's address-vector entry as C reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct commcore_entry {
    /// The address (up to 64 bits), or when `stored` is set, the handle word of a larger
    /// address in the registry's side table (read it with `commcore_groups_address`).
    pub address: u64,
    /// The node the process runs on (processes with equal node ids share memory).
    pub node: u32,
    /// The transport selector (0–127).
    pub transport: u8,
    /// Whether `address` is a side-table handle word.
    pub stored: u8,
}

/// What the registry's rank maps share; locked for every change.
pub(crate) struct GroupsShared {
    pub(crate) state: Mutex<GroupsState>,
}

/// Borrowers first, their storage after (see `storage`).
pub(crate) struct GroupsState {
    pub(crate) groups: ProcessGroups<'static, GROUPS>,
    pub(crate) arena: TableArena<'static, TABLES>,
    addresses: AddressStore<'static>,
    _avs: Vec<Storage<Ave>>,
    _words: Storage<AtomicU32>,
    _address_bytes: Storage<u8>,
}

impl GroupsShared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, GroupsState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Creates a registry whose rank-map tables may take up to `table_words` 32-bit words in
/// all, and whose side table holds up to `address_bytes` bytes of large addresses.
/// `*out` receives the new registry (owned by the caller).
///
/// ```c
/// #include <commcore.h>
/// int example_groups(void) {
///     commcore_groups *groups = NULL;
///     uint64_t addresses[4] = {0x10, 0x11, 0x12, 0x13};
///     uint32_t nodes[4] = {0, 0, 1, 1};
///     uint16_t pgid;
///     commcore_entry entry;
///     if (commcore_groups_create(1024, 0, &groups) != COMMCORE_OK) return 1;
///     if (commcore_groups_register(groups, addresses, nodes, NULL, NULL, 4, &pgid)) return 1;
///     if (commcore_groups_entry(groups, pgid, 2, &entry) || entry.node != 1) return 1;
///     return commcore_groups_free(groups);
/// }
/// ```
#[no_mangle]
pub extern "C" fn commcore_groups_create(
    table_words: usize,
    address_bytes: usize,
    out: *mut *mut commcore_groups,
) -> commcore_result {
    guard(|| {
        if out.is_null() {
            return Err(Fail::null("out"));
        }
        let too_large =
            |what: &str| Fail::new(COMMCORE_ERR_LENGTH, format!("{what} is too large to allocate"));
        if table_words > isize::MAX as usize / 4 {
            return Err(too_large("table_words"));
        }
        if address_bytes > isize::MAX as usize / 2 {
            return Err(too_large("address_bytes"));
        }
        let (words_owner, words) =
            Storage::new((0..table_words).map(|_| AtomicU32::new(0)).collect());
        let (bytes_owner, bytes) = Storage::new(vec![0u8; address_bytes]);
        let state = GroupsState {
            groups: ProcessGroups::new(),
            arena: TableArena::new(words),
            addresses: AddressStore::new(bytes),
            _avs: Vec::new(),
            _words: words_owner,
            _address_bytes: bytes_owner,
        };
        let shared = Arc::new(GroupsShared { state: Mutex::new(state) });
        // SAFETY: `out` is not NULL and valid for a write by the caller's contract.
        unsafe { handle::put(out, handle::create::<commcore_groups>(shared), "out") }
    })
}

/// Frees a registry. NULL is a no-op. Fails with `COMMCORE_ERR_BUSY` (and frees nothing)
/// while rank maps made from it are alive. Not thread-safe with other calls on `groups`.
#[no_mangle]
pub extern "C" fn commcore_groups_free(groups: *mut commcore_groups) -> commcore_result {
    guard(|| {
        // SAFETY: `groups` is NULL or a handle from this library (the caller's contract).
        let shared = unsafe { handle::get::<commcore_groups>(groups, "groups") };
        match shared {
            Err(fail) if groups.is_null() => drop(fail),
            Err(fail) => return Err(fail),
            Ok(shared) if Arc::strong_count(shared) > 1 => {
                return Err(Fail::new(
                    COMMCORE_ERR_BUSY,
                    format!(
                        "{} rank maps still use this registry; free them first",
                        Arc::strong_count(shared) - 1
                    ),
                ))
            }
            Ok(_) => {}
        }
        // SAFETY: as above.
        drop(unsafe { handle::take::<commcore_groups>(groups, "groups")? });
        Ok(())
    })
}

/// Registers a process group of `n` processes: process `i` has address `addresses[i]`
/// and runs on node `node_ids[i]` (below 2^24). `transports` (NULL: all 0) gives each
/// process's transport selector (below 128); `stored` (NULL: none) marks addresses that are
/// side-table handle words from `commcore_groups_store_address`. The arrays are copied.
/// `*pgid` receives the group's id (the lowest free, below `COMMCORE_MAX_GROUPS`).
#[no_mangle]
pub extern "C" fn commcore_groups_register(
    groups: *mut commcore_groups,
    addresses: *const u64,
    node_ids: *const u32,
    transports: *const u8,
    stored: *const u8,
    n: usize,
    pgid: *mut u16,
) -> commcore_result {
    guard(|| {
        // SAFETY: handle and arrays as documented (the caller's contract).
        let (shared, addresses, node_ids) = unsafe {
            (
                handle::get::<commcore_groups>(groups, "groups")?,
                handle::slice(addresses, n, "addresses")?,
                handle::slice(node_ids, n, "node_ids")?,
            )
        };
        // SAFETY: as above; NULL means "all zero".
        let transports = unsafe { optional(transports, n, "transports")? };
        // SAFETY: as above.
        let stored = unsafe { optional(stored, n, "stored")? };
        if pgid.is_null() {
            return Err(Fail::null("pgid"));
        }
        if n > u32::MAX as usize {
            return Err(Fail::new(COMMCORE_ERR_LENGTH, format!("{n} processes exceed 2^32 - 1")));
        }
        let mut av = Vec::with_capacity(n);
        for i in 0..n {
            let address = if stored.is_some_and(|s| s[i] != 0) {
                Address::Stored(AddressHandle::from_word(addresses[i]))
            } else {
                Address::Inline(addresses[i])
            };
            let transport = TransportId(transports.map_or(0, |t| t[i]));
            let entry = Ave::new(address, transport, NodeId(node_ids[i]))
                .map_err(|e| Fail::arg(format!("process {i}: {e}")))?;
            av.push(entry);
        }
        let mut state = shared.lock();
        let (owner, av) = Storage::new(av);
        let id =
            state.groups.register(av).map_err(|e| Fail::new(COMMCORE_ERR_FULL, e.to_string()))?;
        state._avs.push(owner);
        // SAFETY: checked not NULL above; valid by the caller's contract.
        unsafe { handle::put(pgid, id.0, "pgid") }
    })
}

/// `ptr[..n]`, or `None` for NULL.
///
/// # Safety
/// As for `handle::slice`.
unsafe fn optional<'a, T>(ptr: *const T, n: usize, what: &str) -> Outcome<Option<&'a [T]>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded.
    unsafe { handle::slice(ptr, n, what).map(Some) }
}

/// Copies an address of `len` bytes (more than 8) into the registry's side table and writes
/// its handle word to `*word`, for `commcore_groups_register` with `stored` set.
#[no_mangle]
pub extern "C" fn commcore_groups_store_address(
    groups: *mut commcore_groups,
    bytes: *const u8,
    len: usize,
    word: *mut u64,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let (shared, bytes) = unsafe {
            (handle::get::<commcore_groups>(groups, "groups")?, handle::slice(bytes, len, "bytes")?)
        };
        if word.is_null() {
            return Err(Fail::null("word"));
        }
        let stored = shared
            .lock()
            .addresses
            .store(bytes)
            .map_err(|e| Fail::new(COMMCORE_ERR_FULL, e.to_string()))?;
        // SAFETY: as documented.
        unsafe { handle::put(word, stored.to_word(), "word") }
    })
}

/// Copies the side-table address behind handle word `word` into `buf` (capacity `cap`)
/// and writes its length to `*len`. `COMMCORE_ERR_LENGTH` when `cap` is too small (`*len`
/// then says how much is needed); `COMMCORE_ERR_NOT_FOUND` for an unknown word.
#[no_mangle]
pub extern "C" fn commcore_groups_address(
    groups: *const commcore_groups,
    word: u64,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let shared = unsafe { handle::get::<commcore_groups>(groups, "groups")? };
        let state = shared.lock();
        let bytes = state.addresses.get(AddressHandle::from_word(word)).ok_or_else(|| {
            Fail::new(
                COMMCORE_ERR_NOT_FOUND,
                format!("no stored address has handle word {word:#x}"),
            )
        })?;
        // SAFETY: as documented.
        unsafe { handle::put(len, bytes.len(), "len")? };
        if cap < bytes.len() {
            return Err(Fail::new(
                COMMCORE_ERR_LENGTH,
                format!("buffer holds {cap} bytes, the address has {}", bytes.len()),
            ));
        }
        // SAFETY: as documented.
        let out = unsafe { handle::slice_mut(buf, bytes.len(), "buf")? };
        out.copy_from_slice(bytes);
        Ok(())
    })
}

/// Reads the entry of process `lpid` of group `pgid` into `*out`.
#[no_mangle]
pub extern "C" fn commcore_groups_entry(
    groups: *const commcore_groups,
    pgid: u16,
    lpid: u32,
    out: *mut commcore_entry,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let shared = unsafe { handle::get::<commcore_groups>(groups, "groups")? };
        let ave = *shared.lock().groups.entry(Pgid(pgid), lpid).ok_or_else(|| {
            Fail::new(COMMCORE_ERR_RANGE, format!("group {pgid} has no process {lpid}"))
        })?;
        // SAFETY: as documented.
        unsafe { handle::put(out, entry_of(&ave), "out") }
    })
}

pub(crate) fn entry_of(ave: &Ave) -> commcore_entry {
    let (address, stored) = match ave.address() {
        Address::Inline(a) => (a, 0),
        Address::Stored(h) => (h.to_word(), 1),
    };
    commcore_entry { address, node: ave.node().0, transport: ave.transport().0, stored }
}

/// Writes the number of processes in group `pgid` to `*n`.
#[no_mangle]
pub extern "C" fn commcore_groups_size(
    groups: *const commcore_groups,
    pgid: u16,
    n: *mut u32,
) -> commcore_result {
    guard(|| {
        // SAFETY: as documented.
        let shared = unsafe { handle::get::<commcore_groups>(groups, "groups")? };
        let state = shared.lock();
        if !state.groups.contains(Pgid(pgid)) {
            return Err(Fail::new(COMMCORE_ERR_RANGE, format!("group {pgid} is not registered")));
        }
        let len = state.groups.av(Pgid(pgid)).len() as u32;
        // SAFETY: as documented.
        unsafe { handle::put(n, len, "n") }
    })
}
