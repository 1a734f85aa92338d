//! The words a multi-node communicator's node layout lives in, freed with the communicator.
//!
//! Core's collective table borrows its node layout, and the table lives in the
//! communicator: the words must stay put while the table exists and go when it goes.
//! [`LayoutWords`] owns them on the heap and hands the layout a borrow of them; the one
//! holder of both (the communicator's `BuiltinTable`) drops the table first.

use std::ptr::NonNull;

use commcore::coll::{LayoutError, NodeLayout};

/// Heap words that one [`NodeLayout`] borrows; freed on drop.
pub(super) struct LayoutWords {
    words: NonNull<[u32]>,
}

// SAFETY: the words are plain `u32`s only read through the layout after it is built;
// ownership moves with this handle like a `Box<[u32]>`.
unsafe impl Send for LayoutWords {}
// SAFETY: as for Send; `&LayoutWords` gives no access to the words at all.
unsafe impl Sync for LayoutWords {}

impl LayoutWords {
    /// The layout of ranks on `nodes` (one node id per rank) and the words it borrows. The
    /// layout must be dropped before the words: keep both in one struct, the layout (or
    /// what holds it) in a field declared before the words.
    pub(super) fn build(nodes: &[u32]) -> Result<(NodeLayout<'static>, LayoutWords), LayoutError> {
        let raw = Box::into_raw(vec![0u32; 4 * nodes.len() + 1].into_boxed_slice());
        // `raw` comes from `Box::into_raw`: never null.
        let handle = LayoutWords { words: NonNull::new(raw).expect("a box is never null") };
        // SAFETY: `raw` is valid and unique (fresh from the box); the layout's borrow ends
        // before `Drop` frees it, by the field order this function's contract requires.
        let words: &'static mut [u32] = unsafe { &mut *raw };
        let layout = NodeLayout::build(nodes, words)?;
        Ok((layout, handle))
    }
}

impl Drop for LayoutWords {
    fn drop(&mut self) {
        // SAFETY: `words` came from `Box::into_raw` in `build` and is freed once, here,
        // after the layout that borrowed it (see `build`).
        drop(unsafe { Box::from_raw(self.words.as_ptr()) });
    }
}
