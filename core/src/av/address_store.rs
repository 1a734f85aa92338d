//! Side storage for addresses too large for an entry's 64-bit word.

use core::fmt;

/// Where a stored address lives in its [`AddressStore`]: an offset and a length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AddressHandle {
    offset: u32,
    len: u32,
}

impl AddressHandle {
    /// The handle packed into an entry's address word.
    pub const fn to_word(self) -> u64 {
        ((self.len as u64) << 32) | self.offset as u64
    }

    /// The handle an entry's address word holds.
    pub const fn from_word(word: u64) -> Self {
        Self { offset: word as u32, len: (word >> 32) as u32 }
    }

    /// Length of the stored address in bytes.
    pub const fn len(self) -> usize {
        self.len as usize
    }

    /// Whether the stored address is empty.
    pub const fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// Why an address cannot be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressStoreError {
    /// The store has `free` bytes left; the address needs `needed`.
    Full {
        /// Bytes the address needs.
        needed: usize,
        /// Bytes left.
        free: usize,
    },
}

impl fmt::Display for AddressStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full { needed, free } => {
                write!(f, "address store full: {needed} bytes needed, {free} free")
            }
        }
    }
}

/// Append-only storage for large addresses, in bytes the caller provides. Addresses are
/// written once when a process group's address vector is filled and live as long as it.
#[derive(Debug)]
pub struct AddressStore<'a> {
    bytes: &'a mut [u8],
    used: usize,
}

impl<'a> AddressStore<'a> {
    /// A store over `bytes` (at most 4 GiB are addressable).
    pub fn new(bytes: &'a mut [u8]) -> Self {
        let cap = bytes.len().min(u32::MAX as usize);
        Self { bytes: &mut bytes[..cap], used: 0 }
    }

    /// Copies `address` in and returns its handle.
    pub fn store(&mut self, address: &[u8]) -> Result<AddressHandle, AddressStoreError> {
        let free = self.bytes.len() - self.used;
        if address.len() > free {
            return Err(AddressStoreError::Full { needed: address.len(), free });
        }
        let start = self.used;
        self.bytes[start..start + address.len()].copy_from_slice(address);
        self.used += address.len();
        // Both fit in u32: the store is capped at u32::MAX bytes.
        Ok(AddressHandle { offset: start as u32, len: address.len() as u32 })
    }

    /// The address behind `handle`; `None` for a handle this store did not issue.
    pub fn get(&self, handle: AddressHandle) -> Option<&[u8]> {
        let start = handle.offset as usize;
        let end = start.checked_add(handle.len as usize)?;
        if end > self.used {
            return None;
        }
        self.bytes.get(start..end)
    }

    /// Bytes in use.
    pub fn used_bytes(&self) -> usize {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_returns_addresses_until_full() {
        let mut buf = [0u8; 40];
        let mut store = AddressStore::new(&mut buf);
        let a = store.store(&[1; 24]).unwrap();
        let b = store.store(&[2; 16]).unwrap();
        assert_eq!(store.get(a), Some(&[1u8; 24][..]));
        assert_eq!(store.get(b), Some(&[2u8; 16][..]));
        assert_eq!(AddressHandle::from_word(b.to_word()), b);
        assert_eq!(store.store(&[3]), Err(AddressStoreError::Full { needed: 1, free: 0 }));
        assert_eq!(store.get(AddressHandle::from_word((8 << 32) | 39)), None);
        assert_eq!(store.used_bytes(), 40);
    }
}
