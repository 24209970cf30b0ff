//! The real `iperf3` client (Debian's) against `stackscope host`'s iperf3
//! server, over a TAP in a namespace the test makes (the reference host
//! at 2001:db8:77::2 and 192.0.2.2, the kernel at ::1 and .1): TCP, UDP
//! at 50 Mbit/s, `-R` (the reference stack sends), `-P 2`, `-n`, `-l`,
//! each with `-J`, read from the client's JSON. A TCP test's two byte
//! counts (the client's, and the server's that the client prints as the
//! receiver's) must agree; a reversed one's may differ only by what was in
//! flight at the end; a UDP test must lose little.
//!
//! The second test also runs the host with `--trace`: the test's segments
//! are in the trace it writes.
//!
//! Needs root (namespaces, TAP devices) and `iperf3`; elsewhere it prints
//! "skipped: ..." and passes.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{path_str, require_tool, skip_reason, HostProcess, Netns, TempDir};

const TAP: &str = "ssip0";
const HOST6: &str = "2001:db8:77::2";
const HOST4: &str = "192.0.2.2";
/// The reference stack's send buffer per connection: what a reversed
/// test may have in flight when the client ends it.
const SEND_BUFFER: u64 = 4 << 20;

/// Runs `iperf3 -c ... -J` in the namespace; its JSON, which must carry
/// no error.
fn iperf3(ns: &Netns, args: &[&str]) -> Value {
    let mut all = vec!["-J", "--connect-timeout", "5000"];
    all.extend_from_slice(args);
    let output = ns.exec("iperf3", &all);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "iperf3 {}: no JSON ({e}):\n{stdout}\n{}",
            all.join(" "),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert!(
        output.status.success() && json.get("error").is_none(),
        "iperf3 {} failed ({}): {}",
        all.join(" "),
        output.status,
        json.get("error").unwrap_or(&Value::Null)
    );
    json
}

fn number(v: &Value, path: &str) -> f64 {
    let mut at = v;
    for key in path.split('.') {
        at = match key.parse::<usize>() {
            Ok(i) => &at[i],
            Err(_) => &at[key],
        };
    }
    at.as_f64()
        .unwrap_or_else(|| panic!("no number at {path} in {}", v["end"]))
}

/// The most a kernel TCP socket in `ns` may hold received but unread
/// (`tcp_rmem`'s maximum).
fn kernel_receive_buffer(ns: &Netns) -> u64 {
    let output = ns.exec("cat", &["/proc/sys/net/ipv4/tcp_rmem"]);
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace()
        .nth(2)
        .and_then(|max| max.parse().ok())
        .unwrap_or_else(|| panic!("tcp_rmem: {text}"))
}

/// A TCP test where the client sends: the server's count (the receiver's
/// line) is every byte the client sent, stream by stream.
fn assert_tcp_counts_agree(run: &Value, streams: usize) {
    let sent = number(run, "end.sum_sent.bytes");
    let received = number(run, "end.sum_received.bytes");
    assert!(sent > 0.0, "nothing sent: {}", run["end"]);
    assert_eq!(
        sent, received,
        "the server counted other bytes: {}",
        run["end"]
    );
    let per_stream = run["end"]["streams"].as_array().expect("end.streams");
    assert_eq!(per_stream.len(), streams, "{}", run["end"]);
    for s in per_stream {
        assert_eq!(
            number(s, "sender.bytes"),
            number(s, "receiver.bytes"),
            "{s}"
        );
        assert!(number(s, "receiver.seconds") > 0.0, "{s}");
    }
    let bps = number(run, "end.sum_received.bits_per_second");
    eprintln!(
        "TCP x{streams}: {sent} bytes, {:.0} Mbit/s received by the reference stack",
        bps / 1e6
    );
}

/// Waits until the host has printed the end of `n` tests (the client may
/// exit before the server read its last message).
fn wait_for_tests(host: &mut HostProcess, n: usize) {
    let ended = std::cell::Cell::new(0);
    host.wait_for_line(
        |l| {
            if l.starts_with("iperf3 test (") || l.starts_with("iperf3 test failed") {
                ended.set(ended.get() + 1);
            }
            ended.get() == n
        },
        Duration::from_secs(5),
    )
    .unwrap_or_else(|why| panic!("the host did not end {n} tests: {why}"));
}

