//! Port names: the printable text `open_port` returns and `accept` / `connect` read.
//!
//! A port name tells a connecting job where the listener is and proves it was told:
//!
//! ```text
//! commcore-port:1;unix=<abstract socket name>;tcp=<ip:port>;token=<32 lowercase hex digits>
//! ```
//!
//! - `1` is the format version; any other version is refused, not guessed at.
//! - `unix=` (optional) names an abstract Unix socket: jobs on the same host (and network
//!   namespace) connect there and can hand each other shared-memory descriptors. No path in
//!   the file system is involved, so nothing is left behind.
//! - `tcp=` (optional) is an IP socket address reachable from other hosts and namespaces.
//!   At least one of the two is present; they appear in this order.
//! - `token=` is a random 128-bit value drawn by the platform; accept refuses a connection
//!   that does not present it, compared in constant time ([`Token::matches`]).
//!
//! Parsing is strict: one spelling per port (fields in order, canonical socket address,
//! lowercase hex), so that a name round-trips byte for byte and anything else is an error.
//! Names are at most [`PORT_NAME_MAX`] bytes, as `MPI_MAX_PORT_NAME` (1,024 with the NUL)
//! requires.

use core::fmt::{self, Write};
use core::net::SocketAddr;
use core::str::FromStr;

/// Bytes a port name holds at most (without a terminating NUL).
pub const PORT_NAME_MAX: usize = 1023;
/// Bytes an abstract Unix socket name may hold (the kernel's 108 less the leading NUL).
pub const UNIX_NAME_MAX: usize = 107;
/// Bytes of the random token.
pub const TOKEN_BYTES: usize = 16;
/// The format version this code writes and reads.
pub const VERSION: u32 = 1;

const PREFIX: &str = "commcore-port:";
const UNIX_KEY: &str = "unix=";
const TCP_KEY: &str = "tcp=";
const TOKEN_KEY: &str = "token=";
/// The longest canonical IP socket address text: `[` IPv6 with an IPv4 tail `]:65535`.
const TCP_TEXT_MAX: usize = 64;

/// The unguessable part of a port name: 128 random bits drawn by whoever opens the port.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Token(pub [u8; TOKEN_BYTES]);

impl Token {
    /// Whether `other` is this token, taking the same time whichever byte differs, so that
    /// a forger learns nothing from how long a refusal takes.
    pub fn matches(&self, other: &Token) -> bool {
        let mut difference = 0u8;
        for (a, b) in self.0.iter().zip(other.0.iter()) {
            difference |= core::hint::black_box(a ^ b);
        }
        core::hint::black_box(difference) == 0
    }
}

impl fmt::Debug for Token {
    // A token is a secret: debug output must not print it into logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(..)")
    }
}

/// Which part of a port name an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The `unix=` abstract socket name.
    Unix,
    /// The `tcp=` socket address.
    Tcp,
    /// The `token=` hex digits.
    Token,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::Unix => "unix",
            Field::Tcp => "tcp",
            Field::Token => "token",
        })
    }
}

/// Why a port name could not be written or read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortError {
    /// The caller's buffer is shorter than the name.
    BufferTooSmall {
        /// Bytes the name needs.
        needed: usize,
    },
    /// The text is longer than [`PORT_NAME_MAX`] bytes.
    TooLong {
        /// Its length.
        len: usize,
    },
    /// A byte outside printable ASCII (space and controls included).
    NotPrintable {
        /// Where it is.
        at: usize,
    },
    /// The text does not start with `commcore-port:`.
    NotAPort,
    /// The version is not one this code reads.
    UnsupportedVersion,
    /// Neither a `unix=` nor a `tcp=` address: nobody could connect.
    NoAddress,
    /// A field is missing, out of order, repeated or unknown.
    Layout,
    /// A field's value is malformed (bad characters, length, address or hex).
    BadValue(Field),
}

impl fmt::Display for PortError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortError::BufferTooSmall { needed } => {
                write!(f, "the buffer is too small for the port name: give it {needed} bytes")
            }
            PortError::TooLong { len } => write!(
                f,
                "the port name is {len} bytes, longer than {PORT_NAME_MAX}: pass the name open_port returned"
            ),
            PortError::NotPrintable { at } => write!(
                f,
                "the port name has a non-printable byte at {at}: pass the name open_port returned, without whitespace"
            ),
            PortError::NotAPort => {
                f.write_str("the text is not a commcore port name: it must start with \"commcore-port:\"")
            }
            PortError::UnsupportedVersion => write!(
                f,
                "the port name has an unsupported version: this build reads version {VERSION}"
            ),
            PortError::NoAddress => {
                f.write_str("the port name has no unix= or tcp= address: nobody could connect to it")
            }
            PortError::Layout => f.write_str(
                "the port name's fields are missing, repeated, unknown or out of order: expected unix=, tcp=, token=",
            ),
            PortError::BadValue(field) => {
                write!(f, "the port name's {field}= value is malformed")
            }
        }
    }
}

/// A parsed port name; the abstract socket name borrows from the parsed text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortName<'a> {
    /// The abstract Unix socket name (without the leading NUL), for jobs on this host.
    pub unix: Option<&'a str>,
    /// The TCP address, for jobs on other hosts or namespaces.
    pub tcp: Option<SocketAddr>,
    /// The token a connecting job must present.
    pub token: Token,
}

