//! Who an endpoint is and where it can be reached.

use core::fmt;

use crate::av::{Lpid, Pgid};

/// A process: its group and its index in that group's address vector. Ordered by group,
/// then index; the order breaks the tie when two processes connect to each other at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Identity {
    /// The process group.
    pub pgid: Pgid,
    /// The index in the group.
    pub lpid: Lpid,
}

impl Identity {
    /// Process `lpid` of group `pgid`.
    pub const fn new(pgid: u16, lpid: Lpid) -> Self {
        Self { pgid: Pgid(pgid), lpid }
    }
}

impl fmt::Display for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.pgid.0, self.lpid)
    }
}

/// Bytes an [`Addr`] holds at most: an IPv6 socket address, or a verbs GID with its queue
/// pair number and key, fits.
pub const ADDR_MAX: usize = 32;

/// A transport address, opaque to the protocol: whatever the platform needs to send a
/// datagram to an endpoint (a socket address, a LID and QPN, a socket's token, an index
/// in a simulation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Addr {
    len: u8,
    bytes: [u8; ADDR_MAX],
}

impl Addr {
    /// The empty address (a confirm carries no address).
    pub const EMPTY: Addr = Addr { len: 0, bytes: [0; ADDR_MAX] };

    /// The address made of `bytes`; `None` when longer than [`ADDR_MAX`].
    pub fn new(bytes: &[u8]) -> Option<Self> {
        let mut a = Addr::EMPTY;
        a.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        a.len = bytes.len() as u8;
        Some(a)
    }

    /// An eight-byte address holding `v` little-endian (handy for indices and tokens).
    pub fn from_u64(v: u64) -> Self {
        let mut a = Addr { len: 8, bytes: [0; ADDR_MAX] };
        a.bytes[..8].copy_from_slice(&v.to_le_bytes());
        a
    }

    /// The address's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The value [`Addr::from_u64`] stored; `None` for an address of another length.
    pub fn to_u64(&self) -> Option<u64> {
        let b: [u8; 8] = self.as_bytes().try_into().ok()?;
        Some(u64::from_le_bytes(b))
    }
}

impl fmt::Debug for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Addr({:02x?})", self.as_bytes())
    }
}
