//! Predefined datatypes and reductions, mapped onto the runtime's.

use std::ffi::c_int;

use commcore::coll::{Datatype, Op, ReduceOp};

use crate::consts::ops::*;
use crate::consts::types::*;
use crate::consts::*;
use crate::error::{fail, MpiResult};

/// What this library knows of a datatype.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TypeInfo {
    /// Bytes from one element to the next: negative where the upper bound lies below the
    /// lower (`MPI_Type_create_resized` allows it), so that elements step backwards.
    pub extent: isize,
    /// The lower bound: where an element starts, relative to its address.
    pub lb: isize,
    /// Bytes of data per element (`MPI_Type_size`: the extent without padding).
    pub size: usize,
    /// Bytes an element takes packed (its data: its size).
    pub packed: usize,
    /// Basic elements in one element, and their size when all are alike (else 0), for
    /// `MPI_Get_elements`.
    pub elements: usize,
    pub basic: usize,
    /// The alignment a structure of it rounds its extent to.
    pub align: usize,
    /// Whether `count` elements are the bytes `[0, count * extent)`: sent as they lie.
    pub contiguous: bool,
    /// The bytes the data spans: first and length (`MPI_Type_get_true_extent`).
    pub true_lb: isize,
    pub true_extent: usize,
    /// The runtime's type for reductions, if it has one.
    pub reduces_as: Option<Datatype>,
}

impl TypeInfo {
    /// A predefined type: `extent` bytes, `size` of them data.
    fn predefined(extent: usize, size: usize, reduces_as: Option<Datatype>) -> Self {
        TypeInfo {
            extent: extent as isize,
            lb: 0,
            size,
            packed: extent,
            elements: if size == extent { 1 } else { 2 },
            basic: if size == extent { size } else { 0 },
            align: extent.min(16),
            contiguous: true,
            true_lb: 0,
            true_extent: extent,
            reduces_as,
        }
    }

    /// A pair whose data is `segments`: two elements, packed without the padding.
    fn padded(&mut self, segments: PairSegments) {
        self.size = segments[0].1 + segments[1].1;
        self.packed = self.size;
        (self.elements, self.basic) = (2, 0);
        self.contiguous = false;
    }
}

/// The data of a value-and-int pair whose int lies past padding: (offset, bytes) of the
/// value and of the int. Packed, such a pair is its data alone (`MPI_DOUBLE_INT` is 12
/// bytes, as a message of a `double` and an `int` is), so that a pair matches any type
/// of the same signature.
pub(crate) type PairSegments = [(isize, usize); 2];

const DOUBLE_INT: PairSegments = [(0, 8), (8, 4)];
const SHORT_INT: PairSegments = [(0, 2), (4, 4)];
const LONG_DOUBLE_INT: PairSegments = [(0, 16), (16, 4)];

/// The segments of predefined pair `handle`, if its int lies past padding.
pub(crate) fn padded_pair(handle: c_int) -> Option<PairSegments> {
    match handle {
        MPI_DOUBLE_INT | MPI_LONG_INT => Some(DOUBLE_INT),
        MPI_SHORT_INT => Some(SHORT_INT),
        MPI_LONG_DOUBLE_INT => Some(LONG_DOUBLE_INT),
        _ => None,
    }
}

/// MPICH's predefined types of two equal halves (complex numbers, the Fortran pairs and
/// `MPI_2INT`): aligned as one half, as C and Fortran align them.
const HALVES: [u32; 15] = [
    0x4c00_081e,
    0x4c00_1022,
    0x4c00_0821,
    0x4c00_1023,
    0x4c00_0828,
    0x4c00_102a,
    0x4c00_202c,
    0x4c00_0840,
    0x4c00_1041,
    0x4c00_2042,
    0x4c00_0834,
    0x4c00_1035,
    0x4c00_2036,
    0x4c00_0816,
    0x4c00_0820,
];

/// The predefined datatype `handle`.
pub(crate) fn type_info(handle: c_int) -> MpiResult<TypeInfo> {
    let mut info = predefined_info(handle)?;
    // A predefined type's extent is its size, never negative.
    let half = info.extent.unsigned_abs() / 2;
    // A value-and-int pair is aligned as its value (`MPI_FLOAT_INT`, `MPI_SHORT_INT`: 4).
    match handle {
        MPI_FLOAT_INT | MPI_SHORT_INT => info.align = 4,
        MPI_DOUBLE_INT | MPI_LONG_INT | MPI_LONG_DOUBLE_INT => info.align = half,
        _ if HALVES.contains(&(handle as u32)) => info.align = half,
        _ => {}
    }
    Ok(info)
}

