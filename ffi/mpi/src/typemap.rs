//! The layouts of derived datatypes: the byte segments of one element, in type-map order,
//! with its bounds; built from older types placed at displacements.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::{Arc, Mutex, PoisonError};

use commcore::coll::Datatype;

use crate::consts::*;
use crate::datatype::{padded_pair, type_info, TypeInfo};
use crate::error::{fail, MpiResult};

/// The byte segments (offset from the element's address, length) of one element.
pub(crate) type Segments = Arc<Vec<(isize, usize)>>;

/// Kind bits of derived datatype handles (clear of the pair types' 0x8c00000x).
const TYPE_KIND: u32 = 0x8c10_0000;

struct Table {
    types: HashMap<c_int, (TypeInfo, Segments)>,
    next: u32,
}

static TYPES: Mutex<Option<Table>> = Mutex::new(None);

/// The derived datatype `handle`, if it exists.
pub(crate) fn lookup(handle: c_int) -> Option<(TypeInfo, Segments)> {
    let table = TYPES.lock().unwrap_or_else(PoisonError::into_inner);
    table.as_ref()?.types.get(&handle).cloned()
}

/// The layout of any datatype: a predefined one is one segment over its extent.
pub(crate) fn layout(handle: c_int) -> MpiResult<(TypeInfo, Segments)> {
    if is_derived(handle) {
        if let Some(found) = lookup(handle) {
            return Ok(found);
        }
    }
    let info = type_info(handle)?;
    // A predefined type's extent is its size, never negative.
    Ok((info, predefined_segments(handle, info.extent.unsigned_abs())))
}

/// Whether `handle` has the kind bits of a derived datatype this library made.
pub(crate) fn is_derived(handle: c_int) -> bool {
    (handle as u32) & 0xfff0_0000 == TYPE_KIND
}

/// The segments of predefined `handle`: its value and int where padding parts them, else
/// `[(0, extent)]`; shared (no allocation on the message path).
fn predefined_segments(handle: c_int, extent: usize) -> Segments {
    thread_local! {
        static MADE: std::cell::RefCell<HashMap<(c_int, usize), Segments>> = std::cell::RefCell::new(HashMap::new());
    }
    let key = if padded_pair(handle).is_some() { (handle, extent) } else { (0, extent) };
    MADE.with(|made| {
        let mut made = made.borrow_mut();
        let segments = made.entry(key).or_insert_with(|| {
            Arc::new(padded_pair(handle).map_or_else(|| vec![(0, extent)], |pair| pair.to_vec()))
        });
        segments.clone()
    })
}

/// Stores a new derived datatype; its handle.
pub(crate) fn add(info: TypeInfo, segments: Segments) -> c_int {
    let mut guard = TYPES.lock().unwrap_or_else(PoisonError::into_inner);
    let table = guard.get_or_insert_with(|| Table { types: HashMap::new(), next: 0 });
    table.next = (table.next + 1) & 0x000f_ffff;
    let handle = (TYPE_KIND | table.next) as c_int;
    table.types.insert(handle, (info, segments));
    handle
}

/// Removes derived datatype `handle`; whether it was one.
pub(crate) fn remove(handle: c_int) -> bool {
    let mut guard = TYPES.lock().unwrap_or_else(PoisonError::into_inner);
    guard.as_mut().and_then(|t| t.types.remove(&handle)).is_some()
}

