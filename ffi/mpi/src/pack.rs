//! Packing: the data of `count` elements of a datatype as contiguous bytes, and back;
//! point-to-point calls send non-contiguous datatypes packed. Also `MPI_Pack`,
//! `MPI_Unpack` and `MPI_Pack_size`.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};

use crate::call::mpi_fn;
use crate::consts::*;
use crate::error::{fail, MpiResult};
use crate::pair::Padded;
use crate::ptr::{bytes, bytes_mut, count, get, put};
use crate::typemap::{is_derived, layout, Segments};

/// `count` elements of a datatype at an address.
#[derive(Clone)]
pub(crate) struct Place {
    buf: usize,
    count: usize,
    datatype: c_int,
    /// Of the datatype: bytes from one element to the next (negative: backwards), bytes
    /// packed, and whether the elements are sent as they lie.
    extent: isize,
    packed: usize,
    contiguous: bool,
    /// A derived datatype's segments; `None` for a predefined one (one segment, its
    /// extent), so that the message path touches no table.
    segments: Option<Segments>,
    /// The one segment of a predefined datatype.
    whole: [(isize, usize); 1],
}

/// The size of a basic predefined datatype as MPICH encodes it in the handle (kind 0x4c,
/// bits 8..16), as [`type_info`] reads it; `None` for any other handle.
#[inline]
fn basic_size(datatype: c_int) -> Option<usize> {
    let bits = datatype as u32;
    let size = ((bits >> 8) & 0xff) as usize;
    (bits & 0xff00_0000 == 0x4c00_0000 && size > 0).then_some(size)
}

/// The bytes of `count` elements of a basic predefined datatype at `buf`, as they are
/// sent: the message path's common case, with no `Place` built or moved. `None` for any
/// other datatype, or a negative count (the general path reports it).
///
/// # Safety
/// `buf` holds the elements, readable for `'a`.
#[inline]
pub(crate) unsafe fn basic_bytes<'a>(
    buf: *const c_void,
    count: c_int,
    datatype: c_int,
) -> Option<MpiResult<&'a [u8]>> {
    let size = basic_size(datatype)?;
    let count = usize::try_from(count).ok()?;
    // SAFETY: the caller's contract; `count * size` fits (`count` < 2^31, `size` < 256).
    Some(unsafe { bytes(buf, count * size) })
}

/// As [`basic_bytes`], for a receive into the elements.
///
/// # Safety
/// `buf` has room for the elements, writable and unaliased for `'a`.
#[inline]
pub(crate) unsafe fn basic_bytes_mut<'a>(
    buf: *mut c_void,
    count: c_int,
    datatype: c_int,
) -> Option<MpiResult<&'a mut [u8]>> {
    let size = basic_size(datatype)?;
    let count = usize::try_from(count).ok()?;
    // SAFETY: the caller's contract; `count * size` fits (`count` < 2^31, `size` < 256).
    Some(unsafe { bytes_mut(buf, count * size) })
}

impl Place {
    pub fn new(buf: *const c_void, count: c_int, datatype: c_int) -> MpiResult<Self> {
        let count = crate::ptr::count(count)?;
        let (info, segments) = match basic_size(datatype) {
            // Its shape from the handle alone: the message path's common case.
            Some(size) => ((size as isize, size, true), None),
            None if is_derived(datatype) => {
                let (info, segments) = layout(datatype)?;
                ((info.extent, info.packed, info.contiguous), Some(segments))
            }
            None => {
                let (info, segments) = layout(datatype)?;
                (
                    (info.extent, info.packed, info.contiguous),
                    (!info.contiguous).then_some(segments),
                )
            }
        };
        let (extent, packed, contiguous) = info;
        if count > 0 && packed > 0 && buf.is_null() && contiguous {
            return fail(MPI_ERR_BUFFER, "the buffer is NULL");
        }
        // Only a predefined datatype uses it: its extent is its size.
        let whole = [(0, extent.unsigned_abs())];
        Ok(Place {
            buf: buf as usize,
            count,
            datatype,
            extent,
            packed,
            contiguous,
            segments,
            whole,
        })
    }

