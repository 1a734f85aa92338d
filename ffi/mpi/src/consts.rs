//! Handles and constants with the values of MPICH's `mpi.h` (its binary interface).

#![allow(dead_code)]
#![allow(missing_docs)]

use std::ffi::c_int;

pub const MPI_SUCCESS: c_int = 0;
pub const MPI_ERR_BUFFER: c_int = 1;
pub const MPI_ERR_UNSUPPORTED_DATAREP: c_int = 43;
pub const MPI_ERR_SESSION: c_int = 75;
pub const MPI_SESSION_NULL: c_int = 0x3800_0000;
pub const MPI_ERR_COUNT: c_int = 2;
pub const MPI_ERR_TYPE: c_int = 3;
pub const MPI_ERR_TAG: c_int = 4;
pub const MPI_ERR_COMM: c_int = 5;
pub const MPI_ERR_RANK: c_int = 6;
pub const MPI_ERR_ROOT: c_int = 7;
pub const MPI_ERR_GROUP: c_int = 8;
pub const MPI_ERR_OP: c_int = 9;
pub const MPI_ERR_ARG: c_int = 12;
pub const MPI_ERR_UNKNOWN: c_int = 13;
pub const MPI_ERR_TRUNCATE: c_int = 14;
pub const MPI_ERR_OTHER: c_int = 15;
pub const MPI_ERR_INTERN: c_int = 16;
pub const MPI_ERR_IN_STATUS: c_int = 17;
pub const MPI_ERR_PENDING: c_int = 18;
pub const MPI_ERR_REQUEST: c_int = 19;
pub const MPI_ERR_UNSUPPORTED_OPERATION: c_int = 44;
pub const MPI_ERR_PROC_ABORTED: c_int = 76;
pub const MPI_ERR_LASTCODE: c_int = 0x3fff_ffff;

pub const MPI_COMM_NULL: c_int = 0x0400_0000;
pub const MPI_COMM_WORLD: c_int = 0x4400_0000;
pub const MPI_COMM_SELF: c_int = 0x4400_0001;
pub const MPI_GROUP_NULL: c_int = 0x0800_0000;
pub const MPI_GROUP_EMPTY: c_int = 0x4800_0000;
pub const MPI_REQUEST_NULL: c_int = 0x2c00_0000;
pub const MPI_DATATYPE_NULL: c_int = 0x0c00_0000;
pub const MPI_OP_NULL: c_int = 0x1800_0000;
pub const MPI_ERRHANDLER_NULL: c_int = 0x1400_0000;
pub const MPI_ERRORS_ARE_FATAL: c_int = 0x5400_0000;
pub const MPI_ERRORS_RETURN: c_int = 0x5400_0001;
pub const MPI_ERRORS_ABORT: c_int = 0x5400_0003;

pub const MPI_IDENT: c_int = 0;
pub const MPI_CONGRUENT: c_int = 1;
pub const MPI_SIMILAR: c_int = 2;
pub const MPI_UNEQUAL: c_int = 3;

pub const MPI_UNDEFINED: c_int = -32766;
pub const MPI_COMM_TYPE_SHARED: c_int = 1;
pub const MPI_COMM_TYPE_HW_GUIDED: c_int = 2;
pub const MPI_COMM_TYPE_HW_UNGUIDED: c_int = 3;
pub const MPIX_COMM_TYPE_NEIGHBORHOOD: c_int = 4;
pub const MPI_PROC_NULL: c_int = -1;
pub const MPI_ANY_SOURCE: c_int = -2;
pub const MPI_ROOT: c_int = -3;
pub const MPI_ANY_TAG: c_int = -1;

pub const MPI_THREAD_SINGLE: c_int = 0;
pub const MPI_THREAD_FUNNELED: c_int = 1;
pub const MPI_THREAD_SERIALIZED: c_int = 2;
pub const MPI_THREAD_MULTIPLE: c_int = 3;

pub const MPI_VERSION: c_int = 4;
pub const MPI_SUBVERSION: c_int = 0;
pub const MPI_MAX_PROCESSOR_NAME: usize = 128;
pub const MPI_MAX_LIBRARY_VERSION_STRING: usize = 8192;
pub const MPI_MAX_ERROR_STRING: usize = 512;