fn predefined_info(handle: c_int) -> MpiResult<TypeInfo> {
    use Datatype as D;
    let reduces_as = match handle {
        MPI_CHAR | MPI_SIGNED_CHAR | MPI_INT8_T | MPI_INTEGER1 => Some(D::I8),
        MPI_UNSIGNED_CHAR | MPI_BYTE | MPI_UINT8_T | MPI_C_BOOL => Some(D::U8),
        MPI_SHORT | MPI_INT16_T | MPI_INTEGER2 => Some(D::I16),
        MPI_UNSIGNED_SHORT | MPI_UINT16_T => Some(D::U16),
        MPI_INT | MPI_INT32_T | MPI_INTEGER | MPI_INTEGER4 | MPI_LOGICAL => Some(D::I32),
        MPI_UNSIGNED | MPI_UINT32_T => Some(D::U32),
        MPI_LONG | MPI_LONG_LONG_INT | MPI_INT64_T | MPI_INTEGER8 | MPI_AINT | MPI_OFFSET
        | MPI_COUNT => Some(D::I64),
        MPI_UNSIGNED_LONG | MPI_UNSIGNED_LONG_LONG | MPI_UINT64_T => Some(D::U64),
        MPI_FLOAT | MPI_REAL | MPI_REAL4 => Some(D::F32),
        MPI_DOUBLE | MPI_DOUBLE_PRECISION | MPI_REAL8 => Some(D::F64),
        MPI_FLOAT_INT => Some(D::PairF32I32),
        MPI_DOUBLE_INT => Some(D::PairF64I32),
        MPI_LONG_INT => Some(D::PairI64I32),
        MPI_SHORT_INT => Some(D::PairI16I32),
        MPI_2INT | MPI_2INTEGER => Some(D::PairI32I32),
        _ => None,
    };
    if let Some(dtype) = reduces_as {
        let mut info = TypeInfo::predefined(dtype.size(), dtype.size(), reduces_as);
        if let Some(segments) = padded_pair(handle) {
            info.padded(segments);
        } else if matches!(handle, MPI_FLOAT_INT | MPI_2INT | MPI_2INTEGER) {
            (info.elements, info.basic) = (2, 4);
        }
        return Ok(info);
    }
    if handle == MPI_LONG_DOUBLE_INT {
        let mut info = TypeInfo::predefined(32, 32, None);
        info.padded(LONG_DOUBLE_INT);
        return Ok(info);
    }
    // Other predefined types (long double, complex, wchar, packed, ...): MPICH encodes
    // the size in bits 8..16 of handles of kind 0x4c.
    let bits = handle as u32;
    if bits & 0xff00_0000 == 0x4c00_0000 {
        let extent = ((bits >> 8) & 0xff) as usize;
        if extent > 0 {
            return Ok(TypeInfo::predefined(extent, extent, None));
        }
    }
    if let Some((info, _)) = crate::typemap::lookup(handle) {
        return Ok(info);
    }
    if handle == MPI_DATATYPE_NULL {
        return fail(MPI_ERR_TYPE, "the datatype is MPI_DATATYPE_NULL");
    }
    fail(MPI_ERR_TYPE, format!("{handle:#x} is not a datatype"))
}

/// The runtime's type and reduction for `op` on `handle`: an error where the runtime
/// cannot reduce them.
pub(crate) fn reduction(handle: c_int, op: c_int) -> MpiResult<(Datatype, Op)> {
    let info = type_info(handle)?;
    if crate::ops::is_user(op) {
        let (dtype, user) = crate::ops::prepare(op, handle, &info)?;
        return Ok((dtype, Op::User(user)));
    }
    let op = reduce_op(op)?;
    let Some(dtype) = info.reduces_as else {
        if !crate::typemap::is_derived(handle) {
            // Complex numbers and long double: the standard's, not ours yet.
            let message =
                format!("reductions on predefined datatype {handle:#x} are not provided yet");
            return fail(MPI_ERR_UNSUPPORTED_OPERATION, message);
        }
        return fail(MPI_ERR_TYPE, format!("datatype {handle:#x} cannot be reduced here"));
    };
    if !op.supports(dtype) {
        return fail(MPI_ERR_OP, format!("{} is not defined on {}", op.name(), dtype));
    }
    Ok((dtype, Op::Builtin(op)))
}

/// The runtime's reduction for the predefined op `op`.
pub(crate) fn reduce_op(op: c_int) -> MpiResult<ReduceOp> {
    use ReduceOp as R;
    Ok(match op {
        MPI_MAX => R::Max,
        MPI_MIN => R::Min,
        MPI_SUM => R::Sum,
        MPI_PROD => R::Prod,
        MPI_LAND => R::Land,
        MPI_BAND => R::Band,
        MPI_LOR => R::Lor,
        MPI_BOR => R::Bor,
        MPI_LXOR => R::Lxor,
        MPI_BXOR => R::Bxor,
        MPI_MINLOC => R::MinLoc,
        MPI_MAXLOC => R::MaxLoc,
        MPI_REPLACE | MPI_NO_OP => {
            return fail(MPI_ERR_OP, "MPI_REPLACE and MPI_NO_OP are for one-sided calls")
        }
        MPI_OP_NULL => return fail(MPI_ERR_OP, "the operation is MPI_OP_NULL"),
        other => {
            let message =
                format!("{other:#x} is not a predefined operation (user ones come later)");
            return fail(MPI_ERR_OP, message);
        }
    })
}
