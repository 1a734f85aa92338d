//! The runtime's errors.

use std::fmt;

/// Why [`crate::runtime::World::init`] failed.
#[derive(Debug)]
pub enum InitError {
    /// A launcher variable is missing or malformed.
    Environment(String),
    /// The shared region could not be mapped or is not a commcore region.
    Region(std::io::Error),
    /// A `COMMCORE_*` setting has a value that does not parse.
    Setting(super::settings::SettingError),
    /// A setting that chooses protocols (which every rank must share) differs between rank
    /// 0 and another rank: left alone, the two would run different protocols in one
    /// collective and hang or corrupt it. Every rank returns it; the launcher prints the
    /// values once (its message names the setting only, so N ranks do not repeat them).
    SettingsDiffer(super::settings::Difference),
    /// The world's collectives could not be set up (e.g. `COMMCORE_COLL` leaves no
    /// component for an operation).
    Collectives(CollectiveError),
    /// Two processes claimed this rank number (their `COMMCORE_RANK` was changed).
    DuplicateRank {
        /// The rank claimed twice.
        rank: usize,
    },
    /// This job was spawned and could not meet its parents.
    Parent(super::DpmError),
    /// The transport `COMMCORE_TRANSPORT` chooses cannot run here (verbs in a build
    /// without them, or on a machine without a device).
    Transport(String),
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::Environment(message) => write!(f, "bad launcher environment: {message}"),
            InitError::Region(error) => write!(f, "cannot use the job's shared region: {error}"),
            InitError::Setting(error) => write!(f, "{error}"),
            InitError::SettingsDiffer(difference) => write!(
                f,
                "{} differs between ranks; `commcore run` reports the values, and every rank \
                 must have the same",
                difference.name
            ),
            InitError::Collectives(error) => write!(f, "{error}"),
            InitError::DuplicateRank { rank } => write!(
                f,
                "two processes claimed rank {rank}; start ranks with `commcore run` and leave \
                 COMMCORE_RANK as it sets it"
            ),
            InitError::Parent(error) => write!(f, "cannot meet the parent group: {error}"),
            InitError::Transport(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for InitError {}

/// Why creating a communicator failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommError {
    /// The communication it needs failed.
    P2p(P2pError),
    /// Core could not build the rank map (e.g. its table storage is full).
    RankMap(commcore::rankmap::RankMapError),
    /// A group named a rank twice or one outside the parent.
    BadGroup {
        /// The offending rank.
        rank: usize,
    },
    /// The context-id agreement failed (core's CID request).
    Cid(commcore::cid::CidError),
    /// A split color is negative and not `UNDEFINED`.
    InvalidColor(i32),
    /// The new communicator's collectives could not be set up.
    Collective(CollectiveError),
    /// The operation needs an intra-communicator and was given an inter-communicator.
    NotIntra,
    /// The operation needs an inter-communicator.
    NotInter,
    /// The calling rank is not in the group it passed (`create_group`).
    NotInGroup,
    /// A `create_group` tag is above [`crate::runtime::MAX_GROUP_TAG`].
    InvalidGroupTag(u32),
    /// A leader rank is outside its communicator, or the remote leader is the caller.
    BadLeader {
        /// The rank given.
        rank: usize,
    },
    /// The local leader failed to set up the inter-communicator; it returned the cause.
    LeaderFailed,
    /// The two groups of an inter-communicator share a process.
    GroupsOverlap,
    /// The ranks of one group passed different `high` flags to `intercomm_merge`.
    InconsistentHigh,
}

impl From<P2pError> for CommError {
    fn from(error: P2pError) -> CommError {
        CommError::P2p(error)
    }
}

impl fmt::Display for CommError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommError::P2p(error) => write!(f, "{error}"),
            CommError::RankMap(error) => write!(f, "rank map: {error:?}"),
            CommError::BadGroup { rank } => {
                write!(f, "rank {rank} is repeated or outside the parent")
            }
            CommError::Cid(error) => write!(f, "context id: {error}"),
            CommError::Collective(error) => write!(f, "collectives: {error}"),
            CommError::NotIntra => write!(f, "an intra-communicator is needed"),
            CommError::NotInter => write!(f, "an inter-communicator is needed"),
            CommError::NotInGroup => write!(f, "the caller is not in the group"),
            CommError::InvalidGroupTag(tag) => write!(f, "group tag {tag} is too large"),
            CommError::BadLeader { rank } => write!(f, "leader rank {rank} is invalid"),
            CommError::LeaderFailed => write!(f, "the local leader failed"),
            CommError::GroupsOverlap => write!(f, "the local and remote groups overlap"),
            CommError::InconsistentHigh => {
                write!(f, "the ranks of a group passed different merge flags")
            }
            CommError::InvalidColor(color) => {
                write!(f, "split color {color} is invalid (>= 0 or UNDEFINED)")
            }
        }
    }
}

