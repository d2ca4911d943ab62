//! `seqgpt summarize FILE.pdf`: a summary from the daemon (session bus by default; `--system`
//! or `--address`), with a progress bar and the streamed text on stderr, the summary on
//! stdout; or, with `--local`, from the pipeline in this process (extractive unless `--model`
//! is given), which needs neither a daemon nor model weights.

use crate::config::Config;
use crate::service::errors::ServiceError;
use crate::service::jobs::JOBS_PATH;
use crate::service::{connection_builder, options::parse_pages, Bus, SERVICE_NAME, SERVICE_PATH};
use crate::summarize::pipeline::{Input, Observer, Pipeline, Stage};
use crate::summarize::{Language, Length, MethodChoice, Style, Summary, SummaryOptions};
use anyhow::{bail, Context};
use futures_util::StreamExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;
use zbus::message::Type as MessageType;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};
use zbus::{MatchRule, MessageStream};

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum LengthArg {
    Short,
    Medium,
    Long,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum StyleArg {
    Paragraph,
    Bullets,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum LanguageArg {
    Auto,
    En,
    Zh,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum MethodArg {
    Auto,
    Model,
    Extractive,
}

#[derive(clap::Args, Debug)]
pub struct SummarizeArgs {
    /// The PDF to summarize (with --text: a UTF-8 text file); "-" reads standard input.
    pub file: PathBuf,
    /// FILE is plain UTF-8 text (form feeds separate pages), not a PDF.
    #[arg(long)]
    pub text: bool,
    /// Run the pipeline in this process instead of asking the daemon.
    #[arg(long)]
    pub local: bool,
    /// With --local: the GGUF model (without it, the extractive summarizer).
    #[arg(long, requires = "local")]
    pub model: Option<PathBuf>,
    /// With --local: auto, cpu or cuda:N.
    #[arg(long, requires = "local")]
    pub device: Option<String>,
    /// With --local: CPU threads (0 = all cores).
    #[arg(long, requires = "local")]
    pub threads: Option<usize>,
    /// With --local: a seqgptd config file (model, templates, cache).
    #[arg(long, requires = "local")]
    pub config: Option<PathBuf>,
    /// Pages to summarize: N or A-B (1-based).
    #[arg(long)]
    pub pages: Option<String>,
    /// Password of an encrypted PDF.
    #[arg(long)]
    pub password: Option<String>,
    #[arg(long, value_enum, default_value = "medium")]
    pub length: LengthArg,
    #[arg(long, value_enum, default_value = "auto")]
    pub language: LanguageArg,
    #[arg(long, value_enum, default_value = "paragraph")]
    pub style: StyleArg,
    /// auto: the model when one is loaded; model: fail without one; extractive: never the model.
    #[arg(long, value_enum, default_value = "auto")]
    pub method: MethodArg,
    /// Do not use the daemon's summary cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Print one JSON object: {"summary", "method", "stats", "job"}.
    #[arg(long)]
    pub json: bool,
    /// Ask the daemon on the system bus.
    #[arg(long, conflicts_with_all = ["address", "local"])]
    pub system: bool,
    /// Ask the daemon on this D-Bus address (unix:path=...).
    #[arg(long, conflicts_with = "local")]
    pub address: Option<String>,
    /// Give up after this many seconds (0: wait as long as it takes).
    #[arg(long, default_value_t = 0)]
    pub timeout: u64,
}

impl SummarizeArgs {
    fn options(&self) -> anyhow::Result<SummaryOptions> {
        Ok(SummaryOptions {
            pages: self.pages.as_deref().map(parse_pages).transpose().map_err(|e| anyhow::anyhow!(e.message))?,
            length: match self.length {
                LengthArg::Short => Length::Short,
                LengthArg::Medium => Length::Medium,
                LengthArg::Long => Length::Long,
            },
            language: match self.language {
                LanguageArg::Auto => Language::Auto,
                LanguageArg::En => Language::En,
                LanguageArg::Zh => Language::Zh,
            },
            style: match self.style {
                StyleArg::Paragraph => Style::Paragraph,
                StyleArg::Bullets => Style::Bullets,
            },
            password: self.password.clone(),
            method: match self.method {
                MethodArg::Auto => MethodChoice::Auto,
                MethodArg::Model => MethodChoice::Model,
                MethodArg::Extractive => MethodChoice::Extractive,
            },
            no_cache: self.no_cache,
        })
    }
}

pub fn run(args: SummarizeArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let timeout = (args.timeout > 0).then(|| Duration::from_secs(args.timeout));
    let fut = async {
        if args.local {
            local(&args).await
        } else {
            remote(&args).await
        }
    };
    let outcome = runtime.block_on(async {
        match timeout {
            Some(t) => tokio::time::timeout(t, fut).await.unwrap_or_else(|_| bail!("no summary within {} s (--timeout)", t.as_secs())),
            None => fut.await,
        }
    })?;
    print_outcome(&outcome, args.json)
}

/// What the command prints.
struct Outcome {
    summary: String,
    method: String,
    stats: serde_json::Value,
    job: Option<String>,
}

fn print_outcome(o: &Outcome, json: bool) -> anyhow::Result<()> {
    if json {
        let v = serde_json::json!({"summary": o.summary, "method": o.method, "stats": o.stats, "job": o.job});
        println!("{v}");
    } else {
        println!("{}", o.summary);
    }
    Ok(())
}

/// Progress bar and streamed text on stderr (hidden when stderr is not a terminal).
struct Display {
    bar: ProgressBar,
}

impl Display {
    fn new() -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix:>9} [{bar:24}] {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(120));
        Display { bar }
    }

    fn progress(&self, stage: &str, done: u32, total: u32) {
        self.bar.set_prefix(stage.to_string());
        self.bar.set_length(u64::from(total));
        self.bar.set_position(u64::from(done));
    }

    /// Shows the tail of the text being generated on the bar's line.
    fn partial(&self, index: u32, text: &str, streams: &mut HashMap<u32, String>) {
        let s = streams.entry(index).or_default();
        s.push_str(text);
        let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
        let tail: String = flat.chars().rev().take(60).collect::<Vec<_>>().into_iter().rev().collect();
        self.bar.set_message(format!("#{index}: {tail}"));
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

struct LocalObserver {
    display: Display,
    streams: HashMap<u32, String>,
}

impl Observer for LocalObserver {
    fn progress(&mut self, stage: Stage, done: u32, total: u32) {
        self.display.progress(stage.as_str(), done, total);
    }
    fn partial(&mut self, index: u32, text: &str) {
        self.display.partial(index, text, &mut self.streams);
    }
}

fn read_input(args: &SummarizeArgs) -> anyhow::Result<Vec<u8>> {
    if args.file.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).context("reading standard input")?;
        return Ok(buf);
    }
    std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))
}

