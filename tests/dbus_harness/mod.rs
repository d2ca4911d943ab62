//! Test harness for the D-Bus tests: a private dbus-daemon per test, the real `seqgptd`
//! binary on it, and a zbus client that collects a job's signals.
//!
//! Without `dbus-daemon` the tests skip with a message, except under CI (`CI` set), where
//! that is a failure: .ci/run installs Debian's dbus package.
#![allow(dead_code)]

use seqgpt_daemon::service::client::{self, JobSignal};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zbus::message::Type as MessageType;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};
use zbus::{Connection, MatchRule, MessageStream};

pub const NAME: &str = "org.seqgpt.Summarizer1";
pub const PATH: &str = "/org/seqgpt/Summarizer1";
pub const JOBS: &str = "/org/seqgpt/Summarizer1/jobs";

/// A private message bus in a temporary directory.
pub struct Bus {
    child: Child,
    pub address: String,
    pub dir: tempfile::TempDir,
}

/// The system bus's default policy (Debian's system.conf), under which the shipped policy file
/// decides who may own and call the service.
const SYSTEM_DEFAULT_POLICY: &str = r#"<policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
  </policy>"#;

const SESSION_POLICY: &str = r#"<policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>"#;

impl Bus {
    /// Starts a bus, or returns `None` (after saying why) when dbus-daemon is not installed
    /// and this is not CI.
    pub fn start() -> Option<Bus> {
        Self::start_with("session", SESSION_POLICY.to_string())
    }

    /// A system-type bus with the policy file the package installs, its names mapped onto
    /// accounts of this machine: the daemon's user `seqgpt` -> root (the tests start the
    /// daemon), the callers' group `seqgpt-users` -> nogroup (the group of `nobody`). Its
    /// socket is open to every user, so that `nobody` can connect. `None` (after saying why)
    /// where this process is not root: connecting as another user needs it.
    pub fn start_system() -> Option<Bus> {
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } != 0 {
            assert!(std::env::var_os("CI").is_none(), "a system-type bus with two users needs root, and CI is set: run the tests as root");
            eprintln!("SKIPPED: a system-type bus with two users needs root; this test did not run");
            return None;
        }
        let shipped = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/dbus/system.d/org.seqgpt.Summarizer1.conf"),
        )
        .expect("the shipped policy file");
        let start = shipped.find("<busconfig>").expect("<busconfig>") + "<busconfig>".len();
        let end = shipped.rfind("</busconfig>").expect("</busconfig>");
        let policy = shipped[start..end].replace("user=\"seqgpt\"", "user=\"root\"").replace("group=\"seqgpt-users\"", "group=\"nogroup\"");
        // The shipped file's own root policy and the mapped daemon policy are both for root now.
        Self::start_with("system", format!("{SYSTEM_DEFAULT_POLICY}\n{policy}"))
    }

    fn start_with(kind: &str, policy: String) -> Option<Bus> {
        let exe = ["/usr/bin/dbus-daemon", "/bin/dbus-daemon"].into_iter().find(|p| Path::new(p).exists());
        let Some(exe) = exe else {
            if std::env::var_os("CI").is_some() {
                panic!("dbus-daemon is not installed, and CI is set: install Debian's dbus package");
            }
            eprintln!("SKIPPED: dbus-daemon is not installed (apt-get install dbus); this D-Bus test did not run");
            return None;
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("bus");
        let config = dir.path().join("bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{kind}</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  {policy}
</busconfig>
"#,
                socket.display()
            ),
        )
        .expect("bus config");
        let mut child = Command::new(exe)
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nopidfile", "--print-address=1"])
            .stdout(Stdio::piped())
            // Its only complaint in containers is that it cannot raise its fd limit; set
            // SEQGPT_TEST_BUS_LOG to see its warnings (limits hit, clients dropped).
            .stderr(if std::env::var_os("SEQGPT_TEST_BUS_LOG").is_some() { Stdio::inherit() } else { Stdio::null() })
            .spawn()
            .expect("start dbus-daemon");
        // It prints its address once it listens.
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("dbus-daemon address");
        let address = line.trim().to_string();
        assert!(address.starts_with("unix:"), "dbus-daemon printed {address:?}");
        if kind == "system" {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod bus dir");
            std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).expect("chmod bus socket");
        }
        Some(Bus { child, address, dir })
    }

    /// Runs `program args` as the Unix user `user` (through setpriv), returning its exit
    /// status and output (stdout then stderr).
    pub fn run_as(&self, user: &str, program: &str, args: &[&str]) -> (bool, String) {
        let out = Command::new("setpriv")
            .args(["--reuid", user, "--regid", user_group(user), "--init-groups", program])
            .args(args)
            .output()
            .expect("run setpriv");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.success(), text)
    }

    /// `busctl call` on this bus as `user`: (success, output).
    pub fn busctl_as(&self, user: &str, args: &[&str]) -> (bool, String) {
        let address = format!("--address={}", self.address);
        let mut all = vec![address.as_str(), "--timeout=30"];
        all.extend_from_slice(args);
        self.run_as(user, "busctl", &all)
    }

    /// `dbus-send --print-reply` on this bus as `user`: (success, output; an error's output
    /// starts with "Error NAME").
    pub fn dbus_send_as(&self, user: &str, args: &[&str]) -> (bool, String) {
        let address = format!("--bus={}", self.address);
        let mut all = vec![address.as_str(), "--print-reply", "--reply-timeout=30000"];
        all.extend_from_slice(args);
        self.run_as(user, "dbus-send", &all)
    }
}

