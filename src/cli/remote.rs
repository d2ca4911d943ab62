//! Which daemon a command asks, for every subcommand that talks to seqgptd.
//!
//! One daemon per machine: where the system service is installed (its name owned or
//! activatable on the system bus) and this user may call it (root or a member of
//! seqgpt-users), commands use it; otherwise the user's session daemon. A session daemon
//! started beside a system service would load a second copy of the model, which an 8 GB board
//! cannot afford. `--system`, `--session` and `--address` choose explicitly.

use seqgpt_daemon::service::{client, connection_builder, Bus};
use anyhow::{bail, Context};
use zbus::Connection;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct RemoteArgs {
    /// Ask the daemon on the system bus (the default when it is installed and this user may
    /// call it).
    #[arg(long, conflicts_with_all = ["session", "address"])]
    pub system: bool,
    /// Ask the user's own daemon on the session bus, even where a system service runs.
    #[arg(long, conflicts_with = "address")]
    pub session: bool,
    /// Ask the daemon on this D-Bus address (unix:path=...).
    #[arg(long, value_name = "ADDRESS")]
    pub address: Option<String>,
}

impl RemoteArgs {
    /// A connection to the bus of the daemon to ask, and which bus it is.
    pub async fn connect(&self) -> anyhow::Result<(Connection, &'static str)> {
        let explicit = match (&self.address, self.system, self.session) {
            (Some(a), _, _) => Some((Bus::Address(a.clone()), "address")),
            (None, true, _) => Some((Bus::System, "system")),
            (None, _, true) => Some((Bus::Session, "session")),
            _ => None,
        };
        if let Some((bus, name)) = explicit {
            let conn = connection_builder(&bus)?.build().await.with_context(|| format!("connecting to the {name} bus"))?;
            return Ok((conn, name));
        }
        let system = match connection_builder(&Bus::System) {
            Err(e) => e.to_string(),
            Ok(b) => match b.build().await {
                Err(e) => e.to_string(),
                Ok(conn) => match client::serves_caller(&conn).await {
                    Ok(()) => return Ok((conn, "system")),
                    Err(why) => why,
                },
            },
        };
        let session = async { connection_builder(&Bus::Session)?.build().await.map_err(anyhow::Error::from) };
        match session.await {
            Ok(conn) => Ok((conn, "session")),
            Err(e) => bail!("no seqgptd to ask. System bus: {system}. Session bus: {e:#}"),
        }
    }
}
