//! A shared mapping of an anonymous memory file (`memfd`): nothing appears in `/dev/shm`,
//! and the memory disappears with the last process that maps it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// A `MAP_SHARED` mapping of a memory file, owned by this process.
pub struct Region {
    base: NonNull<u8>,
    len: usize,
    fd: OwnedFd,
    /// The CPU can prefetch a line for writing (`prefetchw`).
    prefetch_write: bool,
}

// SAFETY: the mapping is plain memory valid for the Region's lifetime; every access goes
// through atomics or through `copy_in`/`copy_out`, whose callers own the bytes they touch.
unsafe impl Send for Region {}
// SAFETY: as for Send; shared access is through atomics or protocol-owned byte ranges.
unsafe impl Sync for Region {}

impl Region {
    /// Creates a zeroed memory file of `len` bytes with owner-only permissions and maps it.
    /// The descriptor is close-on-exec; the launcher hands it to its ranks explicitly.
    pub fn create(len: usize) -> io::Result<Region> {
        // SAFETY: the name is a NUL-terminated literal; the flags are valid for memfd_create.
        let raw = unsafe { libc::memfd_create(c"commcore".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: fd is a valid descriptor for the calls below.
        if unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let size = libc::off_t::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "region too large"))?;
        // SAFETY: fd is a valid memfd; ftruncate extends it with zeroes.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), size) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Self::map(fd, len)
    }

    /// Maps the memory file inherited as descriptor `raw` (from the launcher); takes it over
    /// and makes it close-on-exec, so programs this process starts do not inherit it.
    pub fn open(raw: RawFd) -> io::Result<Region> {
        // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: stat points to writable memory of the right type.
        if unsafe { libc::fstat(raw, &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fstat succeeded, so raw is an open descriptor; the launcher handed it to
        // this process for the runtime alone, which takes ownership here.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Self::from_owned(fd)
    }

    /// Maps the memory file `fd` (received from another process), whole; makes the
    /// descriptor close-on-exec.
    pub fn from_owned(fd: OwnedFd) -> io::Result<Region> {
        // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: stat points to writable memory of the right type; fd is open.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let len = usize::try_from(stat.st_size)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad region size"))?;
        // SAFETY: fcntl on the descriptor this value owns.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Self::map(fd, len)
    }

    fn map(fd: OwnedFd, len: usize) -> io::Result<Region> {
        if len == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "empty region"));
        }
        // SAFETY: a fresh shared mapping of a valid descriptor; the kernel picks the address.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(ptr.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(Region { base, len, fd, prefetch_write: can_prefetch_write() })
    }

    /// The mapped length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never, once mapped).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The memory file's descriptor, borrowed, for handing over to another process.
    pub fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.fd)
    }

    /// The memory file's descriptor, for handing to child processes.
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn checked(&self, offset: usize, size: usize, align: usize) -> *mut u8 {
        // Offsets come from `Layout`, never from peers or users: a bad one is a bug.
        assert!(
            offset % align == 0 && offset.checked_add(size).is_some_and(|end| end <= self.len),
            "region access out of bounds: {offset}+{size} of {}",
            self.len
        );
        // SAFETY: offset + size <= len, so the pointer stays inside the mapping.
        unsafe { self.base.as_ptr().add(offset) }
    }

    /// Hints the CPU to bring the cache line at `offset` to this core now, so that a later
    /// access does not wait for it: for reading, or with `write`, owned, so that a store
    /// does not wait for other cores to drop their copies (and no locked instruction after
    /// it waits for that). Changes no memory; does nothing where unsupported.
    #[inline(always)]
    pub fn prefetch(&self, offset: usize, write: bool) {
        debug_assert!(offset < self.len, "prefetch out of bounds: {offset} of {}", self.len);
        let line = self.base.as_ptr().wrapping_add(offset);
        #[cfg(target_arch = "x86_64")]
        if write && self.prefetch_write {
            // SAFETY: a prefetch reads and writes no memory and never faults, whatever the
            // address; the CPU has the instruction (checked when mapped).
            unsafe {
                std::arch::asm!("prefetchw [{0}]", in(reg) line, options(nostack, preserves_flags))
            };
        } else {
            // SAFETY: as above; `prefetcht0` is part of every x86-64 CPU.
            unsafe {
                std::arch::asm!("prefetcht0 [{0}]", in(reg) line, options(nostack, preserves_flags))
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (line, write);
    }

    /// Maps the pages holding bytes `offset..offset + len` into this process now, writable
    /// when `write` (so that a first store takes no fault either), without changing what
    /// they hold. Fails on kernels before 5.14, which lack `MADV_POPULATE_*`.
    pub fn populate(&self, offset: usize, len: usize, write: bool) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.checked(offset, len, 1);
        let page = page_size();
        let start = offset / page * page;
        let end = (offset + len).next_multiple_of(page).min(self.len);
        let advice = if write { libc::MADV_POPULATE_WRITE } else { libc::MADV_POPULATE_READ };
        // SAFETY: `start..end` is page-aligned (the mapping starts on a page) and inside
        // the mapping (checked above, the end capped at its length); populating faults
        // pages in as a read or a write of nothing would, and changes no byte.
        let done =
            unsafe { libc::madvise(self.base.as_ptr().add(start).cast(), end - start, advice) };
        if done == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The 32-bit atomic at `offset` (4-aligned, inside the region).
    pub fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        let ptr = self.checked(offset, 4, 4);
        // SAFETY: aligned, in bounds, valid for the Region's lifetime, and only ever accessed
        // atomically by every process that maps it.
        unsafe { &*ptr.cast::<AtomicU32>() }
    }

    /// The 64-bit atomic at `offset` (8-aligned, inside the region).
    pub fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        let ptr = self.checked(offset, 8, 8);
        // SAFETY: as in atomic_u32, with 8-byte alignment checked.
        unsafe { &*ptr.cast::<AtomicU64>() }
    }

    /// Copies `src` into the region at `offset`.
    ///
    /// # Safety
    /// No other thread or process may access these bytes during the copy: the caller owns
    /// them under the queue protocol (a ring cell between the reader's head and the tail).
    pub unsafe fn copy_in(&self, offset: usize, src: &[u8]) {
        let dst = self.checked(offset, src.len(), 1);
        // SAFETY: dst is in bounds for src.len() bytes; exclusivity is the caller's contract;
        // the region cannot overlap a Rust slice the caller holds.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
    }

    /// The `len` bytes at `offset`, to read in place.
    ///
    /// # Safety
    /// No one may write these bytes while the slice lives (the caller reads them under a
    /// protocol that has their writer wait until it is done).
    pub unsafe fn bytes(&self, offset: usize, len: usize) -> &[u8] {
        let src = self.checked(offset, len, 1);
        // SAFETY: src is in bounds for len bytes and the mapping lives as long as `self`;
        // nothing writes them while the slice lives, per the contract.
        unsafe { std::slice::from_raw_parts(src, len) }
    }

    /// Copies bytes at `offset` out of the region into `dst`.
    ///
    /// # Safety
    /// No one may write these bytes during the copy (the caller owns them as the reader of
    /// a published cell).
    pub unsafe fn copy_out(&self, offset: usize, dst: &mut [u8]) {
        let src = self.checked(offset, dst.len(), 1);
        // SAFETY: src is in bounds for dst.len() bytes; no writer runs, per the contract.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) };
    }
}

