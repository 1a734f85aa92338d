//! The portable representation "external32" (`MPI_Pack_external`, `MPI_Unpack_external`,
//! `MPI_Pack_external_size`): every basic element of the type map, in type-map order,
//! big-endian at the standard's external32 size. Two sizes differ from this machine's: a C
//! `long` is 4 bytes there (a `wchar_t` 2), and a `long double` is an IEEE quadruple.

use std::ffi::{c_char, c_int, c_long, c_void};

use crate::call::mpi_fn;
use crate::consts::types::*;
use crate::consts::*;
use crate::contents::{self, *};
use crate::error::{fail, MpiResult};
use crate::ptr::{c_str, count, get, put};
use crate::typemap::{is_derived, layout};

const MPI_2REAL: c_int = 0x4c00_0821;
const MPI_2DOUBLE_PRECISION: c_int = 0x4c00_1023;

#[derive(Clone, Copy)]
enum Kind {
    Signed,
    Unsigned,
    /// IEEE single or double: the same bits, in the other byte order.
    Float,
    /// x87 extended precision in 16 bytes here, an IEEE quadruple in external32.
    Extended,
}

/// A basic datatype: `parts` values (two for a complex) of `native` bytes each here and
/// `external` bytes each in external32.
#[derive(Clone, Copy)]
struct Basic {
    parts: usize,
    native: usize,
    external: usize,
    kind: Kind,
}

fn basic(handle: c_int) -> Option<Basic> {
    use Kind::*;
    let (parts, native, external, kind) = match handle {
        MPI_CHAR | MPI_SIGNED_CHAR | MPI_INT8_T | MPI_INTEGER1 => (1, 1, 1, Signed),
        MPI_BYTE | MPI_PACKED | MPI_UNSIGNED_CHAR | MPI_UINT8_T | MPI_C_BOOL | MPI_CHARACTER => {
            (1, 1, 1, Unsigned)
        }
        MPI_SHORT | MPI_INT16_T | MPI_INTEGER2 => (1, 2, 2, Signed),
        MPI_UNSIGNED_SHORT | MPI_UINT16_T => (1, 2, 2, Unsigned),
        MPI_WCHAR => (1, 4, 2, Signed),
        MPI_INT | MPI_INT32_T | MPI_INTEGER | MPI_INTEGER4 | MPI_LOGICAL => (1, 4, 4, Signed),
        MPI_UNSIGNED | MPI_UINT32_T => (1, 4, 4, Unsigned),
        MPI_LONG => (1, 8, 4, Signed),
        MPI_UNSIGNED_LONG => (1, 8, 4, Unsigned),
        MPI_LONG_LONG_INT | MPI_INT64_T | MPI_INTEGER8 | MPI_AINT | MPI_OFFSET | MPI_COUNT => {
            (1, 8, 8, Signed)
        }
        MPI_UNSIGNED_LONG_LONG | MPI_UINT64_T => (1, 8, 8, Unsigned),
        MPI_FLOAT | MPI_REAL | MPI_REAL4 => (1, 4, 4, Float),
        MPI_DOUBLE | MPI_DOUBLE_PRECISION | MPI_REAL8 => (1, 8, 8, Float),
        MPI_C_FLOAT_COMPLEX | MPI_CXX_FLOAT_COMPLEX | MPI_COMPLEX | MPI_COMPLEX8 => {
            (2, 4, 4, Float)
        }
        MPI_C_DOUBLE_COMPLEX | MPI_CXX_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_COMPLEX16 => {
            (2, 8, 8, Float)
        }
        MPI_LONG_DOUBLE => (1, 16, 16, Extended),
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX => (2, 16, 16, Extended),
        _ => return None,
    };
    Some(Basic { parts, native, external, kind })
}

