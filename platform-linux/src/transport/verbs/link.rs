//! One peer's side of the transport: its connection's state, credits both ways, and the
//! frames waiting for the connection, for credits or for a send buffer.

use std::collections::VecDeque;

use super::device::Qpn;
use super::error::PeerFault;
use super::frame::FrameKind;

/// Where the connection to a peer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// Nothing was said to it yet.
    Idle,
    /// The handshake runs over UD.
    Connecting,
    /// Our side is up (we began the handshake); the peer's `Ready` has not come yet, by
    /// `deadline` on the device's clock.
    AwaitReady {
        /// When the peer counts as never ready.
        deadline: u64,
    },
    /// Both sides are up.
    Up,
    /// The peer said goodbye.
    Finished,
    /// The peer cannot be reached.
    Failed(PeerFault),
}

/// A frame waiting to be posted: its bytes (prefix first; the credits field is filled when
/// it is posted) and its kind.
pub struct Queued {
    pub kind: FrameKind,
    pub bytes: Vec<u8>,
}

/// One peer.
pub struct Link {
    pub state: LinkState,
    /// The RC queue pair made for the connection and its first sequence number.
    pub qp: Option<(Qpn, u32)>,
    /// Credit-taking frames we may still send.
    pub credits: u16,
    /// Credits to hand back (frames of the peer's that our owner took).
    pub owed: u16,
    pub queue: VecDeque<Queued>,
    pub queued_bytes: usize,
    /// Handshake datagrams sent to this peer.
    pub datagrams: u64,
    /// Sends and reads posted to the peer's queue pair and not completed yet.
    pub unacked: u32,
    /// Completions of those so far, and the count the last watch saw.
    pub acks: u32,
    pub acks_seen: u32,
    /// Watches in a row that saw work outstanding and no completion.
    pub stalled_watches: u32,
}

impl Link {
    pub fn new() -> Self {
        Link {
            state: LinkState::Idle,
            qp: None,
            credits: 0,
            owed: 0,
            queue: VecDeque::new(),
            queued_bytes: 0,
            datagrams: 0,
            unacked: 0,
            acks: 0,
            acks_seen: 0,
            stalled_watches: 0,
        }
    }

    /// Queues a frame behind the others (control frames ahead of data with `urgent`).
    pub fn push(&mut self, frame: Queued, urgent: bool) {
        self.queued_bytes += frame.bytes.len();
        if urgent {
            self.queue.push_front(frame);
        } else {
            self.queue.push_back(frame);
        }
    }

    /// Whether the front frame may be posted now (connection up and, for data, a credit).
    pub fn front_ready(&self) -> bool {
        let front = self.queue.front();
        self.state == LinkState::Up
            && front.is_some_and(|f| !f.kind.takes_credit() || self.credits > 0)
    }

    /// A send or read to the peer completed.
    pub fn acked(&mut self) {
        self.unacked = self.unacked.saturating_sub(1);
        self.acks = self.acks.wrapping_add(1);
    }

    /// One watch: how many watches in a row saw work outstanding and no completion.
    pub fn watch(&mut self) -> u32 {
        if self.unacked > 0 && self.acks == self.acks_seen {
            self.stalled_watches += 1;
        } else {
            self.stalled_watches = 0;
        }
        self.acks_seen = self.acks;
        self.stalled_watches
    }

    /// Whether a data frame may go straight out: up, nothing queued, a credit left.
    pub fn open_for_data(&self) -> bool {
        self.state == LinkState::Up && self.queue.is_empty() && self.credits > 0
    }
}
