//! A recipe's runs on topology files of `topologies/` (issue 21): traced
//! messages cross both routers of `two-routers.toml` and the impaired
//! wires of `impaired.toml`; a run naming a missing file is refused at its
//! `link` key before anything runs.

// Shared with the other CLI tests; this file reads files, not stdout JSON.
#[allow(dead_code)]
mod common;

use std::path::PathBuf;

use common::stackscope;
use serde_json::Value;

const RECIPE: &str = r#"
name = "topo"
title = "Messages on topology files"
source = "none.txt"

[[run]]
id = "two-routers"
kind = "messages"
protocol = "udp"
family = "ipv4"
link = "two-routers.toml"
sizes = "100,1000"
reps = 2

[[run]]
id = "impaired"
kind = "messages"
protocol = "tcp"
family = "ipv4"
link = "impaired"
sizes = "100,1000"
reps = 2
"#;

/// A directory of its own under the system's temporary one, removed at
/// the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

fn files_in(dir: PathBuf) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn messages_run_on_two_routers_and_impaired_topologies() {
    let scratch = scratch("recipe-topology");
    let recipe = scratch.0.join("recipe.toml");
    std::fs::write(&recipe, RECIPE).unwrap();
    let out = scratch.0.join("out");
    let output = stackscope(&[
        "run",
        recipe.to_str().unwrap(),
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Every interface of each topology was captured: both routers of
    // one, the single router of the other.
    assert_eq!(
        files_in(out.join("pcap/topo-two-routers")),
        [
            "host-a-eth0.pcapng",
            "host-b-eth0.pcapng",
            "r1-eth0.pcapng",
            "r1-eth1.pcapng",
            "r2-eth0.pcapng",
            "r2-eth1.pcapng"
        ]
    );
    assert!(files_in(out.join("pcap/topo-impaired")).contains(&"router-eth1.pcapng".to_string()));
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let runs = summary["experiments"][0]["runs"].as_array().unwrap();
    let links: Vec<(&str, &Value)> = runs
        .iter()
        .map(|r| (r["link"].as_str().unwrap(), &r["link_bps"]))
        .collect();
    // impaired.toml's slowest wire is 10 Mbit/s; two-routers' are unlimited.
    assert_eq!(
        links,
        [
            ("two-routers", &Value::Null),
            ("impaired", &Value::from(10_000_000.0))
        ]
    );
    // Every message arrived across the routers, each size measured.
    for run in runs {
        assert!(run["sent"].as_u64().unwrap() > 0);
        assert_eq!(run["delivered"], run["sent"], "{}", run["id"]);
        assert_eq!(run["points"].as_array().unwrap().len(), 2, "{}", run["id"]);
    }
}

#[test]
fn a_missing_topology_file_is_refused_at_its_key() {
    let scratch = scratch("recipe-topology-missing");
    let recipe = scratch.0.join("recipe.toml");
    std::fs::write(
        &recipe,
        RECIPE.replace("link = \"impaired\"", "link = \"no-such-net.toml\""),
    )
    .unwrap();
    let output = stackscope(&["run", recipe.to_str().unwrap(), "--quick"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("recipe.toml:20:")
            && stderr.contains("link `no-such-net.toml`: cannot read")
            && stderr.contains("No such file"),
        "{stderr}"
    );
}
