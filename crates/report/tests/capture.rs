//! `trace.pcapng`: per-interface captures of two runs merged into one file,
//! read back with the wire crate's reader and decoded by tshark.
//!
//! Without tshark the tshark test says so; under CI (`CI` set) it then
//! fails, since CI installs tshark.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

use report::capture::{self, CaptureError, CaptureInput, Mark, Message, RunMessages};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
use wire::ipv4::{Ipv4Options, Ipv4Packet, Ipv4Repr};
use wire::ipv6::{Ipv6Packet, Ipv6Repr};
use wire::ipv6_ext_header::Ipv6OptionsBuilder;
use wire::ipv6_fragment::{Ipv6FragmentHeader, Ipv6FragmentRepr};
use wire::ipv6_option::Ipv6Option;
use wire::pcapng::{self, Block, CapturedPacket, Direction, LinkType, PcapngWriter};
use wire::trace_option::TraceOption;
use wire::udp::{UdpPacket, UdpRepr};
use wire::{ChecksumMode, IpProtocol};

const A6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xa);
const B6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xb);
const A4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);
const B4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 11);

// ------------------------------------------------------------ frames

fn udp(src: IpAddr, dst: IpAddr, payload_len: usize) -> Vec<u8> {
    let repr = UdpRepr {
        src_port: 5001,
        dst_port: 5002,
    };
    let mut buf = vec![0; repr.buffer_len(payload_len)];
    repr.emit(
        &mut UdpPacket::new_unchecked(&mut buf[..]),
        &src,
        &dst,
        payload_len,
        |p| p.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8),
        ChecksumMode::Full,
    )
    .unwrap();
    buf
}

/// A destination options header holding just the trace option.
fn trace_header(flow: u32, next_header: IpProtocol) -> Vec<u8> {
    let options = [Ipv6Option::Trace(TraceOption { flow })];
    let builder = Ipv6OptionsBuilder {
        next_header,
        options: &options,
    };
    let mut buf = vec![0; builder.buffer_len().unwrap()];
    builder.emit(&mut buf).unwrap();
    buf
}

fn ipv6(next_header: IpProtocol, payload: &[u8]) -> Vec<u8> {
    let repr = Ipv6Repr {
        src: A6,
        dst: B6,
        next_header,
        payload_len: payload.len(),
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]))
        .unwrap();
    buf[repr.header_len()..].copy_from_slice(payload);
    buf
}

fn ethernet(ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let repr = EthernetRepr {
        dst: EthernetAddress([0x02, 0, 0, 0, 0, 0xb]),
        src: EthernetAddress([0x02, 0, 0, 0, 0, 0xa]),
        vlan: None,
        ethertype,
    };
    let mut buf = vec![0; repr.buffer_len(payload.len())];
    repr.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]))
        .unwrap();
    buf[repr.header_len()..].copy_from_slice(payload);
    // Minimum frame, as a real link pads it.
    buf.resize(buf.len().max(60), 0);
    buf
}

/// IPv6 UDP, with the trace option of `flow` if given.
fn udp6(flow: Option<u32>, payload_len: usize) -> Vec<u8> {
    let datagram = udp(A6.into(), B6.into(), payload_len);
    let packet = match flow {
        Some(flow) => {
            let mut payload = trace_header(flow, IpProtocol::Udp);
            payload.extend_from_slice(&datagram);
            ipv6(IpProtocol::Ipv6Opts, &payload)
        }
        None => ipv6(IpProtocol::Udp, &datagram),
    };
    ethernet(EtherType::Ipv6, &packet)
}

