//! The man pages and shell completions in docs/ are what the command-line definitions
//! generate (SEQGPT_BLESS=1 rewrites them), every flag has help text, and `man` renders the
//! pages.

use clap::CommandFactory;
use std::path::Path;

#[test]
fn man_pages_and_completions_match_the_command_lines() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let generated = seqgpt::cli::docs::generate().unwrap();
    let bless = std::env::var_os("SEQGPT_BLESS").is_some();
    let mut stale = Vec::new();
    for (rel, bytes) in &generated {
        let path = docs.join(rel);
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
        }
        if std::fs::read(&path).ok().as_deref() != Some(bytes.as_slice()) {
            stale.push(rel.display().to_string());
        }
    }
    assert!(stale.is_empty(), "out of date (SEQGPT_BLESS=1 cargo test --test cli_docs rewrites them): {stale:?}");
    // No stale file of a removed command stays behind.
    for dir in ["man", "completions/bash", "completions/zsh", "completions/fish"] {
        for entry in std::fs::read_dir(docs.join(dir)).unwrap() {
            let rel = Path::new(dir).join(entry.unwrap().file_name());
            assert!(generated.iter().any(|(r, _)| *r == rel), "{} is not generated any more", rel.display());
        }
    }
    let names: Vec<String> = generated.iter().map(|(r, _)| r.display().to_string()).collect();
    for want in ["man/seqgpt.1", "man/seqgpt-summarize.1", "man/seqgpt-jobs.1", "man/seqgptd.8", "completions/bash/seqgpt", "completions/zsh/_seqgpt", "completions/fish/seqgpt.fish"] {
        assert!(names.iter().any(|n| n == want), "{want} not among {names:?}");
    }
}

#[test]
fn every_flag_has_help() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_about().is_none() {
                missing.push(format!("{path} {} (the command)", sub.get_name()));
            }
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut missing = Vec::new();
    walk(&seqgpt::cli::Cli::command(), "seqgpt", &mut missing);
    walk(&seqgpt::cli::seqgptd::DaemonArgs::command(), "seqgptd", &mut missing);
    assert!(missing.is_empty(), "without help text: {missing:#?}");
}

#[test]
fn the_man_pages_render() {
    if std::process::Command::new("groff").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "groff is missing under CI (tests/deps.sh installs it)");
        eprintln!("SKIPPED: groff is not installed");
        return;
    }
    for (rel, bytes) in seqgpt::cli::docs::generate().unwrap() {
        if !rel.starts_with("man") {
            continue;
        }
        let mut child = std::process::Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), &bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success() && out.stderr.is_empty(), "{}: {}", rel.display(), String::from_utf8_lossy(&out.stderr));
    }
}
