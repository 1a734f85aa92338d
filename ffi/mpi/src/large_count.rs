//! MPI-4's large-count forms (`MPI_Send_c`, `MPI_Bcast_c`, ...) whose counts and byte
//! displacements are `MPI_Count`: narrowed to the int forms' types and passed on. A value
//! that does not fit fails naming the call: messages are at most 2^31 - 1 bytes here.

use std::ffi::{c_char, c_int, c_long, c_void};

use crate::bsend::*;
use crate::call;
use crate::coll::*;
use crate::coll_blocks::*;
use crate::consts::*;
use crate::derived::*;
use crate::error::MpiError;
use crate::external32::*;
use crate::isendrecv::*;
use crate::mprobe::*;
use crate::neighbor::*;
use crate::p2p::*;
use crate::persist::*;
use crate::request::*;

/// `MPI_Count` (as wide as `MPI_Aint` here: byte displacements pass as they are).
pub(crate) type MpiCount = i64;

/// The error of a large-count call whose argument `arg` does not fit the int form.
pub(crate) fn too_large(name: &str, arg: &str) -> c_int {
    call::run(name, || {
        Err(MpiError::new(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!(
                "{arg} does not fit 32 bits: counts and sizes from 2^31 on are not provided yet"
            ),
        ))
    })
}

/// Declares large-count calls over int forms: each argument marked `=> T` is narrowed to
/// `T` (or the call fails naming it), the rest pass as they are.
macro_rules! narrowed {
    ($( fn $name:ident / $pname:ident => $target:ident ( $($arg:ident : $ty:ty $(=> $small:ty)?),* ) )*) => { $(
        /// The large-count form of the int call it names.
        ///
        /// # Safety
        /// As for the int call.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> c_int {
            $($(
                let Ok($arg) = <$small>::try_from($arg) else {
                    return too_large(stringify!($name), stringify!($arg));
                };
            )?)*
            // SAFETY: the same arguments, narrowed, under the same contract.
            unsafe { $target($($arg),*) }
        }

        /// The large-count form of the int call it names.
        ///
        /// # Safety
        /// As for the int call.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the same arguments under the same contract.
            unsafe { $pname($($arg),*) }
        }
    )* };
}

