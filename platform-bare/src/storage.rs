//! Static memory: cells a kernel takes once, and arenas sized by const generics.
//!
//! A kernel declares its storage as `static` items (zero-initialised, so they land in
//! `.bss` and cost nothing in the image) and takes each once at boot. Taking goes through
//! a spin lock that is never released, so the `&'static mut` it returns is unique without
//! any `unsafe`.

use core::fmt;
use core::sync::atomic::AtomicU32;

use commcore::av::Ave;

/// A cell was taken twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyTaken;

impl fmt::Display for AlreadyTaken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("static storage already taken: take each cell once, at boot")
    }
}

/// A value in static memory that one caller takes for the rest of the program.
#[derive(Debug)]
pub struct StaticCell<T> {
    inner: spin::Mutex<T>,
}

impl<T> StaticCell<T> {
    /// A cell holding `value` (a `const` expression when the cell is a `static`).
    pub const fn new(value: T) -> Self {
        Self { inner: spin::Mutex::new(value) }
    }

    /// The value, mutably and for good: the first call wins, later ones get
    /// [`AlreadyTaken`]. The lock is leaked, so no one else can reach the value.
    pub fn take(&'static self) -> Result<&'static mut T, AlreadyTaken> {
        self.inner.try_lock().map(spin::MutexGuard::leak).ok_or(AlreadyTaken)
    }

    /// Bytes the cell occupies (the value plus the lock word).
    pub const fn bytes(&self) -> usize {
        core::mem::size_of::<Self>()
    }
}

/// Address-vector storage for `N` processes: `12 * N` bytes, all entries empty.
pub type AvStorage<const N: usize> = StaticCell<[Ave; N]>;

/// An [`AvStorage`] with every entry empty (`const`, so it can initialise a `static`).
pub const fn av_storage<const N: usize>() -> AvStorage<N> {
    StaticCell::new([Ave::EMPTY; N])
}

/// Words for rank-map tables (luts and mluts), handed to a
/// [`TableArena`](commcore::rankmap::TableArena). Tables are shared read-only between rank
/// maps through atomics, so a `static` of this type is used in place: no taking needed.
#[derive(Debug)]
pub struct TableWords<const N: usize> {
    words: [AtomicU32; N],
}

impl<const N: usize> TableWords<N> {
    /// `N` zeroed words.
    pub const fn new() -> Self {
        Self { words: [const { AtomicU32::new(0) }; N] }
    }

    /// The words, for `TableArena::new`.
    pub fn words(&self) -> &[AtomicU32] {
        &self.words
    }
}

impl<const N: usize> Default for TableWords<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Slots of a flat CID store ([`Flat`](commcore::cid::store::Flat)) for CIDs `0..N`,
/// mapping each to a communicator handle `H`.
pub type CidSlots<H, const N: usize> = StaticCell<[Option<H>; N]>;

/// A [`CidSlots`] with every slot empty.
pub const fn cid_slots<H: Copy, const N: usize>() -> CidSlots<H, N> {
    StaticCell::new([None; N])
}

#[cfg(test)]
mod tests {
    use super::*;
    use commcore::av::{Address, NodeId, TransportId};

    static AV: AvStorage<4> = av_storage();
    static SLOTS: CidSlots<u16, 8> = cid_slots();
    static WORDS: TableWords<16> = TableWords::new();

    #[test]
    fn a_cell_is_taken_once_and_keeps_its_writes() {
        let av = AV.take().unwrap();
        assert_eq!(av.len(), 4);
        av[3] = Ave::new(Address::Inline(7), TransportId(0), NodeId(1)).unwrap();
        assert_eq!(AV.take().unwrap_err(), AlreadyTaken);
        assert_eq!(av[3].address_word(), 7);
        assert!(AV.bytes() >= 48);
        let slots = SLOTS.take().unwrap();
        assert!(slots.iter().all(Option::is_none));
        assert!(SLOTS.take().is_err());
    }

    #[test]
    fn table_words_start_zeroed() {
        use core::sync::atomic::Ordering::Relaxed;
        assert_eq!(WORDS.words().len(), 16);
        assert!(WORDS.words().iter().all(|w| w.load(Relaxed) == 0));
    }
}