impl std::error::Error for CommError {}

/// Why a collective operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectiveError {
    /// Core refused the call (bad root, operation and datatype, no module…).
    Coll(commcore::coll::CollError),
    /// The communication failed.
    P2p(P2pError),
    /// A reduction failed.
    Reduce(commcore::coll::OpError),
    /// The buffers do not have the lengths the operation needs.
    BadBuffers,
    /// A schedule step names bytes outside its buffer.
    Region(commcore::coll::Region),
    /// A message's length differs from what the schedule expects.
    LengthMismatch {
        /// Bytes expected.
        expected: usize,
        /// Bytes received.
        got: usize,
    },
    /// Inter-communicator collectives are not run by this runtime yet.
    InterNotSupported,
    /// `COMMCORE_COLL` is not a valid control string.
    BadControl,
    /// The communicator is too large for core's collective layouts.
    TooLarge,
    /// A member broke the shared-memory collective protocol (a call numbered out of step).
    AreaProtocol,
    /// On an inter-communicator: this group's leader failed to exchange its group's part
    /// with the other group (the leader itself returns the reason).
    LeaderFailed,
}

impl From<P2pError> for CollectiveError {
    fn from(error: P2pError) -> CollectiveError {
        CollectiveError::P2p(error)
    }
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectiveError::Coll(commcore::coll::CollError::NoModule(op)) => {
                let control = &super::settings::current().coll;
                write!(
                    f,
                    "no collective component is left to run {} under {}={control:?}; include \
                     at least one of {} for it",
                    op.name(),
                    super::settings::ENV_COLL,
                    super::settings::COLL_COMPONENTS.join(", ")
                )
            }
            CollectiveError::Coll(error) => write!(f, "{error}"),
            CollectiveError::P2p(error) => write!(f, "{error}"),
            CollectiveError::Reduce(error) => write!(f, "reduction: {error}"),
            CollectiveError::BadBuffers => write!(f, "buffer lengths do not fit the operation"),
            CollectiveError::Region(region) => {
                write!(f, "schedule region out of bounds: {region:?}")
            }
            CollectiveError::LengthMismatch { expected, got } => {
                write!(f, "collective message of {got} bytes where {expected} were expected")
            }
            CollectiveError::InterNotSupported => {
                write!(f, "inter-communicator collectives are not supported yet")
            }
            CollectiveError::BadControl => write!(
                f,
                "{} is not a valid control string; World::init names the offending token",
                super::settings::ENV_COLL
            ),
            CollectiveError::TooLarge => write!(f, "communicator too large for collective layouts"),
            CollectiveError::LeaderFailed => {
                write!(f, "this group's leader failed to reach the other group")
            }
            CollectiveError::AreaProtocol => {
                write!(f, "a member broke the shared-memory collective protocol")
            }
        }
    }
}

impl std::error::Error for CollectiveError {}

