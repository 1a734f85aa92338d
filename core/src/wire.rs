//! The point-to-point wire header: 32 bytes, little-endian, one meaning per field.
//!
//! ```text
//!  byte  0       2     3     4         8         12        16         20         24         32
//!        +-------+-----+-----+---------+---------+---------+----------+----------+----------+
//!        | magic | ver | kind| context | source  |   tag   | sequence | reserved |  length  |
//!        +-------+-----+-----+---------+---------+---------+----------+----------+----------+
//!          u16     u8    u8    u32       u32       i32       u32        u32 = 0    u64
//! ```
//!
//! - `magic` ([`MAGIC`]) and `version` ([`VERSION`]) reject bytes that are not a header of
//!   this format, e.g. a stream that lost its framing.
//! - `kind` ([`Kind`]): which step of a message's protocol this packet is.
//! - `context`: the communicator's context id, as the receiver's matching expects it.
//! - `source`: the communicator rank of the process that sent this packet, so the receiver
//!   knows it without translating the sender's process identity (no scan, no inverse map).
//! - `tag`: the message's MPI tag.
//! - `sequence`: the number of the message this packet belongs to, counted by the message's
//!   sender per destination. Packets of one rendezvous (request, clear-to-send, data, done)
//!   carry the same number, whichever side sends them.
//! - `reserved`: zero; a non-zero value is refused so a later version can give it a meaning.
//! - `length`: the message's total length in bytes (not this packet's payload length, which
//!   the transport's framing knows).
//!
//! [`Header::decode`] accepts any byte slice and never panics: too short, a wrong magic or
//! version, an unknown kind or a non-zero reserved word is a [`WireError`].

use core::fmt;

/// Bytes of an encoded header.
pub const HEADER_LEN: usize = 32;
/// The first two bytes of every header (`"CC"` little-endian).
pub const MAGIC: u16 = u16::from_le_bytes(*b"CC");
/// The header format this code writes and reads.
pub const VERSION: u8 = 1;

/// Which step of a message's protocol a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// The whole message; its payload follows the header.
    Eager = 1,
    /// Sender to receiver: a message of `length` bytes waits at the sender (no payload, or a
    /// descriptor of the sender's buffer for single-copy reads).
    RendezvousRequest = 2,
    /// Receiver to sender: the message matched a receive; send the data.
    RendezvousClear = 3,
    /// Sender to receiver: a part of the message's payload follows the header.
    RendezvousData = 4,
    /// Receiver to sender: the receiver holds the whole message (after a single-copy read),
    /// so the sender's buffer is free.
    RendezvousDone = 5,
}

impl Kind {
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            1 => Kind::Eager,
            2 => Kind::RendezvousRequest,
            3 => Kind::RendezvousClear,
            4 => Kind::RendezvousData,
            5 => Kind::RendezvousDone,
            _ => return None,
        })
    }
}

/// A decoded header. See the module documentation for each field's meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// The packet's step in its message's protocol.
    pub kind: Kind,
    /// The communicator's context id.
    pub context: u32,
    /// The sending process's rank in the communicator.
    pub source: u32,
    /// The MPI tag.
    pub tag: i32,
    /// The message's number at its sender, per destination.
    pub sequence: u32,
    /// The message's total length in bytes.
    pub length: u64,
}

/// Why bytes are not a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WireError {
    /// Fewer than [`HEADER_LEN`] bytes.
    TooShort {
        /// How many bytes there were.
        got: usize,
    },
    /// The first two bytes are not [`MAGIC`].
    BadMagic,
    /// The version byte is not [`VERSION`].
    UnsupportedVersion(u8),
    /// The kind byte names no [`Kind`].
    UnknownKind(u8),
    /// The reserved word is not zero.
    ReservedNonZero,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::TooShort { got } => {
                write!(f, "header needs {HEADER_LEN} bytes, got {got}")
            }
            WireError::BadMagic => f.write_str("not a commcore header (wrong magic bytes)"),
            WireError::UnsupportedVersion(v) => {
                write!(f, "header version {v} is not the supported version {VERSION}")
            }
            WireError::UnknownKind(k) => write!(f, "unknown packet kind {k}"),
            WireError::ReservedNonZero => f.write_str("reserved header word is not zero"),
        }
    }
}

