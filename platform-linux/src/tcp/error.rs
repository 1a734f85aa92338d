//! What can go wrong on TCP, always naming the peer rank concerned.

use std::fmt;
use std::io;

/// Why a peer is unusable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerFault {
    /// The connection handshake got no answer before its deadline (the rank is gone, hung,
    /// or unreachable).
    NoAnswer,
    /// The rank asked to connect, was accepted, and never confirmed.
    Unconfirmed,
    /// The rank closed its connection without saying it finished (it exited or was killed).
    Closed,
    /// The connection failed (reset, refused, unreachable): the kernel's error.
    Broken(io::ErrorKind),
    /// The rank stopped reading: `queued` bytes to it waited `waited_ms` ms without room.
    StoppedReading {
        /// Bytes queued to the rank.
        queued: usize,
        /// How long the send waited.
        waited_ms: u64,
    },
    /// The rank sent bytes that are not our framing or header.
    Corrupt,
    /// The rank finished (said goodbye) and a message was sent to it afterwards.
    Finished,
    /// The rank began a new handshake while connected: it lost its side, with what it held.
    Reconnected,
    /// The rank is not in the job.
    NoSuchRank {
        /// The job's size.
        size: usize,
    },
    /// The connection table is full.
    TableFull,
}

/// A TCP transport error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpError {
    /// Rank `rank` cannot be talked to.
    Peer {
        /// The peer's world rank.
        rank: usize,
        /// What happened.
        fault: PeerFault,
    },
    /// This process's own socket failed (listening, accepting, polling).
    Local(io::ErrorKind),
}

impl TcpError {
    pub(super) fn peer(rank: usize, fault: PeerFault) -> Self {
        TcpError::Peer { rank, fault }
    }
}

impl fmt::Display for TcpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rank, fault) = match self {
            TcpError::Local(kind) => {
                return write!(f, "TCP transport: this process's socket failed: {kind}")
            }
            TcpError::Peer { rank, fault } => (rank, fault),
        };
        write!(f, "TCP transport: rank {rank} ")?;
        match fault {
            PeerFault::NoAnswer => f.write_str("did not answer the connection request in time"),
            PeerFault::Unconfirmed => f.write_str("did not confirm its connection in time"),
            PeerFault::Closed => {
                f.write_str("closed its connection without finishing (it exited or was killed)")
            }
            PeerFault::Broken(kind) => write!(f, "is unreachable: the connection failed ({kind})"),
            PeerFault::StoppedReading { queued, waited_ms } => write!(
                f,
                "stopped reading: {queued} bytes queued to it found no room for {waited_ms} ms"
            ),
            PeerFault::Corrupt => f.write_str("sent bytes that are not commcore frames"),
            PeerFault::Finished => f.write_str("has finished and takes no more messages"),
            PeerFault::Reconnected => {
                f.write_str("lost its connection and connected again; messages may be lost")
            }
            PeerFault::NoSuchRank { size } => write!(f, "is not in the job of {size} ranks"),
            PeerFault::TableFull => {
                f.write_str("cannot be connected: the connection table is full")
            }
        }
    }
}

impl std::error::Error for TcpError {}
