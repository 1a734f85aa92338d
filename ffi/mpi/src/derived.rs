//! Derived datatypes made of predefined ones laid end to end (`MPI_Type_contiguous`,
//! `MPI_Type_dup`), and the type queries: size, extents, commit, free.

use std::collections::HashMap;
use std::ffi::{c_int, c_long};
use std::sync::{Mutex, PoisonError};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::datatype::{type_info, TypeInfo};
use crate::error::fail;
use crate::ptr::{count, get, put};

/// Kind bits of derived datatype handles (clear of the pair types' 0x8c00000x).
const TYPE_KIND: u32 = 0x8c10_0000;

struct Table {
    types: HashMap<c_int, TypeInfo>,
    next: u32,
}

static TYPES: Mutex<Option<Table>> = Mutex::new(None);

/// The derived datatype `handle`, if it exists.
pub(crate) fn lookup(handle: c_int) -> Option<TypeInfo> {
    let table = TYPES.lock().unwrap_or_else(PoisonError::into_inner);
    table.as_ref()?.types.get(&handle).copied()
}

fn add(info: TypeInfo) -> c_int {
    let mut guard = TYPES.lock().unwrap_or_else(PoisonError::into_inner);
    let table = guard.get_or_insert_with(|| Table { types: HashMap::new(), next: 0 });
    table.next = (table.next + 1) & 0x000f_ffff;
    let handle = (TYPE_KIND | table.next) as c_int;
    table.types.insert(handle, info);
    handle
}

mpi_fn! {
    /// `count` elements of `oldtype` end to end.
    fn MPI_Type_contiguous / PMPI_Type_contiguous(n: c_int, oldtype: c_int, newtype: *mut c_int) {
        let n = count(n)?;
        let old = type_info(oldtype)?;
        if newtype.is_null() {
            return fail(MPI_ERR_ARG, "newtype is NULL");
        }
        let info = TypeInfo { extent: old.extent * n, size: old.size * n, basic: old.basic, reduces_as: old.reduces_as };
        put(newtype, add(info))
    }

    fn MPI_Type_dup / PMPI_Type_dup(oldtype: c_int, newtype: *mut c_int) {
        let info = type_info(oldtype)?;
        if newtype.is_null() {
            return fail(MPI_ERR_ARG, "newtype is NULL");
        }
        put(newtype, add(info))
    }

    /// Nothing to prepare: the layout is contiguous.
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut c_int) {
        type_info(get(datatype)?).map(drop)
    }

    fn MPI_Type_free / PMPI_Type_free(datatype: *mut c_int) {
        let handle = get(datatype)?;
        let removed = TYPES.lock().unwrap_or_else(PoisonError::into_inner).as_mut().and_then(|t| t.types.remove(&handle));
        if removed.is_none() {
            return fail(MPI_ERR_TYPE, format!("{handle:#x} is not a derived datatype (predefined ones cannot be freed)"));
        }
        put(datatype, MPI_DATATYPE_NULL)
    }

    fn MPI_Type_size / PMPI_Type_size(datatype: c_int, size: *mut c_int) {
        let info = type_info(datatype)?;
        put(size, c_int::try_from(info.size).unwrap_or(MPI_UNDEFINED))
    }

    fn MPI_Type_size_x / PMPI_Type_size_x(datatype: c_int, size: *mut c_long) {
        put(size, type_info(datatype)?.size as c_long)
    }

    fn MPI_Type_get_extent / PMPI_Type_get_extent(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        let info = type_info(datatype)?;
        put(lb, 0)?;
        put(extent, info.extent as c_long)
    }

    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(datatype: c_int, lb: *mut c_long, extent: *mut c_long) {
        let info = type_info(datatype)?;
        put(lb, 0)?;
        put(extent, info.extent as c_long)
    }
}
