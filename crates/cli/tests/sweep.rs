//! `stackscope sweep` end to end: real transfers and echoes over loopback
//! and the reference stack, the CSV and JSON they write, and the one-line
//! refusals of bad grids.

// Shared with the other CLI tests; this file reads files, not stdout JSON.
#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::stackscope;
use serde_json::Value;

/// A scratch directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("stackscope-sweep-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "stackscope failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The CSV as header names and rows of cells (the cells tested here hold
/// no commas or quotes).
fn read_csv(dir: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(dir.join("sweep.csv")).expect("sweep.csv");
    let mut lines = text.lines();
    let split = |l: &str| l.split(',').map(str::to_string).collect::<Vec<_>>();
    let header = split(lines.next().expect("a header line"));
    (header, lines.map(split).collect())
}

fn read_json(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("sweep.json")).expect("sweep.json");
    serde_json::from_str(&text).expect("sweep.json is JSON")
}

fn cell<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let i = header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    &row[i]
}

fn number(header: &[String], row: &[String], name: &str) -> f64 {
    let text = cell(header, row, name);
    text.parse()
        .unwrap_or_else(|_| panic!("{name} = `{text}` is not a number"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

#[test]
fn kernel_throughput_sweep_writes_a_row_per_point_with_consistent_reps() {
    let out = Scratch::new("kernel");
    let output = stackscope(&[
        "sweep",
        "--stack",
        "kernel",
        "--proto",
        "tcp,udp",
        "--sizes",
        "1024,8192",
        "--count",
        "200",
        "--reps",
        "2",
        "--max-reps",
        "2",
        "--port",
        "47311",
        "--min-duration",
        "0.2",
        "--out",
        out.path(),
    ]);
    succeeded(&output);

    let (header, rows) = read_csv(&out.0);
    assert_eq!(rows.len(), 4, "one row per point: tcp and udp x 2 sizes");
    let expected = [
        ("tcp", "1024"),
        ("tcp", "8192"),
        ("udp", "1024"),
        ("udp", "8192"),
    ];
    for (row, (proto, size)) in rows.iter().zip(expected) {
        assert_eq!(row.len(), header.len());
        assert_eq!(cell(&header, row, "stack"), "kernel");
        assert_eq!(cell(&header, row, "protocol"), proto);
        assert_eq!(cell(&header, row, "size_bytes"), size);
        assert_eq!(cell(&header, row, "count"), "200");
        assert_eq!(cell(&header, row, "reps"), "2");
        assert_eq!(cell(&header, row, "clean"), "true");
        // 200 writes and on until 0.2 s had passed: every window long
        // enough, none marked.
        assert_eq!(cell(&header, row, "too_short"), "false");
        assert!(number(&header, row, "shortest_window_s") >= 0.1);
        let (min, mean, max) = (
            number(&header, row, "min_bps"),
            number(&header, row, "mean_bps"),
            number(&header, row, "max_bps"),
        );
        assert!(
            min > 0.0 && min <= mean && mean <= max,
            "{min} {mean} {max}"
        );
        assert!(number(&header, row, "stdev_bps") >= 0.0);
        // Two repetitions: the mean's 95 % interval around it, and the
        // verdict on it (met, or stopped at the two-repetition cap). Two
        // far apart give an interval reaching below zero, which a rate
        // cannot: it is left empty, and the point cannot be met.
        let verdict = cell(&header, row, "verdict");
        assert!(["met", "rep cap"].contains(&verdict));
        let (lo, hi) = (
            cell(&header, row, "ci95_lo_bps"),
            cell(&header, row, "ci95_hi_bps"),
        );
        if lo.is_empty() || hi.is_empty() {
            assert_eq!((lo, hi, verdict), ("", "", "rep cap"));
        } else {
            let (lo, hi) = (
                number(&header, row, "ci95_lo_bps"),
                number(&header, row, "ci95_hi_bps"),
            );
            assert!(0.0 < lo && lo <= mean && mean <= hi, "{lo} {mean} {hi}");
        }
        assert_eq!(number(&header, row, "ci_target_percent"), 2.0);
        assert!(number(&header, row, "sent_mean_bps") > 0.0);
        // Loss is a datagram figure: empty for TCP, a percentage for UDP.
        let lost = cell(&header, row, "lost_percent_mean");
        match proto {
            "tcp" => assert_eq!(lost, ""),
            _ => assert!((0.0..=100.0).contains(&number(&header, row, "lost_percent_mean"))),
        }
    }

    let json = read_json(&out.0);
    assert_eq!(json["mode"], "throughput");
    assert!(json["command"].as_str().unwrap().contains("sweep"));
    assert!(json["environment"]["kernel"]
        .as_str()
        .unwrap()
        .starts_with("Linux"));
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    for p in points {
        let reps = p["per_rep"].as_array().unwrap();
        assert_eq!(reps.len(), 2);
        // The summary is made of exactly these repetitions.
        let values: Vec<f64> = reps.iter().map(|r| f(&r["recv_bps"])).collect();
        let mean = values.iter().sum::<f64>() / 2.0;
        assert!((f(&p["mean_bps"]) - mean).abs() <= 1e-6 * mean, "{p}");
        assert_eq!(f(&p["min_bps"]), values[0].min(values[1]));
        assert_eq!(f(&p["max_bps"]), values[0].max(values[1]));
        assert_eq!(p["target"]["path"], "loopback");
        assert!(p["sockbuf_granted_recv_bytes"].as_u64().unwrap() > 0);
    }
    // The readable table: a header and a line per point (indented lines
    // below a point say where its lost datagrams died).
    let table = String::from_utf8_lossy(&output.stdout);
    let point_lines = table.lines().filter(|l| !l.starts_with(' ')).count();
    assert_eq!(point_lines, 5, "{table}");
    assert!(table.lines().next().unwrap().contains("recv Mbit/s"));
}

#[test]
fn reference_stack_udp_sweep_reports_loss_and_its_target() {
    let out = Scratch::new("ref");
    let output = stackscope(&[
        "sweep",
        "--stack",
        "ref",
        "--proto",
        "udp",
        "--sizes",
        "512",
        "--count",
        "500",
        "--reps",
        "1",
        "--max-reps",
        "1",
        "--min-duration",
        "0.2",
        "--out",
        out.path(),
    ]);
    succeeded(&output);
    let (header, rows) = read_csv(&out.0);
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(cell(&header, row, "stack"), "ref");
    assert_eq!(cell(&header, row, "reps"), "1");
    // One repetition has no spread to estimate.
    assert_eq!(cell(&header, row, "stdev_bps"), "");
    assert!(
        number(&header, row, "mean_bps") > 0.0,
        "{header:?}\n{row:?}"
    );
    assert_eq!(
        number(&header, row, "min_bps"),
        number(&header, row, "max_bps")
    );
    assert_eq!(cell(&header, row, "too_short"), "false");
    let json = read_json(&out.0);
    // Every lost datagram has a place; the places add up.
    let lost = json["points"][0]["lost_packets_total"].as_u64().unwrap();
    let places = json["points"][0]["lost_where"].as_object().unwrap();
    assert_eq!(
        places.values().map(|v| v.as_u64().unwrap()).sum::<u64>(),
        lost
    );
    assert_eq!(places["unattributed"], 0, "{places:?}");
    let target = &json["points"][0]["target"];
    assert_eq!(target["stack"], "ref");
    assert!(target["path"]
        .as_str()
        .unwrap()
        .starts_with("reference stack"));
}

#[test]
fn delay_sweep_gives_ordered_percentiles_and_a_full_histogram() {
    let out = Scratch::new("delay");
    let output = stackscope(&[
        "sweep",
        "--mode",
        "delay",
        "--proto",
        "udp,tcp",
        "--family",
        "4",
        "--sizes",
        "64",
        "--count",
        "50",
        "--reps",
        "2",
        "--max-reps",
        "2",
        "--port",
        "47321",
        "--out",
        out.path(),
    ]);
    succeeded(&output);
    let json = read_json(&out.0);
    assert_eq!(json["mode"], "delay");
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for p in points {
        let samples = p["samples"].as_u64().unwrap();
        assert_eq!(samples + p["lost"].as_u64().unwrap(), 100, "2 reps x 50");
        let at = |k: &str| f(&p[k]);
        assert!(at("min_us") > 0.0);
        assert!(at("min_us") <= at("p50_us"));
        assert!(at("p50_us") <= at("p90_us"));
        assert!(at("p90_us") <= at("p99_us"));
        assert!(at("p99_us") <= at("max_us"));
        assert!(at("min_us") <= at("mean_us") && at("mean_us") <= at("max_us"));
        let counted: u64 = p["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .sum();
        assert_eq!(counted, samples);
        assert_eq!(p["per_rep"].as_array().unwrap().len(), 2);
    }
    let (header, rows) = read_csv(&out.0);
    assert_eq!(rows.len(), 2);
    assert!(header.iter().any(|h| h == "p99_us"));
}

#[test]
fn reference_stack_tcp_delay_sweep_has_its_percentiles() {
    let out = Scratch::new("ref-tcp-delay");
    let output = stackscope(&[
        "sweep",
        "--mode",
        "delay",
        "--stack",
        "ref",
        "--proto",
        "tcp",
        "--sizes",
        "1,2000",
        "--count",
        "200",
        "--reps",
        "2",
        "--max-reps",
        "2",
        "--out",
        out.path(),
    ]);
    succeeded(&output);
    let json = read_json(&out.0);
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for p in points {
        assert_eq!(p["samples"], 400, "2 reps x 200, none lost: {p}");
        // Four 100 us wire crossings per round trip on the default network.
        assert!(f(&p["min_us"]) >= 400.0, "{p}");
        assert!(f(&p["p50_us"]) <= f(&p["p99_us"]));
        // No host thread of the threaded runner blocked inside a measured
        // exchange, in either repetition.
        assert_eq!(p["runner_naps"], 0, "{p}");
        for rep in p["per_rep"].as_array().unwrap() {
            assert_eq!(rep["runner_naps"], 0, "{p}");
        }
    }
    let (header, _) = read_csv(&out.0);
    assert!(header.iter().any(|h| h == "runner_naps"));
}

#[test]
fn circuits_report_each_flow_and_their_sum() {
    let out = Scratch::new("circuits");
    let output = stackscope(&[
        "sweep",
        "--circuits",
        "2",
        "--sizes",
        "8192",
        "--count",
        "100",
        "--load",
        "1",
        "--max-time",
        "5",
        "--port",
        "47331",
        "--out",
        out.path(),
    ]);
    succeeded(&output);
    let json = read_json(&out.0);
    let p = &json["points"][0];
    assert_eq!(p["circuits"], 2);
    assert_eq!(p["load_procs"], 1);
    let circuits = p["per_circuit"].as_array().unwrap();
    let ports: Vec<u64> = circuits
        .iter()
        .map(|c| c["port"].as_u64().unwrap())
        .collect();
    assert_eq!(ports, vec![47331, 47332]);
    let rep = &p["per_rep"][0];
    let flows: f64 = rep["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|fl| f(&fl["recv_bps"]))
        .sum();
    assert!((f(&rep["recv_bps"]) - flows).abs() <= 1e-6 * flows);
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("circuit 2 tcp port 47332"), "{table}");
}

#[test]
fn delay_circuits_time_each_circuit_beside_the_protocols_alone() {
    let out = Scratch::new("delay-circuits");
    let output = stackscope(&[
        "sweep",
        "--mode",
        "delay",
        "--mix",
        "tcp,udp",
        "--circuits",
        "2",
        "--sizes",
        "256",
        "--count",
        "50",
        "--reps",
        "2",
        "--max-reps",
        "2",
        "--port",
        "47341",
        "--out",
        out.path(),
    ]);
    succeeded(&output);
    let json = read_json(&out.0);
    let points = json["points"].as_array().unwrap();
    // TCP alone, UDP alone (the baselines), then both twice at once.
    let shape: Vec<(&str, u64)> = points
        .iter()
        .map(|p| {
            (
                p["protocol"].as_str().unwrap(),
                p["circuits"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(shape, vec![("tcp", 1), ("udp", 1), ("tcp+udp", 2)]);
    assert!(points[0].get("per_circuit").is_none());
    let mixed = &points[2];
    let circuits = mixed["per_circuit"].as_array().unwrap();
    let who: Vec<(u64, &str, u64)> = circuits
        .iter()
        .map(|c| {
            (
                c["circuit"].as_u64().unwrap(),
                c["protocol"].as_str().unwrap(),
                c["port"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        who,
        vec![
            (1, "tcp", 47341),
            (2, "udp", 47342),
            (3, "tcp", 47343),
            (4, "udp", 47344)
        ]
    );
    // Each circuit's own exchanges; the point pools all four.
    for c in circuits {
        assert_eq!(c["samples"], 100, "{c}");
        assert_eq!(c["rep_mean_us"]["n"], 2, "{c}");
        assert!(f(&c["p50_us"]) <= f(&c["p99_us"]));
        assert!((0.0..=1.0).contains(&f(&c["overlap"])), "{c}");
    }
    assert_eq!(mixed["samples"], 400);
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("circuit 4 udp port 47344: mean"), "{table}");
}

/// Runs a sweep that must be refused: non-zero exit, nothing on stdout,
/// one line on stderr containing `expected`, no panic.
fn refused(args: &[&str], expected: &str) {
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    let output = stackscope(&all);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{args:?} succeeded");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("stackscope: "), "{args:?}: {stderr}");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
    assert!(output.stdout.is_empty(), "{args:?}");
}

#[test]
fn bad_grids_are_refused_in_one_line_before_anything_runs() {
    refused(&["--sizes", "500..100:10"], "runs backwards");
    refused(&["--sizes", "100..500:0"], "step must be more than 0");
    refused(&["--sizes", "16,,32"], "empty item");
    refused(&["--proto", ""], "--proto is empty");
    refused(&["--sizes", "0"], "impossible for TCP");
    refused(&["--sizes", "1..1000000000"], "at most 100000 points");
    refused(
        &[
            "--proto",
            "udp,raw",
            "--sizes",
            "16..50000",
            "--rate",
            "1M,2M",
        ],
        "at most 100000",
    );
    refused(
        &["--proto", "tcp", "--rate", "10M"],
        "--rate paces datagrams",
    );
    refused(&["--proto", "sctp"], "`sctp` is not one of");
    refused(
        &["--mode", "delay", "--proto", "raw", "--circuits", "2"],
        "raw delay runs one circuit",
    );
    refused(&["--load", "1000"], "at most 64");
    refused(
        &["--reps", "0", "--sizes", "64"],
        "--reps must be at least 1",
    );
    refused(&["--timeout=-1"], "--timeout -1 is impossible");
    refused(&["--ci-target", "0"], "--ci-target 0 is impossible");
    refused(
        &["--reps", "5", "--max-reps", "4"],
        "--max-reps 4 is below --reps 5",
    );
    refused(&["--max-time", "0"], "--max-time 0 is impossible");
    refused(
        &[
            "--stack",
            "ref",
            "--proto",
            "udp",
            "--topology",
            "/nonexistent/t.toml",
        ],
        "/nonexistent/t.toml",
    );
}

#[test]
fn load_levels_and_sides_are_points_that_say_where_their_load_ran() {
    let out = Scratch::new("load-sides");
    let output = stackscope(&[
        "sweep",
        "--sizes",
        "8192",
        "--count",
        "200",
        "--min-duration",
        "0",
        "--reps",
        "1",
        "--max-reps",
        "1",
        "--load",
        "0,2",
        "--load-on",
        "server,client",
        "--port",
        "47351",
        "--out",
        out.path(),
    ]);
    succeeded(&output);
    let json = read_json(&out.0);
    assert_eq!(json["loads"], serde_json::json!([0, 2]));
    assert_eq!(json["load_on"], serde_json::json!(["server", "client"]));
    let points = json["points"].as_array().unwrap();
    let shape: Vec<(u64, &str)> = points
        .iter()
        .map(|p| {
            (
                p["load_procs"].as_u64().unwrap(),
                p["load_on"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![(0, "server"), (0, "client"), (2, "server"), (2, "client")]
    );
    let cpus: Vec<usize> = {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        traffic::affinity::cpus_allowed_list(&status).unwrap()
    };
    for p in points {
        if cpus.len() < 2 {
            // One CPU: no side to load, and said so.
            assert_eq!(p["pinned"], false, "{p}");
            continue;
        }
        assert_eq!(p["pinned"], true, "{p}");
        // Server: the receiver's CPU, the first; client: the sender's.
        let side = if p["load_on"] == "server" { 0 } else { 1 };
        assert_eq!(p["load_cpu"].as_u64(), Some(cpus[side] as u64), "{p}");
        let placement = &p["target"]["placement"];
        assert_eq!(placement["receiver_cpu"].as_u64(), Some(cpus[0] as u64));
        assert_eq!(placement["sender_cpu"].as_u64(), Some(cpus[1] as u64));
        assert_eq!(placement["held"], true);
    }
    let (header, rows) = read_csv(&out.0);
    assert_eq!(cell(&header, &rows[3], "load_on"), "client");
    assert_eq!(cell(&header, &rows[3], "load_procs"), "2");
    // The table says the level and side of each point.
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("2 client"), "{table}");

    // The default network's router could not be placed: refused first.
    let output = stackscope(&["sweep", "--stack", "ref", "--load-on", "client"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("two hosts"));
    // Delay mode has no sides to pin: refused before anything runs.
    let output = stackscope(&["sweep", "--mode", "delay", "--load-on", "server"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--mode throughput"));
}

/// Ctrl-C during a loaded point: the sweep's spinners die with it, none
/// left burning the CPUs (`--load 1000` once left 800 running 20 s
/// after SIGINT).
#[test]
fn interrupting_a_loaded_sweep_stops_its_load() {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_stackscope"));
    command
        .args(["sweep", "--stack", "kernel", "--load", "8", "--sizes", "1K"])
        .args(["--total", "256M", "--reps", "20", "--max-reps", "20"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SIGINT as at a terminal: a shell without job control starts its
    // background commands with SIGINT ignored, and the sweep would inherit
    // that and run to its end (seen when `.ci/run` itself ran under `&`).
    // SAFETY: between fork and exec the closure only calls signal(2),
    // which is async-signal-safe, with a valid signal and disposition.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut sweep = command.spawn().expect("start the sweep");
    let pid = sweep.id() as libc::pid_t;
    // The spinners are the sweep's forked children.
    let children = || {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .map_or(0, |c| c.split_whitespace().count())
    };
    let began = std::time::Instant::now();
    while children() < 8 && began.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(children(), 8, "the load never started");
    let spinners: Vec<String> = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    // SAFETY: kill with a valid pid of our own child and a signal number.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = sweep.wait().expect("the sweep ends");
    assert!(!status.success());
    let alive = |p: &String| {
        std::fs::read_to_string(format!("/proc/{p}/stat"))
            .is_ok_and(|s| !s.contains(") Z ") && !s.contains(") X "))
    };
    let began = std::time::Instant::now();
    while spinners.iter().any(alive) && began.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left: Vec<&String> = spinners.iter().filter(|p| alive(p)).collect();
    assert!(left.is_empty(), "spinners still running: {left:?}");
}

/// A second sweep into a directory that holds the first one's files is
/// refused before anything is measured, unless --force.
#[test]
fn out_refuses_a_directory_with_files_unless_forced() {
    let dir = std::env::temp_dir().join(format!("ss-sweep-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("sweep.csv"), "old\n").unwrap();
    let out = stackscope(&["sweep", "--out", dir.to_str().unwrap(), "--sizes", "1K"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("already holds files") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sweep.csv")).unwrap(),
        "old\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// -C reaches every TCP flow of a sweep, throughput and delay, and each
/// row says what its senders ran; datagram points have none to choose.
#[test]
fn congestion_control_pins_the_tcp_points() {
    for (mode, port) in [("throughput", "47361"), ("delay", "47371")] {
        let out = Scratch::new(&format!("congestion-{mode}"));
        let output = stackscope(&[
            "sweep",
            "--mode",
            mode,
            "--stack",
            "kernel",
            "--proto",
            "tcp,udp",
            "--sizes",
            "1024",
            "--count",
            "100",
            "--reps",
            "1",
            "--max-reps",
            "1",
            "--min-duration",
            "0",
            "--port",
            port,
            "-C",
            "reno",
            "--out",
            out.path(),
        ]);
        succeeded(&output);
        let (header, rows) = read_csv(&out.0);
        let by_protocol: Vec<(&str, &str)> = rows
            .iter()
            .map(|row| {
                (
                    cell(&header, row, "protocol"),
                    cell(&header, row, "congestion_control"),
                )
            })
            .collect();
        assert_eq!(by_protocol, [("tcp", "reno"), ("udp", "")], "{mode}");
    }
}

#[test]
fn a_congestion_control_a_swept_stack_lacks_is_refused_before_anything_runs() {
    refused(
        &["--stack", "ref", "--sizes", "1024", "-C", "bbr"],
        "point 1 (ref tcp IPv6 1024 B): the reference stack has no congestion control `bbr`",
    );
    refused(
        &["--stack", "kernel", "--sizes", "1024", "-C", "no-such-cc"],
        "the kernel has no TCP congestion control `no-such-cc`: it offers",
    );
}
