//! An MPI library with MPICH's binary interface (`libmpich.so.12`: MPICH's handle values,
//! status layout and sentinel addresses), implemented over commcore's runtime, so that
//! programs built with MPICH run on commcore unmodified. Calls it does not provide yet exist
//! and fail with `MPI_ERR_UNSUPPORTED_OPERATION`, naming the call.

#![allow(non_snake_case)]

mod added_errors;
mod arguments;
mod attrs;
mod bsend;
mod call;
mod cancel;
mod coll;
mod coll_blocks;
mod comm;
mod comms;
mod completion;
mod consts;
mod contents;
mod darray;
mod datatype;
mod derived;
mod dpm;
mod env;
mod errhandler;
mod error;
mod external32;
mod externs;
mod graph;
mod grequest;
mod group;
mod handles;
mod icoll;
mod info;
mod inter;
mod isendrecv;
mod join_socket;
mod keyval;
mod large_count;
mod large_count_arrays;
mod large_types;
mod lifecycle;
mod misc;
mod mprobe;
mod neighbor;
mod older;
mod ops;
mod p2p;
mod pack;
mod pair;
mod persist;
mod progress;
mod ptr;
mod request;
mod request_free;
mod request_table;
mod sessions;
mod state;
mod status;
mod subarray;
mod topo;
mod type_names;
mod typemap;
mod unsupported;
mod user_reduce;
mod wide_ops;
