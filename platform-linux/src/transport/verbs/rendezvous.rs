//! Long messages: the sender registers its buffer and announces it; the receiver reads it
//! with RDMA into its own registered buffer and says `Done`, which frees the sender's.
//! Registrations go through the bounded cache, so a buffer used again is not registered
//! again.

use commcore::wire::{Header, HEADER_LEN};

use super::device::{Device, MemoryKeys, SendOp, Sge, WorkError};
use super::error::{PeerFault, VerbsError};
use super::frame::{self, FrameKind, RemoteBuffer, LONG_LEN, PREFIX_LEN};
use super::link::Queued;
use super::reg_cache::RegUse;
use super::transport::{wr, VerbsTransport, WR_READ};

impl<D: Device> VerbsTransport<D> {
    /// Sends a long message from the caller's memory: the receiver reads it with RDMA, and
    /// [`VerbsTransport::take_written`] reports `id` once it has.
    ///
    /// # Safety
    /// `payload` must stay valid and unchanged until `id` is reported written or the
    /// transport reports `peer` failed (or is dropped).
    pub unsafe fn send_lent(
        &mut self,
        peer: usize,
        header: &Header,
        payload: &[u8],
        id: u64,
    ) -> Result<(), VerbsError> {
        self.report(peer)?;
        let addr = payload.as_ptr() as u64;
        // SAFETY: the caller keeps `payload` valid until its id is written or the peer
        // failed, and the use is released then (`on_frame`'s `Done`, or `fail`).
        let (used, keys) = unsafe { self.registered(payload.as_ptr().cast_mut(), payload.len())? };
        self.lent.insert(id, (peer, used));
        let header = &Header { length: payload.len() as u64, ..*header };
        let mut bytes = vec![0u8; PREFIX_LEN + HEADER_LEN + LONG_LEN];
        let remote = RemoteBuffer { addr, rkey: keys.rkey, id };
        frame::put_long(&mut bytes[PREFIX_LEN..], header, remote);
        self.enqueue(peer, Queued { kind: FrameKind::Long, bytes }, false)
    }

    /// Long sends whose receivers have read them, by id, since the last call.
    pub fn take_written(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.written)
    }

    /// Reads a long message's payload from `peer`'s memory into `dst` (RDMA read; the
    /// device copies it), then tells the sender its buffer is free.
    pub fn read_remote(
        &mut self,
        peer: usize,
        remote: RemoteBuffer,
        dst: &mut [u8],
    ) -> Result<(), VerbsError> {
        self.read_remote_part(peer, remote, 0, dst)?;
        self.release_remote(peer, remote)
    }

    /// Reads `dst.len()` bytes at `offset` in a long message's payload in `peer`'s memory
    /// into `dst` (RDMA read), leaving the sender's buffer lent.
    pub(super) fn read_remote_part(
        &mut self,
        peer: usize,
        remote: RemoteBuffer,
        offset: usize,
        dst: &mut [u8],
    ) -> Result<(), VerbsError> {
        self.report(peer)?;
        let Some((qpn, _)) = self.links[peer].qp else {
            return Err(VerbsError::peer(peer, PeerFault::Corrupt));
        };
        let addr = dst.as_mut_ptr() as u64;
        // SAFETY: `dst` is borrowed mutably until the read completes (waited for below),
        // and the use is released before returning.
        let (used, keys) = unsafe { self.registered(dst.as_mut_ptr(), dst.len())? };
        let sge = Sge { addr, len: dst.len() as u32, lkey: keys.lkey };
        let read = self.next_read;
        self.next_read += 1;
        self.reads.insert(read, None);
        let op = SendOp::Read { remote_addr: remote.addr + offset as u64, rkey: remote.rkey };
        let posted = self.device.post_send(qpn, wr(WR_READ, read as usize), sge, op);
        if posted.is_ok() {
            self.links[peer].unacked += 1;
        }
        let outcome = match posted {
            Ok(()) => self.block_until(u64::MAX, |t| {
                t.reads.get(&read).is_some_and(Option::is_some) || t.link_failed(peer)
            }),
            Err(e) => Err(e.into()),
        };
        let done = self.reads.remove(&read).flatten();
        self.release(used);
        outcome?;
        if done != Some(true) {
            return Err(self
                .check(peer)
                .err()
                .unwrap_or(VerbsError::peer(peer, PeerFault::Gone(WorkError::RemoteAccess))));
        }
        Ok(())
    }

    /// Tells `peer` its long message's buffer is read (`Done`), which frees it. The frame
    /// takes no credit and goes ahead of data frames waiting for credits.
    pub(super) fn release_remote(
        &mut self,
        peer: usize,
        remote: RemoteBuffer,
    ) -> Result<(), VerbsError> {
        let mut bytes = vec![0u8; PREFIX_LEN + 8];
        bytes[PREFIX_LEN..].copy_from_slice(&remote.id.to_le_bytes());
        self.enqueue(peer, Queued { kind: FrameKind::Done, bytes }, true)
    }

    /// The keys of a registration covering `len` bytes at `addr`, from the cache or made
    /// now, with one use counted (ended with [`VerbsTransport::release`]).
    ///
    /// # Safety
    /// The memory must stay valid until that use is released (the cache deregisters a
    /// region only when no use remains).
    unsafe fn registered(
        &mut self,
        addr: *mut u8,
        len: usize,
    ) -> Result<(RegUse, MemoryKeys), VerbsError> {
        if let Some(hit) = self.cache.acquire(addr as u64, len) {
            return Ok(hit);
        }
        // SAFETY: the caller's promise above.
        let keys = unsafe { self.device.register(addr, len)? };
        let (used, dead) = self.cache.insert(addr as u64, len, keys);
        for k in dead {
            let _ = self.device.deregister(k);
        }
        Ok((used, keys))
    }

    /// Ends one use of a cached registration (deregistering an evicted one no longer used).
    pub(super) fn release(&mut self, used: RegUse) {
        if let Some(keys) = self.cache.release(used) {
            let _ = self.device.deregister(keys);
        }
    }
}
