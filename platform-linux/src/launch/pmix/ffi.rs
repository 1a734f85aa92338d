//! The part of libpmix's C API the client uses, declared by hand. The constants and keys
//! come from the headers themselves, and every size, alignment and field offset below is
//! asserted equal to the header's at compile time: build.rs compiles and runs `header.c`,
//! whose output is included at the end of this file.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::{align_of, offset_of, size_of};

pub type Status = c_int;
pub type Rank = u32;
pub type DataType = u16;
pub type Scope = u8;
pub type DataRange = u8;
pub type InfoDirectives = u32;

/// `pmix_proc_t`: a namespace and a rank in it.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Proc {
    pub nspace: [c_char; MAX_NSLEN + 1],
    pub rank: Rank,
}

/// `pmix_value_t`: a type tag and a union; only the members the client reads are named.
#[repr(C)]
pub struct Value {
    pub kind: DataType,
    pub data: ValueData,
}

/// The union of `pmix_value_t` (its largest members are three words, e.g. `pmix_envar_t`).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ValueData {
    pub flag: bool,
    pub string: *mut c_char,
    pub int: c_int,
    pub int32: i32,
    pub uint: u32,
    pub uint8: u8,
    pub uint16: u16,
    pub uint32: u32,
    pub uint64: u64,
    pub size: usize,
    pub rank: Rank,
    pub range: DataRange,
    words: [usize; 3],
}

/// `pmix_info_t`: a key, directives and a value.
#[repr(C)]
pub struct Info {
    pub key: [c_char; MAX_KEYLEN + 1],
    pub flags: InfoDirectives,
    pub value: Value,
}

/// `pmix_pdata_t`: a published value, its publisher and key.
#[repr(C)]
pub struct Pdata {
    pub proc_: Proc,
    pub key: [c_char; MAX_KEYLEN + 1],
    pub value: Value,
}

/// `pmix_app_t`: one program of a spawn request.
#[repr(C)]
pub struct App {
    pub cmd: *mut c_char,
    pub argv: *mut *mut c_char,
    pub env: *mut *mut c_char,
    pub cwd: *mut c_char,
    pub maxprocs: c_int,
    pub info: *mut Info,
    pub ninfo: usize,
}

impl Proc {
    /// No namespace, rank 0.
    pub const fn empty() -> Proc {
        Proc { nspace: [0; MAX_NSLEN + 1], rank: 0 }
    }
}

impl Value {
    /// `PMIX_UNDEF`, as `PMIX_VALUE_CONSTRUCT` leaves it.
    pub const fn undefined() -> Value {
        Value { kind: 0, data: ValueData { words: [0; 3] } }
    }
}

impl Info {
    /// No key, an undefined value, as `PMIX_INFO_CONSTRUCT` leaves it.
    pub const fn empty() -> Info {
        Info { key: [0; MAX_KEYLEN + 1], flags: 0, value: Value::undefined() }
    }
}

impl Pdata {
    /// No key, an undefined value, as `PMIX_PDATA_CONSTRUCT` leaves it.
    pub const fn empty() -> Pdata {
        Pdata { proc_: Proc::empty(), key: [0; MAX_KEYLEN + 1], value: Value::undefined() }
    }
}

#[link(name = "pmix")]
extern "C" {
    pub fn PMIx_Init(proc_: *mut Proc, info: *mut Info, ninfo: usize) -> Status;
    pub fn PMIx_Finalize(info: *const Info, ninfo: usize) -> Status;
    pub fn PMIx_Abort(status: c_int, msg: *const c_char, procs: *mut Proc, nprocs: usize)
        -> Status;
    pub fn PMIx_Put(scope: Scope, key: *const c_char, val: *mut Value) -> Status;
    pub fn PMIx_Commit() -> Status;
    pub fn PMIx_Fence(procs: *const Proc, nprocs: usize, info: *const Info, ninfo: usize)
        -> Status;
    pub fn PMIx_Get(
        proc_: *const Proc,
        key: *const c_char,
        info: *const Info,
        ninfo: usize,
        val: *mut *mut Value,
    ) -> Status;
    pub fn PMIx_Publish(info: *const Info, ninfo: usize) -> Status;
    pub fn PMIx_Lookup(data: *mut Pdata, ndata: usize, info: *const Info, ninfo: usize) -> Status;
    pub fn PMIx_Unpublish(keys: *mut *mut c_char, info: *const Info, ninfo: usize) -> Status;
    pub fn PMIx_Spawn(
        job_info: *const Info,
        ninfo: usize,
        apps: *const App,
        napps: usize,
        nspace: *mut c_char,
    ) -> Status;
    pub fn PMIx_Error_string(status: Status) -> *const c_char;
    pub fn PMIx_Value_load(val: *mut Value, data: *const c_void, kind: DataType) -> Status;
    pub fn PMIx_Value_destruct(val: *mut Value);
    pub fn PMIx_Info_load(
        info: *mut Info,
        key: *const c_char,
        data: *const c_void,
        kind: DataType,
    ) -> Status;
}

include!(concat!(env!("OUT_DIR"), "/pmix_header.rs"));
