//! Info objects: ordered (key, value) strings that hints travel in.

use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::ptr::{c_str, count, get, put, put_text};

/// Kind bits of info handles this library makes.
const INFO_KIND: u32 = 0x9c00_0000;

type Pairs = Vec<(String, String)>;

struct Table {
    infos: HashMap<c_int, Pairs>,
    next: u32,
}

static INFOS: Mutex<Option<Table>> = Mutex::new(None);

/// Runs `f` on the pairs of info `handle` (`MPI_INFO_ENV`: a copy of the environment's).
fn with<T>(handle: c_int, f: impl FnOnce(&mut Pairs) -> MpiResult<T>) -> MpiResult<T> {
    if handle == MPI_INFO_ENV {
        return f(&mut environment(std::env::args().collect()));
    }
    let mut guard = INFOS.lock().unwrap_or_else(PoisonError::into_inner);
    let table = guard.get_or_insert_with(|| Table { infos: HashMap::new(), next: 0 });
    match table.infos.get_mut(&handle) {
        Some(pairs) => f(pairs),
        None => fail(MPI_ERR_INFO, format!("{handle:#x} is not an info object")),
    }
}

/// The (key, value) pairs of `handle` (none for `MPI_INFO_NULL`).
pub(crate) fn pairs(handle: c_int) -> MpiResult<Pairs> {
    if handle == MPI_INFO_NULL {
        return Ok(Vec::new());
    }
    with(handle, |pairs| Ok(pairs.clone()))
}

pub(crate) fn add(pairs: Pairs) -> c_int {
    let mut guard = INFOS.lock().unwrap_or_else(PoisonError::into_inner);
    let table = guard.get_or_insert_with(|| Table { infos: HashMap::new(), next: 0 });
    table.next = (table.next + 1) & 0x03ff_ffff;
    let handle = (INFO_KIND | table.next) as c_int;
    table.infos.insert(handle, pairs);
    handle
}

/// What MPI says the environment's info holds, of what this process knows: the command
/// and its arguments (`args`, the command first), the working directory and the host.
fn environment(args: Vec<String>) -> Pairs {
    let mut pairs = Vec::new();
    if let Some((command, rest)) = args.split_first() {
        pairs.push(("command".to_string(), command.clone()));
        if !rest.is_empty() {
            pairs.push(("argv".to_string(), rest.join(" ")));
        }
    }
    if let Ok(dir) = std::env::current_dir() {
        pairs.push(("wdir".to_string(), dir.to_string_lossy().into_owned()));
    }
    pairs.push(("host".to_string(), crate::env::hostname()));
    pairs
}

fn key(text: &str) -> MpiResult<&str> {
    if text.is_empty() || text.len() > MPI_MAX_INFO_KEY {
        return fail(MPI_ERR_INFO_KEY, format!("info key {text:?} is empty or too long"));
    }
    Ok(text)
}

