//! `seqgpt summarize FILE.pdf`: a summary from the daemon (the system service where it is
//! installed and usable, else the session one: [`super::remote`]), with a progress bar and the streamed text on stderr, the summary on
//! stdout; or, with `--local`, from the pipeline in this process (extractive unless `--model`
//! is given), which needs neither a daemon nor model weights.

use seqgpt_daemon::config::Config;
use seqgpt_daemon::service::errors::ServiceError;
use seqgpt_daemon::service::anchors;
use seqgpt_daemon::service::client;
use seqgpt_daemon::service::options::{parse_pages, RequestOptions};
use seqgpt_daemon::service::SERVICE_NAME;
use super::remote::RemoteArgs;
use seqgpt_daemon::summarize::pipeline::{Input, Observer, Stage};
use seqgpt_daemon::summarize::Anchor;
use seqgpt_daemon::summarize::{Language, Length, MethodChoice, Style, Summary, SummaryOptions};
use anyhow::{bail, Context};
use futures_util::StreamExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;
use zbus::zvariant::{OwnedValue, Value};

#[derive(clap::Args, Debug)]
pub struct SummarizeArgs {
    /// The PDF to summarize (with --text: a UTF-8 text file); "-" reads standard input.
    pub file: PathBuf,
    /// FILE is plain UTF-8 text (form feeds separate pages), not a PDF.
    #[arg(long)]
    pub text: bool,
    /// Run the pipeline in this process instead of asking the daemon.
    #[arg(long, conflicts_with_all = ["system", "session", "address"])]
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
    /// Password of an encrypted PDF (visible to other local users in the process list:
    /// prefer --password-file).
    #[arg(long)]
    pub password: Option<String>,
    /// Read the PDF's password from FILE ("-": standard input), its first line.
    #[arg(long, value_name = "FILE", conflicts_with = "password")]
    pub password_file: Option<PathBuf>,
    /// The summary's length: short, medium or long (60, 120, 250 words; a CJK character counts
    /// as a word). --max-words overrides it.
    #[arg(long, value_enum, default_value = "medium")]
    pub length: Length,
    /// The most words the summary may have (a CJK character counts as one). An extractive
    /// summary fills at least 85% of it, in whole sentences, when the document has that much
    /// prose.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_words: Option<u32>,
    /// The summary's language: auto follows the document.
    #[arg(long, value_enum, default_value = "auto")]
    pub language: Language,
    /// One paragraph, or one bullet ("- ") per sentence.
    #[arg(long, value_enum, default_value = "paragraph")]
    pub style: Style,
    /// auto: the model when one is loaded; model: fail without one; extractive: never the model.
    #[arg(long, value_enum, default_value = "auto")]
    pub method: MethodChoice,
    /// Do not use the daemon's summary cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Print one JSON object: {"summary", "method", "sentences", "stats", "job"}; "sentences"
    /// says where each sentence of the summary stands: {"text", "page", "start", "end",
    /// "boxes"} (docs/SUMMARIZE.md).
    #[arg(long)]
    pub json: bool,
    /// Also write a copy of the PDF with each summary sentence highlighted where it stands
    /// and a note holding the whole summary (standard annotations, appended to the original
    /// bytes: any PDF reader shows them). Extractive summaries only: a model's own words stand
    /// nowhere in the document.
    #[arg(long, value_name = "OUT.pdf", conflicts_with_all = ["text", "explain"])]
    pub annotate: Option<PathBuf>,
    /// With --local: print, instead of the summary, why the extractive summary is what it is:
    /// every block with its kind and section, every sentence with its features and score
    /// (JSON).
    #[arg(long, requires = "local")]
    pub explain: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Give up after this many seconds (0: wait as long as it takes).
    #[arg(long, default_value_t = 0)]
    pub timeout: u64,
}

