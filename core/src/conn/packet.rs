//! The handshake's three datagrams and their fixed little-endian encoding.
//!
//! ```text
//!  byte 0     2   3    4       20         26         32      40      48      56     57
//!       +-----+---+----+-------+----------+----------+-------+-------+-------+------+------+
//!       |magic|ver|kind| token |  sender  | receiver |nonce_i|nonce_r| count | alen | addr |
//!       +-----+---+----+-------+----------+----------+-------+-------+-------+------+------+
//!        u16   u8  u8   16 B    pgid u16   pgid u16   u64     u64     u64     u8    alen B
//!                               lpid u32   lpid u32
//! ```
//!
//! `nonce_i` is the initiator's nonce (non-zero), `nonce_r` the responder's (zero in a
//! request, non-zero otherwise). `count` is a value of the sender's count of the attempts
//! it has begun: in a request, the count when this attempt began (its number); in an accept
//! or confirm, the count when it was sent. `addr` is the sender's own address (empty in a
//! confirm). A datagram is exactly `57 + alen` bytes.

use core::fmt;

use super::identity::{Addr, Identity, ADDR_MAX};

/// The most bytes a handshake datagram takes.
pub const PACKET_MAX: usize = FIXED_LEN + ADDR_MAX;
const FIXED_LEN: usize = 57;
const MAGIC: u16 = u16::from_le_bytes(*b"CH");
const VERSION: u8 = 1;

/// The step of the handshake a datagram is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum PacketKind {
    /// Initiator → responder: "connect me", with the initiator's address.
    Request,
    /// Responder → initiator: "accepted", with the responder's nonce and address.
    Accept,
    /// Initiator → responder: "both nonces seen"; the connection is up on both sides.
    Confirm,
}

/// One decoded handshake datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Packet {
    pub kind: PacketKind,
    pub token: u128,
    pub sender: Identity,
    pub receiver: Identity,
    pub initiator_nonce: u64,
    pub responder_nonce: u64,
    pub count: u64,
    pub addr: Addr,
}

/// Why bytes are not a handshake datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Malformed {
    Length,
    Magic,
    Version,
    Kind,
    Nonce,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Malformed::Length => "datagram length does not match its address length",
            Malformed::Magic => "not a handshake datagram (wrong magic)",
            Malformed::Version => "unsupported handshake version",
            Malformed::Kind => "unknown handshake datagram kind",
            Malformed::Nonce => "nonce fields do not fit the datagram kind",
        })
    }
}

fn put_identity(b: &mut [u8], id: Identity) {
    b[..2].copy_from_slice(&id.pgid.0.to_le_bytes());
    b[2..6].copy_from_slice(&id.lpid.to_le_bytes());
}

fn get<const L: usize>(b: &[u8], at: usize) -> [u8; L] {
    let mut out = [0u8; L];
    out.copy_from_slice(&b[at..at + L]);
    out
}

fn get_identity(b: &[u8], at: usize) -> Identity {
    Identity::new(u16::from_le_bytes(get(b, at)), u32::from_le_bytes(get(b, at + 2)))
}

