//! `seqgpt model check FILE`: what the daemon would do with a model file.

mod common;

use seqgpt_engine::gguf::GgmlType;

fn check(args: &[&str]) -> (bool, String, String) {
    let out = common::program(env!("CARGO_BIN_EXE_seqgpt")).args(["model", "check"]).args(args).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_usable_model_is_described_as_the_daemon_would_use_it() {
    let file = common::gguf("tiny", GgmlType::Q8_0);
    let (ok, out, err) = check(&["--json", "--device", "cpu", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["usable"], true);
    assert_eq!(v["architecture"], "bloom");
    assert_eq!(v["device"], "cpu");
    assert!(v["layers"].as_u64().unwrap() > 0 && v["vocabulary"].as_u64().unwrap() > 0, "{v}");
    assert!(v["tensor_types"]["q8_0"]["tensors"].as_u64().unwrap() > 0, "{v}");
    assert!(v["tokenizer_tokens"].as_u64().unwrap() > 0, "{v}");
    // The template follows the config, as in the daemon.
    assert!(["seqgpt", "bloomz"].contains(&v["template"].as_str().unwrap()), "{v}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("seqgptd.toml");
    std::fs::write(&cfg, "[summarize]\ntemplate = \"bloomz\"\n").unwrap();
    let (ok, out, err) = check(&["--json", "--device", "cpu", "--config", cfg.to_str().unwrap(), file.to_str().unwrap()]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["template"], "bloomz");
    assert!(v["template_reason"].as_str().unwrap().contains("config"), "{v}");
    // The text form says the same in lines.
    let (ok, out, _) = check(&["--device", "cpu", file.to_str().unwrap()]);
    assert!(ok && out.contains("usable") && out.contains("seqgptd would summarize with this model"), "{out}");
}

#[test]
fn an_unusable_file_says_why_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(common::gguf("tiny", GgmlType::F16)).unwrap();
    let cut = dir.path().join("cut.gguf");
    std::fs::write(&cut, &good[..good.len() / 2]).unwrap();
    let text = dir.path().join("notes.gguf");
    std::fs::write(&text, "not a model").unwrap();
    for (file, why) in [(cut.as_path(), "GGUF"), (text.as_path(), "GGUF"), (dir.path().join("missing.gguf").as_path(), "no such file")] {
        let (ok, out, _) = check(&["--json", file.to_str().unwrap()]);
        assert!(!ok, "{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["usable"], false);
        assert!(v["problem"].as_str().unwrap().contains(why), "{v}");
        assert!(v["daemon"].as_str().unwrap().contains("extractively"), "{v}");
    }
}
