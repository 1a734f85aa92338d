//! `MPI_Comm_join`: two processes that share a connected stream socket (a socket pair, a
//! TCP connection) become an inter-communicator of one process per side. Over the socket
//! each draws a random number; the higher opens a port, sends its name and accepts; the
//! lower connects. Equal numbers are drawn again.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use super::DpmError;
use crate::runtime::{Comm, World};

/// The longest port name the socket carries.
const NAME_MAX: usize = commcore::port::PORT_NAME_MAX;

impl World {
    /// Joins the process at the other end of `socket` (`MPI_Comm_join`; called by both):
    /// returns an inter-communicator whose local group is this process and whose remote
    /// group is the other, or an error after `timeout`. The socket is only used to meet.
    pub fn join<S: Read + Write>(
        &self,
        socket: &mut S,
        timeout: Duration,
    ) -> Result<Comm, DpmError> {
        let deadline = Instant::now() + timeout;
        let lost = |e: std::io::Error| DpmError::Port(format!("the join socket failed: {e}"));
        let accepts = loop {
            let mine = u64::from_le_bytes(random8()?);
            socket.write_all(&mine.to_le_bytes()).map_err(lost)?;
            let mut theirs = [0u8; 8];
            socket.read_exact(&mut theirs).map_err(lost)?;
            let theirs = u64::from_le_bytes(theirs);
            if mine != theirs {
                break mine > theirs;
            }
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let me = self.self_comm();
        if accepts {
            let name = self.open_port()?;
            let len = (name.len() as u32).to_le_bytes();
            let sent = socket.write_all(&len).and_then(|()| socket.write_all(name.as_bytes()));
            let inter = sent.map_err(lost).and_then(|()| me.accept(&name, 0, left));
            let _ = self.close_port(&name);
            inter
        } else {
            let mut len = [0u8; 4];
            socket.read_exact(&mut len).map_err(lost)?;
            let len = u32::from_le_bytes(len) as usize;
            if len > NAME_MAX {
                return Err(DpmError::Port(format!("the other side sent a {len}-byte port name")));
            }
            let mut name = vec![0u8; len];
            socket.read_exact(&mut name).map_err(lost)?;
            let name = String::from_utf8(name).map_err(|_| {
                DpmError::Port("the other side sent a port name that is not text".into())
            })?;
            me.connect(&name, 0, left)
        }
    }
}

fn random8() -> Result<[u8; 8], DpmError> {
    let mut bytes = [0u8; 8];
    // SAFETY: bytes is a writable buffer of the length passed.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), 8, 0) };
    if n != 8 {
        return Err(DpmError::Port("no randomness to order the join".into()));
    }
    Ok(bytes)
}
