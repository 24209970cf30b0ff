//! A recipe's kernel TCP messages run with `congestion` end to end: the
//! key reaches the kernel's sockets, the run's results record what they
//! ran (summary.json, the report), and a name the kernel lacks fails the
//! run before anything runs. Where the kernel probes cannot run (not
//! root, no BTF) the lab skips the run, and the tests say so.

// Shared with the other CLI tests; this file reads files, not stdout JSON.
#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};

use common::stackscope;
use serde_json::Value;

const RECIPE: &str = r#"
name = "k"
title = "Kernel TCP with a congestion control"
source = "none.txt"

[[run]]
id = "kernel-tcp"
kind = "messages"
stack = "kernel"
protocol = "tcp"
family = "ipv6"
link = "loopback"
sizes = "1K"
quick_reps = 3
warmup = 1
congestion = "cubic"
"#;

/// `recipe` written to a fresh directory of its own, and where its run's
/// results go.
fn recipe_file(name: &str, recipe: &str) -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("recipe.toml");
    std::fs::write(&file, recipe).unwrap();
    (file, dir.join("out"))
}

fn run(file: &Path, out: &Path) -> std::process::Output {
    stackscope(&[
        "run",
        file.to_str().unwrap(),
        "--quick",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// The kernel run of a finished lab, or `None` where it was skipped
/// because no probe could start (the lab's own decision, said here): a
/// run skipped for anything else is returned, for the test to fail on.
fn kernel_run(out: &Path) -> Option<Value> {
    let summary: Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let kernel = summary["experiments"][0]["kernel_runs"][0].clone();
    if kernel["status"] == "skipped" && kernel["probes_attached"] == 0 {
        println!("skipped: {}", kernel["skipped"]);
        return None;
    }
    Some(kernel)
}

/// CUBIC, which this machine's kernel may not default to (BBR here), is
/// what the run's sockets ran: summary.json records the choice and what
/// was read back, and the report's section says it.
#[test]
fn a_kernel_tcp_run_records_the_congestion_control_it_ran() {
    let (file, out) = recipe_file("kernel-run-congestion", RECIPE);
    let output = run(&file, &out);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let Some(kernel) = kernel_run(&out) else {
        return;
    };
    assert_eq!(kernel["status"], "measured", "{kernel}");
    assert_eq!(kernel["congestion"], "cubic");
    assert_eq!(kernel["congestion_control"], "cubic");
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        report.contains("as the kernel ran it: cubic (the recipe"),
        "the report does not name the congestion control"
    );
}

/// A name the kernel has no algorithm for stops the run before its pair
/// is made, naming the recipe, the run, the key and what the kernel
/// offers.
#[test]
fn an_unknown_congestion_control_fails_the_kernel_run() {
    let recipe = RECIPE.replace("\"cubic\"", "\"no-such-cc\"");
    let (file, out) = recipe_file("kernel-run-congestion-unknown", &recipe);
    let output = run(&file, &out);
    if output.status.success() && kernel_run(&out).is_none() {
        return;
    }
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for part in [
        "k / kernel-tcp",
        "congestion = \"no-such-cc\"",
        "the kernel has no TCP congestion control `no-such-cc`: it offers",
    ] {
        assert!(stderr.contains(part), "{part}: {stderr}");
    }
}