fn text_of(bytes: Vec<u8>, args: &SummarizeArgs) -> anyhow::Result<String> {
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", args.file.display()))
}

/// The pipeline in this process.
async fn local(args: &SummarizeArgs) -> anyhow::Result<Outcome> {
    let mut cfg = match &args.config {
        Some(p) => Config::load(p)?,
        None => {
            // Without a config file nothing is cached: the command leaves no state behind.
            let mut c = Config::default();
            c.cache.enabled = false;
            c
        }
    };
    if let Some(d) = &args.device {
        cfg.device = d.clone();
    }
    if let Some(t) = args.threads {
        cfg.threads = t;
    }
    let opts = args.options()?;
    if args.model.as_ref().is_some_and(|m| !m.exists()) {
        bail!("model file {} does not exist", args.model.as_ref().map_or(String::new(), |m| m.display().to_string()));
    }
    let want_model = opts.method != MethodChoice::Extractive && (args.model.is_some() || cfg.model.is_some());
    let loaded = if want_model {
        tokio::task::block_in_place(|| crate::service::load_model(&cfg, args.model.as_deref(), None))?
    } else {
        None
    };
    let (generator, setup) = match loaded {
        Some(m) => (Some(m.generator), Some(m.setup)),
        None => (None, None),
    };
    let pipeline = Pipeline::new(setup, crate::service::open_cache(&cfg), crate::service::pipeline_settings(&cfg));
    let bytes = read_input(args)?;
    let input = if args.text {
        if opts.password.is_some() {
            bail!("--password applies to PDFs only");
        }
        Input::Text(text_of(bytes, args)?)
    } else {
        let max = cfg.service.max_pdf_bytes;
        if bytes.len() as u64 > max {
            bail!("{}: too large: {} bytes (limit {max}, [service] max_pdf_bytes)", args.file.display(), bytes.len());
        }
        Input::Pdf { bytes, permit: None }
    };
    let mut obs = LocalObserver { display: Display::new(), streams: HashMap::new() };
    let result = pipeline.summarize(input, &opts, &mut obs, &crate::summarize::Cancel::new()).await;
    obs.display.finish();
    drop(pipeline);
    if let Some(g) = generator {
        g.shutdown().await;
    }
    let summary: Summary = result.map_err(|e| anyhow::anyhow!("{}", ServiceError::from(e)))?;
    Ok(Outcome {
        method: summary.method.as_str().to_string(),
        stats: serde_json::to_value(&summary.stats)?,
        summary: summary.text,
        job: None,
    })
}

