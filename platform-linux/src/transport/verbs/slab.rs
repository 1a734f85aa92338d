//! Registered memory the transport owns: `count` buffers of `size` bytes in one
//! page-aligned allocation, registered once. The device writes into a buffer while it is
//! posted; the transport reads it only after its completion, and writes one only while no
//! work request names it.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use super::device::{Device, DeviceError, MemoryKeys, Sge};

/// Buffers of one size in one registered allocation.
pub struct Slab {
    ptr: NonNull<u8>,
    layout: Layout,
    size: usize,
    count: usize,
    keys: Option<MemoryKeys>,
}

// SAFETY: the slab owns its allocation alone, as a `Box` would, and hands out references
// only through `&self`/`&mut self`; moving it to another thread moves that ownership.
unsafe impl Send for Slab {}

impl Slab {
    /// Allocates `count` zeroed buffers of `size` bytes and registers them with `device`.
    pub fn new(device: &mut impl Device, count: usize, size: usize) -> Result<Self, DeviceError> {
        let bytes =
            count.checked_mul(size).filter(|&b| b > 0).ok_or(DeviceError::Exhausted("memory"))?;
        let layout =
            Layout::from_size_align(bytes, 4096).map_err(|_| DeviceError::Exhausted("memory"))?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(DeviceError::Exhausted("memory"))?;
        let mut slab = Slab { ptr, layout, size, count, keys: None };
        // SAFETY: the allocation lives until `Drop`, which the owner runs only after
        // `deregister` (see `Slab::deregister`); nothing else hands it out.
        slab.keys = Some(unsafe { device.register(ptr.as_ptr(), bytes)? });
        Ok(slab)
    }

    /// Buffers in the slab.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Bytes of one buffer.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Registered bytes.
    pub fn bytes(&self) -> usize {
        self.layout.size()
    }

    /// The element naming the first `len` bytes of buffer `i`.
    pub fn sge(&self, i: usize, len: usize) -> Sge {
        debug_assert!(i < self.count && len <= self.size);
        let lkey = self.keys.map_or(0, |k| k.lkey);
        Sge { addr: self.ptr.as_ptr() as u64 + (i * self.size) as u64, len: len as u32, lkey }
    }

    /// Buffer `i`'s bytes, to read after its completion.
    pub fn buffer(&self, i: usize) -> &[u8] {
        assert!(i < self.count);
        // SAFETY: the range lies in the allocation; the device writes a buffer only while a
        // receive names it, and the transport reads it only between completion and repost.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(i * self.size), self.size) }
    }

    /// Buffer `i`'s bytes, to fill while no work request names it.
    pub fn buffer_mut(&mut self, i: usize) -> &mut [u8] {
        assert!(i < self.count);
        // SAFETY: as in `buffer`, and `&mut self` keeps other Rust references away.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(i * self.size), self.size) }
    }

    /// Deregisters the slab (before it is dropped, after its queue pairs are destroyed).
    pub fn deregister(&mut self, device: &mut impl Device) {
        if let Some(keys) = self.keys.take() {
            let _ = device.deregister(keys);
        }
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // A slab still registered is leaked rather than freed under the device.
        if self.keys.is_none() {
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
        }
    }
}
