//! The address-vector entry.

use core::fmt;

/// Index of a transport in the platform's [`TransportTable`](super::TransportTable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TransportId(pub u8);

/// The node a process runs on: processes with equal node ids share memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

/// A network address as stored in an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Address {
    /// Up to 64 bits held in the entry itself (an InfiniBand LID+QPN, a 63-bit libfabric
    /// address, a shared-memory slot).
    Inline(u64),
    /// A larger address, kept in an [`AddressStore`](super::AddressStore).
    Stored(super::AddressHandle),
}

/// Why an entry cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AveError {
    /// The node id needs more than [`Ave::NODE_BITS`] bits.
    NodeTooLarge(u32),
    /// The transport id needs more than [`Ave::TRANSPORT_BITS`] bits.
    TransportTooLarge(u8),
}

impl fmt::Display for AveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NodeTooLarge(n) => {
                write!(f, "node id {n} needs more than {} bits", Ave::NODE_BITS)
            }
            Self::TransportTooLarge(t) => {
                write!(f, "transport id {t} needs more than {} bits", Ave::TRANSPORT_BITS)
            }
        }
    }
}

/// One process's address-vector entry: 12 bytes, alignment 4.
///
/// Layout: the 64-bit address word (unaligned, so three entries share 36 bytes), then a
/// 32-bit word with the node id in the low [`Ave::NODE_BITS`] bits, the transport selector in
/// the next [`Ave::TRANSPORT_BITS`] and, in the top bit, whether the address word is a handle
/// into an [`AddressStore`](super::AddressStore) rather than the address itself.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C, packed(4))]
pub struct Ave {
    address: u64,
    meta: u32,
}

static_assertions::const_assert_eq!(core::mem::size_of::<Ave>(), 12);
static_assertions::const_assert_eq!(core::mem::align_of::<Ave>(), 4);

impl Ave {
    /// Bits of the node id.
    pub const NODE_BITS: u32 = 24;
    /// Bits of the transport selector: one suffices for two transports; seven are spare.
    pub const TRANSPORT_BITS: u32 = 7;
    const NODE_MASK: u32 = (1 << Self::NODE_BITS) - 1;
    const TRANSPORT_MASK: u32 = (1 << Self::TRANSPORT_BITS) - 1;
    const STORED_FLAG: u32 = 1 << 31;

    /// An entry for a process at `address`, reached through `transport`, on `node`.
    pub const fn new(
        address: Address,
        transport: TransportId,
        node: NodeId,
    ) -> Result<Self, AveError> {
        if node.0 > Self::NODE_MASK {
            return Err(AveError::NodeTooLarge(node.0));
        }
        if transport.0 as u32 > Self::TRANSPORT_MASK {
            return Err(AveError::TransportTooLarge(transport.0));
        }
        let (word, stored) = match address {
            Address::Inline(a) => (a, 0),
            Address::Stored(h) => (h.to_word(), Self::STORED_FLAG),
        };
        let meta = node.0 | ((transport.0 as u32) << Self::NODE_BITS) | stored;
        Ok(Self { address: word, meta })
    }

    /// An empty entry (address 0, transport 0, node 0): what storage is initialised with.
    pub const EMPTY: Self = Self { address: 0, meta: 0 };

    /// The address, inline or as a handle.
    #[inline]
    pub fn address(&self) -> Address {
        if self.meta & Self::STORED_FLAG == 0 {
            Address::Inline(self.address)
        } else {
            Address::Stored(super::AddressHandle::from_word(self.address))
        }
    }

    /// The raw 64-bit address word (the address, or a handle when stored): one load.
    #[inline]
    pub fn address_word(&self) -> u64 {
        self.address
    }

    /// The transport that reaches this process: a mask and a shift, no dereference.
    #[inline]
    pub fn transport(&self) -> TransportId {
        TransportId(((self.meta >> Self::NODE_BITS) & Self::TRANSPORT_MASK) as u8)
    }

    /// The node this process runs on.
    #[inline]
    pub fn node(&self) -> NodeId {
        NodeId(self.meta & Self::NODE_MASK)
    }
}

impl Default for Ave {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl fmt::Debug for Ave {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ave")
            .field("address", &self.address())
            .field("transport", &self.transport())
            .field("node", &self.node())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::av::AddressHandle;

    #[test]
    fn entry_is_twelve_bytes_aligned_to_four() {
        assert_eq!(core::mem::size_of::<Ave>(), 12);
        assert_eq!(core::mem::align_of::<Ave>(), 4);
        assert_eq!(core::mem::size_of::<[Ave; 3]>(), 36);
    }

    #[test]
    fn fields_round_trip_at_their_limits() {
        let max_node = NodeId((1 << Ave::NODE_BITS) - 1);
        let max_transport = TransportId((1 << Ave::TRANSPORT_BITS) - 1);
        for address in [0, 1, u64::MAX >> 1, u64::MAX] {
            let e = Ave::new(Address::Inline(address), max_transport, max_node).unwrap();
            assert_eq!(e.address(), Address::Inline(address));
            assert_eq!(e.address_word(), address);
            assert_eq!(e.transport(), max_transport);
            assert_eq!(e.node(), max_node);
        }
        let handle = AddressHandle::from_word((7 << 32) | 40);
        let e = Ave::new(Address::Stored(handle), TransportId(1), NodeId(3)).unwrap();
        assert_eq!(e.address(), Address::Stored(handle));
        assert_eq!((e.transport(), e.node()), (TransportId(1), NodeId(3)));
    }

    #[test]
    fn oversized_fields_are_errors() {
        let a = Address::Inline(1);
        assert_eq!(
            Ave::new(a, TransportId(0), NodeId(1 << 24)),
            Err(AveError::NodeTooLarge(1 << 24))
        );
        assert_eq!(Ave::new(a, TransportId(128), NodeId(0)), Err(AveError::TransportTooLarge(128)));
    }
}
