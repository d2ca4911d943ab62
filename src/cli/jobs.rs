//! `seqgpt jobs`: the caller's jobs on the daemon (unfinished and retained), and reattaching
//! to one: `--wait PATH` prints its summary once it ends, as `seqgpt summarize` would have,
//! `--cancel PATH` cancels it. A job started with `detach` survives its client; this is how a
//! restarted client finds it again.

use super::remote::RemoteArgs;
use super::summarize::{dict_to_json, print_report, remote_error, Report};
use seqgpt_daemon::service::anchors;
use seqgpt_daemon::service::client;
use anyhow::Context;
use zbus::zvariant::OwnedObjectPath;

#[derive(clap::Args, Debug)]
pub struct JobsArgs {
    /// Wait for this job to end and print its summary (or its error).
    #[arg(long, value_name = "PATH", conflicts_with = "cancel")]
    pub wait: Option<String>,
    /// Cancel this job.
    #[arg(long, value_name = "PATH")]
    pub cancel: Option<String>,
    /// Print JSON: the list as [{"job", "state"}], a waited job as `seqgpt summarize --json`.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

pub fn run(args: JobsArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async {
        let (conn, _) = args.remote.connect().await?;
        client::owner(&conn).await.context("the daemon (org.seqgpt.Summarizer1) is not running and could not be started")?;
        if let Some(path) = &args.wait {
            let path = job_path(path)?;
            let job = client::job(&conn, path.clone()).await?;
            let (summary, method) = job.wait().await.map_err(remote_error)?;
            let mut stats = job.stats().await.map_err(remote_error)?;
            let sentences = stats.remove("anchors").map(|v| anchors::from_value(&v)).unwrap_or_default();
            let report = Report { summary, method, sentences, stats: dict_to_json(&stats), job: Some(path.to_string()) };
            return print_report(&report, args.json);
        }
        if let Some(path) = &args.cancel {
            client::job(&conn, job_path(path)?).await?.cancel().await.map_err(remote_error)?;
            return Ok(());
        }
        let jobs = client::summarizer(&conn).await?.list_jobs().await.map_err(remote_error)?;
        if args.json {
            let list: Vec<serde_json::Value> =
                jobs.iter().map(|(p, s)| serde_json::json!({"job": p.as_str(), "state": s})).collect();
            println!("{}", serde_json::Value::Array(list));
        } else {
            for (path, state) in &jobs {
                println!("{path}\t{state}");
            }
        }
        Ok(())
    })
}

fn job_path(s: &str) -> anyhow::Result<OwnedObjectPath> {
    if !s.starts_with(client::JOBS_PATH) {
        anyhow::bail!("'{s}' is not a job path (they start with {})", client::JOBS_PATH);
    }
    OwnedObjectPath::try_from(s.to_string()).map_err(|e| anyhow::anyhow!("'{s}': {e}"))
}
