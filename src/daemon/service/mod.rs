//! The D-Bus service `seqgptd`: `org.seqgpt.Summarizer1` on the session, system or a private
//! bus. docs/DBUS.md is the API reference.
//!
//! Modules: [`summarizer`] (the service object), [`jobs`] (a job's state), [`anchors`] (a
//! summary sentence's place as the bus carries it, both ways), [`job_object`]
//! (its objects on the bus), [`job_task`] (the task that runs it), [`core`] (shared state,
//! quotas, access checks), [`limits`] (the `[service]` settings), [`intake`] (a call's
//! arguments checked into a request), [`options`] (the `a{sv}` options), [`input`] (reading
//! client files safely), [`errors`] (the D-Bus error names), [`bus_string`] (the one string
//! type that goes on the bus), [`introspection`] (what the service object shows of itself),
//! [`client`] (the proxies clients use).
//!
//! [`crate::app::run_daemon`] builds the service on the pipeline, owns the name and runs it
//! until SIGTERM or SIGINT.

pub mod anchors;
pub mod annotate_fd;
pub mod bus_string;
pub mod client;
pub mod core;
pub mod errors;
pub mod input;
pub mod intake;
pub mod introspection;
pub mod job_object;
pub mod job_task;
pub mod jobs;
pub mod limits;
pub mod options;
pub mod summarizer;

use anyhow::bail;

pub use self::core::BusKind;
pub use summarizer::{SERVICE_NAME, SERVICE_PATH};

/// Which bus to serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bus {
    Session,
    System,
    /// A D-Bus address (`unix:path=...`); only unix sockets are accepted.
    Address(String),
}

impl Bus {
    pub fn kind(&self) -> BusKind {
        match self {
            Bus::Session => BusKind::Session,
            Bus::System => BusKind::System,
            Bus::Address(_) => BusKind::Private,
        }
    }
}

/// Checks that a D-Bus address list names unix sockets only: the daemon opens no network
/// socket, ever.
pub fn check_unix_address(address: &str) -> anyhow::Result<()> {
    for part in address.split(';').filter(|p| !p.trim().is_empty()) {
        if !part.trim().starts_with("unix:") {
            bail!("D-Bus address '{part}' is not a unix socket; seqgptd talks over unix sockets only");
        }
    }
    Ok(())
}

/// A zbus connection builder for `bus` (unix transports only).
pub fn connection_builder(bus: &Bus) -> anyhow::Result<zbus::connection::Builder<'static>> {
    Ok(match bus {
        Bus::Address(a) => {
            check_unix_address(a)?;
            zbus::connection::Builder::address(a.as_str())?
        }
        Bus::Session => {
            if let Ok(a) = std::env::var("DBUS_SESSION_BUS_ADDRESS") {
                check_unix_address(&a)?;
            }
            zbus::connection::Builder::session()?
        }
        Bus::System => {
            if let Ok(a) = std::env::var("DBUS_SYSTEM_BUS_ADDRESS") {
                check_unix_address(&a)?;
            }
            zbus::connection::Builder::system()?
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unix_addresses() {
        assert!(check_unix_address("unix:path=/run/dbus/system_bus_socket").is_ok());
        assert!(check_unix_address("unix:abstract=/tmp/x,guid=1;unix:path=/a").is_ok());
        assert!(check_unix_address("tcp:host=localhost,port=1").is_err());
        assert!(check_unix_address("unix:path=/a;tcp:host=x,port=2").is_err());
    }
}
