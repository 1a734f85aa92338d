//! MPI-1 names MPICH still declares, for calls made under newer names.

use std::ffi::{c_int, c_long};

use crate::call::{alias, mpi_fn};
use crate::derived::PMPI_Type_create_struct;
use crate::env::{PMPI_Comm_get_errhandler, PMPI_Comm_set_errhandler};
use crate::errhandler::{HandlerFn, PMPI_Comm_create_errhandler};
use crate::ptr::put;
use crate::typemap::layout;

alias! {
    fn MPI_Type_struct / PMPI_Type_struct => PMPI_Type_create_struct(n: c_int, blocklengths: *const c_int, displacements: *const c_long, types: *const c_int, newtype: *mut c_int)
    fn MPI_Errhandler_create / PMPI_Errhandler_create => PMPI_Comm_create_errhandler(function: Option<HandlerFn>, errhandler: *mut c_int)
    fn MPI_Errhandler_set / PMPI_Errhandler_set => PMPI_Comm_set_errhandler(comm: c_int, errhandler: c_int)
    fn MPI_Errhandler_get / PMPI_Errhandler_get => PMPI_Comm_get_errhandler(comm: c_int, errhandler: *mut c_int)
}

mpi_fn! {
    fn MPI_Type_extent / PMPI_Type_extent(datatype: c_int, extent: *mut c_long) {
        put(extent, layout(datatype)?.0.extent as c_long)
    }

    fn MPI_Type_lb / PMPI_Type_lb(datatype: c_int, displacement: *mut c_long) {
        put(displacement, layout(datatype)?.0.lb as c_long)
    }

    fn MPI_Type_ub / PMPI_Type_ub(datatype: c_int, displacement: *mut c_long) {
        let info = layout(datatype)?.0;
        put(displacement, (info.lb + info.extent) as c_long)
    }
}
