//! The dynamic-process requests of a rank's exchange client ([`KvClient`]): spawn,
//! disconnect, bridges registered after accept/connect, and the launcher's name service.

use std::os::fd::BorrowedFd;

use super::kv::{KvClient, KvError, SpawnRequest, Spawned};
use super::spawn_wire;
use crate::dpm::names::NameError;
use crate::dpm::names_wire::{self, Refusal, Request, NAME_MAX, PORT_MAX};

impl KvClient {
    /// Asks the launcher to start a child job (`MPI_Comm_spawn_multiple`); waits at most
    /// `request.timeout` for its reply. The children are started, not yet joined: they
    /// count themselves in the bridge's `arrived`. A child that could not start is
    /// [`KvError::Spawn`] (with every child's code; nothing of the job is left); an invalid
    /// request (`maxprocs` 0, more than the launcher's limit of processes, a host the job
    /// does not have) is [`KvError::Refused`].
    pub fn spawn(&mut self, request: &SpawnRequest) -> Result<Spawned, KvError> {
        let line = KvClient::spawn_line(request)?;
        let (reply, mut fds) = self.call(&line, None, request.timeout)?;
        let bad = || KvError::Refused(format!("unexpected reply to spawn: {reply:?}"));
        if let Some(rest) = reply.strip_prefix("spawn-failed ") {
            let (errcodes, message) = spawn_wire::decode_failure(rest).ok_or_else(bad)?;
            return Err(KvError::Spawn { errcodes, message });
        }
        let rest = reply.strip_prefix("spawned ").ok_or_else(bad)?;
        let (job, size) = rest.split_once(' ').ok_or_else(bad)?;
        let (job, size) = (job.parse().map_err(|_| bad())?, size.parse().map_err(|_| bad())?);
        // Exactly one descriptor comes with the reply; any other is closed with `fds`.
        if fds.len() != 1 {
            return Err(bad());
        }
        let bridge = fds.remove(0);
        Ok(Spawned { job, bridge, size })
    }

    /// Tells the launcher this job disconnected from its child job `job`: the launcher no
    /// longer marks their bridge on a failure and closes its descriptor; each job then ends
    /// on its own. Disconnecting again, or from a job that has ended, is fine.
    pub fn disconnect(&mut self, job: u64) -> Result<(), KvError> {
        self.expect_ok(&format!("disconnect {job}"))
    }

    /// Hands the launcher a bridge made by accept/connect with an independently launched
    /// job: it keeps a descriptor and marks the bridge failed (`FAILED_A` if `side_a`, else
    /// `FAILED_B`) if a rank of this job fails. Returns its number for
    /// [`KvClient::release_bridge`].
    pub fn register_bridge(
        &mut self,
        bridge: BorrowedFd<'_>,
        side_a: bool,
    ) -> Result<u64, KvError> {
        let side = if side_a { "a" } else { "b" };
        let timeout = self.timeout;
        let (reply, _) = self.call(&format!("register-bridge {side}"), Some(bridge), timeout)?;
        reply.strip_prefix("bridge ").and_then(|id| id.parse().ok()).ok_or_else(|| {
            KvError::Refused(format!("unexpected reply to register-bridge: {reply:?}"))
        })
    }

    /// The launcher forgets bridge `id` (after a disconnect): it no longer marks it.
    pub fn release_bridge(&mut self, id: u64) -> Result<(), KvError> {
        self.expect_ok(&format!("release-bridge {id}"))
    }

    /// Publishes `port` under `name` for every job of this launcher (`MPI_Publish_name`),
    /// until unpublished or this job ends.
    pub fn publish_name(&mut self, name: &str, port: &str) -> Result<(), KvError> {
        if !names_wire::valid_field(port, PORT_MAX) {
            return Err(KvError::Name(NameError::BadPort));
        }
        self.names(name, Request::Publish { name, port }).map(drop)
    }

    /// The port published under `name` (`MPI_Lookup_name`).
    pub fn lookup_name(&mut self, name: &str) -> Result<String, KvError> {
        self.names(name, Request::Lookup(name))?.ok_or(KvError::Name(NameError::Protocol))
    }

    /// Removes `name`, which this job published (`MPI_Unpublish_name`).
    pub fn unpublish_name(&mut self, name: &str) -> Result<(), KvError> {
        self.names(name, Request::Unpublish(name)).map(drop)
    }

    fn names(&mut self, name: &str, request: Request<'_>) -> Result<Option<String>, KvError> {
        if !names_wire::valid_field(name, NAME_MAX) {
            return Err(KvError::Name(NameError::BadName));
        }
        let line = request.to_line();
        let reply = self.request_line(line.trim_end())?;
        let refused = |refusal| {
            KvError::Name(match refusal {
                Refusal::NotPublished => NameError::NotPublished(name.into()),
                Refusal::AlreadyPublished => NameError::AlreadyPublished(name.into()),
                Refusal::NotOwner => NameError::NotOwner(name.into()),
                Refusal::Full => NameError::ServerFull,
                Refusal::BadRequest => NameError::Protocol,
            })
        };
        match names_wire::parse_reply(&reply) {
            Some(Ok(port)) => Ok(port.map(str::to_owned)),
            Some(Err(refusal)) => Err(refused(refusal)),
            None => Err(KvError::Name(NameError::Protocol)),
        }
    }

    fn expect_ok(&mut self, line: &str) -> Result<(), KvError> {
        match self.request_line(line)?.as_str() {
            "ok" => Ok(()),
            other => Err(KvError::Refused(format!("unexpected reply {other:?} to {line:?}"))),
        }
    }

    fn request_line(&mut self, line: &str) -> Result<String, KvError> {
        let timeout = self.timeout;
        self.call(line, None, timeout).map(|(reply, _)| reply)
    }
}
