//! What goes wrong in the verbs transport, each naming the rank it concerns.

use std::fmt;

use super::device::{DeviceError, WorkError};

/// Why a peer cannot be reached any more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerFault {
    /// It did not answer the connection handshake in time.
    NoAnswer,
    /// It asked to connect and never confirmed.
    Unconfirmed,
    /// The handshake finished here but the peer's side never came up.
    NeverReady,
    /// Its queue pair failed: it died, or its link is down.
    Gone(WorkError),
    /// Its queue pair completed nothing of ours for this long: it died, or its link is
    /// down (a device that never reports the retries exceeded ends here too).
    Unresponsive {
        /// How long nothing completed.
        waited_ms: u64,
    },
    /// It began a new connection while connected (it lost its side).
    Reconnected,
    /// It holds our messages unread past the send timeout.
    StoppedReading {
        /// Bytes waiting for it.
        queued: usize,
        /// How long the send waited.
        waited_ms: u64,
    },
    /// More peers than the connection table holds.
    TableFull,
    /// It sent bytes that are not a frame.
    Corrupt,
    /// It finished (said goodbye) and takes nothing more.
    Finished,
    /// It has no RDMA device (the job reaches it another way).
    NoDevice,
    /// No such rank in the job.
    NoSuchRank {
        /// The job's size.
        size: usize,
    },
}

/// An error of the verbs transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerbsError {
    /// The device (or its absence) failed a call.
    Device(DeviceError),
    /// A peer cannot be reached.
    Peer {
        /// Its rank.
        rank: usize,
        /// Why.
        fault: PeerFault,
    },
}

impl VerbsError {
    pub(super) fn peer(rank: usize, fault: PeerFault) -> Self {
        VerbsError::Peer { rank, fault }
    }
}

impl From<DeviceError> for VerbsError {
    fn from(e: DeviceError) -> Self {
        VerbsError::Device(e)
    }
}

impl fmt::Display for VerbsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rank, fault) = match self {
            VerbsError::Device(e) => return write!(f, "verbs: {e}"),
            VerbsError::Peer { rank, fault } => (rank, fault),
        };
        write!(f, "verbs: rank {rank} ")?;
        match fault {
            PeerFault::NoAnswer => f.write_str("did not answer the connection request in time"),
            PeerFault::Unconfirmed => f.write_str("did not confirm its connection in time"),
            PeerFault::NeverReady => f.write_str("did not bring its side of the connection up"),
            PeerFault::Gone(WorkError::RetryExceeded) => {
                f.write_str("is gone (its queue pair stopped answering: retries exceeded)")
            }
            PeerFault::Gone(e) => write!(f, "is gone (a work request failed: {e:?})"),
            PeerFault::Unresponsive { waited_ms } => {
                write!(f, "is gone (nothing sent to it completed in {waited_ms} ms)")
            }
            PeerFault::Reconnected => f.write_str("lost its connection and connected again"),
            PeerFault::StoppedReading { queued, waited_ms } => {
                write!(f, "stopped receiving: {queued} bytes wait for it after {waited_ms} ms")
            }
            PeerFault::TableFull => {
                f.write_str("cannot be connected: the connection table is full")
            }
            PeerFault::Corrupt => f.write_str("sent bytes that are not a frame"),
            PeerFault::Finished => f.write_str("has finished and takes no more messages"),
            PeerFault::NoDevice => f.write_str("has no RDMA device"),
            PeerFault::NoSuchRank { size } => write!(f, "is not in the job of {size} ranks"),
        }
    }
}

impl std::error::Error for VerbsError {}