    /// The datatype of the elements.
    pub fn datatype(&self) -> c_int {
        self.datatype
    }

    /// Bytes one element takes packed.
    pub fn element_packed(&self) -> usize {
        self.packed
    }

    /// Bytes the data takes packed.
    pub fn packed_len(&self) -> usize {
        self.count * self.packed
    }

    /// Whether the data lies as it is sent.
    pub fn contiguous(&self) -> bool {
        self.contiguous
    }

    /// Each segment's address and length, in order.
    fn pieces(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let extent = self.extent;
        let segments = self.segments.as_deref().map_or(&self.whole[..], |s| &s[..]);
        (0..self.count as isize).flat_map(move |k| {
            segments.iter().map(move |&(offset, len)| {
                ((self.buf as isize).wrapping_add(k * extent + offset) as usize, len)
            })
        })
    }

    /// The data, borrowed where it lies contiguous, else packed.
    ///
    /// # Safety
    /// The place holds the elements, readable for `'a`.
    pub unsafe fn outgoing<'a>(&self) -> MpiResult<Cow<'a, [u8]>> {
        if self.contiguous() {
            // SAFETY: the caller's contract.
            return Ok(Cow::Borrowed(unsafe {
                bytes(self.buf as *const c_void, self.packed_len())
            }?));
        }
        let mut out = Vec::with_capacity(self.packed_len());
        for (at, len) in self.pieces() {
            // SAFETY: each segment lies in the elements, readable by the caller's contract.
            out.extend_from_slice(unsafe { bytes(at as *const c_void, len) }?);
        }
        Ok(Cow::Owned(out))
    }

    /// Writes `data` (packed) into the elements, up to its length.
    ///
    /// # Safety
    /// The place's elements are writable.
    pub unsafe fn unpack(&self, mut data: &[u8]) -> MpiResult {
        for (at, len) in self.pieces() {
            if data.is_empty() {
                break;
            }
            let n = len.min(data.len());
            // SAFETY: the segment lies in the elements, writable by the caller's contract.
            unsafe { bytes_mut(at as *mut c_void, n) }?.copy_from_slice(&data[..n]);
            data = &data[n..];
        }
        Ok(())
    }
}

/// The data of `count` elements at `buf`, packed into a copy.
///
/// # Safety
/// `buf` holds the elements.
pub(crate) unsafe fn copy(buf: *const c_void, count: c_int, datatype: c_int) -> MpiResult<Vec<u8>> {
    // SAFETY: the caller's contract.
    Ok(unsafe { Place::new(buf, count, datatype)?.outgoing() }?.into_owned())
}

/// The address of element `n` of `datatype` from `buf`.
pub(crate) fn element(buf: *const c_void, n: usize, datatype: c_int) -> MpiResult<*const c_void> {
    let extent = layout(datatype)?.0.extent;
    Ok((buf as usize).wrapping_add((n as isize).wrapping_mul(extent) as usize) as *const c_void)
}

/// Where a receive puts its bytes: the program's buffer, or a packed copy to unpack.
pub(crate) enum Incoming<'a> {
    Direct(&'a mut [u8]),
    Packed {
        data: Vec<u8>,
        place: Place,
    },
    /// A reduction's result as core's padded pair elements, narrowed and unpacked at the end.
    Widened {
        elements: Vec<u8>,
        pair: Padded,
        place: Place,
    },
}

impl<'a> Incoming<'a> {
    /// # Safety
    /// The place's elements are writable, unaliased, for `'a`.
    pub unsafe fn new(place: Place) -> MpiResult<Self> {
        if place.contiguous() {
            // SAFETY: the caller's contract.
            let direct = unsafe { bytes_mut(place.buf as *mut c_void, place.packed_len()) }?;
            return Ok(Incoming::Direct(direct));
        }
        Ok(Incoming::Packed { data: vec![0; place.packed_len()], place })
    }