/// The primary group of the test users.
fn user_group(user: &str) -> &'static str {
    match user {
        "nobody" => "nogroup",
        _ => "root",
    }
}

/// Resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    // A bound on memory that reads 0 when it cannot read passes on nothing: fail instead.
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_else(|e| panic!("the RSS of process {pid}: /proc/{pid}/status: {e}"));
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("the RSS of process {pid}: no VmRSS line in /proc/{pid}/status"));
    assert!(kib > 0, "the RSS of process {pid} reads 0 kB");
    kib
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The gate of a daemon started with [`Hold::env`]: its model jobs stop after their first
/// token until [`Hold::open`], so a test that acts on a running job (a signal, a reload) finds
/// it running however fast or slow the machine is (scheduler/hold.rs, `SEQGPT_TEST_HOLD`).
pub struct Hold {
    path: PathBuf,
}

impl Hold {
    pub fn new(bus: &Bus) -> Hold {
        Hold { path: bus.dir.path().join(format!("hold-{}", unique())) }
    }

    pub fn env(&self) -> (&'static str, &str) {
        ("SEQGPT_TEST_HOLD", self.path.to_str().expect("a UTF-8 temporary path"))
    }

    pub fn open(&self) {
        std::fs::write(&self.path, b"").expect("open the hold");
    }
}

/// A running `seqgptd`.
pub struct Daemon {
    pub child: Child,
    pub log: Arc<Mutex<String>>,
    pub config: PathBuf,
    pub state_dir: PathBuf,
}

impl Daemon {
    /// Starts seqgptd on `bus` with the TOML `config` (a `[cache] dir` in the bus's temporary
    /// directory is added unless the config names one) and waits until it is ready.
    pub fn start(bus: &Bus, config: &str, extra_args: &[&str]) -> Daemon {
        Self::start_with_env(bus, config, extra_args, &[])
    }

    pub fn start_with_env(bus: &Bus, config: &str, extra_args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let state_dir = bus.dir.path().join("state");
        let mut text = config.to_string();
        if !text.contains("[cache]") {
            text.push_str(&format!("\n[cache]\ndir = \"{}\"\n", state_dir.join("summaries").display()));
        }
        let config_path = bus.dir.path().join(format!("seqgptd-{}.toml", unique()));
        std::fs::write(&config_path, text).expect("daemon config");
        let mut cmd = crate::common::program(env!("CARGO_BIN_EXE_seqgptd"));
        if !extra_args.contains(&"--bus") {
            cmd.arg("--address").arg(&bus.address);
        }
        cmd.arg("--config")
            .arg(&config_path)
            .args(extra_args)
            .env("SEQGPT_LOG", "info")
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env("XDG_STATE_HOME", &state_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start seqgptd");
        let log = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        {
            let stderr = child.stderr.take().expect("stderr");
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if line.starts_with("seqgptd: ready") {
                        let _ = ready_tx.send(());
                    }
                    let mut l = log.lock().unwrap();
                    l.push_str(&line);
                    l.push('\n');
                }
            });
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if ready_rx.recv_timeout(Duration::from_millis(100)).is_ok() {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("seqgptd exited with {status} before it was ready:\n{}", log.lock().unwrap());
            }
            assert!(Instant::now() < deadline, "seqgptd was not ready within 120 s:\n{}", log.lock().unwrap());
        }
        Daemon { child, log, config: config_path, state_dir }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// [`Daemon::terminate`] off the async workers: the exit status and the daemon's log.
    pub async fn terminate_async(mut self) -> (ExitStatus, String) {
        tokio::task::spawn_blocking(move || {
            let s = self.terminate();
            (s, self.log())
        })
        .await
        .expect("the terminating thread")
    }

    /// Sends SIGTERM and waits (at most 30 s) for the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        // SAFETY: kill(2) on the pid of a child this harness started.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(Instant::now() < deadline, "seqgptd did not exit within 30 s of SIGTERM:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        match self.child.try_wait() {
            Ok(None) => {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
            // Died on its own: its log is the diagnosis.
            Ok(Some(status)) if !status.success() && !std::thread::panicking() => {}
            Ok(Some(status)) if !status.success() => eprintln!("seqgptd exited with {status}; its log:\n{}", self.log()),
            _ => {}
        }
    }
}

