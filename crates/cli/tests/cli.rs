//! The `stackscope` binary end to end: calibrate's JSON keeps the keys the
//! issue specifies, and the trace subcommands read, convert and refuse
//! trace files as documented.

mod common;

use common::{stackscope, stdout_json};

use std::path::PathBuf;

use probe::{locations, Category, Kind, Layer, Record, Trace, TraceHeader};
use serde_json::Value;

locations! {
    static SITES;
    SEND_ENTER = ("send.enter", Layer::Transport, Kind::SpanEnter, Category::ProtocolSend, None);
    SEND_EXIT = ("send.exit", Layer::Transport, Kind::SpanExit, Category::ProtocolSend, None);
    IFQ_IN = ("ifq.enqueue", Layer::Link, Kind::Enqueue, Category::Link, Some("ifq"));
}

/// A scratch file removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        Self(std::env::temp_dir().join(format!("stackscope-cli-{}-{name}", std::process::id())))
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn sample_trace() -> Trace {
    let r = |tsc, loc: probe::Loc| Record::new(tsc, loc, 1500, 7, 1, 1);
    Trace::new(
        TraceHeader::new(2e9, 30.0, 4, "cli test"),
        SITES,
        vec![r(1000, SEND_ENTER), r(1500, IFQ_IN), r(3000, SEND_EXIT)],
    )
}

fn positive(v: &Value) -> bool {
    v.as_f64().is_some_and(|x| x.is_finite() && x > 0.0)
}

#[test]
fn calibrate_json_has_every_documented_key() {
    let json = stdout_json(&stackscope(&["calibrate", "--json", "--quick"]));
    assert!(positive(&json["tsc_hz"]), "tsc_hz: {}", json["tsc_hz"]);
    for key in [
        "enabled_ns_median",
        "enabled_ns_p99",
        "disabled_ns_median",
        "overhead_cycles",
    ] {
        let value = &json["probe"][key];
        assert!(
            value.as_f64().is_some_and(f64::is_finite),
            "probe.{key}: {value}"
        );
    }
    for size in ["64", "1500", "65536"] {
        for which in ["reference", "optimized"] {
            let rate = &json["checksum_gbytes_per_s"][which][size];
            assert!(positive(rate), "checksum {which} {size}: {rate}");
        }
        let rate = &json["memcpy_gbytes_per_s"][size];
        assert!(positive(rate), "memcpy {size}: {rate}");
    }
}

#[test]
fn trace_info_reports_header_table_and_counts() {
    let file = Scratch::new("info.sstrace");
    std::fs::write(&file.0, sample_trace().to_bytes().unwrap()).unwrap();
    let json = stdout_json(&stackscope(&["trace", "info", "--json", file.path()]));
    assert_eq!(json["records"], 3);
    assert_eq!(json["dropped"], 4);
    assert_eq!(json["threads"], 1);
    assert_eq!(json["counter_hz"], 2e9);
    // 2000 cycles at 2 GHz.
    assert_eq!(json["duration_ns"], 1000.0);
    let names: Vec<&str> = json["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["send.enter", "send.exit", "ifq.enqueue"]);
    assert_eq!(json["locations"][2]["queue"], "ifq");
    assert_eq!(json["locations"][2]["records"], 1);
    // A plain-text description stays a string; a JSON one (the lab's)
    // is nested as an object, not a string of JSON.
    assert_eq!(json["description"], "cli test");
    let mut trace = sample_trace();
    trace.header.description = r#"{"run":"x / y","threads":{"7":{"role":"sender"}}}"#.into();
    std::fs::write(&file.0, trace.to_bytes().unwrap()).unwrap();
    let json = stdout_json(&stackscope(&["trace", "info", "--json", file.path()]));
    assert_eq!(json["description"]["threads"]["7"]["role"], "sender");

    let text = stackscope(&["trace", "info", file.path()]);
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("dropped          4"), "{text}");
}

