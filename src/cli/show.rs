//! `seqgpt show FILE.pdf`: the summary in the reader, where its sentences stand. The summary
//! comes as `seqgpt summarize` gets it (the daemon, or this process with --local); its
//! sentences are printed numbered, and:
//! - an annotated copy of FILE (a highlight on each sentence, a note with the summary) is
//!   written, by default into the user's cache;
//! - zathura (the one that shows FILE or its copy, else a new one) is told over its D-Bus
//!   interface to show the copy at the page of sentence 1 or of the one `--goto N` names;
//! - Okular and Evince open the copy at that page.

use super::remote::RemoteArgs;
use super::summarize::{self, Report, SummarizeArgs};
use crate::reader::launch::{self, Reader};
use crate::reader::zathura;
use seqgpt_daemon::summarize::{Language, Length, MethodChoice, Style};
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// The PDF.
    pub file: PathBuf,
    /// Go to the page of summary sentence N (from 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub goto: Option<u32>,
    /// The reader: auto (a zathura that shows the file, else the first installed of zathura,
    /// okular, evince), or one of them.
    #[arg(long, value_enum)]
    pub reader: Option<Reader>,
    /// Where the annotated copy goes (default: the user's cache, ~/.cache/seqgpt/annotated/).
    #[arg(long, value_name = "OUT.pdf")]
    pub annotate: Option<PathBuf>,
    /// A zathura configuration folder (its zathurarc sets the highlight colours) for a zathura
    /// this command starts.
    #[arg(long, value_name = "DIR")]
    pub zathura_config: Option<PathBuf>,
    /// Print the sentences and write the copy, but start no reader: a zathura that shows the
    /// file is still told to show the copy; fail when zathura is asked for and none shows it.
    #[arg(long)]
    pub no_start: bool,
    /// Summarize in this process instead of asking the daemon.
    #[arg(long, conflicts_with_all = ["system", "session", "address"])]
    pub local: bool,
    /// Pages to summarize: N or A-B (1-based).
    #[arg(long)]
    pub pages: Option<String>,
    /// Read the PDF's password from FILE ("-": standard input), its first line.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// The summary's length: short, medium or long.
    #[arg(long, value_enum, default_value = "medium")]
    pub length: Length,
    /// The summary's language: auto follows the document.
    #[arg(long, value_enum, default_value = "auto")]
    pub language: Language,
    /// auto: the model when one is loaded; extractive: never the model (a model's own words
    /// stand nowhere in the document, so only quoted sentences can be shown).
    #[arg(long, value_enum, default_value = "auto")]
    pub method: MethodChoice,
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Give up on the summary after this many seconds (0: wait as long as it takes).
    #[arg(long, default_value_t = 0)]
    pub timeout: u64,
}

impl ShowArgs {
    fn summarize_args(&self) -> SummarizeArgs {
        SummarizeArgs {
            file: self.file.clone(),
            text: false,
            local: self.local,
            model: None,
            device: None,
            threads: None,
            config: None,
            pages: self.pages.clone(),
            password: None,
            password_file: self.password_file.clone(),
            length: self.length,
            max_words: None,
            language: self.language,
            style: Style::Paragraph,
            method: self.method,
            no_cache: false,
            json: false,
            annotate: None,
            explain: false,
            remote: self.remote.clone(),
            timeout: self.timeout,
        }
    }
}

pub fn run(args: ShowArgs) -> anyhow::Result<()> {
    if !args.file.is_file() {
        bail!("{}: no such file", args.file.display());
    }
    if let Some(out) = &args.annotate {
        summarize::check_annotate_target(&args.file, out)?;
    }
    let mut sargs = args.summarize_args();
    if let Some(f) = sargs.password_file.take() {
        sargs.password = Some(summarize::read_password(&f)?);
    }
    let report = summarize::fetch(&sargs).map_err(|e| {
        if !args.local && format!("{e:#}").contains("not running") {
            e.context("no summary: the daemon is not there (start seqgptd, or use --local)")
        } else {
            e
        }
    })?;
    print_numbered(&report);
    if let Some(why) = crate::reader::annotated::unplaceable(&report.sentences, &report.method) {
        eprintln!("nothing to highlight: {why}. The summary is printed above.");
        return Ok(());
    }
    let count = report.sentences.len() as u32;
    let current = match args.goto {
        Some(n) if n > count => bail!("--goto {n}: the summary has {count} sentence{}", if count == 1 { "" } else { "s" }),
        Some(n) => n as usize - 1,
        None => 0,
    };
    let pages = seqgpt_pdf::page_geometry(&std::fs::read(&args.file)?, sargs.password.as_deref(), &Default::default())
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(show(&args, &sargs, &report, &pages, current))
}

