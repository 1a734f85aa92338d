//! `MPI_Publish_name`, `MPI_Lookup_name`, `MPI_Unpublish_name`: names of ports for jobs to
//! find each other. With `COMMCORE_NAMESERVER` set, the `commcore nameserver` at that
//! address serves them (unrelated jobs share it); otherwise the launcher does, for the jobs
//! of one launcher tree. Names this process publishes are withdrawn when it ends.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use super::DpmError;
use crate::dpm::names::{NameService, NAMESERVER_ENV};
use crate::runtime::World;

/// How long a request to the name service may take.
const NAME_TIMEOUT: Duration = Duration::from_secs(10);

/// This process's connection to a name server, made at its first use.
#[derive(Default)]
pub(crate) struct Names(Mutex<Option<NameService>>);

impl World {
    /// Publishes `port` under `name` (`MPI_Publish_name`; local).
    pub fn publish_name(&self, name: &str, port: &str) -> Result<(), DpmError> {
        self.with_names(|names| names.publish_name(name, port))
    }

    /// The port published under `name` (`MPI_Lookup_name`); an error if none is.
    pub fn lookup_name(&self, name: &str) -> Result<String, DpmError> {
        self.with_names(|names| names.lookup_name(name))
    }

    /// Withdraws `name`, which this process published (`MPI_Unpublish_name`).
    pub fn unpublish_name(&self, name: &str) -> Result<(), DpmError> {
        self.with_names(|names| names.unpublish_name(name))
    }

    fn with_names<T>(
        &self,
        call: impl FnOnce(&mut NameService) -> Result<T, crate::dpm::names::NameError>,
    ) -> Result<T, DpmError> {
        if std::env::var_os(NAMESERVER_ENV).is_none() {
            return self.comm().runtime.launcher_names(call);
        }
        let names = &self.comm().runtime.names;
        let mut service = names.0.lock().unwrap_or_else(PoisonError::into_inner);
        if service.is_none() {
            let connected = NameService::from_env(NAME_TIMEOUT);
            *service = Some(connected.map_err(|e| DpmError::Name(e.to_string()))?);
        }
        match service.as_mut() {
            Some(names) => call(names).map_err(|e| DpmError::Name(e.to_string())),
            None => Err(DpmError::Name("no name server".into())),
        }
    }
}

impl crate::runtime::Runtime {
    /// The launcher's name service, for the jobs of one launcher tree.
    fn launcher_names<T>(
        &self,
        _call: impl FnOnce(&mut NameService) -> Result<T, crate::dpm::names::NameError>,
    ) -> Result<T, DpmError> {
        Err(DpmError::Name(format!(
            "{NAMESERVER_ENV} is not set: start `commcore nameserver` and set it to the address \
             it prints"
        )))
    }
}
