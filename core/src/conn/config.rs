//! The handshake's settings.

use super::event::ConnError;

/// Timers (in the platform's time unit, the unit of every `now`) and the job's token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// A secret every datagram carries: the job's (or the port's) random token. Datagrams
    /// with another token are dropped and counted, never answered.
    pub token: u128,
    /// Wait before the first retransmission; doubled after each one.
    pub initial_retry: u64,
    /// The longest wait between retransmissions.
    pub max_retry: u64,
    /// A handshake not finished this long after it began fails.
    pub timeout: u64,
}

impl Config {
    /// Settings for time in microseconds: first retry after 2 ms, at most every 64 ms,
    /// give up after 2 s.
    pub const fn micros(token: u128) -> Self {
        Self { token, initial_retry: 2_000, max_retry: 64_000, timeout: 2_000_000 }
    }

    pub(super) fn check(&self) -> Result<(), ConnError> {
        let fits = 1 <= self.initial_retry
            && self.initial_retry <= self.max_retry
            && self.max_retry <= self.timeout;
        if fits {
            Ok(())
        } else {
            Err(ConnError::BadConfig)
        }
    }

    /// The wait after the `attempt`-th transmission (0 = the first).
    pub(super) fn retry_after(&self, attempt: u32) -> u64 {
        let factor = 1u64.checked_shl(attempt).unwrap_or(u64::MAX);
        let doubled = self.initial_retry.saturating_mul(factor);
        doubled.min(self.max_retry)
    }
}
