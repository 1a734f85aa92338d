//! The start-up exchange every launcher offers in its own words: a rank puts keys, fences
//! with the whole job, then reads any rank's keys. `commcore run`'s exchange ([`KvClient`]),
//! hydra's PMI-1 ([`Pmi1Client`]) and a PMIx server all serve it, so what a rank publishes
//! at start-up (its TCP address, its node, its shared-memory meeting point) is written once
//! against this trait.

use std::fmt;

use super::kv::{KvClient, KvError};
use super::pmi1::{Pmi1Client, PmiError};

/// Why a request to the launcher's exchange failed, with the launcher's own words.
#[derive(Debug)]
pub struct ExchangeError {
    /// The launcher's exchange, e.g. "PMI".
    pub launcher: &'static str,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the {} exchange failed: {}", self.launcher, self.message)
    }
}

impl std::error::Error for ExchangeError {}

/// A job's key-value exchange at start-up. Keys and values are printable ASCII without
/// spaces; keys are scoped by the rank that put them.
pub trait Exchange {
    /// Publishes `value` under `key` for this rank.
    fn put(&mut self, key: &str, value: &str) -> Result<(), ExchangeError>;
    /// Waits until every rank fenced; what any rank put before its fence is then visible.
    fn fence(&mut self) -> Result<(), ExchangeError>;
    /// What `rank` put under `key` before the last fence.
    fn get(&mut self, rank: usize, key: &str) -> Result<String, ExchangeError>;
}

fn kv_error(e: KvError) -> ExchangeError {
    ExchangeError { launcher: "commcore run", message: e.to_string() }
}

impl Exchange for KvClient {
    fn put(&mut self, key: &str, value: &str) -> Result<(), ExchangeError> {
        KvClient::put(self, key, value).map_err(kv_error)
    }
    fn fence(&mut self) -> Result<(), ExchangeError> {
        KvClient::fence(self).map_err(kv_error)
    }
    fn get(&mut self, rank: usize, key: &str) -> Result<String, ExchangeError> {
        KvClient::get(self, rank, key).map_err(kv_error)
    }
}

fn pmi_error(e: PmiError) -> ExchangeError {
    ExchangeError { launcher: "PMI", message: e.to_string() }
}

impl Exchange for Pmi1Client {
    fn put(&mut self, key: &str, value: &str) -> Result<(), ExchangeError> {
        Pmi1Client::put(self, key, value).map_err(pmi_error)
    }
    fn fence(&mut self) -> Result<(), ExchangeError> {
        Pmi1Client::fence(self).map_err(pmi_error)
    }
    fn get(&mut self, rank: usize, key: &str) -> Result<String, ExchangeError> {
        Pmi1Client::get(self, rank, key).map_err(pmi_error)
    }
}