fn unique() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// `parts` copies of [`ARTICLE`], numbered: a text whose model summary takes several prompts.
pub fn long_article(parts: usize) -> String {
    (0..parts).map(|i| format!("Part {i}.\n\n{ARTICLE}")).collect::<Vec<_>>().join("\n\n")
}

/// The tiny random BLOOM fixture as a GGUF file (f16 matrices).
pub fn tiny() -> String {
    crate::common::gguf("tiny", seqgpt_engine::gguf::GgmlType::F16).display().to_string()
}

/// A model config whose jobs take seconds: long prompts, long answers. `extra` goes before
/// the `[summarize]` table (top-level keys, or tables of its own).
pub fn slow_config(extra: &str) -> String {
    format!(
        r#"model = "{}"
device = "cpu"
{extra}
[summarize]
template = "slow"
[summarize.templates.slow]
kind = "instruction"
prompt = "{{text}}\n\nSummary:"
max_new_tokens = [200, 200, 200]
"#,
        tiny()
    )
}

/// A job's signal.
#[derive(Debug, Clone)]
pub enum Event {
    Progress(String, u32, u32),
    Partial(u32, String),
    Finished(String, HashMap<String, OwnedValue>),
    Failed(String, String),
    /// PropertiesChanged on the job: (property, value as text).
    Changed(Vec<(String, String)>),
}

impl Event {
    pub fn is_terminal(&self) -> bool {
        matches!(self, Event::Finished(..) | Event::Failed(..))
    }
}

/// A client connection that records every job signal the daemon sends it.
pub struct Client {
    pub conn: Connection,
    stream: MessageStream,
    stash: HashMap<String, Vec<Event>>,
}

pub type Options<'a> = HashMap<&'a str, Value<'a>>;

pub fn opts<'a>(pairs: &[(&'a str, Value<'a>)]) -> Options<'a> {
    pairs.iter().cloned().collect()
}

impl Client {
    pub async fn connect(address: &str) -> Client {
        let conn = zbus::connection::Builder::address(address).unwrap().build().await.expect("connect to the test bus");
        let dbus = zbus::fdo::DBusProxy::new(&conn).await.unwrap();
        let owner = dbus.get_name_owner(zbus::names::BusName::try_from(NAME).unwrap()).await.expect("seqgptd owns its name");
        let rule = MatchRule::builder()
            .msg_type(MessageType::Signal)
            .sender(owner.as_str())
            .unwrap()
            .path_namespace(JOBS)
            .unwrap()
            .build();
        let stream = MessageStream::for_match_rule(rule, &conn, Some(100_000)).await.unwrap();
        Client { conn, stream, stash: HashMap::new() }
    }

