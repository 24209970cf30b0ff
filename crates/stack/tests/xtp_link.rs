//! XTP directly over Ethernet (EtherType 0x817D, no IP header), as the
//! study's KRM ran on the network driver: two hosts on one wire that
//! loses, duplicates and reorders frames; byte-exact transfers both ways
//! with selective and go-back-n retransmission; and a capture of it that
//! tshark decodes as XTP (with the one line of Lua Wireshark needs to
//! hand the EtherType to its XTP dissector).

mod xtp_support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use stack::iface::route::InterfaceId;
use stack::runner::Simulator;
use stack::socket::xtp::{ErrorControl, XtpConfig, XtpHandle};
use stack::topology::Topology;
use xtp_support::*;

fn lossy_wire(seed: u64) -> Topology {
    let text = include_str!("../../../topologies/unlimited.toml").replace(
        "b = \"host-b:eth0\"",
        &format!(
            "b = \"host-b:eth0\"\nrate = \"100Mbit\"\ndelay = \"200us\"\nloss = 0.01\n\
             duplicate = 0.005\nreorder = 0.01\nreorder_delay = \"300us\"\ncorrupt = 0.002\n\
             seed = {seed}"
        ),
    );
    Topology::from_toml_str(&text).unwrap()
}

/// host-a associates with host-b's listener over the wire itself.
fn associate_on_link(sim: &mut Simulator, config: XtpConfig) -> (XtpHandle, XtpHandle) {
    sim.run_for(Duration::from_millis(10));
    let listener = host_mut(sim, "host-b")
        .xtp_listen("[::]:7036".parse().unwrap(), config)
        .unwrap();
    let mac = sim
        .host("host-b")
        .unwrap()
        .interface_mac(InterfaceId(0))
        .unwrap();
    let remote: SocketAddr = "[2001:db8:1::b]:7036".parse().unwrap();
    let a = host_mut(sim, "host-a")
        .xtp_connect_link(InterfaceId(0), mac, remote, config)
        .unwrap();
    let mut b = None;
    assert!(sim.run_until_with(Duration::from_secs(5), |sim| {
        b = b.or_else(|| host_mut(sim, "host-b").xtp_accept(listener).ok());
        b.is_some()
            && sim
                .host("host-a")
                .unwrap()
                .xtp_readiness(a)
                .unwrap()
                .established
    }));
    (a, b.unwrap())
}

fn transfer(seed: u64, config: XtpConfig, pcap: Option<&Path>) {
    let mut sim = Simulator::new(&lossy_wire(seed), pcap).unwrap();
    let (a, b) = associate_on_link(&mut sim, config);
    let up = pattern(4 << 20, 21);
    let down = pattern(1 << 20, 22);
    let (at_b, at_a) = exchange(&mut sim, (a, b), &up, &down, Duration::from_secs(60));
    assert_same(&at_b, &up, "host-a to host-b over Ethernet");
    assert_same(&at_a, &down, "host-b to host-a over Ethernet");
    let assoc = sim.host("host-a").unwrap().xtp_association(a).unwrap();
    // The link's MTU less the XTP header: no IP header.
    assert_eq!(assoc.maxdata(), 1500 - 32);
    let counters = assoc.counters();
    eprintln!("{:?}: {counters:?}", config.error_control);
    assert!(counters.retransmitted_packets > 0, "{counters:?}");
    for name in ["host-a", "host-b"] {
        let h = sim.host(name).unwrap();
        // Nothing of it went over IP.
        assert_eq!(drops(h, "xtp_no_context"), 0, "{name}");
        assert!(h.xtp_packet_counts().0 > 100, "{name}");
        assert_eq!(h.counters().ipv6_delivered, 0, "{name}: {:?}", h.counters());
    }
}

#[test]
fn selective_transfer_over_ethernet() {
    transfer(31, XtpConfig::default(), None);
}

#[test]
fn go_back_n_transfer_over_ethernet() {
    let config = XtpConfig {
        error_control: ErrorControl::GoBackN,
        ..XtpConfig::default()
    };
    transfer(32, config, None);
}

#[test]
fn tshark_decodes_xtp_over_ethernet_with_good_checksums() {
    let Some(dir) = tshark_capture_dir("xtp-link") else {
        return;
    };
    {
        let mut sim = Simulator::new(
            &Topology::from_toml_str(include_str!("../../../topologies/unlimited.toml")).unwrap(),
            Some(&dir),
        )
        .unwrap();
        let (a, b) = associate_on_link(&mut sim, XtpConfig::default());
        let up = pattern(256 * 1024, 23);
        let (at_b, _) = exchange(&mut sim, (a, b), &up, &[], Duration::from_secs(10));
        assert_same(&at_b, &up, "over Ethernet");
    }
    let script = dir.join("xtp_eth.lua");
    std::fs::write(
        &script,
        "DissectorTable.get(\"ethertype\"):add(0x817d, \
         DissectorTable.get(\"ip.proto\"):get_dissector(36))\n",
    )
    .unwrap();
    let lua = format!("lua_script:{}", script.display());
    let mut xtp_frames = 0;
    for file in captures(&dir) {
        let run = |args: &[&str]| {
            let out = Command::new("tshark")
                .arg("-r")
                .arg(&file)
                .args(["-X", &lua])
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let fields = run(&[
            "-Y",
            "eth.type == 0x817d",
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "frame.protocols",
            "-e",
            "xtp.checksum.status",
        ]);
        for line in fields.lines() {
            assert_eq!(line, "eth:ethertype:xtp|1", "{}", file.display());
            xtp_frames += 1;
        }
        let suspects = run(&["-Y", "_ws.malformed || xtp.checksum.status == \"Bad\""]);
        assert!(suspects.trim().is_empty(), "{suspects}");
    }
    assert!(xtp_frames > 200, "{xtp_frames} XTP frames");
    let _ = std::fs::remove_dir_all(&dir);
}
