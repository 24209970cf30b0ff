//! A capture of XTP transfers (IPv6 and IPv4, host-a — router — host-b,
//! every interface written as pcapng by the simulator) decoded by tshark:
//! every XTP packet shows as XTP with `Checksum Status: Good`, none is
//! malformed (the IPv4 association's checksums, with NOCHECK, cover the
//! header alone), and the setup (FIRST, TCNTL), data and control packets
//! are all there.

mod xtp_support;

use bytes::Bytes;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use stack::socket::xtp::XtpConfig;
use stack::topology::Topology;
use xtp_support::*;

const TAG: u64 = 0x5854_5034_2e30_7467;

fn tshark(file: &Path, args: &[&str]) -> String {
    let output = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(args)
        .output()
        .expect("run tshark");
    assert!(
        output.status.success(),
        "tshark failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn tshark_decodes_a_transfer_as_xtp_with_good_checksums() {
    let Some(dir) = tshark_capture_dir("xtp-tshark") else {
        return;
    };
    {
        let mut sim = network_of(&Topology::default_network(), Some(&dir));
        for v6 in [true, false] {
            // The IPv4 association runs with NOCHECK: its checksums cover
            // the header alone, which tshark must find Good too.
            let config = XtpConfig {
                nocheck: !v6,
                ..XtpConfig::default()
            };
            let (a, b) = associate(&mut sim, v6, config);
            let up = pattern(512 * 1024, 7);
            let down = pattern(64 * 1024, 8);
            // The first kilobyte goes tagged (BTAG), the rest plain.
            let h = host_mut(&mut sim, "host-a");
            assert_eq!(h.xtp_send_tagged(a, TAG, &up[..1000]), Ok(1000));
            let (at_b, at_a) = exchange(
                &mut sim,
                (a, b),
                &up[1000..],
                &down,
                Duration::from_secs(30),
            );
            // host-b read the tagged kilobyte too: `at_b` is all of `up`.
            let tags = host_mut(&mut sim, "host-b").xtp_recv_tags(b).unwrap();
            assert_eq!(tags, vec![(0, TAG)]);
            assert_same(&at_b, &up, "host-a to host-b");
            assert_same(&at_a, &down, "host-b to host-a");
            host_mut(&mut sim, "host-a").xtp_close(a).unwrap();
            host_mut(&mut sim, "host-b").xtp_close(b).unwrap();
            sim.run_for(Duration::from_secs(3));
        }
        // The character driver's packets too: DREQ status requests and a
        // write's last packet marked EOM.
        let config = XtpConfig::default();
        let listener = host_mut(&mut sim, "host-b")
            .xtp_listen(SocketAddr::new("::".parse().unwrap(), PORT + 1), config)
            .unwrap();
        let remote = SocketAddr::new(address_of(&sim, "host-b", true), PORT + 1);
        let a = host_mut(&mut sim, "host-a")
            .xtp_connect(remote, config)
            .unwrap();
        let mut accepted = None;
        sim.run_until_with(Duration::from_secs(5), |sim| {
            accepted = host_mut(sim, "host-b").xtp_accept(listener).ok();
            accepted.is_some()
        });
        let b = accepted.expect("the driver's association was not set up");
        let data = pattern(3 * 4096 + 100, 9);
        let mut got = Vec::new();
        for piece in data.chunks(4096) {
            host_mut(&mut sim, "host-a")
                .xtp_driver_write(a, Bytes::copy_from_slice(piece))
                .unwrap();
            host_mut(&mut sim, "host-b")
                .xtp_driver_read(b, Vec::new(), 4096)
                .unwrap();
            let mut written = None;
            sim.run_until_with(Duration::from_secs(5), |sim| {
                if let Ok(buf) = host_mut(sim, "host-b").xtp_driver_read_done(b) {
                    got.extend_from_slice(&buf);
                }
                written = host_mut(sim, "host-a").xtp_driver_write_done(a).ok();
                written.is_some()
            });
            assert_eq!(written, Some(piece.len()), "a driver write did not end");
        }
        assert_same(&got, &data, "driver writes");
        // Dropping the simulator flushes the captures.
    }
    let files = captures(&dir);
    assert!(!files.is_empty(), "no capture written");
    let mut types: BTreeMap<String, usize> = BTreeMap::new();
    let mut families: BTreeMap<String, usize> = BTreeMap::new();
    let mut tagged = Vec::new();
    let (mut delivery_requests, mut ends_of_messages) = (0, 0);
    for file in &files {
        let fields = tshark(
            file,
            &[
                "-Y",
                "xtp",
                "-T",
                "fields",
                "-E",
                "separator=|",
                "-e",
                "frame.protocols",
                "-e",
                "xtp.checksum.status",
                "-e",
                "xtp.cmd.ptype.pformat",
                "-e",
                "xtp.data.btag",
                "-e",
                "xtp.cmd.options.nocheck",
                "-e",
                "xtp.cmd.options.dreq",
                "-e",
                "xtp.cmd.options.eom",
            ],
        );
        for line in fields.lines() {
            let parts: Vec<&str> = line.split('|').collect();
            assert_eq!(parts.len(), 7, "{}: {line}", file.display());
            let set = |field: &str| matches!(field, "1" | "True");
            delivery_requests += usize::from(set(parts[5]));
            ends_of_messages += usize::from(set(parts[6]));
            let nocheck = matches!(parts[4], "1" | "True");
            assert_eq!(nocheck, parts[0].contains(":ip:"), "{line}");
            if !parts[3].is_empty() {
                tagged.push(parts[3].to_string());
            }
            assert!(
                parts[0].ends_with(":xtp"),
                "{}: decoded as {}",
                file.display(),
                parts[0]
            );
            assert_eq!(
                parts[1],
                "1",
                "{}: checksum not Good: {line}",
                file.display()
            );
            *types.entry(parts[2].to_string()).or_default() += 1;
            let family = if parts[0].contains(":ipv6:") {
                "ipv6"
            } else {
                "ip"
            };
            *families.entry(family.to_string()).or_default() += 1;
        }
        let suspects = tshark(
            file,
            &[
                "-o",
                "ip.check_checksum:TRUE",
                "-Y",
                "_ws.malformed || xtp.checksum.status == \"Bad\"",
            ],
        );
        assert!(
            suspects.trim().is_empty(),
            "{}: malformed or bad-checksum frames:\n{suspects}",
            file.display()
        );
    }
    eprintln!("XTP packets by type: {types:?}; by family: {families:?}");
    // Each of the four driver writes asked for delivery and ended in EOM.
    assert!(delivery_requests >= 4, "{delivery_requests} DREQ");
    assert!(ends_of_messages >= 4, "{ends_of_messages} EOM");
    // DATA 0, CNTL 1, FIRST 2, TCNTL 5: the setup, data and status.
    for ptype in ["0", "1", "2", "5"] {
        assert!(
            types.contains_key(ptype),
            "no packet of type {ptype}: {types:?}"
        );
    }
    assert!(
        families["ipv6"] > 100 && families["ip"] > 100,
        "{families:?}"
    );
    if std::env::var_os("STACKSCOPE_KEEP_CAPTURES").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("captures kept in {}", dir.display());
    }
}