/// The summary's sentences, numbered as `--goto` counts them, with their pages.
fn print_numbered(o: &Report) {
    if o.sentences.is_empty() {
        println!("{}", o.summary);
        return;
    }
    for (i, a) in o.sentences.iter().enumerate() {
        println!("{}. [p. {}] {}", i + 1, a.page, a.text);
    }
}

async fn show(args: &ShowArgs, sargs: &SummarizeArgs, o: &Report, pages: &[seqgpt_pdf::PageGeometry], current: usize) -> anyhow::Result<()> {
    let installed = launch::installed();
    // zathura first when it already shows the file, whatever `auto` would pick.
    let session = zbus::Connection::session().await;
    let running = match &session {
        Ok(conn) => zathura::instances(conn).await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let reader = match args.reader {
        Some(r) => r,
        None if zathura::showing(&running, &args.file).is_some() => Reader::Zathura,
        None => *installed.first().with_context(|| {
            "no PDF reader found (zathura, okular or evince); `seqgpt summarize FILE --annotate OUT.pdf` writes a copy any reader shows"
        })?,
    };
    let target_page = o.sentences[current].page;
    let out = match &args.annotate {
        Some(p) => p.clone(),
        None => default_copy_path(&args.file)?,
    };
    summarize::write_annotated(&args.file, &out, o, &summarize::made_by(o, sargs))?;
    if reader != Reader::Zathura {
        if args.no_start {
            println!("annotated copy: {}", out.display());
            return Ok(());
        }
        let pid = launch::spawn_at(reader, &out, target_page)?;
        println!("{} (PID {pid}) opens {} at sentence {} (page {target_page})", reader.program(), out.display(), current + 1);
        return Ok(());
    }
    let conn = session.map_err(|e| anyhow::anyhow!("zathura is reached over the session bus, and there is none here ({e}); DBUS_SESSION_BUS_ADDRESS is not set?"))?;
    // The zathura that shows the file, or the copy from an earlier run: it switches to the
    // new copy in place.
    let shown = zathura::showing(&running, &args.file).or_else(|| zathura::showing(&running, &out));
    let instance = match shown {
        Some(i) => {
            zathura::open(&conn, &i.name, &out, target_page.saturating_sub(1), Duration::from_secs(30)).await?;
            i.clone()
        }
        None if args.no_start => {
            let others: Vec<String> = running.iter().filter_map(|i| i.file.as_ref().map(|f| format!("{} (PID {})", f.display(), i.pid))).collect();
            if others.is_empty() {
                bail!("no zathura shows {} (--no-start); the annotated copy is {}", args.file.display(), out.display());
            }
            bail!("no zathura shows {}; the running ones show {} (--no-start)", args.file.display(), others.join(", "));
        }
        None => {
            if let Some(other) = running.iter().find(|i| i.file.is_some()) {
                eprintln!(
                    "zathura (PID {}) shows another file ({}): a new zathura opens {}",
                    other.pid,
                    other.file.as_ref().map_or(String::new(), |f| f.display().to_string()),
                    args.file.display()
                );
            }
            zathura::start(&conn, &out, args.zathura_config.as_deref(), Duration::from_secs(30)).await?
        }
    };
    let count = zathura::page_count(&conn, &instance.name).await?;
    if count as usize != pages.len() {
        bail!("zathura (PID {}) counts {count} pages in {}, this summary {}: is the file being rewritten?", instance.pid, out.display(), pages.len());
    }
    // OpenDocument's page and a fresh zathura's first page both need the move made sure.
    zathura::goto(&conn, &instance.name, target_page.saturating_sub(1)).await?;
    println!(
        "zathura (PID {}) shows {} ({} sentences highlighted), at sentence {} (page {target_page})",
        instance.pid,
        out.display(),
        o.sentences.iter().filter(|a| !a.boxes.is_empty()).count(),
        current + 1,
    );
    Ok(())
}

/// `~/.cache/seqgpt/annotated/NAME.annotated.pdf` (XDG_CACHE_HOME respected).
fn default_copy_path(file: &Path) -> anyhow::Result<PathBuf> {
    let cache = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(c) => PathBuf::from(c),
        None => PathBuf::from(std::env::var_os("HOME").context("no HOME to put the annotated copy in: give --annotate OUT.pdf")?).join(".cache"),
    };
    let dir = cache.join("seqgpt").join("annotated");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "document".into());
    Ok(dir.join(format!("{stem}.annotated.pdf")))
}