/// IPv4 UDP with the trace option of `flow`.
fn udp4(flow: u32, payload_len: usize) -> Vec<u8> {
    let datagram = udp(A4.into(), B4.into(), payload_len);
    let repr = Ipv4Repr {
        src: A4,
        dst: B4,
        protocol: IpProtocol::Udp,
        dscp_ecn: 0,
        ident: 7,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        ttl: 64,
        payload_len: datagram.len(),
        options: Ipv4Options::with_trace(TraceOption { flow }),
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(
        &mut Ipv4Packet::new_unchecked(&mut buf[..]),
        ChecksumMode::Full,
    )
    .unwrap();
    buf[repr.header_len()..].copy_from_slice(&datagram);
    ethernet(EtherType::Ipv4, &buf)
}

/// A traced IPv6 UDP datagram in two fragments: the first holds the
/// destination options (after the fragment header) and the UDP header.
fn fragments6(flow: u32, ident: u32) -> [Vec<u8>; 2] {
    let mut fragmentable = trace_header(flow, IpProtocol::Udp);
    fragmentable.extend_from_slice(&udp(A6.into(), B6.into(), 200));
    let split = 96;
    let fragment = |offset: usize, more_frags: bool, chunk: &[u8]| {
        let mut payload = vec![0; 8];
        Ipv6FragmentRepr {
            next_header: IpProtocol::Ipv6Opts,
            frag_offset: offset,
            more_frags,
            ident,
        }
        .emit(&mut Ipv6FragmentHeader::new_unchecked(&mut payload[..]))
        .unwrap();
        payload.extend_from_slice(chunk);
        ethernet(EtherType::Ipv6, &ipv6(IpProtocol::Ipv6Frag, &payload))
    };
    [
        fragment(0, true, &fragmentable[..split]),
        fragment(split, false, &fragmentable[split..]),
    ]
}

// ------------------------------------------------------------ files

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("report-capture-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A capture file: interfaces by name, then (interface, ns, frame,
/// direction) packets in the order given.
fn write_capture(path: &Path, interfaces: &[&str], packets: &[(usize, u64, &[u8], Direction)]) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut writer = PcapngWriter::new(file, "stackscope").unwrap();
    let ids: Vec<_> = interfaces
        .iter()
        .map(|name| writer.add_interface(name, LinkType::Ethernet, 0).unwrap())
        .collect();
    for &(interface, timestamp_ns, data, direction) in packets {
        writer
            .write_packet(
                ids[interface],
                &CapturedPacket {
                    timestamp_ns,
                    data,
                    original_len: None,
                    comment: None,
                    direction: Some(direction),
                },
            )
            .unwrap();
    }
    writer.into_inner().unwrap();
}

/// A packet of the merged file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Merged {
    interface: String,
    timestamp_ns: u64,
    data: Vec<u8>,
    direction: Option<Direction>,
    comment: Option<String>,
}

fn read_merged(path: &Path) -> Vec<Merged> {
    let data = std::fs::read(path).unwrap();
    let mut names = Vec::new();
    let mut packets = Vec::new();
    for block in pcapng::blocks(&data) {
        match block.expect("the merged file reads") {
            Block::SectionHeader(_) => assert!(names.is_empty(), "one section"),
            Block::InterfaceDescription(i) => names.push(i.name.unwrap().to_owned()),
            Block::EnhancedPacket(p) => packets.push(Merged {
                interface: names[p.interface.0 as usize].clone(),
                timestamp_ns: p.timestamp_ns,
                data: p.data.to_vec(),
                direction: p.direction,
                comment: p.comment.map(str::to_owned),
            }),
            Block::Other { .. } => panic!("the merge writes no other block"),
        }
    }
    packets
}

fn message(sent_at_ns: u64, label: &str) -> Message {
    Message {
        sent_at_ns,
        label: label.to_owned(),
    }
}

/// Two runs: run 1 captured on host-a (one file) and host-b (one file with
/// two interfaces, one packet out of order), run 2 on host-a, 10 µs later.
struct Scenario {
    dir: PathBuf,
    out: PathBuf,
    run1: RunMessages,
    run2: RunMessages,
    a1: PathBuf,
    b1: PathBuf,
    a2: PathBuf,
    fragments: [Vec<u8>; 2],
}