    /// As [`Incoming::new`], holding the elements' present data (an in-out buffer).
    ///
    /// # Safety
    /// As for [`Incoming::new`].
    pub unsafe fn inout(place: Place) -> MpiResult<Self> {
        if place.contiguous() {
            // SAFETY: the caller's contract.
            return unsafe { Incoming::new(place) };
        }
        // SAFETY: the caller's contract.
        let data = unsafe { place.outgoing() }?.into_owned();
        Ok(Incoming::Packed { data, place })
    }

    /// Where a reduction's result goes, as core's elements (`pair`: padded pairs), its
    /// input too when `inout`. A predefined pair's elements lie in memory as core's do.
    ///
    /// # Safety
    /// As for [`Incoming::new`].
    pub unsafe fn reduced(
        place: Place,
        datatype: c_int,
        pair: Option<Padded>,
        inout: bool,
    ) -> MpiResult<Self> {
        let Some(pair) = pair else {
            // SAFETY: the caller's contract.
            return unsafe {
                if inout {
                    Incoming::inout(place)
                } else {
                    Incoming::new(place)
                }
            };
        };
        if !is_derived(datatype) {
            // A predefined type's extent is its size, never negative.
            let len = place.count * place.extent.unsigned_abs();
            // SAFETY: the caller's contract: `count` elements of `extent` bytes.
            let direct = unsafe { bytes_mut(place.buf as *mut c_void, len) }?;
            return Ok(Incoming::Direct(direct));
        }
        let elements = if inout {
            // SAFETY: the caller's contract.
            pair.widen(&unsafe { place.outgoing() }?)
        } else {
            vec![0; pair.widened_len(place.packed_len())]
        };
        Ok(Incoming::Widened { elements, pair, place })
    }

    pub fn bytes(&mut self) -> &mut [u8] {
        match self {
            Incoming::Direct(buf) => buf,
            Incoming::Packed { data, .. } => data,
            Incoming::Widened { elements, .. } => elements,
        }
    }

    /// Unpacks the first `len` bytes received, if they were received packed.
    ///
    /// # Safety
    /// As for [`Incoming::new`].
    pub unsafe fn finish(self, len: usize) -> MpiResult {
        match self {
            Incoming::Direct(_) => Ok(()),
            // SAFETY: the caller's contract.
            Incoming::Packed { data, place } => unsafe {
                place.unpack(&data[..len.min(data.len())])
            },
            // SAFETY: the caller's contract.
            Incoming::Widened { elements, pair, place } => unsafe {
                place.unpack(&pair.narrow(&elements[..len.min(elements.len())]))
            },
        }
    }
}

mpi_fn! {
    fn MPI_Pack / PMPI_Pack(inbuf: *const c_void, incount: c_int, datatype: c_int, outbuf: *mut c_void, outsize: c_int, position: *mut c_int, _comm: c_int) {
        let place = Place::new(inbuf, incount, datatype)?;
        let at = count(get(position)?)?;
        let data = place.outgoing()?;
        let out = bytes_mut(outbuf, count(outsize)?)?;
        let Some(room) = out.get_mut(at..at + data.len()) else {
            return fail(MPI_ERR_TRUNCATE, format!("{} bytes do not fit at {at} of {}", data.len(), out.len()));
        };
        room.copy_from_slice(&data);
        put(position, (at + data.len()) as c_int)
    }

    fn MPI_Unpack / PMPI_Unpack(inbuf: *const c_void, insize: c_int, position: *mut c_int, outbuf: *mut c_void, outcount: c_int, datatype: c_int, _comm: c_int) {
        let place = Place::new(outbuf, outcount, datatype)?;
        let at = count(get(position)?)?;
        let input = bytes(inbuf, count(insize)?)?;
        let Some(data) = input.get(at..at + place.packed_len()) else {
            return fail(MPI_ERR_TRUNCATE, format!("{} bytes are not there at {at} of {}", place.packed_len(), input.len()));
        };
        place.unpack(data)?;
        put(position, (at + place.packed_len()) as c_int)
    }

    fn MPI_Pack_size / PMPI_Pack_size(incount: c_int, datatype: c_int, _comm: c_int, size: *mut c_int) {
        let n = count(incount)? * layout(datatype)?.0.packed;
        put(size, c_int::try_from(n).unwrap_or(MPI_UNDEFINED))
    }
}
