//! The default configuration that the package and systemd/install.sh put at
//! /etc/seqgpt/seqgptd.toml: it parses, and holds exactly the documented keys with their
//! documented defaults and types (the units and D-Bus files: check_units.sh).

use toml::{Table, Value};

fn default_config() -> Table {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/systemd/seqgptd.toml");
    let text = std::fs::read_to_string(path).unwrap();
    text.parse::<Table>().unwrap()
}

fn keys(table: &Table) -> Vec<&str> {
    let mut keys: Vec<&str> = table.keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

#[test]
fn default_config_has_the_documented_keys_and_defaults() {
    let config = default_config();
    assert_eq!(
        keys(&config),
        ["cache", "device", "model", "scheduler", "threads"]
    );
    assert_eq!(
        config["model"],
        Value::from("/var/lib/seqgpt/models/seqgpt-560m-q4.gguf")
    );
    assert_eq!(config["device"], Value::from("auto"));
    assert_eq!(config["threads"], Value::from(0));

    let scheduler = config["scheduler"].as_table().unwrap();
    assert_eq!(
        keys(scheduler),
        [
            "max_wait_ms",
            "memory_budget_mb",
            "min_batch",
            "queue_capacity",
            "tick_ms"
        ]
    );
    for (key, value) in [
        ("queue_capacity", 8),
        ("tick_ms", 50),
        ("min_batch", 3),
        ("max_wait_ms", 100),
        ("memory_budget_mb", 0),
    ] {
        assert_eq!(scheduler[key], Value::from(value), "scheduler.{key}");
    }

    let cache = config["cache"].as_table().unwrap();
    assert_eq!(keys(cache), ["enabled"]);
    assert_eq!(cache["enabled"], Value::from(true));
}
