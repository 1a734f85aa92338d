//! What can go wrong in spawn, accept, connect, join and the name service, and how a root's
//! outcome travels to the rest of its group, so that every rank returns the same result.

use std::fmt;

use crate::runtime::{CollectiveError, Comm, CommError};

/// Why a dynamic-process operation failed. Every rank of the calling group returns the
/// same error (the root's, broadcast).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DpmError {
    /// The operation needs the launcher (`commcore run`), and this process was not started
    /// by one.
    NotLaunched,
    /// An argument is out of range (the text says which and what is allowed).
    InvalidArgument(String),
    /// Some children could not be started: one code per child in order (0 for a child
    /// that started and was stopped again, an `errno` such as `ENOENT` for one that could
    /// not be executed), as `MPI_Comm_spawn`'s `array_of_errcodes`.
    Spawn {
        /// One code per child.
        errcodes: Vec<i32>,
        /// What the launcher said.
        message: String,
    },
    /// A port name is malformed, the port is closed, or its token was refused.
    Port(String),
    /// The other side did not come in time.
    TimedOut(String),
    /// The launcher refused or failed a request.
    Launcher(String),
    /// A descriptor or region could not be handed over or mapped.
    Handover(String),
    /// The name service refused or failed (a name never published, one taken, no server).
    Name(String),
    /// Building the inter-communicator failed.
    Comm(CommError),
}

impl fmt::Display for DpmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DpmError::NotLaunched => f.write_str(
                "dynamic processes need the launcher: start the program with `commcore run`",
            ),
            DpmError::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            DpmError::Spawn { errcodes, message } => {
                let failed = errcodes.iter().filter(|&&c| c != 0).count();
                write!(f, "spawn failed for {failed} of {} children: {message}", errcodes.len())
            }
            DpmError::Port(what) => write!(f, "port: {what}"),
            DpmError::TimedOut(what) => write!(f, "timed out: {what}"),
            DpmError::Launcher(what) => write!(f, "launcher: {what}"),
            DpmError::Handover(what) => write!(f, "handover: {what}"),
            DpmError::Name(what) => write!(f, "name service: {what}"),
            DpmError::Comm(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for DpmError {}

impl From<CommError> for DpmError {
    fn from(error: CommError) -> DpmError {
        DpmError::Comm(error)
    }
}

impl From<CollectiveError> for DpmError {
    fn from(error: CollectiveError) -> DpmError {
        DpmError::Comm(CommError::Collective(error))
    }
}

impl DpmError {
    fn encode(&self, out: &mut Vec<u8>) {
        let (kind, text, codes): (u8, String, &[i32]) = match self {
            DpmError::NotLaunched => (1, String::new(), &[]),
            DpmError::InvalidArgument(t) => (2, t.clone(), &[]),
            DpmError::Spawn { errcodes, message } => (3, message.clone(), errcodes),
            DpmError::Port(t) => (4, t.clone(), &[]),
            DpmError::TimedOut(t) => (5, t.clone(), &[]),
            DpmError::Launcher(t) => (6, t.clone(), &[]),
            DpmError::Handover(t) => (7, t.clone(), &[]),
            DpmError::Comm(e) => (8, e.to_string(), &[]),
            DpmError::Name(t) => (9, t.clone(), &[]),
        };
        out.push(kind);
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(&(codes.len() as u32).to_le_bytes());
        for code in codes {
            out.extend_from_slice(&code.to_le_bytes());
        }
    }

    fn decode(bytes: &[u8]) -> DpmError {
        let word = |at: usize| {
            bytes.get(at..at + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let len = word(1) as usize;
        let text = bytes
            .get(5..5 + len)
            .map_or_else(String::new, |t| String::from_utf8_lossy(t).into_owned());
        let count = word(5 + len) as usize;
        let codes = (0..count).map(|i| word(9 + len + 4 * i) as i32).collect();
        match bytes.first() {
            Some(1) => DpmError::NotLaunched,
            Some(2) => DpmError::InvalidArgument(text),
            Some(3) => DpmError::Spawn { errcodes: codes, message: text },
            Some(4) => DpmError::Port(text),
            Some(5) => DpmError::TimedOut(text),
            Some(6) => DpmError::Launcher(text),
            Some(7) => DpmError::Handover(text),
            Some(9) => DpmError::Name(text),
            _ => DpmError::Comm(CommError::LeaderFailed),
        }
    }
}

impl Comm {
    /// Broadcasts the root's outcome from `root` (collective over this communicator): its
    /// bytes on success, its error otherwise. Every rank returns the same.
    pub(super) fn bcast_outcome(
        &self,
        root: usize,
        outcome: Result<Vec<u8>, DpmError>,
    ) -> Result<Vec<u8>, DpmError> {
        let mut message = Vec::new();
        if self.rank() == root {
            match &outcome {
                Ok(bytes) => {
                    message.push(0);
                    message.extend_from_slice(bytes);
                }
                Err(error) => error.encode(&mut message),
            }
        }
        let mut len = (message.len() as u64).to_le_bytes();
        self.bcast(&mut len, root)?;
        message.resize(u64::from_le_bytes(len) as usize, 0);
        self.bcast(&mut message, root)?;
        match message.first() {
            Some(0) => Ok(message[1..].to_vec()),
            _ => Err(DpmError::decode(&message)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_travel_whole() {
        let errors = [
            DpmError::NotLaunched,
            DpmError::InvalidArgument("maxprocs must be at least 1".into()),
            DpmError::Spawn { errcodes: vec![0, 2, -3], message: "no such program".into() },
            DpmError::Port("closed".into()),
            DpmError::TimedOut("accept".into()),
            DpmError::Launcher("refused".into()),
            DpmError::Handover("pidfd".into()),
            DpmError::Name("no port is published under \"x\"".into()),
        ];
        for error in errors {
            let mut bytes = Vec::new();
            error.encode(&mut bytes);
            assert_eq!(DpmError::decode(&bytes), error);
        }
        assert!(matches!(DpmError::decode(&[]), DpmError::Comm(_)));
        assert!(matches!(DpmError::decode(&[3, 255, 255]), DpmError::Spawn { .. }));
    }
}