/// Info objects and the predefined attribute keys.
pub const MPI_INFO_NULL: c_int = 0x1c00_0000;
pub const MPI_INFO_ENV: c_int = 0x5c00_0001;
pub const MPI_MAX_INFO_KEY: usize = 255;
pub const MPI_ERR_INFO_KEY: c_int = 29;
pub const MPI_ERR_INFO_VALUE: c_int = 30;
pub const MPI_ERR_INFO_NOKEY: c_int = 31;
pub const MPI_ERR_INFO: c_int = 28;
pub const MPI_TAG_UB: c_int = 0x6440_0001;
pub const MPI_HOST: c_int = 0x6440_0003;
pub const MPI_IO: c_int = 0x6440_0005;
pub const MPI_WTIME_IS_GLOBAL: c_int = 0x6440_0007;
pub const MPI_UNIVERSE_SIZE: c_int = 0x6440_0009;
pub const MPI_LASTUSEDCODE: c_int = 0x6440_000b;
pub const MPI_APPNUM: c_int = 0x6440_000d;
pub const MPI_MAX_OBJECT_NAME: usize = 128;
pub const MPI_BSEND_OVERHEAD: usize = 96;
pub const MPI_MAX_PORT_NAME: usize = 256;
pub const MPI_KEYVAL_INVALID: c_int = 0x2400_0000;
pub const MPI_MESSAGE_NULL: c_int = 0x2c00_0000;
pub const MPI_ORDER_C: c_int = 56;
pub const MPI_ORDER_FORTRAN: c_int = 57;
pub const MPI_DISTRIBUTE_BLOCK: c_int = 121;
pub const MPI_DISTRIBUTE_CYCLIC: c_int = 122;
pub const MPI_DISTRIBUTE_NONE: c_int = 123;
pub const MPI_DISTRIBUTE_DFLT_DARG: c_int = -49767;
pub const MPI_TYPECLASS_REAL: c_int = 1;
pub const MPI_TYPECLASS_INTEGER: c_int = 2;
pub const MPI_TYPECLASS_COMPLEX: c_int = 3;
pub const MPI_GRAPH: c_int = 1;
pub const MPI_CART: c_int = 2;
pub const MPI_DIST_GRAPH: c_int = 3;
pub const MPI_ERR_TOPOLOGY: c_int = 10;
pub const MPI_ERR_DIMS: c_int = 11;
pub const MPI_MESSAGE_NO_PROC: c_int = 0x6c00_0000;
pub const MPI_ERR_KEYVAL: c_int = 48;
pub const MPI_ERR_NAME: c_int = 33;
pub const MPI_ERR_SERVICE: c_int = 41;
pub const MPI_ERR_PORT: c_int = 38;
pub const MPI_ERR_SPAWN: c_int = 42;

/// `MPI_IN_PLACE`: the address `(void *) -1`.
pub const MPI_IN_PLACE: usize = usize::MAX;
/// `MPI_BOTTOM`: the address 0.
pub const MPI_BOTTOM: usize = 0;
/// `MPI_STATUS_IGNORE` and `MPI_STATUSES_IGNORE`: the address 1.
pub const MPI_STATUS_IGNORE: usize = 1;