/// The two basic parts of a predefined pair type and the second's displacement.
fn pair(handle: c_int) -> Option<(c_int, c_int, isize)> {
    Some(match handle {
        MPI_FLOAT_INT => (MPI_FLOAT, MPI_INT, 4),
        MPI_DOUBLE_INT => (MPI_DOUBLE, MPI_INT, 8),
        MPI_LONG_INT => (MPI_LONG, MPI_INT, 8),
        MPI_SHORT_INT => (MPI_SHORT, MPI_INT, 4),
        MPI_2INT => (MPI_INT, MPI_INT, 4),
        MPI_LONG_DOUBLE_INT => (MPI_LONG_DOUBLE, MPI_INT, 16),
        MPI_2INTEGER => (MPI_INTEGER, MPI_INTEGER, 4),
        MPI_2REAL => (MPI_REAL, MPI_REAL, 4),
        MPI_2DOUBLE_PRECISION => (MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, 8),
        _ => return None,
    })
}

/// Calls `visit` with (displacement, basic type) for each basic element of one `datatype`
/// at displacement `at`, in type-map order, walking the constructors' arguments.
fn walk(datatype: c_int, at: isize, visit: &mut dyn FnMut(isize, Basic) -> MpiResult) -> MpiResult {
    if let Some(b) = basic(datatype) {
        return visit(at, b);
    }
    if let Some((first, second, disp)) = pair(datatype) {
        walk(first, at, visit)?;
        return walk(second, at + disp, visit);
    }
    if !is_derived(datatype) {
        layout(datatype)?;
        return fail(
            MPI_ERR_TYPE,
            format!("external32 has no representation of datatype {datatype:#x}"),
        );
    }
    let Some(made) = contents::lookup(datatype) else {
        return fail(MPI_ERR_TYPE, format!("{datatype:#x} has no constructor to walk"));
    };
    let ints = &made.ints;
    let int = |i: usize| ints.get(i).map_or(0, |&v| v as isize);
    let aint = |i: usize| made.aints.get(i).map_or(0, |&v| v as isize);
    let old = made.types.first().copied().unwrap_or(MPI_DATATYPE_NULL);
    let extent = |t: c_int| -> MpiResult<isize> { Ok(layout(t)?.0.extent) };
    // Blocks of `len` old elements at byte displacements.
    let mut blocks = |old: c_int, disps: &mut dyn Iterator<Item = (isize, isize)>| -> MpiResult {
        let e = extent(old)?;
        for (disp, len) in disps {
            for k in 0..len.max(0) {
                walk(old, at + disp + k * e, visit)?;
            }
        }
        Ok(())
    };
    let n = int(0).max(0);
    match made.combiner {
        MPI_COMBINER_DUP | MPI_COMBINER_RESIZED => blocks(old, &mut std::iter::once((0, 1))),
        MPI_COMBINER_CONTIGUOUS => blocks(old, &mut std::iter::once((0, n))),
        MPI_COMBINER_VECTOR => {
            let (len, stride) = (int(1), int(2) * extent(old)?);
            blocks(old, &mut (0..n).map(|i| (i * stride, len)))
        }
        MPI_COMBINER_HVECTOR => blocks(old, &mut (0..n).map(|i| (i * aint(0), int(1)))),
        MPI_COMBINER_INDEXED => {
            let e = extent(old)?;
            let n = n as usize;
            blocks(old, &mut (0..n).map(|i| (int(1 + n + i) * e, int(1 + i))))
        }
        MPI_COMBINER_HINDEXED => blocks(old, &mut (0..n as usize).map(|i| (aint(i), int(1 + i)))),
        MPI_COMBINER_INDEXED_BLOCK => {
            let e = extent(old)?;
            blocks(old, &mut (0..n as usize).map(|i| (int(2 + i) * e, int(1))))
        }
        MPI_COMBINER_HINDEXED_BLOCK => blocks(old, &mut (0..n as usize).map(|i| (aint(i), int(1)))),
        MPI_COMBINER_STRUCT => {
            for i in 0..n as usize {
                let t = made.types.get(i).copied().unwrap_or(MPI_DATATYPE_NULL);
                blocks(t, &mut std::iter::once((aint(i), int(1 + i))))?;
            }
            Ok(())
        }
        // Built of whole elements of one basic type: the segments, cut into elements.
        MPI_COMBINER_SUBARRAY | MPI_COMBINER_DARRAY => match basic(old) {
            Some(b) if b.parts == 1 => {
                for &(offset, len) in layout(datatype)?.1.iter() {
                    for k in 0..len / b.native {
                        visit(at + offset + (k * b.native) as isize, b)?;
                    }
                }
                Ok(())
            }
            _ => fail(
                MPI_ERR_UNSUPPORTED_OPERATION,
                "external32 of a subarray or distributed array of a derived or complex datatype is not provided yet",
            ),
        },
        other => fail(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("external32 of a datatype made by combiner {other} from derived datatypes is not provided yet"),
        ),
    }
}

