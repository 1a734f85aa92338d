//! Core's value-and-int elements, which keep C's padding (`PairF64I32` is 16 bytes, 12 of
//! them data), against packed data, which has none: a reduction widens its packed operand
//! to core's elements and narrows the result back.

use commcore::coll::{Datatype, Op};

/// A core pair element with padding: the value's bytes, where the int lies, the extent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Padded {
    value: usize,
    int_at: usize,
    extent: usize,
}

const INT: usize = 4;

/// The padded shape in which core reduces `op` on `dtype`, if it has padding: predefined
/// operations read the value and the int, a user one takes the element whole.
pub(crate) fn padded(dtype: Datatype, op: &Op) -> Option<Padded> {
    if !matches!(op, Op::Builtin(_)) {
        return None;
    }
    match dtype {
        Datatype::PairF64I32 | Datatype::PairI64I32 => {
            Some(Padded { value: 8, int_at: 8, extent: 16 })
        }
        Datatype::PairI16I32 => Some(Padded { value: 2, int_at: 4, extent: 8 }),
        _ => None,
    }
}

impl Padded {
    fn data(self) -> usize {
        self.value + INT
    }

    /// Bytes of core's elements for `packed` bytes of pairs.
    pub fn widened_len(self, packed: usize) -> usize {
        packed / self.data() * self.extent
    }

    /// Packed pairs as core's elements (padding zeroed).
    pub fn widen(self, packed: &[u8]) -> Vec<u8> {
        let mut out = vec![0; self.widened_len(packed.len())];
        for (pair, slot) in packed.chunks_exact(self.data()).zip(out.chunks_exact_mut(self.extent))
        {
            slot[..self.value].copy_from_slice(&pair[..self.value]);
            slot[self.int_at..self.int_at + INT].copy_from_slice(&pair[self.value..]);
        }
        out
    }

    /// Core's elements as packed pairs.
    pub fn narrow(self, elements: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(elements.len() / self.extent * self.data());
        for slot in elements.chunks_exact(self.extent) {
            out.extend_from_slice(&slot[..self.value]);
            out.extend_from_slice(&slot[self.int_at..self.int_at + INT]);
        }
        out
    }
}

/// A reduction's packed operand as core's elements.
pub(crate) fn widened(packed: Vec<u8>, pair: Option<Padded>) -> Vec<u8> {
    match pair {
        Some(pair) => pair.widen(&packed),
        None => packed,
    }
}