/// A job's signals, as received.
enum JobSignal {
    Progress(String, u32, u32),
    Partial(u32, String),
    Finished(String, HashMap<String, OwnedValue>),
    Failed(String, String),
}

/// Asks the daemon.
async fn remote(args: &SummarizeArgs) -> anyhow::Result<Outcome> {
    let bus = match (&args.address, args.system) {
        (Some(a), _) => Bus::Address(a.clone()),
        (None, true) => Bus::System,
        (None, false) => Bus::Session,
    };
    let conn = connection_builder(&bus)?.build().await.context("connecting to the bus")?;
    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
    // Not running: D-Bus activation starts it (if installed) on the first call, below.
    let owner = dbus.get_name_owner(zbus::names::BusName::try_from(SERVICE_NAME)?).await.ok();
    let opts = args.options()?;
    let mut dict: HashMap<&str, Value<'_>> = HashMap::new();
    if let Some(p) = &args.pages {
        dict.insert("pages", Value::from(p.as_str()));
    }
    dict.insert("length", Value::from(opts.length.as_str()));
    dict.insert("language", Value::from(opts.language.as_str()));
    dict.insert("style", Value::from(opts.style.as_str()));
    dict.insert(
        "method",
        Value::from(match opts.method {
            MethodChoice::Auto => "auto",
            MethodChoice::Model => "model",
            MethodChoice::Extractive => "extractive",
        }),
    );
    if opts.no_cache {
        dict.insert("no_cache", Value::from(true));
    }
    if let Some(pw) = &args.password {
        dict.insert("password", Value::from(pw.as_str()));
    }

    let bytes_or_file = if args.text { Some(text_of(read_input(args)?, args)?) } else { None };
    // Ping first (activating the service if needed), so that its unique name is known before
    // the job starts: the job's signals come from it.
    let owner = match owner {
        Some(o) => o,
        None => {
            conn.call_method(Some(SERVICE_NAME), SERVICE_PATH, Some("org.freedesktop.DBus.Peer"), "Ping", &())
                .await
                .context("the daemon (org.seqgpt.Summarizer1) is not running and could not be started")?;
            dbus.get_name_owner(zbus::names::BusName::try_from(SERVICE_NAME)?).await?
        }
    };
    let rule = MatchRule::builder()
        .msg_type(MessageType::Signal)
        .sender(owner.as_str())?
        .path_namespace(JOBS_PATH)?
        .build();
    let mut signals = MessageStream::for_match_rule(rule, &conn, Some(1024)).await?;
    let gone_rule = MatchRule::builder()
        .msg_type(MessageType::Signal)
        .sender("org.freedesktop.DBus")?
        .member("NameOwnerChanged")?
        .arg(0, SERVICE_NAME)?
        .build();
    let mut gone = MessageStream::for_match_rule(gone_rule, &conn, Some(16)).await?;

    let reply = match bytes_or_file {
        Some(text) => conn.call_method(Some(SERVICE_NAME), SERVICE_PATH, Some(SERVICE_NAME), "SummarizeText", &(text, &dict)).await,
        None => {
            let file = if args.file.as_os_str() == "-" {
                // The daemon takes regular files only: standard input goes into a memfd.
                memfd_with(&read_input(args)?)?
            } else {
                std::fs::File::open(&args.file).with_context(|| format!("opening {}", args.file.display()))?
            };
            let fd = zbus::zvariant::Fd::from(std::os::fd::AsFd::as_fd(&file));
            conn.call_method(Some(SERVICE_NAME), SERVICE_PATH, Some(SERVICE_NAME), "SummarizeFd", &(fd, &dict)).await
        }
    };
    let reply = reply.map_err(remote_error)?;
    let job: OwnedObjectPath = reply.body().deserialize()?;

    let display = Display::new();
    let mut streams = HashMap::new();
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    let result = loop {
        tokio::select! {
            msg = signals.next() => {
                let Some(Ok(msg)) = msg else { break Err(anyhow::anyhow!("the bus connection closed")) };
                let hdr = msg.header();
                if hdr.path().map(|p| p.as_str()) != Some(job.as_str()) {
                    continue;
                }
                match parse_signal(&msg) {
                    Some(JobSignal::Progress(stage, done, total)) => display.progress(&stage, done, total),
                    Some(JobSignal::Partial(i, t)) => display.partial(i, &t, &mut streams),
                    Some(JobSignal::Finished(summary, stats)) => break Ok((summary, stats)),
                    Some(JobSignal::Failed(name, message)) => break Err(anyhow::anyhow!("{name}: {message}")),
                    None => {}
                }
            }
            _ = gone.next() => {
                break Err(anyhow::anyhow!("the daemon left the bus before the job ended"));
            }
            _ = &mut interrupt => {
                let _ = conn.call_method(Some(SERVICE_NAME), job.as_str(), Some("org.seqgpt.Job1"), "Cancel", &()).await;
                display.finish();
                bail!("interrupted: the job was cancelled");
            }
        }
    };
    display.finish();
    let (summary, stats) = result?;
    let method = match stats.get("method").map(|v| &**v) {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    Ok(Outcome { summary, method, stats: dict_to_json(&stats), job: Some(job.to_string()) })
}

/// An anonymous in-memory file holding `bytes` (a regular file for the daemon's checks).
fn memfd_with(bytes: &[u8]) -> anyhow::Result<std::fs::File> {
    use std::io::Write;
    // SAFETY: memfd_create with a static NUL-terminated name; the result is checked.
    let raw = unsafe { libc::memfd_create(c"seqgpt-stdin".as_ptr(), libc::MFD_CLOEXEC) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error()).context("memfd_create");
    }
    // SAFETY: `raw` is a new descriptor owned by nothing else.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(raw) };
    file.write_all(bytes).context("writing standard input to a memfd")?;
    Ok(file)
}