/// Why a point-to-point operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P2pError {
    /// A destination or source rank is not in the communicator.
    RankOutOfRange {
        /// The rank given.
        rank: usize,
        /// The communicator's size.
        size: usize,
    },
    /// A tag is negative (only a receive may use [`crate::runtime::ANY_TAG`]).
    InvalidTag(i32),
    /// A message is longer than the transport's limit.
    CountOutOfRange {
        /// Bytes given.
        len: usize,
        /// The largest message.
        max: usize,
    },
    /// The message was longer than the receive buffer; it was consumed, and the buffer holds
    /// its first `buffer_len` bytes.
    Truncated {
        /// The message's length.
        message_len: usize,
        /// The buffer's length.
        buffer_len: usize,
        /// The sender's rank in the communicator, from the message.
        source: u32,
        /// The message's tag.
        tag: i32,
    },
    /// A peer wrote a malformed cell into our queue.
    CorruptQueue {
        /// The peer's world rank.
        peer: usize,
    },
    /// A single-copy read from the sender failed (errno).
    SingleCopyFailed {
        /// The sender's world rank.
        peer: usize,
        /// The OS error number.
        errno: i32,
    },
    /// The rank's address-vector entry names a transport this process does not run.
    NoTransport {
        /// The rank in the communicator.
        rank: usize,
        /// The entry's transport selector.
        transport: u8,
    },
    /// The TCP transport failed; the error names the peer.
    Tcp(crate::tcp::TcpError),
    /// The verbs transport failed; the error names the peer.
    Verbs(crate::transport::verbs::VerbsError),
    /// The process is in a group this process is no longer connected to (disconnected).
    PeerGone {
        /// The engine's index of the peer.
        peer: usize,
    },
    /// The bridge to another group failed: a process of that group (or of ours) died or
    /// left before disconnecting.
    GroupFailed {
        /// Which side failed, as the bridge records it.
        reason: u32,
    },
}

impl From<crate::tcp::TcpError> for P2pError {
    fn from(error: crate::tcp::TcpError) -> Self {
        P2pError::Tcp(error)
    }
}

impl From<crate::transport::verbs::VerbsError> for P2pError {
    fn from(error: crate::transport::verbs::VerbsError) -> Self {
        P2pError::Verbs(error)
    }
}

impl fmt::Display for P2pError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            P2pError::RankOutOfRange { rank, size } => {
                write!(f, "rank {rank} is out of range for a communicator of {size}")
            }
            P2pError::InvalidTag(tag) => write!(f, "tag {tag} is invalid (tags are >= 0)"),
            P2pError::CountOutOfRange { len, max } => {
                write!(f, "message of {len} bytes exceeds the limit of {max}")
            }
            P2pError::Truncated { message_len, buffer_len, .. } => write!(
                f,
                "message of {message_len} bytes truncated to the {buffer_len}-byte buffer"
            ),
            P2pError::CorruptQueue { peer } => {
                write!(f, "malformed data in the queue from rank {peer}")
            }
            P2pError::SingleCopyFailed { peer, errno } => {
                write!(f, "single-copy read from rank {peer} failed (errno {errno})")
            }
            P2pError::NoTransport { rank, transport } => write!(
                f,
                "rank {rank} is reached through transport {transport}, which this process does \
                 not run; start the job with that transport enabled"
            ),
            P2pError::Tcp(error) => write!(f, "{error}"),
            P2pError::Verbs(error) => write!(f, "{error}"),
            P2pError::PeerGone { peer } => {
                write!(f, "peer {peer} belongs to a group this process has disconnected from")
            }
            P2pError::GroupFailed { reason } => write!(
                f,
                "the connection to another process group failed: {}",
                match reason {
                    crate::shm::bridge::FAILED_A => "a process of the first group died or left",
                    crate::shm::bridge::FAILED_B => "a process of the second group died or left",
                    crate::shm::bridge::LEFT => {
                        "a process of the other group ended without disconnecting"
                    }
                    _ => "a side gave up",
                }
            ),
        }
    }
}

impl std::error::Error for P2pError {}