narrowed! {
    fn MPI_Send_c / PMPI_Send_c => PMPI_Send(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int)
    fn MPI_Bsend_c / PMPI_Bsend_c => PMPI_Bsend(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int)
    fn MPI_Ssend_c / PMPI_Ssend_c => PMPI_Ssend(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int)
    fn MPI_Rsend_c / PMPI_Rsend_c => PMPI_Rsend(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int)
    fn MPI_Recv_c / PMPI_Recv_c => PMPI_Recv(buf: *mut c_void, count: MpiCount => c_int, datatype: c_int, source: c_int, tag: c_int, comm: c_int, status: *mut MpiStatus)
    fn MPI_Isend_c / PMPI_Isend_c => PMPI_Isend(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Ibsend_c / PMPI_Ibsend_c => PMPI_Ibsend(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Issend_c / PMPI_Issend_c => PMPI_Issend(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Irsend_c / PMPI_Irsend_c => PMPI_Irsend(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Send_init_c / PMPI_Send_init_c => PMPI_Send_init(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Bsend_init_c / PMPI_Bsend_init_c => PMPI_Bsend_init(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Ssend_init_c / PMPI_Ssend_init_c => PMPI_Ssend_init(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Rsend_init_c / PMPI_Rsend_init_c => PMPI_Rsend_init(buf: *const c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Irecv_c / PMPI_Irecv_c => PMPI_Irecv(buf: *mut c_void, count: MpiCount => c_int, datatype: c_int, source: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Recv_init_c / PMPI_Recv_init_c => PMPI_Recv_init(buf: *mut c_void, count: MpiCount => c_int, datatype: c_int, source: c_int, tag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Sendrecv_c / PMPI_Sendrecv_c => PMPI_Sendrecv(sendbuf: *const c_void, sendcount: MpiCount => c_int, sendtype: c_int, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: MpiCount => c_int, recvtype: c_int, source: c_int, recvtag: c_int, comm: c_int, status: *mut MpiStatus)
    fn MPI_Isendrecv_c / PMPI_Isendrecv_c => PMPI_Isendrecv(sendbuf: *const c_void, sendcount: MpiCount => c_int, sendtype: c_int, dest: c_int, sendtag: c_int, recvbuf: *mut c_void, recvcount: MpiCount => c_int, recvtype: c_int, source: c_int, recvtag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c => PMPI_Sendrecv_replace(buf: *mut c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: c_int, status: *mut MpiStatus)
    fn MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c => PMPI_Isendrecv_replace(buf: *mut c_void, count: MpiCount => c_int, datatype: c_int, dest: c_int, sendtag: c_int, source: c_int, recvtag: c_int, comm: c_int, request: *mut c_int)
    fn MPI_Mrecv_c / PMPI_Mrecv_c => PMPI_Mrecv(buf: *mut c_void, count: MpiCount => c_int, datatype: c_int, message: *mut c_int, status: *mut MpiStatus)
    fn MPI_Imrecv_c / PMPI_Imrecv_c => PMPI_Imrecv(buf: *mut c_void, count: MpiCount => c_int, datatype: c_int, message: *mut c_int, request: *mut c_int)
    fn MPI_Bcast_c / PMPI_Bcast_c => PMPI_Bcast(buffer: *mut c_void, count: MpiCount => c_int, datatype: c_int, root: c_int, comm: c_int)
    fn MPI_Gather_c / PMPI_Gather_c => PMPI_Gather(sendbuf: *const c_void, sendcount: MpiCount => c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount => c_int, recvtype: c_int, root: c_int, comm: c_int)
    fn MPI_Scatter_c / PMPI_Scatter_c => PMPI_Scatter(sendbuf: *const c_void, sendcount: MpiCount => c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount => c_int, recvtype: c_int, root: c_int, comm: c_int)
    fn MPI_Allgather_c / PMPI_Allgather_c => PMPI_Allgather(sendbuf: *const c_void, sendcount: MpiCount => c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount => c_int, recvtype: c_int, comm: c_int)
    fn MPI_Alltoall_c / PMPI_Alltoall_c => PMPI_Alltoall(sendbuf: *const c_void, sendcount: MpiCount => c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount => c_int, recvtype: c_int, comm: c_int)
    fn MPI_Neighbor_allgather_c / PMPI_Neighbor_allgather_c => PMPI_Neighbor_allgather(sendbuf: *const c_void, sendcount: MpiCount => c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount => c_int, recvtype: c_int, comm: c_int)
    fn MPI_Neighbor_alltoall_c / PMPI_Neighbor_alltoall_c => PMPI_Neighbor_alltoall(sendbuf: *const c_void, sendcount: MpiCount => c_int, sendtype: c_int, recvbuf: *mut c_void, recvcount: MpiCount => c_int, recvtype: c_int, comm: c_int)
    fn MPI_Reduce_c / PMPI_Reduce_c => PMPI_Reduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount => c_int, datatype: c_int, op: c_int, root: c_int, comm: c_int)
    fn MPI_Allreduce_c / PMPI_Allreduce_c => PMPI_Allreduce(sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount => c_int, datatype: c_int, op: c_int, comm: c_int)
    fn MPI_Scan_c / PMPI_Scan_c => PMPI_Scan(sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount => c_int, datatype: c_int, op: c_int, comm: c_int)
    fn MPI_Exscan_c / PMPI_Exscan_c => PMPI_Exscan(sendbuf: *const c_void, recvbuf: *mut c_void, count: MpiCount => c_int, datatype: c_int, op: c_int, comm: c_int)
    fn MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c => PMPI_Reduce_scatter_block(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: MpiCount => c_int, datatype: c_int, op: c_int, comm: c_int)
    fn MPI_Reduce_local_c / PMPI_Reduce_local_c => PMPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, count: MpiCount => c_int, datatype: c_int, op: c_int)
    fn MPI_Type_create_resized_c / PMPI_Type_create_resized_c => PMPI_Type_create_resized(oldtype: c_int, lb: c_long, extent: c_long, newtype: *mut c_int)
    fn MPI_Buffer_attach_c / PMPI_Buffer_attach_c => PMPI_Buffer_attach(buffer: *mut c_void, size: MpiCount => c_int)
    fn MPI_Type_get_extent_c / PMPI_Type_get_extent_c => PMPI_Type_get_extent(datatype: c_int, lb: *mut c_long, extent: *mut c_long)
    fn MPI_Type_get_true_extent_c / PMPI_Type_get_true_extent_c => PMPI_Type_get_true_extent(datatype: c_int, lb: *mut c_long, extent: *mut c_long)
    fn MPI_Pack_external_c / PMPI_Pack_external_c => PMPI_Pack_external(datarep: *const c_char, inbuf: *const c_void, incount: MpiCount => c_int, datatype: c_int, outbuf: *mut c_void, outsize: c_long, position: *mut c_long)
    fn MPI_Unpack_external_c / PMPI_Unpack_external_c => PMPI_Unpack_external(datarep: *const c_char, inbuf: *const c_void, insize: c_long, position: *mut c_long, outbuf: *mut c_void, outcount: MpiCount => c_int, datatype: c_int)
    fn MPI_Pack_external_size_c / PMPI_Pack_external_size_c => PMPI_Pack_external_size(datarep: *const c_char, incount: MpiCount => c_int, datatype: c_int, size: *mut c_long)
}

/// Declares large-count calls written by hand: each body returns the call's code (the int
/// form's, which reports its own errors). A panic is caught as in every call.
macro_rules! large_by_hand {
    ($( fn $name:ident / $pname:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block )*) => { $(
        /// The large-count form of the int call it wraps.
        ///
        /// # Safety
        /// Pointer arguments must be valid as the MPI standard requires for this call.
        #[no_mangle]
        #[allow(unused_unsafe)]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> std::ffi::c_int {
            let body = std::panic::AssertUnwindSafe(|| {
                // SAFETY: the caller passes pointers valid as MPI requires for this call.
                unsafe { $body }
            });
            std::panic::catch_unwind(body).unwrap_or_else(|_| $crate::call::not_whole(stringify!($name)))
        }

        /// The large-count form of the int call it wraps.
        ///
        /// # Safety
        /// As for the profiling entry point it calls.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> std::ffi::c_int {
            // SAFETY: the same arguments under the same contract.
            unsafe { $pname($($arg),*) }
        }
    )* };
}
pub(crate) use large_by_hand;
