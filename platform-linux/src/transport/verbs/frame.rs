//! What one RC send carries: an 8-byte prefix (kind, credits returned), then by kind core's
//! 32-byte wire header and the payload, a long message's announcement, or a control word.
//!
//! ```text
//!  0      1      2         4          8
//!  +------+------+---------+----------+-------------------------------------------+
//!  | kind | 0    | credits | 0        | Data: header, payload                     |
//!  +------+------+---------+----------+ Long: header, addr u64, rkey u32, id u64  |
//!                                     | Done: id u64                              |
//!                                     | Ready, Credit, Bye: nothing               |
//! ```

use commcore::wire::{Header, HEADER_LEN};

/// Bytes before a frame's body.
pub const PREFIX_LEN: usize = 8;
/// A long message's announcement after its header: address, key, id.
pub const LONG_LEN: usize = 20;

/// A frame's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A whole message: header and payload.
    Data,
    /// A long message: its header and where the receiver reads its payload.
    Long,
    /// The receiver has read a long message: the sender's buffer is free.
    Done,
    /// The connection is up at the responder (the initiator may send).
    Ready,
    /// Credits only.
    Credit,
    /// The sender finished: later sends to it are errors.
    Bye,
}

impl FrameKind {
    fn code(self) -> u8 {
        match self {
            FrameKind::Data => 1,
            FrameKind::Long => 2,
            FrameKind::Done => 3,
            FrameKind::Ready => 4,
            FrameKind::Credit => 5,
            FrameKind::Bye => 6,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => FrameKind::Data,
            2 => FrameKind::Long,
            3 => FrameKind::Done,
            4 => FrameKind::Ready,
            5 => FrameKind::Credit,
            6 => FrameKind::Bye,
            _ => return None,
        })
    }

    /// Whether a frame of this kind takes one of the receiver's credits (it is held until
    /// the receiver's owner takes it); control frames are consumed by the transport.
    pub fn takes_credit(self) -> bool {
        matches!(self, FrameKind::Data | FrameKind::Long)
    }
}

/// Where a long message's payload waits in its sender's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteBuffer {
    /// The address in the sender.
    pub addr: u64,
    /// The region's remote key.
    pub rkey: u32,
    /// The send's id, returned in the `Done` frame.
    pub id: u64,
}

/// A frame's prefix into `out[..PREFIX_LEN]`.
pub fn put_prefix(out: &mut [u8], kind: FrameKind, credits: u16) {
    out[..PREFIX_LEN].fill(0);
    out[0] = kind.code();
    out[2..4].copy_from_slice(&credits.to_le_bytes());
}

/// A long message's announcement body (after the prefix).
pub fn put_long(out: &mut [u8], header: &Header, remote: RemoteBuffer) -> usize {
    out[..HEADER_LEN].copy_from_slice(&header.encode());
    let rest = &mut out[HEADER_LEN..HEADER_LEN + LONG_LEN];
    rest[..8].copy_from_slice(&remote.addr.to_le_bytes());
    rest[8..12].copy_from_slice(&remote.rkey.to_le_bytes());
    rest[12..20].copy_from_slice(&remote.id.to_le_bytes());
    HEADER_LEN + LONG_LEN
}

/// A decoded frame, borrowing the receive buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A whole message.
    Data(Header, &'a [u8]),
    /// A long message's header and where its payload is.
    Long(Header, RemoteBuffer),
    /// A long message was read.
    Done(u64),
    /// See [`FrameKind::Ready`].
    Ready,
    /// See [`FrameKind::Credit`].
    Credit,
    /// See [`FrameKind::Bye`].
    Bye,
}

/// Decodes a received frame into its credits and body; `None` when it is not a frame.
pub fn parse(bytes: &[u8]) -> Option<(u16, Frame<'_>)> {
    let prefix = bytes.get(..PREFIX_LEN)?;
    let kind = FrameKind::from_code(prefix[0])?;
    let credits = u16::from_le_bytes([prefix[2], prefix[3]]);
    let body = &bytes[PREFIX_LEN..];
    let u64_at = |b: &[u8], at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
    };
    let frame = match kind {
        FrameKind::Data => {
            let header = Header::decode(body).ok()?;
            let payload = &body[HEADER_LEN..];
            (header.length == payload.len() as u64).then_some(Frame::Data(header, payload))?
        }
        FrameKind::Long => {
            let header = Header::decode(body).ok()?;
            let rest = body.get(HEADER_LEN..HEADER_LEN + LONG_LEN)?;
            let rkey = u32::from_le_bytes(rest[8..12].try_into().ok()?);
            let remote = RemoteBuffer { addr: u64_at(rest, 0)?, rkey, id: u64_at(rest, 12)? };
            Frame::Long(header, remote)
        }
        FrameKind::Done => Frame::Done(u64_at(body, 0)?),
        FrameKind::Ready => Frame::Ready,
        FrameKind::Credit => Frame::Credit,
        FrameKind::Bye => Frame::Bye,
    };
    Some((credits, frame))
}

#[cfg(test)]
mod tests {
    use super::*;
    use commcore::wire::Kind;

    fn header(length: u64) -> Header {
        Header { kind: Kind::Eager, context: 3, source: 1, tag: 9, sequence: 4, length }
    }

    #[test]
    fn frames_round_trip_and_garbage_is_refused() {
        let mut buf = [0u8; 128];
        put_prefix(&mut buf, FrameKind::Data, 7);
        buf[PREFIX_LEN..PREFIX_LEN + HEADER_LEN].copy_from_slice(&header(3).encode());
        buf[PREFIX_LEN + HEADER_LEN..PREFIX_LEN + HEADER_LEN + 3].copy_from_slice(b"abc");
        let n = PREFIX_LEN + HEADER_LEN + 3;
        assert_eq!(parse(&buf[..n]), Some((7, Frame::Data(header(3), &b"abc"[..]))));
        assert_eq!(parse(&buf[..n - 1]), None, "a payload shorter than its header says");

        let remote = RemoteBuffer { addr: 0xdead_beef, rkey: 5, id: 77 };
        put_prefix(&mut buf, FrameKind::Long, 0);
        let body = put_long(&mut buf[PREFIX_LEN..], &header(1 << 20), remote);
        assert_eq!(
            parse(&buf[..PREFIX_LEN + body]),
            Some((0, Frame::Long(header(1 << 20), remote)))
        );

        assert_eq!(parse(&[9, 0, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(parse(&[1, 0, 0]), None);
        put_prefix(&mut buf, FrameKind::Done, 1);
        assert_eq!(parse(&buf[..PREFIX_LEN + 4]), None, "a short done");
    }
}
