//! `MPI_Publish_name`, `MPI_Lookup_name`, `MPI_Unpublish_name`: names of ports for jobs to
//! find each other. With `COMMCORE_NAMESERVER` set, the `commcore nameserver` at that
//! address serves them (unrelated jobs share it); otherwise the launcher does, for the jobs
//! of one launcher tree (`commcore run`'s exchange, or a PMIx server's publish and lookup). Names this process publishes are withdrawn when it ends.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::DpmError;
use crate::dpm::names::{NameError, NameService, NAMESERVER_ENV};
use crate::launch::kv::KvClient;
use crate::runtime::bootstrap::Foreign;
use crate::runtime::World;

/// How long a request to the name service may take.
const NAME_TIMEOUT: Duration = Duration::from_secs(10);

/// This process's connection to a name server, made at its first use.
#[derive(Default)]
pub(crate) struct Names(Mutex<Option<NameService>>);

impl World {
    /// Publishes `port` under `name` (`MPI_Publish_name`; local).
    pub fn publish_name(&self, name: &str, port: &str) -> Result<(), DpmError> {
        self.with_names(|names| names.publish(name, port))
    }

    /// The port published under `name` (`MPI_Lookup_name`); an error if none is.
    pub fn lookup_name(&self, name: &str) -> Result<String, DpmError> {
        self.with_names(|names| names.lookup(name))
    }

    /// Withdraws `name`, which this process published (`MPI_Unpublish_name`).
    pub fn unpublish_name(&self, name: &str) -> Result<(), DpmError> {
        self.with_names(|names| names.unpublish(name))
    }

    fn with_names<T>(
        &self,
        call: impl FnOnce(&mut dyn NameCalls) -> Result<T, DpmError>,
    ) -> Result<T, DpmError> {
        let runtime = &self.comm().runtime;
        if std::env::var_os(NAMESERVER_ENV).is_none() {
            let mut kv = runtime.kv();
            if let Some(kv) = kv.as_mut() {
                return call(kv);
            }
            let mut foreign = runtime.foreign();
            return match foreign.as_mut() {
                Some(foreign) => call(foreign),
                None => Err(DpmError::Name(format!(
                    "no name service: start the job with `commcore run`, or start `commcore \
                     nameserver` and set {NAMESERVER_ENV} to the address it prints"
                ))),
            };
        }
        let mut service = runtime.names.0.lock().unwrap_or_else(PoisonError::into_inner);
        if service.is_none() {
            let connected = NameService::from_env(NAME_TIMEOUT);
            *service = Some(connected.map_err(|e| DpmError::Name(e.to_string()))?);
        }
        match service.as_mut() {
            Some(names) => call(names),
            None => Err(DpmError::Name("no name server".into())),
        }
    }
}

/// A name service: a name server's connection or the launcher's exchange.
trait NameCalls {
    fn publish(&mut self, name: &str, port: &str) -> Result<(), DpmError>;
    fn lookup(&mut self, name: &str) -> Result<String, DpmError>;
    fn unpublish(&mut self, name: &str) -> Result<(), DpmError>;
}

fn refused(error: impl std::fmt::Display) -> DpmError {
    DpmError::Name(error.to_string())
}

impl NameCalls for NameService {
    fn publish(&mut self, name: &str, port: &str) -> Result<(), DpmError> {
        self.publish_name(name, port).map_err(refused)
    }
    fn lookup(&mut self, name: &str) -> Result<String, DpmError> {
        self.lookup_name(name).map_err(refused)
    }
    fn unpublish(&mut self, name: &str) -> Result<(), DpmError> {
        self.unpublish_name(name).map_err(refused)
    }
}

impl NameCalls for Foreign {
    fn publish(&mut self, name: &str, port: &str) -> Result<(), DpmError> {
        Foreign::publish(self, name, port).map_err(DpmError::Name)
    }
    fn lookup(&mut self, name: &str) -> Result<String, DpmError> {
        Foreign::lookup(self, name)
            .map_err(DpmError::Name)?
            .ok_or_else(|| refused(NameError::NotPublished(name.to_string())))
    }
    fn unpublish(&mut self, name: &str) -> Result<(), DpmError> {
        Foreign::unpublish(self, name).map_err(DpmError::Name)
    }
}

impl NameCalls for KvClient {
    fn publish(&mut self, name: &str, port: &str) -> Result<(), DpmError> {
        self.publish_name(name, port).map_err(refused)
    }
    fn lookup(&mut self, name: &str) -> Result<String, DpmError> {
        self.lookup_name(name).map_err(refused)
    }
    fn unpublish(&mut self, name: &str) -> Result<(), DpmError> {
        self.unpublish_name(name).map_err(refused)
    }
}