fn remote_error(e: zbus::Error) -> anyhow::Error {
    match e {
        zbus::Error::MethodError(name, Some(msg), _) => anyhow::anyhow!("{name}: {msg}"),
        zbus::Error::MethodError(name, None, _) => anyhow::anyhow!("{name}"),
        other => anyhow::anyhow!(other),
    }
}

fn parse_signal(msg: &zbus::Message) -> Option<JobSignal> {
    let hdr = msg.header();
    if hdr.interface().map(|i| i.as_str()) != Some("org.seqgpt.Job1") {
        return None;
    }
    let body = msg.body();
    match hdr.member()?.as_str() {
        "Progress" => body.deserialize::<(String, u32, u32)>().ok().map(|(s, d, t)| JobSignal::Progress(s, d, t)),
        "Partial" => body.deserialize::<(u32, String)>().ok().map(|(i, t)| JobSignal::Partial(i, t)),
        "Finished" => {
            body.deserialize::<(String, HashMap<String, OwnedValue>)>().ok().map(|(s, st)| JobSignal::Finished(s, st))
        }
        "Failed" => body.deserialize::<(String, String)>().ok().map(|(n, m)| JobSignal::Failed(n, m)),
        _ => None,
    }
}

/// A stats dictionary as JSON (numbers, booleans, strings, string lists).
fn dict_to_json(d: &HashMap<String, OwnedValue>) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    let mut keys: Vec<&String> = d.keys().collect();
    keys.sort();
    for k in keys {
        m.insert(k.clone(), value_to_json(&d[k]));
    }
    serde_json::Value::Object(m)
}

fn value_to_json(v: &Value<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        Value::Bool(b) => J::Bool(*b),
        Value::U8(n) => J::from(*n),
        Value::U16(n) => J::from(*n),
        Value::U32(n) => J::from(*n),
        Value::U64(n) => J::from(*n),
        Value::I16(n) => J::from(*n),
        Value::I32(n) => J::from(*n),
        Value::I64(n) => J::from(*n),
        Value::F64(n) => J::from(*n),
        Value::Str(s) => J::from(s.as_str()),
        Value::Value(inner) => value_to_json(inner),
        Value::Array(a) => J::Array(a.iter().map(value_to_json).collect()),
        other => J::from(other.to_string()),
    }
}