impl SummarizeArgs {
    fn options(&self) -> anyhow::Result<SummaryOptions> {
        Ok(SummaryOptions {
            pages: self.pages.as_deref().map(parse_pages).transpose().map_err(|e| anyhow::anyhow!(e.message))?,
            length: self.length,
            language: self.language,
            style: self.style,
            password: self.password.clone(),
            method: self.method,
            no_cache: self.no_cache,
            max_words: self.max_words,
        })
    }
}

/// The first line of a password file ("-": standard input), without its line ending.
pub fn read_password(path: &std::path::Path) -> anyhow::Result<String> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).context("reading the password from standard input")?;
    } else {
        text = std::fs::read_to_string(path).with_context(|| format!("reading the password file {}", path.display()))?;
    }
    Ok(text.lines().next().unwrap_or("").to_string())
}

pub fn run(mut args: SummarizeArgs) -> anyhow::Result<()> {
    if let Some(file) = args.password_file.take() {
        if file.as_os_str() == "-" && args.file.as_os_str() == "-" {
            bail!("standard input cannot hold both the PDF and its password (--password-file -)");
        }
        args.password = Some(read_password(&file)?);
    }
    if args.local {
        // The benchmark's switch (SEQGPT_SUMMARY_ABLATE): read here only, never by the daemon.
        seqgpt_daemon::summarize::ablation::enable_from_env().map_err(|e| anyhow::anyhow!(e))?;
    }
    if args.explain {
        let bytes = read_input(&args)?;
        let input = if args.text { Input::Text(text_of(bytes, &args)?) } else { Input::Pdf { bytes, permit: None } };
        let v = seqgpt_daemon::summarize::pipeline::explain(input, &args.options()?, &seqgpt_pdf::Limits::default())
            .map_err(|e| anyhow::anyhow!("{}", ServiceError::from(e)))?;
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if let Some(out) = &args.annotate {
        check_annotate_target(&args.file, out)?;
    }
    let report = fetch(&args)?;
    print_report(&report, args.json)?;
    if let Some(out) = &args.annotate {
        // The summary is printed first: a copy that cannot be written loses nothing else.
        write_annotated(&args.file, out, &report, &made_by(&report, &args))?;
        eprintln!("annotated copy: {} ({} sentences highlighted)", out.display(), report.sentences.iter().filter(|a| !a.boxes.is_empty()).count());
    }
    Ok(())
}

/// The summary of `args.file`, from the daemon or (with --local) this process.
pub(super) fn fetch(args: &SummarizeArgs) -> anyhow::Result<Report> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let timeout = (args.timeout > 0).then(|| Duration::from_secs(args.timeout));
    let fut = async {
        if args.local {
            local(args).await
        } else {
            remote(args).await
        }
    };
    runtime.block_on(async {
        match timeout {
            Some(t) => tokio::time::timeout(t, fut).await.unwrap_or_else(|_| bail!("no summary within {} s (--timeout)", t.as_secs())),
            None => fut.await,
        }
    })
}

/// Refuses, before any work, an annotated copy that would replace its own original or
/// cannot be made from standard input.
pub(super) fn check_annotate_target(file: &std::path::Path, out: &std::path::Path) -> anyhow::Result<()> {
    if file.as_os_str() == "-" {
        bail!("--annotate needs the PDF as a file, not on standard input");
    }
    if out.exists() && crate::reader::zathura::same_file(file, out) {
        bail!("--annotate {}: that is the PDF itself; name another file for the copy", out.display());
    }
    Ok(())
}

/// How the summary was made, for the annotated copy's note.
pub(super) fn made_by(o: &Report, args: &SummarizeArgs) -> String {
    let field = |k: &str| o.stats.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
    let mut how = format!("seqgpt {}, {} summary, {} length", env!("CARGO_PKG_VERSION"), o.method, format!("{:?}", args.length).to_lowercase());
    if !field("model").is_empty() {
        how.push_str(&format!(", model {}", field("model")));
    }
    if !field("language").is_empty() {
        how.push_str(&format!(", language {}", field("language")));
    }
    how
}