#[test]
fn trace_converts_to_csv_and_perfetto() {
    let file = Scratch::new("convert.sstrace");
    std::fs::write(&file.0, sample_trace().to_bytes().unwrap()).unwrap();

    let csv = stackscope(&["trace", "csv", file.path()]);
    assert!(csv.status.success());
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(csv.lines().count(), 4, "header and three rows:\n{csv}");
    assert!(csv.lines().nth(2).unwrap().contains("ifq.enqueue"));

    let out = Scratch::new("timeline.json");
    let perfetto = stackscope(&[
        "trace",
        "perfetto",
        file.path(),
        "-o",
        out.path(),
        "--format",
        "json",
    ]);
    assert!(perfetto.status.success());
    let json: Value = serde_json::from_slice(&std::fs::read(&out.0).unwrap()).unwrap();
    let events = json["traceEvents"].as_array().unwrap();
    let send = events.iter().find(|e| e["ph"] == "X").expect("a slice");
    assert_eq!(send["name"], "send");
    // 2000 cycles at 2 GHz = 1 us.
    assert_eq!(send["dur"], 1.0);
    assert!(String::from_utf8_lossy(&perfetto.stderr).contains("0 unmatched exits"));
}

#[test]
fn trace_perfetto_names_threads_like_the_lab() {
    // The reference stack's writers describe each thread's host; the
    // timeline names the thread by it, in both formats.
    let mut trace = sample_trace();
    trace.header.description =
        r#"{"stack":"reference","run":"t / r","threads":{"1":{"host":"host-a","role":"sender"}}}"#
            .into();
    let file = Scratch::new("named.sstrace");
    std::fs::write(&file.0, trace.to_bytes().unwrap()).unwrap();

    let json_out = Scratch::new("named.json");
    let run = stackscope(&[
        "trace",
        "perfetto",
        file.path(),
        "-o",
        json_out.path(),
        "--format",
        "json",
    ]);
    assert!(run.status.success());
    let json: Value = serde_json::from_slice(&std::fs::read(&json_out.0).unwrap()).unwrap();
    let names: Vec<(&str, &str)> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            ("process_name", "t / r (reference stack)"),
            ("thread_name", "host-a")
        ]
    );

    // Default: protobuf, a Trace message (field 1, length-delimited
    // packets) naming the same thread.
    let pb_out = Scratch::new("named.pftrace");
    let run = stackscope(&["trace", "perfetto", file.path(), "-o", pb_out.path()]);
    assert!(run.status.success());
    let bytes = std::fs::read(&pb_out.0).unwrap();
    assert_eq!(bytes[0], 0x0a, "field 1, wire type 2");
    let has = |s: &[u8]| bytes.windows(s.len()).any(|w| w == s);
    assert!(has(b"host-a") && has(b"t / r (reference stack)") && has(b"send"));
}

#[test]
fn corrupt_and_missing_trace_files_get_clear_errors() {
    let file = Scratch::new("truncated.sstrace");
    let bytes = sample_trace().to_bytes().unwrap();
    std::fs::write(&file.0, &bytes[..bytes.len() - 5]).unwrap();
    let out = stackscope(&["trace", "info", file.path()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("truncated in record 2"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    std::fs::write(&file.0, b"not a trace file at all").unwrap();
    let out = stackscope(&["trace", "csv", file.path()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad magic"));

    let out = stackscope(&["trace", "perfetto", "/nonexistent/stackscope.sstrace"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot open"));
}

/// Each refusal says one thing once: the file named once, no `:0:0:` for
/// a recipe that could not be read at all, an OS error not repeated, and
/// no "run as root" said to root about a missing interface.
#[test]
fn errors_name_the_file_once_and_say_one_thing() {
    let dir = std::env::temp_dir();
    let dir = dir.to_str().unwrap();
    let first_line = |args: &[&str]| {
        let out = stackscope(args);
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let missing = "/nonexistent-stackscope-topology.toml";
    let line = first_line(&["ping", "--topology", missing, "host-b"]);
    assert_eq!(line.matches(missing).count(), 1, "{line}");
    let line = first_line(&["run", dir]);
    assert!(!line.contains(":0:0:"), "{line}");
    assert!(line.contains("Is a directory"), "{line}");
    let line = first_line(&["trace", "info", dir]);
    assert_eq!(line.matches("Is a directory").count(), 1, "{line}");
    let line = first_line(&["host", "--packet", "nosuchif-zz"]);
    assert!(line.contains("nosuchif-zz"), "{line}");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert!(!line.contains("run as root"), "{line}");
    }
}