fn scenario(name: &str) -> Scenario {
    let dir = scratch(name);
    let (a1, b1, a2) = (
        dir.join("a1.pcapng"),
        dir.join("b1.pcapng"),
        dir.join("a2.pcapng"),
    );
    let fragments = fragments6(7, 0x1234);
    let (untraced, traced, traced4) = (udp6(None, 20), udp6(Some(7), 20), udp4(7, 20));
    let ack = udp6(Some(8), 4);
    let other_flow = udp6(Some(99), 20);
    use Direction::{Inbound, Outbound};
    write_capture(
        &a1,
        &["host-a:eth0"],
        &[
            (0, 100, &untraced, Outbound),
            (0, 500, &traced, Outbound),
            (0, 1_000, &traced, Outbound),
            (0, 2_000, &traced4, Outbound),
            (0, 3_000, &fragments[0], Outbound),
            (0, 3_100, &fragments[1], Outbound),
            (0, 3_200, &other_flow, Outbound),
        ],
    );
    write_capture(
        &b1,
        &["host-b:eth0", "host-b:eth1"],
        &[
            (0, 1_010, &traced, Inbound),
            (0, 1_060, &untraced, Inbound),
            // Out of order in its file: the merge puts it back.
            (1, 1_050, &ack, Outbound),
            (0, 3_010, &fragments[0], Inbound),
            (0, 3_110, &fragments[1], Inbound),
        ],
    );
    write_capture(&a2, &["host-a:eth0"], &[(0, 100, &traced, Outbound)]);
    let run1 = RunMessages {
        flows: vec![7, 8],
        // Given unsorted: the merge sorts them.
        messages: vec![
            message(1_500, "run1 message 1: 20 B, rep 1"),
            message(900, "run1 message 0: 20 B, rep 0"),
            message(2_500, "run1 message 2: 200 B, rep 0"),
        ],
    };
    let run2 = RunMessages {
        flows: vec![7],
        messages: vec![message(50, "run2 message 0: 20 B, rep 0")],
    };
    let out = dir.join("trace.pcapng");
    Scenario {
        dir,
        out,
        run1,
        run2,
        a1,
        b1,
        a2,
        fragments,
    }
}

fn inputs(s: &Scenario) -> Vec<CaptureInput<'_>> {
    vec![
        CaptureInput {
            path: s.a1.clone(),
            prefix: "run1 host-a eth0".into(),
            offset_ns: 1_000_000,
            messages: Some(&s.run1),
        },
        CaptureInput {
            path: s.b1.clone(),
            prefix: "run1 host-b eth0".into(),
            offset_ns: 1_000_000,
            messages: Some(&s.run1),
        },
        CaptureInput {
            path: s.a2.clone(),
            prefix: "run2 host-a eth0".into(),
            offset_ns: 1_010_000,
            messages: Some(&s.run2),
        },
    ]
}

// ------------------------------------------------------------ tests

#[test]
fn marks_traced_frames() {
    assert_eq!(
        capture::mark(1, &udp6(Some(42), 8)),
        Mark::Traced {
            flow: 42,
            fragment: None
        }
    );
    assert_eq!(capture::mark(1, &udp6(None, 8)), Mark::Untraced);
    assert_eq!(
        capture::mark(1, &udp4(43, 8)),
        Mark::Traced {
            flow: 43,
            fragment: None
        }
    );
    let [first, second] = fragments6(44, 9);
    let key = capture::FragmentKey {
        src: A6,
        dst: B6,
        ident: 9,
    };
    assert_eq!(
        capture::mark(1, &first),
        Mark::Traced {
            flow: 44,
            fragment: Some(key)
        }
    );
    assert_eq!(capture::mark(1, &second), Mark::LaterFragment(key));
    // Raw IP: the same packets without their Ethernet header.
    assert_eq!(
        capture::mark(101, &udp6(Some(45), 8)[14..]),
        Mark::Traced {
            flow: 45,
            fragment: None
        }
    );
    // Anything short or strange is untraced, never a panic.
    let frame = udp6(Some(46), 8);
    for cut in 0..frame.len() {
        let _ = capture::mark(1, &frame[..cut]);
        let _ = capture::mark(101, &frame[14..cut.max(14)]);
    }
    assert_eq!(capture::mark(147, &frame), Mark::Untraced);
}

