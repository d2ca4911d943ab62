//! A minimal Rust client of seqgptd, with the zbus proxies of `seqgpt_daemon::service::client`: what
//! a reader plugin written in Rust needs, and nothing else.
//!
//! ```text
//! cargo run --release --example summarize_client -- FILE.pdf [short|medium|long] [unix:path=BUS]
//! cargo run --release --example summarize_client -- --text FILE.txt
//! ```
//!
//! The pattern, free of races: call, subscribe to the job's signals, *then* read its State
//! once: if the job ended before the subscription (a cache hit ends at once), the result is
//! in its properties; otherwise the signals bring it. Dropping the connection cancels the job
//! (the daemon watches its clients), so a closed document costs nothing.

use futures_util::StreamExt;
use seqgpt_daemon::service::client;
use std::collections::HashMap;
use zbus::zvariant::{Fd, Value};
use zbus::Connection;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let text_mode = args.first().is_some_and(|a| a == "--text");
    if text_mode {
        args.remove(0);
    }
    let file = args.first().ok_or("usage: summarize_client [--text] FILE [short|medium|long] [ADDRESS]")?.clone();
    let length = args.get(1).cloned().unwrap_or_else(|| "medium".into());
    let conn = match args.get(2) {
        Some(address) => zbus::connection::Builder::address(address.as_str())?.build().await?,
        None => Connection::session().await?,
    };

    let service = client::summarizer(&conn).await?;
    let mut options = HashMap::new();
    options.insert("length", Value::from(length.as_str()));
    let path = if text_mode {
        service.summarize_text(&std::fs::read_to_string(&file)?, &options).await?
    } else {
        // The daemon reads the descriptor; it never sees (or needs) the path.
        let pdf = std::fs::File::open(&file)?;
        service.summarize_fd(Fd::from(std::os::fd::AsFd::as_fd(&pdf)), &options).await?
    };
    let job = client::job(&conn, path).await?;
    let mut progress = job.receive_progress_signal().await?;
    let mut partial = job.receive_partial().await?;
    let mut finished = job.receive_finished().await?;
    let mut failed = job.receive_failed().await?;

    // Subscribed: now a result cannot slip by. Did the job end already?
    match job.state().await?.as_str() {
        "done" => {
            println!("{}", job.summary().await?);
            eprintln!("[{}]", job.method().await?);
            return Ok(());
        }
        "failed" | "cancelled" => {
            return Err(format!("{}: {}", job.error_name().await?, job.error_message().await?).into());
        }
        _ => {}
    }
    loop {
        tokio::select! {
            Some(p) = progress.next() => {
                let a = p.args()?;
                eprintln!("{}: {}/{}", a.stage, a.done, a.total);
            }
            Some(p) = partial.next() => {
                let _text = p.args()?.text; // a plugin would append this to a live preview
            }
            Some(f) = finished.next() => {
                let a = f.args()?;
                println!("{}", a.summary);
                let method: String = a.stats.get("method").and_then(|v| String::try_from(v.try_clone().ok()?).ok()).unwrap_or_default();
                eprintln!("[{method}]");
                return Ok(());
            }
            Some(f) = failed.next() => {
                let a = f.args()?;
                return Err(format!("{}: {}", a.error_name, a.message).into());
            }
        }
    }
}
