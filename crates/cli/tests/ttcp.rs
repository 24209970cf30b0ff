//! `stackscope ttcp` end to end: the issue's "done when" transfer on the
//! reference stack, the kernel target in one and two processes, the
//! iperf3-shaped JSON, and one-line refusals.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{stackscope, stdout_json};

/// The first line of the refusal on stderr (flag syntax errors get clap's
/// usage hint after it), after checking the exit status.
fn refusal(args: &[&str]) -> String {
    let output = stackscope(args);
    assert!(!output.status.success(), "{args:?} succeeded");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr.lines().next().unwrap_or_default().to_string()
}

#[test]
fn reference_stack_udp_accounts_for_every_datagram() {
    let report = stdout_json(&stackscope(&[
        "ttcp", "--pair", "--stack", "ref", "-u", "-l", "1472", "-n", "20000", "--json",
    ]));
    let sent = &report["end"]["sum_sent"];
    let received = &report["end"]["sum_received"];
    assert_eq!(sent["packets"], 20000);
    assert_eq!(sent["bytes"], 20000 * 1472);
    let (packets, lost) = (
        received["packets"].as_u64().unwrap(),
        received["lost_packets"].as_u64().unwrap(),
    );
    assert_eq!(packets + lost, 20000);
    assert_eq!(received["corrupted"], 0);
    assert_eq!(received["duplicated"], 0);
    assert_eq!(received["sent_by_sender"], 20000);
    assert_eq!(report["start"]["target"]["stack"], "ref");
    assert_eq!(report["start"]["test_start"]["protocol"], "udp");
    assert_eq!(report["start"]["test_start"]["family"], "IPv6");
}

#[test]
fn reference_stack_tcp_is_byte_exact_over_both_families() {
    for family in ["-6", "-4"] {
        // 32 MiB: the issue's 1 GiB run in small.
        let report = stdout_json(&stackscope(&[
            "ttcp", "--pair", "--stack", "ref", family, "-l", "65536", "-n", "512", "--json",
        ]));
        let received = &report["end"]["sum_received"];
        assert_eq!(received["bytes"], 512 * 65536, "{family}");
        for check in ["corrupted_bytes", "missing_bytes", "duplicated_bytes"] {
            assert_eq!(received[check], 0, "{family}: {check}");
        }
        assert!(received["bits_per_second"].as_f64().unwrap() > 0.0);
        assert_eq!(report["start"]["test_start"]["protocol"], "tcp");
        // The stack's own count, as iperf3 reports the kernel's.
        assert!(
            report["end"]["sum_sent"]["retransmits"].is_u64(),
            "{family}"
        );
    }
}

#[test]
fn kernel_pair_reports_like_iperf3_with_intervals() {
    let report = stdout_json(&stackscope(&[
        "ttcp", "--pair", "-4", "-l", "65536", "-n", "2000", "-p", "15301", "-i", "0.05", "--json",
    ]));
    let end = &report["end"];
    assert_eq!(end["sum_sent"]["bytes"], 65536 * 2000);
    assert_eq!(end["sum_received"]["bytes"], 65536 * 2000);
    assert_eq!(end["sum_received"]["missing_bytes"], 0);
    for key in ["host_total", "host_user", "host_system", "remote_total"] {
        assert!(end["cpu_utilization_percent"][key].is_number(), "{key}");
    }
    let intervals = report["intervals"].as_array().unwrap();
    assert!(!intervals.is_empty());
    let summed: u64 = intervals
        .iter()
        .map(|i| i["sum"]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(summed, 65536 * 2000);
    let target = &report["start"]["target"];
    assert!(target["kernel"].as_str().unwrap().starts_with("Linux"));
    assert!(target["cpu_model"].is_string());
    assert!(target["congestion_control"].is_string());
    assert_eq!(target["path"], "loopback");
}

#[test]
fn transmitter_and_receiver_as_two_processes() {
    let receiver = Command::new(env!("CARGO_BIN_EXE_stackscope"))
        .args([
            "ttcp", "-r", "-6", "-u", "-p", "15302", "-l", "1000", "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the receiver");
    // The receiver binds at once; give it a moment before sending.
    std::thread::sleep(Duration::from_millis(300));
    let sent = stdout_json(&stackscope(&[
        "ttcp", "-t", "::1", "-u", "-p", "15302", "-l", "1000", "-n", "500", "--rate", "50M",
        "--json",
    ]));
    assert_eq!(sent["end"]["sum_sent"]["packets"], 500);
    assert!(sent["end"].get("sum_received").is_none());
    let received = stdout_json(&receiver.wait_with_output().expect("receiver"));
    let sum = &received["end"]["sum_received"];
    assert_eq!(
        sum["packets"].as_u64().unwrap() + sum["lost_packets"].as_u64().unwrap(),
        500
    );
    assert_eq!(
        received["end"]["cpu_utilization_percent"]["host_role"],
        "receiver"
    );
}

#[test]
fn human_output_has_ttcp_lines_for_both_ends() {
    let output = stackscope(&["ttcp", "--pair", "-l", "8192", "-n", "100", "-p", "15303"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("ttcp-t: 819200 bytes in"), "{text}");
    assert!(text.contains("ttcp-r: 819200 bytes in"), "{text}");
    assert!(text.contains("byte-exact"), "{text}");
    assert!(text.contains("target: kernel, path: loopback"), "{text}");
}

#[test]
fn impossible_requests_get_one_line_and_a_failure() {
    let zero = refusal(&["ttcp", "--pair", "-l", "0"]);
    assert!(zero.contains("-l 0 is impossible"), "{zero}");
    let tiny = refusal(&["ttcp", "--pair", "-u", "-l", "8"]);
    assert!(tiny.contains("16-byte sequence header"), "{tiny}");
    let no_mode = refusal(&["ttcp", "-l", "100"]);
    assert!(no_mode.contains("-t HOST"), "{no_mode}");
    let raw_loopback = refusal(&["ttcp", "--pair", "--raw", "-l", "100"]);
    assert!(raw_loopback.contains("--netns"), "{raw_loopback}");
    let bad_rate = refusal(&["ttcp", "--pair", "-u", "--rate", "fast"]);
    assert!(bad_rate.contains("not a rate"), "{bad_rate}");
    // Refused by the flag's check, not by a 10 s wait for a receiver
    // at port 0.
    let port_zero = refusal(&["ttcp", "--pair", "-p", "0"]);
    assert!(port_zero.contains("-p <PORT>"), "{port_zero}");
    let sweep_port_zero = refusal(&["sweep", "-p", "0"]);
    assert!(
        sweep_port_zero.contains("--port <PORT>"),
        "{sweep_port_zero}"
    );
}

#[test]
fn netns_without_root_says_so() {
    // Run as nobody when we are root and setpriv exists; otherwise the
    // refusal cannot be provoked here.
    let is_root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false);
    if !is_root || Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: needs root and setpriv to become an unprivileged user");
        return;
    }
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_stackscope"))
        .args(["ttcp", "--pair", "--netns"])
        .output()
        .expect("run as nobody");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("needs root"), "{stderr}");
}