/// Whether this CPU has `prefetchw`.
fn can_prefetch_write() -> bool {
    // CPUID leaf 0x8000_0001, ECX bit 8: PRFCHW (std's detection does not name it).
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)]
    // SAFETY: `cpuid` exists on every x86-64 CPU and only reads its identification.
    return unsafe {
        use std::arch::x86_64::__cpuid;
        __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
    };
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The system's page size.
fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1)
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: base/len describe the mapping created in `map`, unmapped exactly once here.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn populating_maps_pages_without_changing_them() {
        let page = page_size();
        let region = Region::create(3 * page + 100).unwrap();
        let words: Vec<usize> = (0..region.len() / 8).map(|i| i * 8).collect();
        for &at in &words {
            region.atomic_u64(at).store(at as u64 * 7 + 1, Relaxed);
        }
        // Unaligned ranges, the region's ragged end, and nothing at all.
        for (offset, len, write) in
            [(13, page, false), (page - 8, 2 * page, true), (3 * page, 100, true), (5, 0, true)]
        {
            region.populate(offset, len, write).unwrap();
        }
        for &at in &words {
            assert_eq!(region.atomic_u64(at).load(Relaxed), at as u64 * 7 + 1, "word at {at}");
        }
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn populating_outside_the_region_is_a_bug() {
        let region = Region::create(page_size()).unwrap();
        let _ = region.populate(page_size() - 4, 8, false);
    }
}