#[test]
fn the_iperf3_client_measures_the_reference_stack() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    require_tool("ip", "iproute2");
    require_tool("iperf3", "iperf3");
    let Some((ns, mut host)) = support::host_in_netns(TAP, &support::NO_DAD_ADDRESSES) else {
        return;
    };

    // TCP, the client sends.
    let run = iperf3(&ns, &["-c", HOST4, "-t", "2"]);
    assert_eq!(run["start"]["test_start"]["protocol"], "TCP");
    assert_tcp_counts_agree(&run, 1);

    // Two streams, IPv6, 64 KiB writes.
    let run = iperf3(&ns, &["-c", HOST6, "-t", "2", "-P", "2", "-l", "64K"]);
    assert_eq!(run["start"]["test_start"]["blksize"], 65536);
    assert_tcp_counts_agree(&run, 2);

    // A byte count: at least that many sent, at most one 128 KiB write
    // past it, and every byte sent received. iperf3's client stops once
    // it has sent at least the count (its help says "at least" since
    // esnet/iperf pull request 1800): one CI run here counted 25 writes
    // for a count of 24.
    let run = iperf3(&ns, &["-c", HOST4, "-n", "3M"]);
    let sent = number(&run, "end.sum_sent.bytes");
    let asked = 3.0 * 1024.0 * 1024.0;
    assert!(
        (asked..=asked + 131072.0).contains(&sent),
        "sent {sent} for -n 3M"
    );
    assert_tcp_counts_agree(&run, 1);

    // Reversed: the reference stack sends. The client stops reading at
    // its TEST_END, so what was unacknowledged (at most the send buffer)
    // or acknowledged but unread (at most the client's receive buffer)
    // is counted as sent only.
    let run = iperf3(&ns, &["-c", HOST4, "-t", "2", "-R"]);
    let sent = number(&run, "end.sum_sent.bytes");
    let received = number(&run, "end.sum_received.bytes");
    assert!(received > 0.0, "{}", run["end"]);
    let in_flight = (SEND_BUFFER + kernel_receive_buffer(&ns)) as f64;
    assert!(
        sent >= received && sent - received <= in_flight,
        "sent {sent}, received {received} (at most {in_flight} apart): {}",
        run["end"]
    );
    assert!(number(&run, "end.sum_sent.retransmits") >= 0.0);
    eprintln!(
        "TCP -R: {:.0} Mbit/s sent by the reference stack",
        number(&run, "end.sum_received.bits_per_second") / 1e6
    );

    // Reversed with a byte count: the server stops at exactly it.
    let run = iperf3(&ns, &["-c", HOST6, "-n", "2M", "-R", "-P", "2"]);
    assert_eq!(number(&run, "end.sum_sent.bytes"), 2.0 * 1024.0 * 1024.0);
    assert_eq!(
        number(&run, "end.sum_received.bytes"),
        2.0 * 1024.0 * 1024.0
    );

    // UDP at 50 Mbit/s: the server's counts (packets, losses, jitter).
    let run = iperf3(&ns, &["-c", HOST4, "-u", "-b", "50M", "-t", "2"]);
    assert_eq!(run["start"]["test_start"]["protocol"], "UDP");
    let sum = &run["end"]["sum"];
    let packets = number(sum, "packets");
    let lost = number(sum, "lost_packets");
    assert!(packets > 1000.0, "{sum}");
    assert!(lost <= packets * 0.02, "lost {lost} of {packets}: {sum}");
    assert!(number(sum, "jitter_ms") >= 0.0, "{sum}");
    assert!(number(sum, "bytes") > 0.0, "{sum}");
    eprintln!(
        "UDP 50M: {packets} datagrams, {lost} lost, jitter {} ms",
        number(sum, "jitter_ms")
    );

    // UDP reversed, two streams: the reference stack paces its sends.
    let run = iperf3(
        &ns,
        &["-c", HOST6, "-u", "-b", "20M", "-t", "2", "-R", "-P", "2"],
    );
    let sum = &run["end"]["sum"];
    let packets = number(sum, "packets");
    let lost = number(sum, "lost_packets");
    assert!(packets > 500.0, "{sum}");
    assert!(lost <= packets * 0.02, "lost {lost} of {packets}: {sum}");
    let mbps = number(sum, "bits_per_second") / 1e6;
    assert!(
        (30.0..=50.0).contains(&mbps),
        "2 streams at 20 Mbit/s each came at {mbps:.1} Mbit/s: {sum}"
    );

    wait_for_tests(&mut host, 7);
    let stopped = host.stop(libc::SIGINT, Duration::from_secs(5));
    drop(ns);
    stopped.assert_clean_exit();
    let line = "iperf3 (5201)";
    assert_eq!(
        stopped.counter_on(line, "tests_completed"),
        7,
        "{}",
        stopped.stdout
    );
    assert_eq!(
        stopped.counter_on(line, "tests_failed"),
        0,
        "{}",
        stopped.stdout
    );
}

#[test]
fn options_the_server_does_not_serve_are_refused_in_iperf3s_words() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    require_tool("iperf3", "iperf3");
    // With the probes on: the run leaves a trace.
    let dir = TempDir::new("interop-iperf3");
    let trace = dir.join("iperf3.sstrace");
    let args = ["--addr", "192.0.2.2/24", "--trace", path_str(&trace)];
    let Some((ns, mut host)) = support::host_in_netns(TAP, &args) else {
        return;
    };
    let output = ns.exec("iperf3", &["-c", HOST4, "-t", "1", "--bidir"]);
    let text = String::from_utf8_lossy(&output.stdout).to_string()
        + &String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("not implemented"), "{text}");
    // The server is free again: a test runs.
    let run = iperf3(&ns, &["-c", HOST4, "-n", "1M"]);
    assert_tcp_counts_agree(&run, 1);
    wait_for_tests(&mut host, 2);
    let stopped = host.stop(libc::SIGINT, Duration::from_secs(5));
    drop(ns);
    stopped.assert_clean_exit();
    let line = "iperf3 (5201)";
    assert_eq!(
        stopped.counter_on(line, "tests_failed"),
        1,
        "{}",
        stopped.stdout
    );
    assert_eq!(
        stopped.counter_on(line, "tests_completed"),
        1,
        "{}",
        stopped.stdout
    );
    // The trace holds the test's TCP segments, received and delivered.
    let file = std::fs::File::open(&trace).expect("the trace file");
    let trace = probe::Trace::read(std::io::BufReader::new(file)).expect("a readable trace");
    assert!(trace.header.description.contains("stackscope host"));
    let count = |name: &str| {
        let Some(loc) = trace.locations.iter().position(|l| l.name == name) else {
            panic!("no location {name}");
        };
        trace
            .records
            .iter()
            .filter(|r| r.loc as usize == loc)
            .count()
    };
    // 1 MiB in segments of at most 1460 bytes: at least 719 of them.
    assert!(
        count("socket.recv_queue.enqueue") >= 719,
        "{} records",
        trace.records.len()
    );
}
