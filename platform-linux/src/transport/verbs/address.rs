//! A process's verbs address, and its encodings: in the start-up exchange (text) and in the
//! handshake's datagrams (core's opaque [`Addr`]), with or without the reliable queue pair
//! a connection is made with.

use std::fmt;

use commcore::conn::Addr;

use super::device::{Gid, Qpn, RcDest, UdDest};

/// The queue key every commcore UD queue pair uses: datagrams are checked by the job's
/// token in the handshake, so the key only keeps other users of the port out.
pub const QKEY: u32 = 0x0c0c_0c0c;

/// Where a process's UD queue pair is: what its address-vector entry leads to over verbs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct VerbsAddress {
    /// The port's GID.
    pub gid: Gid,
    /// The port's LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The UD queue pair's number.
    pub qpn: Qpn,
    /// The UD queue pair's key.
    pub qkey: u32,
}

/// A connection's far end as the handshake announces it: the UD address and the reliable
/// queue pair made for this connection, with its first packet sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Announced {
    /// The UD address.
    pub ud: VerbsAddress,
    /// The RC queue pair and its first sequence number.
    pub rc: Option<(Qpn, u32)>,
}

const UD_LEN: usize = 22;
const RC_LEN: usize = UD_LEN + 8;

impl VerbsAddress {
    /// Where datagrams to this address go.
    pub fn ud_dest(&self) -> UdDest {
        UdDest { gid: self.gid, lid: self.lid, qpn: self.qpn, qkey: self.qkey }
    }

    /// The address as the handshake carries it (the key is [`QKEY`] for every process).
    pub fn to_addr(&self) -> Addr {
        self.announce(None)
    }

    /// The address with a connection's RC queue pair, as the handshake carries it.
    pub fn announce(&self, rc: Option<(Qpn, u32)>) -> Addr {
        let mut b = [0u8; RC_LEN];
        b[..16].copy_from_slice(&self.gid.0);
        b[16..18].copy_from_slice(&self.lid.to_le_bytes());
        b[18..22].copy_from_slice(&self.qpn.0.to_le_bytes());
        let len = match rc {
            Some((qpn, psn)) => {
                b[22..26].copy_from_slice(&qpn.0.to_le_bytes());
                b[26..30].copy_from_slice(&psn.to_le_bytes());
                RC_LEN
            }
            None => UD_LEN,
        };
        Addr::new(&b[..len]).unwrap_or(Addr::EMPTY)
    }

    /// The text the start-up exchange carries: `gid-hex:lid:qpn:qkey`.
    pub fn to_text(&self) -> String {
        let gid: String = self.gid.0.iter().map(|b| format!("{b:02x}")).collect();
        format!("{gid}:{}:{}:{}", self.lid, self.qpn.0, self.qkey)
    }

    /// Parses [`VerbsAddress::to_text`]'s form.
    pub fn from_text(text: &str) -> Option<Self> {
        let mut parts = text.split(':');
        let hex = parts.next()?;
        if hex.len() != 32 {
            return None;
        }
        let mut gid = [0u8; 16];
        for (i, byte) in gid.iter_mut().enumerate() {
            *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        let lid = parts.next()?.parse().ok()?;
        let qpn = Qpn(parts.next()?.parse().ok()?);
        let qkey = parts.next()?.parse().ok()?;
        parts.next().is_none().then_some(Self { gid: Gid(gid), lid, qpn, qkey })
    }
}

impl Announced {
    /// Decodes a handshake address; `None` for bytes that are not one.
    pub fn from_addr(addr: &Addr) -> Option<Self> {
        let b = addr.as_bytes();
        if b.len() != UD_LEN && b.len() != RC_LEN {
            return None;
        }
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[..16]);
        let lid = u16::from_le_bytes([b[16], b[17]]);
        let ud = VerbsAddress { gid: Gid(gid), lid, qpn: Qpn(word(18)), qkey: QKEY };
        let rc = (b.len() == RC_LEN).then(|| (Qpn(word(22)), word(26)));
        Some(Self { ud, rc })
    }

    /// What the local RC queue pair needs to connect to this end; `None` without one.
    pub fn rc_dest(&self) -> Option<RcDest> {
        let (qpn, psn) = self.rc?;
        Some(RcDest { gid: self.ud.gid, lid: self.ud.lid, qpn, psn })
    }
}

impl fmt::Display for VerbsAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> VerbsAddress {
        let mut gid = [0u8; 16];
        gid[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 2, 15]);
        VerbsAddress { gid: Gid(gid), lid: 7, qpn: Qpn(0x11_2233), qkey: QKEY }
    }

    #[test]
    fn text_and_handshake_forms_round_trip() {
        let a = sample();
        assert_eq!(VerbsAddress::from_text(&a.to_text()), Some(a));
        let plain = Announced::from_addr(&a.to_addr()).unwrap();
        assert_eq!((plain.ud, plain.rc), (a, None));
        let with_rc = Announced::from_addr(&a.announce(Some((Qpn(0x42), 0xabcdef)))).unwrap();
        assert_eq!(with_rc.rc, Some((Qpn(0x42), 0xabcdef)));
        assert_eq!(with_rc.rc_dest().unwrap().qpn, Qpn(0x42));
    }

    #[test]
    fn malformed_forms_are_refused() {
        for bad in ["", "zz:1:2:3", &"0".repeat(32), &format!("{}:1:2:3:4", "0".repeat(32))] {
            assert_eq!(VerbsAddress::from_text(bad), None, "{bad:?}");
        }
        assert_eq!(Announced::from_addr(&Addr::from_u64(5)), None);
    }
}