impl<'a> PortName<'a> {
    /// Writes the name into `buf` and returns its length; checks every field first, so
    /// a name this writes always parses back to itself.
    pub fn encode(&self, buf: &mut [u8]) -> Result<usize, PortError> {
        if self.unix.is_none() && self.tcp.is_none() {
            return Err(PortError::NoAddress);
        }
        if let Some(name) = self.unix {
            check_unix_name(name)?;
        }
        let mut out = SliceWriter { buf, len: 0 };
        // The writer never fails: it counts what does not fit.
        let _ = write!(out, "{PREFIX}{VERSION}");
        if let Some(name) = self.unix {
            let _ = write!(out, ";{UNIX_KEY}{name}");
        }
        if let Some(addr) = self.tcp {
            let _ = write!(out, ";{TCP_KEY}{addr}");
        }
        let _ = write!(out, ";{TOKEN_KEY}");
        for byte in self.token.0 {
            let _ = write!(out, "{byte:02x}");
        }
        let needed = out.len;
        if needed > PORT_NAME_MAX {
            return Err(PortError::TooLong { len: needed });
        }
        if needed > out.buf.len() {
            return Err(PortError::BufferTooSmall { needed });
        }
        Ok(needed)
    }

    /// Reads a port name, refusing anything but the one spelling [`encode`](Self::encode)
    /// writes.
    pub fn parse(text: &'a [u8]) -> Result<Self, PortError> {
        if text.len() > PORT_NAME_MAX {
            return Err(PortError::TooLong { len: text.len() });
        }
        if let Some(at) = text.iter().position(|b| !b.is_ascii_graphic()) {
            return Err(PortError::NotPrintable { at });
        }
        // Printable ASCII is UTF-8, so this cannot fail; map it to an error all the same.
        let text = core::str::from_utf8(text).map_err(|_| PortError::NotAPort)?;
        let rest = text.strip_prefix(PREFIX).ok_or(PortError::NotAPort)?;
        let mut fields = rest.split(';');
        let version = fields.next().unwrap_or("");
        if version != "1" {
            return Err(PortError::UnsupportedVersion);
        }
        let mut field = fields.next();
        let unix = match field.and_then(|f| f.strip_prefix(UNIX_KEY)) {
            Some(name) => {
                check_unix_name(name)?;
                field = fields.next();
                Some(name)
            }
            None => None,
        };
        let tcp = match field.and_then(|f| f.strip_prefix(TCP_KEY)) {
            Some(addr) => {
                field = fields.next();
                Some(parse_tcp(addr)?)
            }
            None => None,
        };
        let token = match field.and_then(|f| f.strip_prefix(TOKEN_KEY)) {
            Some(hex) => parse_token(hex)?,
            None => return Err(PortError::Layout),
        };
        if fields.next().is_some() {
            return Err(PortError::Layout);
        }
        if unix.is_none() && tcp.is_none() {
            return Err(PortError::NoAddress);
        }
        Ok(PortName { unix, tcp, token })
    }
}

/// An abstract socket name: 1 to [`UNIX_NAME_MAX`] bytes of letters, digits, `.`, `_`,
/// `-`, `/` (nothing that could end or split a field).
fn check_unix_name(name: &str) -> Result<(), PortError> {
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/');
    if name.is_empty() || name.len() > UNIX_NAME_MAX || !name.bytes().all(|b| allowed(&b)) {
        return Err(PortError::BadValue(Field::Unix));
    }
    Ok(())
}

/// An IP socket address in its canonical spelling (what `Display` writes), port not 0.
fn parse_tcp(text: &str) -> Result<SocketAddr, PortError> {
    let bad = PortError::BadValue(Field::Tcp);
    if text.len() > TCP_TEXT_MAX {
        return Err(bad);
    }
    let addr = SocketAddr::from_str(text).map_err(|_| bad)?;
    if addr.port() == 0 {
        return Err(bad);
    }
    let mut canonical = [0u8; TCP_TEXT_MAX];
    let mut out = SliceWriter { buf: &mut canonical, len: 0 };
    let _ = write!(out, "{addr}");
    if out.buf.get(..out.len) != Some(text.as_bytes()) {
        return Err(bad);
    }
    Ok(addr)
}

/// Exactly 32 lowercase hex digits.
fn parse_token(hex: &str) -> Result<Token, PortError> {
    let bad = PortError::BadValue(Field::Token);
    let digits = hex.as_bytes();
    if digits.len() != 2 * TOKEN_BYTES {
        return Err(bad);
    }
    let mut token = [0u8; TOKEN_BYTES];
    for (byte, pair) in token.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = (hex_digit(pair[0]).ok_or(bad)? << 4) | hex_digit(pair[1]).ok_or(bad)?;
    }
    Ok(Token(token))
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

/// Formats into a slice and counts what does not fit, so one pass gives both the text
/// and the size a larger buffer would need.
struct SliceWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if let Some(room) = self.buf.get_mut(self.len..end) {
            room.copy_from_slice(s.as_bytes());
        }
        self.len = end;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
