//! `seqgpt classify` and `seqgpt extract`: SeqGPT's two other tasks, asked of the daemon
//! (they need its model): which of some labels apply to a text, and the spans of a text of
//! each kind asked for.

use super::remote::RemoteArgs;
use super::summarize::remote_error;
use seqgpt_daemon::service::client;
use anyhow::Context;
use std::io::Read;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct ClassifyArgs {
    /// A UTF-8 text file; "-" reads standard input.
    pub file: PathBuf,
    /// The labels to choose from, comma-separated (e.g. "positive,negative").
    #[arg(long, value_delimiter = ',', required = true)]
    pub labels: Vec<String>,
    /// Print JSON: {"labels", "answer"} (the model's raw answer too).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

#[derive(clap::Args, Debug)]
pub struct ExtractArgs {
    /// A UTF-8 text file; "-" reads standard input.
    pub file: PathBuf,
    /// The kinds of span to find, comma-separated (e.g. "person,city", "人名,地名").
    #[arg(long, value_delimiter = ',', required = true)]
    pub kinds: Vec<String>,
    /// Print JSON: {"spans": {kind: [span]}, "answer"}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

fn read_text(path: &Path) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin().read_to_end(&mut bytes).context("reading standard input")?;
    } else {
        bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    }
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", path.display()))
}

fn block_on<T>(f: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?.block_on(f)
}

pub fn classify(args: ClassifyArgs) -> anyhow::Result<()> {
    let text = read_text(&args.file)?;
    let (labels, answer) = block_on(async {
        let (conn, _) = args.remote.connect().await?;
        let labels: Vec<&str> = args.labels.iter().map(String::as_str).collect();
        client::summarizer(&conn).await?.classify(&text, &labels).await.map_err(remote_error)
    })?;
    if args.json {
        println!("{}", serde_json::json!({"labels": labels, "answer": answer}));
    } else {
        for l in labels {
            println!("{l}");
        }
    }
    Ok(())
}

pub fn extract(args: ExtractArgs) -> anyhow::Result<()> {
    let text = read_text(&args.file)?;
    let (spans, answer) = block_on(async {
        let (conn, _) = args.remote.connect().await?;
        let kinds: Vec<&str> = args.kinds.iter().map(String::as_str).collect();
        client::summarizer(&conn).await?.extract(&text, &kinds).await.map_err(remote_error)
    })?;
    if args.json {
        println!("{}", serde_json::json!({"spans": spans, "answer": answer}));
    } else {
        // In the order asked for, then any other kind the model named.
        let mut kinds: Vec<&String> = args.kinds.iter().filter(|k| spans.contains_key(*k)).collect();
        let mut rest: Vec<&String> = spans.keys().filter(|k| !args.kinds.contains(k)).collect();
        rest.sort();
        kinds.extend(rest);
        for k in kinds {
            println!("{k}: {}", spans[k].join("; "));
        }
    }
    Ok(())
}