impl Packet {
    /// Writes the datagram into `out` and returns its length.
    pub fn encode(&self, out: &mut [u8; PACKET_MAX]) -> usize {
        let addr = self.addr.as_bytes();
        out[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        out[2] = VERSION;
        out[3] = match self.kind {
            PacketKind::Request => 1,
            PacketKind::Accept => 2,
            PacketKind::Confirm => 3,
        };
        out[4..20].copy_from_slice(&self.token.to_le_bytes());
        put_identity(&mut out[20..26], self.sender);
        put_identity(&mut out[26..32], self.receiver);
        out[32..40].copy_from_slice(&self.initiator_nonce.to_le_bytes());
        out[40..48].copy_from_slice(&self.responder_nonce.to_le_bytes());
        out[48..56].copy_from_slice(&self.count.to_le_bytes());
        out[56] = addr.len() as u8;
        out[FIXED_LEN..FIXED_LEN + addr.len()].copy_from_slice(addr);
        FIXED_LEN + addr.len()
    }

    /// The datagram in `b`, checked field by field; never panics.
    pub fn decode(b: &[u8]) -> Result<Self, Malformed> {
        if b.len() < FIXED_LEN || b.len() != FIXED_LEN + usize::from(b[FIXED_LEN - 1]) {
            return Err(Malformed::Length);
        }
        if u16::from_le_bytes(get(b, 0)) != MAGIC {
            return Err(Malformed::Magic);
        }
        if b[2] != VERSION {
            return Err(Malformed::Version);
        }
        let kind = match b[3] {
            1 => PacketKind::Request,
            2 => PacketKind::Accept,
            3 => PacketKind::Confirm,
            _ => return Err(Malformed::Kind),
        };
        let initiator_nonce = u64::from_le_bytes(get(b, 32));
        let responder_nonce = u64::from_le_bytes(get(b, 40));
        let nonces_fit =
            initiator_nonce != 0 && ((kind == PacketKind::Request) == (responder_nonce == 0));
        if !nonces_fit {
            return Err(Malformed::Nonce);
        }
        Ok(Packet {
            kind,
            token: u128::from_le_bytes(get(b, 4)),
            sender: get_identity(b, 20),
            receiver: get_identity(b, 26),
            initiator_nonce,
            responder_nonce,
            count: u64::from_le_bytes(get(b, 48)),
            addr: Addr::new(&b[FIXED_LEN..]).ok_or(Malformed::Length)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sample(kind: PacketKind) -> Packet {
        Packet {
            kind,
            token: 0x0011_2233_4455_6677_8899_aabb_ccdd_eeff,
            sender: Identity::new(3, 70_000),
            receiver: Identity::new(0, 1),
            initiator_nonce: 42,
            responder_nonce: if kind == PacketKind::Request { 0 } else { 7 },
            count: 1 << 33,
            addr: Addr::new(b"10.0.0.1:5000").unwrap(),
        }
    }

    #[test]
    fn every_kind_round_trips() {
        for kind in [PacketKind::Request, PacketKind::Accept, PacketKind::Confirm] {
            let p = sample(kind);
            let mut buf = [0u8; PACKET_MAX];
            let n = p.encode(&mut buf);
            assert_eq!(n, FIXED_LEN + 13);
            assert_eq!(Packet::decode(&buf[..n]), Ok(p));
        }
    }

    #[test]
    fn each_corruption_is_named() {
        let mut buf = [0u8; PACKET_MAX];
        let n = sample(PacketKind::Accept).encode(&mut buf);
        assert_eq!(Packet::decode(&buf[..n - 1]), Err(Malformed::Length));
        assert_eq!(Packet::decode(&buf[..10]), Err(Malformed::Length));
        for (at, value, err) in [
            (0, b'X', Malformed::Magic),
            (2, 9, Malformed::Version),
            (3, 4, Malformed::Kind),
            (40, 0, Malformed::Nonce),
        ] {
            let mut b = buf;
            b[at] = value;
            if at == 40 {
                b[40..48].fill(0);
            }
            assert_eq!(Packet::decode(&b[..n]), Err(err), "byte {at}");
        }
        let mut b = buf;
        b[3] = 1; // a request must carry no responder nonce
        assert_eq!(Packet::decode(&b[..n]), Err(Malformed::Nonce));
    }

    proptest! {
        // Slow under miri, and core has no unsafe code for it to check here.
        #[test]
        #[cfg_attr(miri, ignore)]
        fn decode_of_any_bytes_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            if let Ok(p) = Packet::decode(&bytes) {
                let mut buf = [0u8; PACKET_MAX];
                let n = p.encode(&mut buf);
                prop_assert_eq!(&buf[..n], &bytes[..]);
            }
        }
    }
}