fn u32_at(b: &[u8; HEADER_LEN], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Header {
    /// The 32 bytes of this header.
    #[inline]
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        b[2] = VERSION;
        b[3] = self.kind as u8;
        b[4..8].copy_from_slice(&self.context.to_le_bytes());
        b[8..12].copy_from_slice(&self.source.to_le_bytes());
        b[12..16].copy_from_slice(&self.tag.to_le_bytes());
        b[16..20].copy_from_slice(&self.sequence.to_le_bytes());
        b[24..32].copy_from_slice(&self.length.to_le_bytes());
        b
    }

    /// The header at the start of `bytes` (later bytes are the payload and are ignored).
    #[inline]
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        let b: &[u8; HEADER_LEN] = bytes
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(WireError::TooShort { got: bytes.len() })?;
        if u16::from_le_bytes([b[0], b[1]]) != MAGIC {
            return Err(WireError::BadMagic);
        }
        if b[2] != VERSION {
            return Err(WireError::UnsupportedVersion(b[2]));
        }
        let kind = Kind::from_byte(b[3]).ok_or(WireError::UnknownKind(b[3]))?;
        if u32_at(b, 20) != 0 {
            return Err(WireError::ReservedNonZero);
        }
        let mut length = [0u8; 8];
        length.copy_from_slice(&b[24..32]);
        Ok(Header {
            kind,
            context: u32_at(b, 4),
            source: u32_at(b, 8),
            tag: u32_at(b, 12) as i32,
            sequence: u32_at(b, 16),
            length: u64::from_le_bytes(length),
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sample() -> Header {
        Header {
            kind: Kind::RendezvousRequest,
            context: 0x0102_0304,
            source: 786_431,
            tag: -5,
            sequence: 9,
            length: 1 << 40,
        }
    }

    #[test]
    fn encoding_is_little_endian_at_fixed_offsets() {
        let b = sample().encode();
        assert_eq!(&b[0..4], &[b'C', b'C', VERSION, 2]);
        assert_eq!(&b[4..8], &[4, 3, 2, 1]);
        assert_eq!(&b[12..16], &(-5i32).to_le_bytes());
        assert_eq!(&b[20..24], &[0; 4]);
        assert_eq!(b[29], 1, "bit 40 of the length");
    }

    #[test]
    fn each_corruption_gets_its_error() {
        let good = sample().encode();
        assert_eq!(Header::decode(&good[..31]), Err(WireError::TooShort { got: 31 }));
        let mut b = good;
        b[0] = b'X';
        assert_eq!(Header::decode(&b), Err(WireError::BadMagic));
        let mut b = good;
        b[2] = 7;
        assert_eq!(Header::decode(&b), Err(WireError::UnsupportedVersion(7)));
        let mut b = good;
        b[3] = 0;
        assert_eq!(Header::decode(&b), Err(WireError::UnknownKind(0)));
        let mut b = good;
        b[22] = 1;
        assert_eq!(Header::decode(&b), Err(WireError::ReservedNonZero));
    }

    #[test]
    fn a_payload_after_the_header_is_ignored() {
        let mut b = std::vec::Vec::from(sample().encode());
        b.extend_from_slice(b"payload");
        assert_eq!(Header::decode(&b), Ok(sample()));
    }

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![
            Just(Kind::Eager),
            Just(Kind::RendezvousRequest),
            Just(Kind::RendezvousClear),
            Just(Kind::RendezvousData),
            Just(Kind::RendezvousDone),
        ]
    }

    proptest! {
        // Slow under miri, and core has no unsafe code for it to check here.
        #[test]
        #[cfg_attr(miri, ignore)]
        fn encode_then_decode_is_the_identity(
            kind in kind(), context: u32, source: u32, tag: i32, sequence: u32, length: u64,
        ) {
            let h = Header { kind, context, source, tag, sequence, length };
            prop_assert_eq!(Header::decode(&h.encode()), Ok(h));
        }

        #[test]
        #[cfg_attr(miri, ignore)]
        fn decode_of_any_bytes_never_panics_and_round_trips(
            bytes in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            if let Ok(h) = Header::decode(&bytes) {
                prop_assert_eq!(&h.encode()[..], &bytes[..HEADER_LEN]);
            }
        }

        #[test]
        #[cfg_attr(miri, ignore)]
        fn a_header_with_one_byte_changed_decodes_to_those_bytes_or_errs(
            at in 0..HEADER_LEN, xor in 1..=255u8, length: u64,
        ) {
            let mut b = Header { length, ..sample() }.encode();
            b[at] ^= xor;
            match Header::decode(&b) {
                Ok(h) => prop_assert_eq!(h.encode(), b),
                Err(_) => prop_assert!(at < 4 || (20..24).contains(&at)),
            }
        }
    }
}