/// The names the kernel offers (built in or loaded).
fn kernel_congestion_controls() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// -C pins the kernel's congestion control whatever the system's
/// default (BBR on some machines): the report gives what the sender's
/// socket runs, read back, in the JSON and the text line.
#[test]
fn kernel_runs_the_congestion_control_asked_for() {
    let available = kernel_congestion_controls();
    for (name, port) in [("reno", "15311"), ("cubic", "15312")] {
        if !available.iter().any(|n| n == name) {
            eprintln!("skipped {name}: the kernel offers only {available:?}");
            continue;
        }
        let report = stdout_json(&stackscope(&[
            "ttcp", "--pair", "--stack", "kernel", "-l", "8192", "-n", "200", "-p", port, "-C",
            name, "--json",
        ]));
        assert_eq!(report["start"]["target"]["congestion_control"], name);
        assert_eq!(report["start"]["test_start"]["congestion"], name);
        assert_eq!(report["end"]["sum_received"]["bytes"], 8192 * 200);
        assert_eq!(report["end"]["sum_received"]["missing_bytes"], 0);
    }
    let output = stackscope(&[
        "ttcp",
        "--pair",
        "--congestion",
        "reno",
        "-n",
        "100",
        "-p",
        "15313",
    ]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains(", congestion control reno"), "{text}");
}

/// Without -C the kernel's sockets run the system's default, and the
/// request is not recorded.
#[test]
fn kernel_runs_the_system_default_without_a_choice() {
    let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .expect("the default congestion control");
    let report = stdout_json(&stackscope(&[
        "ttcp", "--pair", "-n", "100", "-p", "15314", "--json",
    ]));
    assert_eq!(
        report["start"]["target"]["congestion_control"],
        default.trim()
    );
    assert!(report["start"]["test_start"].get("congestion").is_none());
}

/// The reference stack maps Linux's names onto its own algorithms.
#[test]
fn reference_stack_runs_reno_or_cubic_as_asked() {
    for (asked, runs) in [("reno", "reno"), ("newreno", "reno"), ("cubic", "cubic")] {
        let report = stdout_json(&stackscope(&[
            "ttcp", "--pair", "--stack", "ref", "-l", "8192", "-n", "200", "-C", asked, "--json",
        ]));
        assert_eq!(report["start"]["target"]["congestion_control"], runs);
        assert_eq!(report["end"]["sum_received"]["bytes"], 8192 * 200);
    }
}

#[test]
fn a_congestion_control_a_stack_lacks_is_refused_in_one_line() {
    let unknown = refusal(&["ttcp", "--pair", "-C", "no-such-cc", "-p", "15315"]);
    assert!(
        unknown.contains("the kernel has no TCP congestion control `no-such-cc`: it offers"),
        "{unknown}"
    );
    for name in kernel_congestion_controls() {
        assert!(unknown.contains(&name), "{name} missing from: {unknown}");
    }
    let reference = refusal(&["ttcp", "--pair", "--stack", "ref", "-C", "bbr"]);
    assert!(
        reference.contains("the reference stack has no congestion control `bbr`: it has cubic")
            && reference.contains("reno"),
        "{reference}"
    );
    let udp = refusal(&["ttcp", "--pair", "-u", "-C", "reno"]);
    assert!(udp.contains("-C chooses TCP's congestion control"), "{udp}");
    let malformed = refusal(&["ttcp", "--pair", "-C", "cu bic"]);
    assert!(
        malformed.contains("`cu bic` is not a congestion control's name"),
        "{malformed}"
    );
}
