//! The network tools end to end on the default topology: the issue's
//! "done when" commands, their JSON shapes, captures and errors.

mod common;

use common::{stackscope, stdout_json};

use serde_json::Value;

#[test]
fn ping_host_b_from_host_a_receives_three_of_three() {
    let report = stdout_json(&stackscope(&[
        "ping", "--from", "host-a", "-c", "3", "host-b", "--json",
    ]));
    assert_eq!(report["sent"], 3);
    assert_eq!(report["received"], 3);
    let rtts = report["rtt_us"].as_array().unwrap();
    assert_eq!(rtts.len(), 3);
    // Two links of 100 µs each way at least: 400 µs of round trip.
    for rtt in rtts {
        assert!(rtt.as_f64().unwrap() >= 400.0, "rtt {rtt}");
    }
    let destination = report["destination"].as_str().unwrap();
    assert!(destination.starts_with("2001:db8:b:"), "{destination}");
}

#[test]
fn ping_over_ipv4_and_with_fragmentation() {
    let report = stdout_json(&stackscope(&["ping", "-4", "-c", "2", "host-b", "--json"]));
    assert_eq!(report["destination"], "198.51.100.10");
    assert_eq!(report["received"], 2);
    for family in ["-4", "-6"] {
        let report = stdout_json(&stackscope(&[
            "ping", family, "-s", "4000", "-c", "2", "host-b", "--json",
        ]));
        assert_eq!(report["received"], 2, "{family}: {report}");
    }
}

#[test]
fn traceroute_reaches_host_b_in_two_hops() {
    let report = stdout_json(&stackscope(&[
        "traceroute",
        "--from",
        "host-a",
        "host-b",
        "--json",
    ]));
    assert_eq!(report["reached"], true);
    let hops = report["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 2, "{report}");
    assert_eq!(hops[0]["ttl"], 1);
    assert_eq!(hops[0]["addr"], "2001:db8:a::1", "the router first");
    assert_eq!(hops[1]["ttl"], 2);
    assert_eq!(hops[1]["addr"], report["destination"], "then host-b");
    let report = stdout_json(&stackscope(&["traceroute", "-4", "host-b", "--json"]));
    assert_eq!(report["hops"][0]["addr"], "192.0.2.1");
    assert_eq!(report["hops"][1]["addr"], "198.51.100.10");
}

#[test]
fn ipv6_dump_shows_a_slaac_address_in_the_routers_prefix() {
    let state = stdout_json(&stackscope(&["ipv6", "host-a", "--json"]));
    assert_eq!(state["name"], "host-a");
    let ntes = state["interfaces"][0]["ntes"].as_array().unwrap();
    let slaac: Vec<&Value> = ntes.iter().filter(|n| n["origin"] == "slaac").collect();
    assert_eq!(slaac.len(), 1, "{ntes:?}");
    assert!(slaac[0]["address"]
        .as_str()
        .unwrap()
        .starts_with("2001:db8:a:"));
    assert_eq!(slaac[0]["state"], "PREFERRED");
    let routes = state["ipv6_routes"].as_array().unwrap();
    assert!(
        routes
            .iter()
            .any(|r| r["prefix"] == "::/0" && r["origin"] == "ra"),
        "{routes:?}"
    );
    let text = stackscope(&["ipv6", "router"]);
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("router (router)") && text.contains("advertising"),
        "{text}"
    );
}

