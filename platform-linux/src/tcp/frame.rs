//! Framing on a TCP stream: every frame is a 5-byte prefix (length of what follows as u32
//! little-endian, then a kind byte) and its body. A handshake frame's body is one datagram
//! of core's connection machine; a message frame's body is core's 32-byte wire header and
//! the message's payload.

use commcore::wire::{Header, HEADER_LEN};

/// Bytes before every frame's body.
pub const PREFIX_LEN: usize = 5;
/// The largest body a frame may carry: a larger length means the stream lost its framing
/// (or the peer is not one of ours), so the stream is dropped rather than a buffer grown.
pub const BODY_MAX: usize = 1 << 30;

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A datagram of the connection handshake.
    Handshake = 1,
    /// A wire header and its payload.
    Message = 2,
    /// The sender finished: it sends nothing more, and the stream's end is not a failure.
    Goodbye = 3,
}

/// The prefix and header of a message frame carrying `payload_len` bytes.
pub fn message_prefix(header: &Header, payload_len: usize) -> [u8; PREFIX_LEN + HEADER_LEN] {
    let mut out = [0u8; PREFIX_LEN + HEADER_LEN];
    out[..PREFIX_LEN].copy_from_slice(&prefix(FrameKind::Message, HEADER_LEN + payload_len));
    out[PREFIX_LEN..].copy_from_slice(&header.encode());
    out
}

/// A whole handshake frame.
pub fn handshake_frame(datagram: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PREFIX_LEN + datagram.len());
    out.extend_from_slice(&prefix(FrameKind::Handshake, datagram.len()));
    out.extend_from_slice(datagram);
    out
}

fn prefix(kind: FrameKind, body_len: usize) -> [u8; PREFIX_LEN] {
    let len = (body_len as u32).to_le_bytes();
    [len[0], len[1], len[2], len[3], kind as u8]
}

/// The whole goodbye frame.
pub fn goodbye_frame() -> Vec<u8> {
    prefix(FrameKind::Goodbye, 0).to_vec()
}

/// What the next bytes of a stream hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole frame yet: this many bytes are needed in all.
    Need(usize),
    /// A frame of `kind` whose body is `buffer[PREFIX_LEN..end]`.
    Frame {
        /// The frame's kind.
        kind: FrameKind,
        /// Where its body ends in the buffer.
        end: usize,
    },
    /// The prefix is not one of ours: an unknown kind or a body longer than [`BODY_MAX`].
    Corrupt,
}

/// Looks at the start of `buffer` for a frame.
pub fn parse(buffer: &[u8]) -> Parsed {
    let Some(prefix) = buffer.get(..PREFIX_LEN) else { return Parsed::Need(PREFIX_LEN) };
    let body = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
    let kind = match prefix[4] {
        1 => FrameKind::Handshake,
        2 => FrameKind::Message,
        3 => FrameKind::Goodbye,
        _ => return Parsed::Corrupt,
    };
    if body > BODY_MAX || (kind == FrameKind::Message && body < HEADER_LEN) {
        return Parsed::Corrupt;
    }
    let end = PREFIX_LEN + body;
    if buffer.len() < end {
        Parsed::Need(end)
    } else {
        Parsed::Frame { kind, end }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use commcore::wire::Kind;

    fn header(length: u64) -> Header {
        Header { kind: Kind::Eager, context: 7, source: 3, tag: -2, sequence: 9, length }
    }

    #[test]
    fn a_message_frame_parses_back_after_its_last_byte_arrives() {
        let mut bytes = message_prefix(&header(4), 4).to_vec();
        bytes.extend_from_slice(b"abcd");
        for cut in 0..bytes.len() {
            assert!(matches!(parse(&bytes[..cut]), Parsed::Need(n) if n > cut), "cut {cut}");
        }
        assert_eq!(parse(&bytes), Parsed::Frame { kind: FrameKind::Message, end: bytes.len() });
        let decoded = Header::decode(&bytes[PREFIX_LEN..]).unwrap();
        assert_eq!(decoded, header(4));
    }

    #[test]
    fn handshake_frames_carry_their_datagram() {
        let frame = handshake_frame(b"xyz");
        assert_eq!(parse(&frame), Parsed::Frame { kind: FrameKind::Handshake, end: 8 });
        assert_eq!(&frame[PREFIX_LEN..], b"xyz");
    }

    #[test]
    fn unknown_kinds_and_oversized_or_headerless_bodies_are_corrupt() {
        assert_eq!(parse(&[1, 0, 0, 0, 9]), Parsed::Corrupt);
        assert_eq!(parse(&goodbye_frame()), Parsed::Frame { kind: FrameKind::Goodbye, end: 5 });
        assert_eq!(parse(&[0xff, 0xff, 0xff, 0x7f, 1]), Parsed::Corrupt);
        assert_eq!(parse(&[4, 0, 0, 0, 2]), Parsed::Corrupt);
    }
}
