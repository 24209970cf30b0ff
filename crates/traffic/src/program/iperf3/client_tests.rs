//! The client program against the server program, both on the reference
//! stack's simulator: the exchange runs to its end, each side's counts
//! agree, and the intervals carry the reference connection's cwnd and
//! RTT. (Debian's iperf3 against both: `crates/cli/tests/iperf_json.rs`.)

use std::net::SocketAddr;
use std::time::Duration;

use stack::iface::host::Host;
use stack::runner::{Next, Simulator};
use stack::topology::Topology;

use super::client::{Client, ClientOptions, ClientRun};
use super::params::Protocol;
use super::{output, Server, PORT};
use crate::program::{Program, Step};

fn network() -> (Simulator, SocketAddr) {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
        ["host-a", "host-b"]
            .iter()
            .all(|n| !sim.host(n).unwrap().global_ipv6_addresses().is_empty())
    });
    assert!(ready, "SLAAC did not finish");
    let b = sim.host("host-b").unwrap().global_ipv6_addresses()[0];
    (sim, SocketAddr::new(b.into(), PORT))
}

fn options(server: SocketAddr, protocol: Protocol) -> ClientOptions {
    ClientOptions {
        server,
        host_name: server.ip().to_string(),
        protocol,
        reverse: false,
        parallel: 1,
        len: 8192,
        rate: None,
        bytes: None,
        time: 1,
        window: None,
        interval: Some(Duration::from_millis(250)),
        timeout: Duration::from_secs(10),
    }
}

/// Steps the server on host-b and the client on host-a to the client's end.
fn run(sim: &mut Simulator, options: ClientOptions) -> ClientRun {
    let mut server = Server::open(sim.host_mut("host-b").unwrap(), PORT).unwrap();
    let now = sim.host("host-a").unwrap().now();
    let mut client: Client<Host> = Client::new(options, now);
    let mut result = None;
    let done = sim.drive(Duration::from_secs(60), |sim| {
        // A host's clock is its last poll's: bring both to the
        // simulator's now (a host with no work was not polled at it).
        let now = sim.now();
        let b = sim.host_mut("host-b").unwrap();
        b.poll(now);
        server.run(b);
        let a = sim.host_mut("host-a").unwrap();
        a.poll(now);
        loop {
            match client.step(a) {
                Step::Again => continue,
                Step::Done(r) => {
                    result = Some(r);
                    return Next::Done;
                }
                _ => break,
            }
        }
        Next::At(Some(sim.now() + Duration::from_micros(200)))
    });
    assert!(done, "the client did not finish");
    result.unwrap().unwrap()
}

#[test]
fn a_tcp_test_with_two_streams_and_a_byte_count_ends_with_both_sides_agreeing() {
    let (mut sim, server) = network();
    // More than the 4 MiB send buffers take at once, so the test spans
    // intervals.
    let total = 12 << 20;
    let o = ClientOptions {
        parallel: 2,
        bytes: Some(total),
        ..options(server, Protocol::Tcp)
    };
    let run = run(&mut sim, o);
    assert_eq!(run.streams.len(), 2);
    assert_eq!(run.streams.iter().map(|s| s.bytes).sum::<u64>(), total);
    for s in &run.streams {
        let theirs = run.remote.streams.iter().find(|r| r.id == s.id).unwrap();
        assert_eq!(theirs.bytes, s.bytes, "the server counted every byte");
    }
    assert_eq!(run.streams.iter().map(|s| s.id).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(run.remote.congestion.as_deref(), Some("cubic"));
    // Intervals with the reference connection's state.
    assert!(!run.intervals.is_empty());
    let info = run.intervals[0].streams[0]
        .tcp
        .expect("the reference stack's TCP state");
    assert!(info.snd_cwnd > 0 && info.mss > 0, "{info:?}");
    assert!(run.streams[0].rtt_max > 0, "RTT samples");
    let v = output::json(&run, &output::RunInfo::default());
    let text = output::json_text(&v);
    let reread: serde_json::Value = serde_json::from_str(&text).unwrap();
    // The same JSON (serde_json reads a float's last digit back only to
    // within a rounding: the counts and names are compared).
    assert_eq!(
        reread["end"]["sum_sent"]["bytes"],
        v["end"]["sum_sent"]["bytes"]
    );
    assert_eq!(reread["start"]["cookie"], v["start"]["cookie"]);
    assert_eq!(
        reread.as_object().unwrap().keys().collect::<Vec<_>>(),
        v.as_object().unwrap().keys().collect::<Vec<_>>()
    );
    let at = |key: &str| text.find(&format!("\n  \"{key}\"")).unwrap();
    assert!(at("start") < at("intervals") && at("intervals") < at("end"));
    assert_eq!(v["end"]["sum_sent"]["bytes"], total);
    assert_eq!(v["end"]["sum_received"]["bytes"], total);
    assert_eq!(v["start"]["test_start"]["num_streams"], 2);
}

#[test]
fn a_reversed_udp_test_counts_what_the_server_sent() {
    let (mut sim, server) = network();
    let o = ClientOptions {
        reverse: true,
        rate: Some(2_000_000),
        len: 1000,
        ..options(server, Protocol::Udp)
    };
    let run = run(&mut sim, o);
    let ours = &run.streams[0];
    let theirs = &run.remote.streams[0];
    // 1 s at 2 Mbit/s in 1000-byte datagrams: 250 (and the pacer's
    // first burst).
    assert!((240..=275).contains(&ours.packets), "{ours:?}");
    assert!((run.duration - 1.0).abs() < 0.01, "{}", run.duration);
    // What arrived plus what was lost is what the server numbered.
    assert!(
        theirs.packets >= ours.packets,
        "{theirs:?} {ours:?} {}",
        run.duration
    );
    assert_eq!(ours.bytes, (ours.packets - ours.lost) * 1000);
    let v = output::json(&run, &output::RunInfo::default());
    assert_eq!(v["start"]["test_start"]["protocol"], "UDP");
    assert!(v["end"]["sum"]["jitter_ms"].is_f64());
    assert_eq!(v["intervals"][0]["sum"]["sender"], false);
}

#[test]
fn units_and_dates_read_as_iperf3s() {
    assert_eq!(output::bytes_text(1_610_612_736), "1.50 GBytes");
    assert_eq!(output::bytes_text(916_480), "895 KBytes");
    assert_eq!(output::rate_text(12_900_000_000.0), "12.9 Gbits/sec");
    assert_eq!(output::rate_text(100_000_000.0), "100 Mbits/sec");
    assert_eq!(
        output::http_date(1_795_756_287),
        "Fri, 27 Nov 2026 05:11:27 GMT"
    );
    for (p, text) in [
        (0.0, "0"),
        (8.519, "8.5"),
        (0.2577, "0.26"),
        (12.4, "12"),
        (100.0, "100"),
    ] {
        assert_eq!(output::percent_for_test(p), text);
    }
    assert_eq!(output::http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
}
