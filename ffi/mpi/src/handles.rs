//! The hash of the handle tables: handles are small integers chosen by this library, so a
//! multiplicative hash serves (no defence against chosen keys is needed).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A table keyed by handles.
pub(crate) type HandleMap<V> = HashMap<std::ffi::c_int, V, BuildHasherDefault<HandleHasher>>;

/// Fibonacci hashing of one integer.
#[derive(Default)]
pub(crate) struct HandleHasher(u64);

impl Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_i32(&mut self, value: i32) {
        self.0 = u64::from(value as u32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}