/// One value's external32 bytes from its native bytes.
fn to_external(kind: Kind, native: &[u8], out: &mut [u8]) {
    match kind {
        Kind::Extended => out.copy_from_slice(&quad_of_extended(native).to_be_bytes()),
        Kind::Float => out.iter_mut().zip(native.iter().rev()).for_each(|(o, &n)| *o = n),
        // The low bytes, most significant first (a narrower size keeps the low part).
        Kind::Signed | Kind::Unsigned => {
            let value = integer(native, matches!(kind, Kind::Signed));
            out.copy_from_slice(&value.to_be_bytes()[16 - out.len()..]);
        }
    }
}

/// One value's native bytes from its external32 bytes.
fn from_external(kind: Kind, external: &[u8], out: &mut [u8]) {
    match kind {
        Kind::Extended => {
            let quad = u128::from_be_bytes(external.try_into().unwrap_or([0; 16]));
            out.fill(0);
            out[..10].copy_from_slice(&extended_of_quad(quad));
        }
        Kind::Float => out.iter_mut().zip(external.iter().rev()).for_each(|(o, &e)| *o = e),
        Kind::Signed | Kind::Unsigned => {
            let mut le: Vec<u8> = external.iter().rev().copied().collect();
            let value = integer(&le, matches!(kind, Kind::Signed));
            le = value.to_le_bytes().to_vec();
            out.copy_from_slice(&le[..out.len()]);
        }
    }
}

/// A little-endian integer of up to 16 bytes, sign- or zero-extended.
fn integer(le: &[u8], signed: bool) -> i128 {
    let negative = signed && le.last().is_some_and(|&b| b & 0x80 != 0);
    let mut bytes = [if negative { 0xff } else { 0 }; 16];
    bytes[..le.len()].copy_from_slice(le);
    i128::from_le_bytes(bytes)
}

/// x87 extended (64-bit significand with its integer bit, 15-bit exponent) to an IEEE
/// quadruple: the same exponent bias, the fraction widened.
fn quad_of_extended(native: &[u8]) -> u128 {
    let significand = u64::from_le_bytes(native[..8].try_into().unwrap_or([0; 8]));
    let sign_exponent = u16::from_le_bytes([native[8], native[9]]) as u128;
    let fraction = (significand & !(1 << 63)) as u128;
    (sign_exponent << 112) | (fraction << 49)
}

fn extended_of_quad(quad: u128) -> [u8; 10] {
    let sign_exponent = (quad >> 112) as u16;
    let fraction = ((quad >> 49) as u64) & !(1 << 63);
    // The integer bit is explicit in x87: set for every value but zeros and subnormals.
    let integer_bit = if sign_exponent & 0x7fff != 0 { 1u64 << 63 } else { 0 };
    let mut out = [0; 10];
    out[..8].copy_from_slice(&(fraction | integer_bit).to_le_bytes());
    out[8..].copy_from_slice(&sign_exponent.to_le_bytes());
    out
}

/// External32 bytes of one element of `datatype`.
fn packed_size(datatype: c_int) -> MpiResult<usize> {
    let mut size = 0;
    walk(datatype, 0, &mut |_, b| {
        size += b.parts * b.external;
        Ok(())
    })?;
    Ok(size)
}

