//! Socket helpers: listening and connecting without blocking, TCP_NODELAY, and the
//! encoding of socket addresses as the connection machine's opaque [`Addr`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd};

use commcore::conn::Addr;

/// A listening address as the handshake announces it: 4 or 16 address bytes, then the port
/// (big-endian). Stream tokens are 8 bytes, so the two never collide.
pub fn encode(addr: SocketAddr) -> Addr {
    let mut bytes = [0u8; 18];
    let len = match addr.ip() {
        IpAddr::V4(ip) => {
            bytes[..4].copy_from_slice(&ip.octets());
            4
        }
        IpAddr::V6(ip) => {
            bytes[..16].copy_from_slice(&ip.octets());
            16
        }
    };
    bytes[len..len + 2].copy_from_slice(&addr.port().to_be_bytes());
    Addr::new(&bytes[..len + 2]).unwrap_or(Addr::EMPTY)
}

/// The socket address [`encode`] made; `None` for any other address (e.g. a stream token).
pub fn decode(addr: &Addr) -> Option<SocketAddr> {
    let b = addr.as_bytes();
    let port = |at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
    match b.len() {
        6 => Some(SocketAddr::new(Ipv4Addr::new(b[0], b[1], b[2], b[3]).into(), port(4))),
        18 => {
            let octets: [u8; 16] = b[..16].try_into().ok()?;
            Some(SocketAddr::new(Ipv6Addr::from(octets).into(), port(16)))
        }
        _ => None,
    }
}

/// A nonblocking listener on `ip`, on a port the kernel picks.
pub fn listen(ip: IpAddr) -> io::Result<TcpListener> {
    let listener = TcpListener::bind(SocketAddr::new(ip, 0))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Begins a connection to `to` without waiting for it: the stream is writable once the
/// kernel finished the TCP handshake, and a failed one reports its error at the first
/// read or write.
pub fn connect_nonblocking(to: SocketAddr) -> io::Result<TcpStream> {
    let domain = if to.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: socket takes no pointers; the result is checked before use.
    let fd = unsafe {
        libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new socket we own; the stream closes it when dropped.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let (storage, len) = sockaddr(to);
    // SAFETY: storage holds a valid sockaddr of `len` bytes for the socket's family.
    let rc = unsafe {
        libc::connect(stream.as_raw_fd(), (&storage as *const libc::sockaddr_storage).cast(), len)
    };
    if rc != 0 {
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(error);
        }
    }
    stream.set_nodelay(true)?;
    Ok(stream)
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data for which all-zero bytes are valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Makes the next close of `stream` send a reset instead of a orderly end (SO_LINGER 0):
/// how a test makes a connection reset.
pub fn reset_on_close(stream: &TcpStream) -> io::Result<()> {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: linger is a valid value of the option's type and size.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_round_trip_and_tokens_are_not_addresses() {
        for text in ["127.0.0.1:4242", "[::1]:65535", "10.201.0.3:1"] {
            let addr: SocketAddr = text.parse().unwrap();
            assert_eq!(decode(&encode(addr)), Some(addr));
        }
        assert_eq!(decode(&Addr::from_u64(7)), None);
    }

    #[test]
    fn a_nonblocking_connect_reaches_a_listener() {
        let listener = listen(Ipv4Addr::LOCALHOST.into()).unwrap();
        let stream = connect_nonblocking(listener.local_addr().unwrap()).unwrap();
        assert!(stream.nodelay().unwrap());
        listener.set_nonblocking(false).unwrap();
        let (_, from) = listener.accept().unwrap();
        assert_eq!(from, stream.local_addr().unwrap());
    }
}