/// A type map being built.
pub(crate) struct Builder {
    segments: Vec<(isize, usize)>,
    lb: Option<isize>,
    ub: Option<isize>,
    size: usize,
    elements: usize,
    basic: Option<usize>,
    align: usize,
    /// The one reduction type of every part, while they agree.
    reduces_as: Option<Option<Datatype>>,
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            segments: Vec::new(),
            lb: None,
            ub: None,
            size: 0,
            elements: 0,
            basic: None,
            align: 1,
            reduces_as: None,
        }
    }

    /// Places `n` consecutive elements of `old` at byte displacement `disp`; element `k`
    /// at `disp + k * extent`, backwards where the extent is negative.
    pub fn place(&mut self, old: &(TypeInfo, Segments), disp: isize, n: usize) -> MpiResult {
        let info = &old.0;
        let too_far = || fail(MPI_ERR_ARG, "the datatype spans more than the address space");
        if info.contiguous {
            self.place_run(info, disp, n)?;
        } else {
            self.place_each(old, disp, n)?;
        }
        if n > 0 {
            let (Some(size), Some(elements)) =
                (info.size.checked_mul(n), info.elements.checked_mul(n))
            else {
                return too_far();
            };
            self.size = self.size.saturating_add(size);
            self.elements = self.elements.saturating_add(elements);
            self.basic = Some(match self.basic {
                Some(b) if b != info.basic => 0,
                _ => info.basic,
            });
            self.align = self.align.max(info.align);
            self.reduces_as = Some(match self.reduces_as {
                Some(r) if r != info.reduces_as => None,
                _ => info.reduces_as,
            });
        }
        Ok(())
    }

    /// `n` elements of any type, one by one, `extent` bytes apart.
    fn place_each(&mut self, old: &(TypeInfo, Segments), disp: isize, n: usize) -> MpiResult {
        let (info, segments) = old;
        let too_far = || fail(MPI_ERR_ARG, "the datatype spans more than the address space");
        for k in 0..n {
            let base = isize::try_from(k)
                .ok()
                .and_then(|k| k.checked_mul(info.extent))
                .and_then(|o| disp.checked_add(o))
                .and_then(|base| base.checked_add(info.lb).map(|lb| (base, lb)))
                .and_then(|(base, lb)| lb.checked_add(info.extent).map(|ub| (base, lb, ub)));
            let Some((base, lb, ub)) = base else { return too_far() };
            for &(offset, len) in segments.iter() {
                let Some(at) = base.checked_add(offset) else { return too_far() };
                self.add_segment(at, len);
            }
            self.add_bounds(lb, ub);
        }
        Ok(())
    }

    /// `n` elements of a contiguous type (lower bound 0, one segment over its extent):
    /// one run of bytes with its bounds in closed form, however many elements (a type of
    /// 2^32 bytes is not walked byte by byte).
    fn place_run(&mut self, info: &TypeInfo, disp: isize, n: usize) -> MpiResult {
        if n == 0 {
            return Ok(());
        }
        // Contiguous: the extent is the data's size, never negative.
        let len = n.checked_mul(info.extent.unsigned_abs());
        let end = len.and_then(|l| isize::try_from(l).ok()).and_then(|l| disp.checked_add(l));
        let Some(end) = end else {
            return fail(MPI_ERR_ARG, "the datatype spans more than the address space");
        };
        if end > disp {
            self.add_segment(disp, (end - disp) as usize);
        }
        self.add_bounds(disp, end);
        Ok(())
    }

    /// Appends `len` bytes at `at`, joined to the last segment where they continue it.
    fn add_segment(&mut self, at: isize, len: usize) {
        match self.segments.last_mut() {
            Some(last) if last.0 + last.1 as isize == at => last.1 += len,
            _ => self.segments.push((at, len)),
        }
    }

    /// The bounds of all elements: the lowest lower and the highest upper bound, as MPICH
    /// takes them (an element of negative extent has its upper bound below its lower).
    fn add_bounds(&mut self, lb: isize, ub: isize) {
        self.lb = Some(self.lb.map_or(lb, |l| l.min(lb)));
        self.ub = Some(self.ub.map_or(ub, |u| u.max(ub)));
    }

    /// The finished type; a structure's extent is rounded up to its alignment.
    pub fn finish(self, aligned: bool) -> (TypeInfo, Segments) {
        let lb = self.lb.unwrap_or(0);
        let mut extent = self.ub.unwrap_or(0) - lb;
        // As MPICH pads: by C's remainder, so a negative extent moves up too.
        let align = self.align as isize;
        if aligned && extent % align != 0 {
            extent += align - extent % align;
        }
        let parts = Parts {
            size: self.size,
            elements: self.elements,
            basic: self.basic.unwrap_or(0),
            align: self.align,
        };
        bounds(self.segments, lb, extent, parts, self.reduces_as.flatten())
    }
}

/// What a type's parts add up to: data bytes, basic elements (and their size when all
/// are alike, else 0), and the strictest alignment.
#[derive(Clone, Copy)]
pub(crate) struct Parts {
    pub size: usize,
    pub elements: usize,
    pub basic: usize,
    pub align: usize,
}

impl From<TypeInfo> for Parts {
    fn from(info: TypeInfo) -> Parts {
        Parts { size: info.size, elements: info.elements, basic: info.basic, align: info.align }
    }
}

/// The type of `segments` with bounds `lb` and `extent`.
pub(crate) fn bounds(
    segments: Vec<(isize, usize)>,
    lb: isize,
    extent: isize,
    parts: Parts,
    reduces_as: Option<Datatype>,
) -> (TypeInfo, Segments) {
    let packed = segments.iter().map(|s| s.1).sum();
    let true_lb = segments.iter().map(|s| s.0).min().unwrap_or(0);
    let true_ub = segments.iter().map(|s| s.0 + s.1 as isize).max().unwrap_or(0);
    let contiguous = lb == 0
        && (segments.is_empty() && extent == 0
            || usize::try_from(extent).is_ok_and(|e| segments[..] == [(0, e)]));
    let info = TypeInfo {
        extent,
        lb,
        size: parts.size,
        packed,
        elements: parts.elements,
        basic: parts.basic,
        align: parts.align,
        contiguous,
        true_lb,
        true_extent: (true_ub - true_lb).max(0) as usize,
        reduces_as,
    };
    (info, Arc::new(segments))
}