#[test]
fn merges_in_order_with_message_comments() {
    let s = scenario("merge");
    let stats = capture::merge(&inputs(&s), &s.out).unwrap();
    let packets = read_merged(&s.out);

    let label = |text: &str, flow: u32| Some(format!("{text} (flow {flow})"));
    let m0 = "run1 message 0: 20 B, rep 0";
    let m1 = "run1 message 1: 20 B, rep 1";
    let m2 = "run1 message 2: 200 B, rep 0";
    let a = "run1 host-a eth0";
    let b0 = "run1 host-b eth0";
    let b1 = "run1 host-b eth0 host-b:eth1";
    let a2 = "run2 host-a eth0";
    let expected: Vec<(&str, u64, Option<String>)> = vec![
        (a, 100, None),
        (
            a,
            500,
            Some("traced flow 7, before the first message".into()),
        ),
        (a, 1_000, label(m0, 7)),
        (b0, 1_010, label(m0, 7)),
        (b1, 1_050, label(m0, 8)),
        (b0, 1_060, None),
        (a, 2_000, label(m1, 7)),
        (a, 3_000, label(m2, 7)),
        (b0, 3_010, label(m2, 7)),
        (a, 3_100, label(m2, 7)),
        (b0, 3_110, label(m2, 7)),
        (a, 3_200, None),
        (a2, 10_100, label("run2 message 0: 20 B, rep 0", 7)),
    ];
    let got: Vec<(&str, u64, Option<String>)> = packets
        .iter()
        .map(|p| {
            (
                p.interface.as_str(),
                p.timestamp_ns - 1_000_000,
                p.comment.clone(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    assert!(packets
        .windows(2)
        .all(|w| w[0].timestamp_ns <= w[1].timestamp_ns));
    // Frames and directions come through untouched.
    assert_eq!(packets[9].data, s.fragments[1]);
    assert_eq!(packets[9].direction, Some(Direction::Outbound));
    assert_eq!(packets[10].direction, Some(Direction::Inbound));

    assert_eq!(stats.packets, 13);
    assert_eq!(stats.labelled, 9);
    assert_eq!(stats.traced, 10);
    assert_eq!(stats.late, 0);
    let per_input: Vec<_> = stats
        .inputs
        .iter()
        .map(|i| {
            (
                i.interfaces,
                i.packets,
                i.traced,
                i.labelled,
                i.fragments_labelled,
                i.out_of_order,
            )
        })
        .collect();
    assert_eq!(
        per_input,
        [(1, 7, 5, 4, 1, 0), (2, 5, 4, 4, 1, 1), (1, 1, 1, 1, 0, 0)]
    );
    assert_eq!(stats.inputs[1].path, s.b1);
    std::fs::remove_dir_all(&s.dir).unwrap();
}

#[test]
fn without_messages_nothing_is_labelled() {
    let s = scenario("unlabelled");
    let mut inputs = inputs(&s);
    for input in &mut inputs {
        input.messages = None;
    }
    let stats = capture::merge(&inputs, &s.out).unwrap();
    assert_eq!((stats.packets, stats.labelled, stats.traced), (13, 0, 0));
    assert!(read_merged(&s.out).iter().all(|p| p.comment.is_none()));
    std::fs::remove_dir_all(&s.dir).unwrap();
}

#[test]
fn disorder_beyond_the_window_is_written_late_and_counted() {
    let dir = scratch("late");
    let path = dir.join("late.pcapng");
    let frame = udp6(None, 8);
    let mut packets: Vec<(usize, u64, &[u8], Direction)> = (0..1_000u64)
        .map(|i| (0, 1_000 + i, &frame[..], Direction::Outbound))
        .collect();
    packets.push((0, 10, &frame, Direction::Outbound));
    write_capture(&path, &["x"], &packets);
    let out = dir.join("merged.pcapng");
    let input = CaptureInput {
        path: path.clone(),
        prefix: String::new(),
        offset_ns: 0,
        messages: None,
    };
    let stats = capture::merge(&[input], &out).unwrap();
    assert_eq!(stats.packets, 1_001);
    assert_eq!(stats.late, 1);
    assert_eq!(stats.inputs[0].out_of_order, 1);
    let merged = read_merged(&out);
    assert_eq!(merged.len(), 1_001);
    // Without a prefix an interface keeps its own name.
    assert_eq!(merged[0].interface, "x");
    // The late packet comes out as soon as it is read, the rest in order.
    let late: Vec<_> = merged.iter().filter(|p| p.timestamp_ns == 10).collect();
    assert_eq!(late.len(), 1);
    let rest: Vec<u64> = merged
        .iter()
        .map(|p| p.timestamp_ns)
        .filter(|&t| t != 10)
        .collect();
    assert!(rest.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(rest.len(), 1_000);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_truncated_or_missing_input_is_a_read_error() {
    let s = scenario("truncated");
    let data = std::fs::read(&s.b1).unwrap();
    std::fs::write(&s.b1, &data[..data.len() - 3]).unwrap();
    match capture::merge(&inputs(&s), &s.out) {
        Err(CaptureError::Read { path, source }) => {
            assert_eq!(path, s.b1);
            assert!(
                matches!(source, pcapng::ReadError::Format(wire::Error::Truncated)),
                "{source}"
            );
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(&s.b1).unwrap();
    let error = capture::merge(&inputs(&s), &s.out).unwrap_err();
    assert!(matches!(error, CaptureError::Read { .. }), "{error}");
    assert!(error.to_string().contains("b1.pcapng"), "{error}");
    std::fs::remove_dir_all(&s.dir).unwrap();
}

fn tshark_available() -> bool {
    match Command::new("tshark").arg("--version").output() {
        Ok(out) => out.status.success(),
        Err(_) => false,
    }
}

#[test]
fn tshark_decodes_the_merged_file_with_its_comments() {
    if !tshark_available() {
        let message = "tshark is not installed: this test decodes the merged capture with it \
                       (apt-get install tshark; .ci/run installs it)";
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("SKIPPED: {message}");
        return;
    }
    let s = scenario("tshark");
    let stats = capture::merge(&inputs(&s), &s.out).unwrap();
    let ours = read_merged(&s.out);

    let output = Command::new("tshark")
        .arg("-r")
        .arg(&s.out)
        .args(["-o", "udp.check_checksum:TRUE"])
        .args(["-o", "ip.check_checksum:TRUE"])
        .args(["-T", "fields", "-E", "separator=|", "-E", "occurrence=f"])
        .args(["-e", "frame.interface_name", "-e", "frame.comment"])
        .args(["-e", "_ws.malformed", "-e", "_ws.expert.severity"])
        .output()
        .expect("run tshark");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tshark failed: {stderr}");
    let rows: Vec<Vec<&str>> = stdout.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(rows.len() as u64, stats.packets, "{stdout}{stderr}");
    for (row, packet) in rows.iter().zip(&ours) {
        assert_eq!(row[0], packet.interface, "{stdout}");
        assert_eq!(row[1], packet.comment.as_deref().unwrap_or(""), "{stdout}");
        assert_eq!(row[2], "", "malformed packet: {stdout}");
        // Expert severity 8388608 is "error" (a bad checksum among them).
        assert_ne!(row[3], "8388608", "expert error: {stdout}");
    }

    // And the same by filter: nothing malformed, nothing in error.
    let output = Command::new("tshark")
        .arg("-r")
        .arg(&s.out)
        .args(["-o", "udp.check_checksum:TRUE"])
        .args(["-Y", "_ws.malformed || _ws.expert.severity >= error"])
        .output()
        .expect("run tshark");
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "");
    std::fs::remove_dir_all(&s.dir).unwrap();
}