/// # Safety
/// `datarep` is NULL or a C string.
unsafe fn check_datarep(datarep: *const c_char) -> MpiResult {
    // SAFETY: the caller's contract.
    match unsafe { c_str(datarep) }? {
        "external32" => Ok(()),
        other => fail(
            MPI_ERR_UNSUPPORTED_DATAREP,
            format!("data representation \"{other}\" is not external32"),
        ),
    }
}

/// Calls `f` with the address of each basic value of `n` elements of `datatype` at `buf`,
/// the value's offset in the packed bytes and its type.
fn each_value(
    buf: *mut u8,
    n: usize,
    datatype: c_int,
    f: &mut dyn FnMut(*mut u8, usize, Basic),
) -> MpiResult {
    let extent = layout(datatype)?.0.extent;
    let mut at = 0;
    for i in 0..n as isize {
        walk(datatype, i * extent, &mut |disp, b| {
            for part in 0..b.parts {
                f(buf.wrapping_offset(disp + (part * b.native) as isize), at, b);
                at += b.external;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// The window `[position, position + len)` of a buffer of `size` bytes, checked.
fn window(size: c_long, position: c_long, len: usize, what: &str) -> MpiResult<usize> {
    match (usize::try_from(size), usize::try_from(position)) {
        (Ok(size), Ok(start)) if start <= size && size - start >= len => Ok(start),
        _ => fail(
            MPI_ERR_TRUNCATE,
            format!(
                "{len} bytes do not fit the {what} buffer of {size} bytes at position {position}"
            ),
        ),
    }
}

mpi_fn! {
    fn MPI_Pack_external_size / PMPI_Pack_external_size(datarep: *const c_char, incount: c_int, datatype: c_int, size: *mut c_long) {
        check_datarep(datarep)?;
        let total = count(incount)? * packed_size(datatype)?;
        put(size, total as c_long)
    }

    fn MPI_Pack_external / PMPI_Pack_external(datarep: *const c_char, inbuf: *const c_void, incount: c_int, datatype: c_int, outbuf: *mut c_void, outsize: c_long, position: *mut c_long) {
        check_datarep(datarep)?;
        let n = count(incount)?;
        let len = n * packed_size(datatype)?;
        let at = get(position)?;
        let start = window(outsize, at, len, "output")?;
        if len == 0 {
            return Ok(());
        }
        if outbuf.is_null() {
            return fail(MPI_ERR_BUFFER, "outbuf is NULL");
        }
        let out = std::slice::from_raw_parts_mut((outbuf as *mut u8).wrapping_add(start), len);
        each_value(inbuf as *mut u8, n, datatype, &mut |value, at, b| {
            // SAFETY: `value` is one basic value of the program's send buffer, placed by the
            // type map (MPI's contract on `inbuf`).
            let native = unsafe { std::slice::from_raw_parts(value, b.native) };
            to_external(b.kind, native, &mut out[at..at + b.external]);
        })?;
        put(position, at + len as c_long)
    }

    fn MPI_Unpack_external / PMPI_Unpack_external(datarep: *const c_char, inbuf: *const c_void, insize: c_long, position: *mut c_long, outbuf: *mut c_void, outcount: c_int, datatype: c_int) {
        check_datarep(datarep)?;
        let n = count(outcount)?;
        let len = n * packed_size(datatype)?;
        let at = get(position)?;
        let start = window(insize, at, len, "input")?;
        if len == 0 {
            return Ok(());
        }
        if inbuf.is_null() {
            return fail(MPI_ERR_BUFFER, "inbuf is NULL");
        }
        let packed = std::slice::from_raw_parts((inbuf as *const u8).wrapping_add(start), len);
        each_value(outbuf as *mut u8, n, datatype, &mut |value, at, b| {
            // SAFETY: `value` is one basic value of the program's receive buffer, placed by
            // the type map (MPI's contract on `outbuf`).
            let native = unsafe { std::slice::from_raw_parts_mut(value, b.native) };
            from_external(b.kind, &packed[at..at + b.external], native);
        })?;
        put(position, at + len as c_long)
    }
}