    pub async fn call<B>(&self, path: &str, iface: &str, method: &str, body: &B) -> zbus::Result<zbus::Message>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        self.conn.call_method(Some(NAME), path, Some(iface), method, body).await
    }

    pub async fn summarize_text(&self, text: &str, options: &Options<'_>) -> zbus::Result<OwnedObjectPath> {
        client::summarizer(&self.conn).await?.summarize_text(text, options).await
    }

    pub async fn summarize_fd(&self, file: &std::fs::File, options: &Options<'_>) -> zbus::Result<OwnedObjectPath> {
        let fd = zbus::zvariant::Fd::from(std::os::fd::AsFd::as_fd(file));
        client::summarizer(&self.conn).await?.summarize_fd(fd, options).await
    }

    pub async fn summarize_path(&self, path: &Path, options: &Options<'_>) -> zbus::Result<OwnedObjectPath> {
        client::summarizer(&self.conn).await?.summarize_path(path.to_str().unwrap(), options).await
    }

    /// The proxy of job `path`.
    pub async fn job(&self, path: &OwnedObjectPath) -> client::JobProxy<'static> {
        client::job(&self.conn, path.clone()).await.expect("a job proxy")
    }

    pub async fn property(&self, path: &str, iface: &str, name: &str) -> zbus::Result<OwnedValue> {
        let reply = self.call(path, "org.freedesktop.DBus.Properties", "Get", &(iface, name)).await?;
        reply.body().deserialize()
    }

    pub async fn job_string(&self, job: &str, name: &str) -> String {
        let v = self.property(job, "org.seqgpt.Job1", name).await.expect("job property");
        String::try_from(v).expect("a string property")
    }

    pub async fn service_stat(&self, key: &str) -> u64 {
        let d = client::summarizer(&self.conn).await.unwrap().stats().await.unwrap();
        u64::try_from(d[key].try_clone().unwrap()).unwrap()
    }

    /// The signals of `job` until its Finished or Failed (inclusive), within `timeout`.
    pub async fn events(&mut self, job: &str, timeout: Duration) -> Vec<Event> {
        let mut out = self.stash.remove(job).unwrap_or_default();
        if out.iter().any(Event::is_terminal) {
            return out;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let msg = match tokio::time::timeout_at(deadline, futures_util::StreamExt::next(&mut self.stream)).await {
                Ok(Some(Ok(m))) => m,
                Ok(_) => panic!("the signal stream ended"),
                Err(_) => panic!("no Finished/Failed for {job} within {timeout:?}; got {out:?}"),
            };
            let Some((path, ev)) = parse(&msg) else { continue };
            let terminal = ev.is_terminal();
            if path == job {
                out.push(ev);
                if terminal {
                    return out;
                }
            } else {
                self.stash.entry(path).or_default().push(ev);
            }
        }
    }
}

fn parse(msg: &zbus::Message) -> Option<(String, Event)> {
    let hdr = msg.header();
    let path = hdr.path()?.to_string();
    if let Some(signal) = JobSignal::from_message(msg) {
        let ev = match signal {
            JobSignal::Progress { stage, done, total } => Event::Progress(stage, done, total),
            JobSignal::Partial { index, text } => Event::Partial(index, text),
            JobSignal::Finished { summary, stats } => Event::Finished(summary, stats),
            JobSignal::Failed { error_name, message } => Event::Failed(error_name, message),
        };
        return Some((path, ev));
    }
    let member = hdr.member()?.to_string();
    let iface = hdr.interface()?.to_string();
    let body = msg.body();
    let ev = match (iface.as_str(), member.as_str()) {
        ("org.freedesktop.DBus.Properties", "PropertiesChanged") => {
            let (_, changed, _): (String, HashMap<String, OwnedValue>, Vec<String>) = body.deserialize().ok()?;
            let mut v: Vec<(String, String)> = changed.into_iter().map(|(k, v)| (k, format!("{}", *v))).collect();
            v.sort();
            Event::Changed(v)
        }
        _ => return None,
    };
    Some((path, ev))
}

/// A string stat of a Finished signal.
pub fn stat_str(stats: &HashMap<String, OwnedValue>, key: &str) -> String {
    String::try_from(stats[key].try_clone().unwrap()).unwrap()
}

pub fn stat_bool(stats: &HashMap<String, OwnedValue>, key: &str) -> bool {
    bool::try_from(stats[key].try_clone().unwrap()).unwrap()
}

pub fn stat_u32(stats: &HashMap<String, OwnedValue>, key: &str) -> u32 {
    u32::try_from(stats[key].try_clone().unwrap()).unwrap()
}

/// The D-Bus error name of a failed call.
pub fn error_name(e: &zbus::Error) -> String {
    match e {
        zbus::Error::MethodError(name, _, _) => name.to_string(),
        zbus::Error::FDO(f) => zbus::DBusError::name(f.as_ref()).to_string(),
        other => format!("not a method error: {other}"),
    }
}

/// English prose for summaries (original text).
pub const ARTICLE: &str = "\
Lighthouses once guided every ship that approached a rocky coast at night. Each tower showed a light \
with its own rhythm, so that a sailor who counted the flashes knew which headland lay ahead.

The first lights burned wood or coal in open fires. Oil lamps with polished reflectors replaced them, \
and in the nineteenth century the Fresnel lens gathered the lamp's light into a beam that carried \
twenty miles over the sea.

Keepers lived at the lighthouses with their families. They trimmed the wicks, wound the clockwork \
that turned the lens, and kept a log of the weather and of passing ships.

Electric lamps and automatic switches made the keepers unnecessary. Most lighthouses today run \
unattended, and satellite navigation tells ships where they are more precisely than any light.

Still, many coastal towns restore their old towers as museums, because a lighthouse remains the \
clearest symbol of a safe return to harbour.";