mpi_fn! {
    fn MPI_Info_create / PMPI_Info_create(info: *mut c_int) {
        if info.is_null() {
            return fail(MPI_ERR_ARG, "info is NULL");
        }
        put(info, add(Vec::new()))
    }

    fn MPI_Info_set / PMPI_Info_set(info: c_int, key_text: *const c_char, value: *const c_char) {
        let (k, v) = (key(c_str(key_text)?)?.to_string(), c_str(value)?.to_string());
        with(info, |pairs| {
            match pairs.iter_mut().find(|(pk, _)| *pk == k) {
                Some(pair) => pair.1 = v,
                None => pairs.push((k, v)),
            }
            Ok(())
        })
    }

    fn MPI_Info_delete / PMPI_Info_delete(info: c_int, key_text: *const c_char) {
        let k = key(c_str(key_text)?)?;
        with(info, |pairs| match pairs.iter().position(|(pk, _)| pk == k) {
            Some(i) => {
                pairs.remove(i);
                Ok(())
            }
            None => fail(MPI_ERR_INFO_NOKEY, format!("info has no key {k:?}")),
        })
    }

    fn MPI_Info_get / PMPI_Info_get(info: c_int, key_text: *const c_char, valuelen: c_int, value: *mut c_char, flag: *mut c_int) {
        let k = key(c_str(key_text)?)?;
        let room = count(valuelen)? + 1;
        match with(info, |pairs| Ok(pairs.iter().find(|(pk, _)| pk == k).map(|p| p.1.clone())))? {
            Some(v) => {
                put_text(value, room, std::ptr::null_mut(), &v)?;
                put(flag, 1)
            }
            None => put(flag, 0),
        }
    }

    /// The value and its length with the NUL in `buflen` (only the length when it is 0).
    fn MPI_Info_get_string / PMPI_Info_get_string(info: c_int, key_text: *const c_char, buflen: *mut c_int, value: *mut c_char, flag: *mut c_int) {
        let k = key(c_str(key_text)?)?;
        let room = count(get(buflen)?)?;
        match with(info, |pairs| Ok(pairs.iter().find(|(pk, _)| pk == k).map(|p| p.1.clone())))? {
            Some(v) => {
                if room > 0 {
                    put_text(value, room, std::ptr::null_mut(), &v)?;
                }
                put(buflen, (v.len() + 1) as c_int)?;
                put(flag, 1)
            }
            None => put(flag, 0),
        }
    }

    fn MPI_Info_get_valuelen / PMPI_Info_get_valuelen(info: c_int, key_text: *const c_char, valuelen: *mut c_int, flag: *mut c_int) {
        let k = key(c_str(key_text)?)?;
        match with(info, |pairs| Ok(pairs.iter().find(|(pk, _)| pk == k).map(|p| p.1.len())))? {
            Some(n) => {
                put(valuelen, n as c_int)?;
                put(flag, 1)
            }
            None => put(flag, 0),
        }
    }

    fn MPI_Info_get_nkeys / PMPI_Info_get_nkeys(info: c_int, nkeys: *mut c_int) {
        let n = with(info, |pairs| Ok(pairs.len()))?;
        put(nkeys, n as c_int)
    }

    fn MPI_Info_get_nthkey / PMPI_Info_get_nthkey(info: c_int, n: c_int, key_out: *mut c_char) {
        let n = count(n)?;
        let k = with(info, |pairs| match pairs.get(n) {
            Some((k, _)) => Ok(k.clone()),
            None => fail(MPI_ERR_ARG, format!("info has no key number {n}")),
        })?;
        put_text(key_out, MPI_MAX_INFO_KEY + 1, std::ptr::null_mut(), &k)
    }

    fn MPI_Info_dup / PMPI_Info_dup(info: c_int, newinfo: *mut c_int) {
        let pairs = with(info, |pairs| Ok(pairs.clone()))?;
        if newinfo.is_null() {
            return fail(MPI_ERR_ARG, "newinfo is NULL");
        }
        put(newinfo, add(pairs))
    }

    fn MPI_Info_free / PMPI_Info_free(info: *mut c_int) {
        let handle = get(info)?;
        let removed = INFOS.lock().unwrap_or_else(PoisonError::into_inner).as_mut().and_then(|t| t.infos.remove(&handle));
        if removed.is_none() {
            return fail(MPI_ERR_INFO, format!("{handle:#x} is not an info object"));
        }
        put(info, MPI_INFO_NULL)
    }

    /// A new info with the environment's keys; `argv` (NULL: the process's own) names the
    /// command and its arguments. Callable before `MPI_Init` and after `MPI_Finalize`.
    fn MPI_Info_create_env / PMPI_Info_create_env(argc: c_int, argv: *const *const c_char, info: *mut c_int) {
        if info.is_null() {
            return fail(MPI_ERR_ARG, "info is NULL");
        }
        let args = if argv.is_null() {
            std::env::args().collect()
        } else {
            crate::ptr::array(argv, count(argc)?)?.iter().map(|&a| c_str(a).map(str::to_string)).collect::<MpiResult<_>>()?
        };
        put(info, add(environment(args)))
    }
}
