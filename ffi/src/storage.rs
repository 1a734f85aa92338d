//! Heap storage that core's borrowing structures point into, owned beside them.
//!
//! core takes its storage as borrowed slices (`&'a [Ave]`, `&'a [AtomicU32]`); a handle
//! owns both the storage and the structure borrowing it. The storage is allocated once,
//! never moved or resized, and freed only when its owner is dropped, which declares the
//! borrowing structures first (Rust drops fields in declaration order).

/// A heap slice handed out as `&'static` and freed on drop.
pub(crate) struct Storage<T>(*mut [T]);

// SAFETY: `Storage` is a `Box<[T]>` in all but name.
unsafe impl<T: Send> Send for Storage<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Storage<T> {}

impl<T> Storage<T> {
    /// Takes `items` onto the heap and returns the owner and a borrow of them that the
    /// caller must not use after the owner is dropped.
    pub(crate) fn new(items: Vec<T>) -> (Self, &'static mut [T]) {
        let ptr = Box::into_raw(items.into_boxed_slice());
        // SAFETY: `ptr` is a fresh, unique allocation; the owner does not touch it again
        // until it frees it in `drop`, after every borrower is gone (the module's rule).
        (Self(ptr), unsafe { &mut *ptr })
    }
}

impl<T> Drop for Storage<T> {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from `Box::into_raw` and is freed exactly once, here.
        drop(unsafe { Box::from_raw(self.0) });
    }
}