#[test]
fn pcap_writes_one_capture_per_interface() {
    let dir = std::env::temp_dir().join(format!("stackscope-pcap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let output = stackscope(&["ping", "-c", "1", "host-b", "--pcap", dir.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "host-a-eth0.pcapng",
            "host-b-eth0.pcapng",
            "router-eth0.pcapng",
            "router-eth1.pcapng"
        ]
    );
    for name in &names {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        // A Section Header Block, and more than the headers alone.
        assert_eq!(&bytes[..4], &[0x0a, 0x0d, 0x0d, 0x0a]);
        assert!(bytes.len() > 200, "{name} holds no packets");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_hosts_and_family_mismatches_are_clear_errors() {
    let output = stackscope(&["ping", "host-z"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("host-z"));
    let output = stackscope(&["ping", "--from", "nobody", "host-b"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("nobody"));
    let output = stackscope(&["ping", "-6", "198.51.100.10"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("IPv4"));
}

#[test]
fn unreachable_destination_is_not_reached() {
    // 2001:db8:c::1 is routed to the router, which has no route for it.
    let report = stdout_json(&stackscope(&[
        "traceroute",
        "-m",
        "3",
        "2001:db8:c::1",
        "--json",
    ]));
    assert_eq!(report["reached"], false);
    // The router says why, and traceroute marks it (`!N`: no route).
    let last = report["hops"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["addr"], "2001:db8:a::1", "{report}");
    assert_eq!(last["unreachable"], "!N", "{report}");
    let text = stackscope(&["traceroute", "-m", "3", "2001:db8:c::1"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(" 2  2001:db8:a::1 !N"));
    // Nothing came back: ping exits 1, as iputils, its JSON still on
    // stdout, and shows the router's errors.
    let output = stackscope(&["ping", "-c", "2", "2001:db8:c::1", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["received"], 0);
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{report}");
    assert_eq!(errors[0]["icmp_seq"], 1);
    assert_eq!(errors[0]["from"], "2001:db8:a::1");
    assert_eq!(errors[0]["message"], "Destination unreachable: No route");
    let output = stackscope(&["ping", "-c", "2", "2001:db8:c::1"]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("From 2001:db8:a::1 icmp_seq=2 Destination unreachable: No route"),
        "{text}"
    );
    assert!(text.contains("2 packets transmitted, 0 received, +2 errors, 100% packet loss"));
    assert!(!text.contains("rtt min"), "{text}");
}

#[test]
fn a_host_answers_its_own_addresses() {
    // As Linux does through loopback: an ARP request or a neighbour
    // solicitation for ourselves would go unanswered.
    for family in ["-4", "-6"] {
        let report = stdout_json(&stackscope(&[
            "ping", family, "--from", "host-a", "-c", "2", "host-a", "--json",
        ]));
        assert_eq!(report["received"], 2, "{family}: {report}");
    }
}

#[test]
fn ping_prints_replies_and_statistics_as_iputils() {
    let output = stackscope(&["ping", "--from", "host-a", "-4", "-c", "3", "host-b"]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    // Two links of 100 µs each way; the router took one from the TTL.
    for seq in 1..=3 {
        let line = format!("64 bytes from 198.51.100.10: icmp_seq={seq} ttl=63 time=");
        assert!(text.contains(&line), "{text}");
    }
    assert!(text.contains("56(84) bytes of data"), "{text}");
    let stats = text
        .lines()
        .find_map(|l| l.strip_prefix("rtt min/avg/max/mdev = "))
        .expect("an rtt line");
    let values: Vec<f64> = stats
        .trim_end_matches(" ms")
        .split('/')
        .map(|v| v.parse().unwrap())
        .collect();
    let [min, avg, max, mdev] = values[..] else {
        panic!("{stats}")
    };
    assert!(
        min >= 0.4 && min <= avg && avg <= max && mdev >= 0.0,
        "{stats}"
    );
    // Errors other than silence exit 2.
    let output = stackscope(&["ping", "host-z"]);
    assert_eq!(output.status.code(), Some(2));
}

/// The default network with a 1280-byte MTU between the router and host-b.
fn narrow_topology() -> std::path::PathBuf {
    let text = include_str!("../../../topologies/default.toml")
        .replace("name = \"eth1\"\n", "name = \"eth1\"\nmtu = 1280\n")
        .replace(
            "name = \"host-b\"\n[[host.interface]]\nname = \"eth0\"\n",
            "name = \"host-b\"\n[[host.interface]]\nname = \"eth0\"\nmtu = 1280\n",
        );
    let path = std::env::temp_dir().join(format!("stackscope-narrow-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_narrow_link_fragments_ipv4_at_the_router_and_teaches_ipv6_the_path_mtu() {
    let topology = narrow_topology();
    let topology = topology.to_str().unwrap();
    // IPv4: the router re-fragments the 1428-byte packet for the 1280 link.
    let report = stdout_json(&stackscope(&[
        "ping",
        "-4",
        "-s",
        "1400",
        "-c",
        "2",
        "host-b",
        "--topology",
        topology,
        "--json",
    ]));
    assert_eq!(report["received"], 2, "{report}");
    // IPv6: routers never fragment; the first Echo Request earns a Packet
    // Too Big, after which host-a fragments to the path MTU.
    let report = stdout_json(&stackscope(&[
        "ping",
        "-6",
        "-s",
        "1400",
        "-c",
        "3",
        "host-b",
        "--topology",
        topology,
        "--json",
    ]));
    assert_eq!(report["sent"], 3);
    assert_eq!(report["received"], 2, "{report}");
    let _ = std::fs::remove_file(topology);
}

#[test]
fn the_simulator_replays_a_run_packet_for_packet() {
    let base = std::env::temp_dir().join(format!("stackscope-replay-{}", std::process::id()));
    let runs: Vec<std::path::PathBuf> = (0..2).map(|i| base.join(i.to_string())).collect();
    for dir in &runs {
        let output = stackscope(&[
            "ping",
            "-c",
            "2",
            "-s",
            "3000",
            "host-b",
            "--pcap",
            dir.to_str().unwrap(),
        ]);
        assert!(output.status.success());
    }
    for name in [
        "host-a-eth0.pcapng",
        "router-eth0.pcapng",
        "router-eth1.pcapng",
        "host-b-eth0.pcapng",
    ] {
        let first = std::fs::read(runs[0].join(name)).unwrap();
        let second = std::fs::read(runs[1].join(name)).unwrap();
        assert!(first.len() > 1000, "{name} is nearly empty");
        assert!(
            first == second,
            "{name} differs between two runs of the same topology"
        );
    }
    std::fs::remove_dir_all(&base).unwrap();
}