/// Writes the annotated copy of `file` for `o` to `out`.
pub(super) fn write_annotated(file: &std::path::Path, out: &std::path::Path, o: &Report, made_by: &str) -> anyhow::Result<()> {
    if let Some(why) = crate::reader::annotated::unplaceable(&o.sentences, &o.method) {
        bail!("no annotated copy: {why}");
    }
    let pdf = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let copy = crate::reader::annotated::annotated_copy(&pdf, &o.summary, &o.sentences, made_by)
        .map_err(|e| anyhow::anyhow!("no annotated copy of {}: {e}", file.display()))?;
    crate::reader::annotated::write_atomically(out, &copy).with_context(|| format!("writing {}", out.display()))
}

/// What the command prints (also `seqgpt jobs --wait` and `seqgpt show`): the summary, its
/// method and anchors, the stats as JSON, and the job it came from on the daemon.
pub(super) struct Report {
    pub summary: String,
    pub method: String,
    pub sentences: Vec<Anchor>,
    pub stats: serde_json::Value,
    pub job: Option<String>,
}

pub(super) fn print_report(o: &Report, json: bool) -> anyhow::Result<()> {
    if json {
        let v = serde_json::json!({"summary": o.summary, "method": o.method, "sentences": o.sentences, "stats": o.stats, "job": o.job});
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
async fn local(args: &SummarizeArgs) -> anyhow::Result<Report> {
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
    let mut opts = args.options()?;
    if !seqgpt_daemon::summarize::ablation::stages().is_empty() {
        // A summary with stages switched off is a measurement, not one to keep.
        opts.no_cache = true;
    }
    if args.model.as_ref().is_some_and(|m| !m.exists()) {
        bail!("model file {} does not exist", args.model.as_ref().map_or(String::new(), |m| m.display().to_string()));
    }
    let want_model = opts.method != MethodChoice::Extractive && (args.model.is_some() || cfg.model.is_some());
    if !want_model {
        cfg.model = None;
    }
    let built = tokio::task::block_in_place(|| seqgpt_daemon::app::pipeline(&cfg, args.model.as_deref().filter(|_| want_model), None))?;
    let (pipeline, scheduler) = (built.pipeline, built.scheduler);
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
    let result = pipeline.summarize(input, &opts, &mut obs, &seqgpt_daemon::summarize::Cancel::new()).await;
    obs.display.finish();
    drop(pipeline);
    if let Some(g) = scheduler {
        g.shutdown().await;
    }
    let summary: Summary = result.map_err(|e| anyhow::anyhow!("{}", ServiceError::from(e)))?;
    Ok(Report {
        method: summary.method.as_str().to_string(),
        stats: serde_json::to_value(&summary.stats)?,
        sentences: summary.sentences,
        summary: summary.text,
        job: None,
    })
}

/// Asks the daemon.
async fn remote(args: &SummarizeArgs) -> anyhow::Result<Report> {
    let (conn, _) = args.remote.connect().await?;
    let options = client::encode_options(&RequestOptions { summary: args.options()?, ..Default::default() });
    let text = if args.text { Some(text_of(read_input(args)?, args)?) } else { None };
    // Activates the daemon if it is installed and not running.
    client::owner(&conn).await.context("the daemon (org.seqgpt.Summarizer1) is not running and could not be started")?;
    // Subscribed before the call: the daemon leaving the bus at any point ends the wait.
    let dbus = zbus::fdo::DBusProxy::new(&conn).await?;
    let mut gone = dbus.receive_name_owner_changed_with_args(&[(0, SERVICE_NAME)]).await?;

    let service = client::summarizer(&conn).await?;
    let path = match text {
        Some(text) => service.summarize_text(&text, &options).await,
        None => {
            let file = if args.file.as_os_str() == "-" {
                // The daemon takes regular files only: standard input goes into a memfd.
                memfd_with(&read_input(args)?)?
            } else {
                std::fs::File::open(&args.file).with_context(|| format!("opening {}", args.file.display()))?
            };
            service.summarize_fd(zbus::zvariant::Fd::from(std::os::fd::AsFd::as_fd(&file)), &options).await
        }
    }
    .map_err(remote_error)?;

    // The pattern of every client (docs/DBUS.md): call, subscribe to the job's signals, then
    // read its State once. A job that ended before the subscription (a cache hit ends at
    // once) has its result in its properties; otherwise the signals bring it.
    let job = client::job(&conn, path.clone()).await?;
    let mut progress = job.receive_progress_signal().await?;
    let mut partial = job.receive_partial().await?;
    let mut finished = job.receive_finished().await?;
    let mut failed = job.receive_failed().await?;
    let ended = match job.state().await.map_err(remote_error)?.as_str() {
        "done" => Some(Ok((job.summary().await.map_err(remote_error)?, job.stats().await.map_err(remote_error)?))),
        "failed" | "cancelled" => Some(Err(anyhow::anyhow!(
            "{}: {}",
            job.error_name().await.map_err(remote_error)?,
            job.error_message().await.map_err(remote_error)?
        ))),
        _ => None,
    };

    let display = Display::new();
    let mut streams = HashMap::new();
    let mut interrupt = std::pin::pin!(tokio::signal::ctrl_c());
    let result = match ended {
        Some(result) => result,
        None => loop {
            tokio::select! {
                Some(p) = progress.next() => {
                    if let Ok(a) = p.args() {
                        display.progress(&a.stage, a.done, a.total);
                    }
                }
                Some(p) = partial.next() => {
                    if let Ok(a) = p.args() {
                        display.partial(a.index, &a.text, &mut streams);
                    }
                }
                Some(f) = finished.next() => {
                    let a = f.args()?;
                    break Ok((a.summary, a.stats));
                }
                Some(f) = failed.next() => {
                    let a = f.args()?;
                    break Err(anyhow::anyhow!("{}: {}", a.error_name, a.message));
                }
                _ = gone.next() => {
                    break Err(anyhow::anyhow!("the daemon left the bus before the job ended"));
                }
                _ = &mut interrupt => {
                    let _ = job.cancel().await;
                    display.finish();
                    bail!("interrupted: the job was cancelled");
                }
                else => break Err(anyhow::anyhow!("the bus connection closed")),
            }
        },
    };
    display.finish();
    let (summary, mut stats) = result?;
    let method = match stats.get("method").map(|v| &**v) {
        Some(Value::Str(s)) => s.to_string(),
        _ => String::new(),
    };
    let sentences = stats.remove("anchors").map(|v| anchors::from_value(&v)).unwrap_or_default();
    Ok(Report { summary, method, sentences, stats: dict_to_json(&stats), job: Some(path.to_string()) })
}

/// An anonymous in-memory file holding `bytes` (a regular file for the daemon's checks).
fn memfd_with(bytes: &[u8]) -> anyhow::Result<std::fs::File> {
    use std::io::Write;
    let fd = rustix::fs::memfd_create("seqgpt-stdin", rustix::fs::MemfdFlags::CLOEXEC).context("memfd_create")?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes).context("writing standard input to a memfd")?;
    Ok(file)
}

pub(super) fn remote_error(e: zbus::Error) -> anyhow::Error {
    match e {
        zbus::Error::MethodError(name, Some(msg), _) => anyhow::anyhow!("{name}: {msg}"),
        zbus::Error::MethodError(name, None, _) => anyhow::anyhow!("{name}"),
        other => anyhow::anyhow!(other),
    }
}

/// A stats dictionary as JSON (numbers, booleans, strings, string lists).
pub(super) fn dict_to_json(d: &HashMap<String, OwnedValue>) -> serde_json::Value {
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