/// Predefined datatypes.
pub mod types {
    use std::ffi::c_int;
    pub const MPI_CHAR: c_int = 0x4c00_0101;
    pub const MPI_SIGNED_CHAR: c_int = 0x4c00_0118;
    pub const MPI_UNSIGNED_CHAR: c_int = 0x4c00_0102;
    pub const MPI_BYTE: c_int = 0x4c00_010d;
    pub const MPI_WCHAR: c_int = 0x4c00_040e;
    pub const MPI_SHORT: c_int = 0x4c00_0203;
    pub const MPI_UNSIGNED_SHORT: c_int = 0x4c00_0204;
    pub const MPI_INT: c_int = 0x4c00_0405;
    pub const MPI_UNSIGNED: c_int = 0x4c00_0406;
    pub const MPI_LONG: c_int = 0x4c00_0807;
    pub const MPI_UNSIGNED_LONG: c_int = 0x4c00_0808;
    pub const MPI_FLOAT: c_int = 0x4c00_040a;
    pub const MPI_DOUBLE: c_int = 0x4c00_080b;
    pub const MPI_LONG_DOUBLE: c_int = 0x4c00_100c;
    pub const MPI_LONG_LONG_INT: c_int = 0x4c00_0809;
    pub const MPI_UNSIGNED_LONG_LONG: c_int = 0x4c00_0819;
    pub const MPI_PACKED: c_int = 0x4c00_010f;
    pub const MPI_FLOAT_INT: c_int = 0x8c00_0000_u32 as c_int;
    pub const MPI_DOUBLE_INT: c_int = 0x8c00_0001_u32 as c_int;
    pub const MPI_LONG_INT: c_int = 0x8c00_0002_u32 as c_int;
    pub const MPI_SHORT_INT: c_int = 0x8c00_0003_u32 as c_int;
    pub const MPI_2INT: c_int = 0x4c00_0816;
    pub const MPI_LONG_DOUBLE_INT: c_int = 0x8c00_0004_u32 as c_int;
    pub const MPI_C_FLOAT_COMPLEX: c_int = 0x4c00_0840;
    pub const MPI_C_DOUBLE_COMPLEX: c_int = 0x4c00_1041;
    pub const MPI_C_LONG_DOUBLE_COMPLEX: c_int = 0x4c00_2042;
    pub const MPI_CXX_FLOAT_COMPLEX: c_int = 0x4c00_0834;
    pub const MPI_CXX_DOUBLE_COMPLEX: c_int = 0x4c00_1035;
    pub const MPI_CXX_LONG_DOUBLE_COMPLEX: c_int = 0x4c00_2036;
    pub const MPI_COMPLEX: c_int = 0x4c00_081e;
    pub const MPI_DOUBLE_COMPLEX: c_int = 0x4c00_1022;
    pub const MPI_COMPLEX8: c_int = 0x4c00_0828;
    pub const MPI_COMPLEX16: c_int = 0x4c00_102a;
    pub const MPI_INT8_T: c_int = 0x4c00_0137;
    pub const MPI_INT16_T: c_int = 0x4c00_0238;
    pub const MPI_INT32_T: c_int = 0x4c00_0439;
    pub const MPI_INT64_T: c_int = 0x4c00_083a;
    pub const MPI_UINT8_T: c_int = 0x4c00_013b;
    pub const MPI_UINT16_T: c_int = 0x4c00_023c;
    pub const MPI_UINT32_T: c_int = 0x4c00_043d;
    pub const MPI_UINT64_T: c_int = 0x4c00_083e;
    pub const MPI_C_BOOL: c_int = 0x4c00_013f;
    pub const MPI_AINT: c_int = 0x4c00_0843;
    pub const MPI_OFFSET: c_int = 0x4c00_0844;
    pub const MPI_COUNT: c_int = 0x4c00_0845;
    pub const MPI_INTEGER: c_int = 0x4c00_041b;
    pub const MPI_REAL: c_int = 0x4c00_041c;
    pub const MPI_DOUBLE_PRECISION: c_int = 0x4c00_081f;
    pub const MPI_LOGICAL: c_int = 0x4c00_041d;
    pub const MPI_CHARACTER: c_int = 0x4c00_011a;
    pub const MPI_INTEGER1: c_int = 0x4c00_012d;
    pub const MPI_INTEGER2: c_int = 0x4c00_022f;
    pub const MPI_INTEGER4: c_int = 0x4c00_0430;
    pub const MPI_INTEGER8: c_int = 0x4c00_0831;
    pub const MPI_REAL4: c_int = 0x4c00_0427;
    pub const MPI_REAL8: c_int = 0x4c00_0829;
    pub const MPI_2INTEGER: c_int = 0x4c00_0820;
}

/// Predefined reductions.
pub mod ops {
    use std::ffi::c_int;
    pub const MPI_MAX: c_int = 0x5800_0001;
    pub const MPI_MIN: c_int = 0x5800_0002;
    pub const MPI_SUM: c_int = 0x5800_0003;
    pub const MPI_PROD: c_int = 0x5800_0004;
    pub const MPI_LAND: c_int = 0x5800_0005;
    pub const MPI_BAND: c_int = 0x5800_0006;
    pub const MPI_LOR: c_int = 0x5800_0007;
    pub const MPI_BOR: c_int = 0x5800_0008;
    pub const MPI_LXOR: c_int = 0x5800_0009;
    pub const MPI_BXOR: c_int = 0x5800_000a;
    pub const MPI_MINLOC: c_int = 0x5800_000b;
    pub const MPI_MAXLOC: c_int = 0x5800_000c;
    pub const MPI_REPLACE: c_int = 0x5800_000d;
    pub const MPI_NO_OP: c_int = 0x5800_000e;
}

/// `MPI_Status` as MPICH lays it out: the byte count split in two, the cancelled flag in
/// the low bit of the second word.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MpiStatus {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
}
