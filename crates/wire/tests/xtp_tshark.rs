//! What Wireshark's XTP dissector (tshark 4.0) makes of stackscope's XTP
//! packets beyond "decodes, good checksum" (which `tshark_decode` checks for
//! every sample): the fields land where it reads them, ECNTL spans, the
//! IPv6 address format it cannot decode, and XTP straight over Ethernet
//! (EtherType 0x817D), which it does not decode unless told to.
//!
//! Without tshark the tests say so; under CI (`CI` set) they then fail.
//! Set `XTP_PCAPNG_OUT=path` to keep the capture for a look in Wireshark.

mod samples;

use std::path::{Path, PathBuf};
use std::process::Command;

use samples::xtp::packet;
use wire::ethernet::{EtherType, EthernetFrame};
use wire::ipv4::Ipv4Packet;
use wire::ipv6::Ipv6Packet;
use wire::pcapng::{CapturedPacket, LinkType, PcapngWriter};
use wire::xtp::first::Traffic;
use wire::xtp::{
    Address, ControlRepr, Segment, TrafficRepr, XtpOptions, XtpPacket, XtpRepr, ETHERTYPE,
};
use wire::ChecksumMode;

fn tshark_available() -> bool {
    let present = Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !present {
        let message = "tshark is not installed: this test decodes XTP samples with it \
                       (apt-get install tshark; .ci/run installs it)";
        assert!(std::env::var_os("CI").is_none(), "{message}");
        eprintln!("SKIPPED: {message}");
    }
    present
}

/// Writes `frames` (Ethernet) to a fresh pcapng file and returns its path.
fn capture(name: &str, frames: &[Vec<u8>]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stackscope-xtp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.pcapng"));
    let file = std::fs::File::create(&path).expect("create pcapng file");
    let mut writer = PcapngWriter::new(std::io::BufWriter::new(file), "stackscope xtp tests")
        .expect("section header");
    let eth = writer
        .add_interface("sim0", LinkType::Ethernet, 0)
        .expect("interface");
    for (i, frame) in frames.iter().enumerate() {
        let packet = CapturedPacket {
            timestamp_ns: 1_700_000_000_000_000_000 + i as u64 * 1_000,
            data: frame,
            original_len: None,
            comment: None,
            direction: None,
        };
        writer.write_packet(eth, &packet).expect("packet");
    }
    writer.into_inner().expect("flush");
    if let Some(out) = std::env::var_os("XTP_PCAPNG_OUT") {
        let out = Path::new(&out).with_extension(format!("{name}.pcapng"));
        std::fs::copy(&path, out).expect("copy capture");
    }
    path
}

/// `tshark -r path -V` with extra arguments; the verbose text.
fn tshark(path: &Path, extra: &[&str]) -> String {
    let output = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(extra)
        .arg("-V")
        .output()
        .expect("run tshark");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tshark failed: {stderr}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn cntl() -> XtpRepr<'static> {
    XtpRepr {
        key: 0x0101,
        options: XtpOptions::SREQ,
        sort: 0,
        sync: 42,
        seq: 1000,
        segment: Segment::Cntl(ControlRepr {
            rseq: 1000,
            alloc: 66_536,
            echo: 42,
        }),
    }
}

#[test]
fn ecntl_span_edges_are_shown_byte_swapped() {
    if !tshark_available() {
        return;
    }
    let frames: Vec<_> = samples::all()
        .into_iter()
        .filter(|s| s.name == "xtp-v4-ecntl")
        .map(|s| s.frame)
        .collect();
    assert_eq!(frames.len(), 1);
    let text = tshark(&capture("ecntl", &frames), &[]);
    // The spans are sent big-endian like every XTP field (2000..3000 and
    // 4000..4096); packet-xtp.c adds span edges with ENC_LITTLE_ENDIAN, so
    // it shows each edge byte-swapped. The count and layout agree.
    assert!(text.contains("Number of spans: 2"), "{text}");
    for edge in [2000u64, 3000, 4000, 4096] {
        let shown = format!("edge: {}\n", edge.swap_bytes());
        assert!(text.contains(&shown), "no {shown:?} in\n{text}");
    }
    assert!(!text.contains("Malformed"), "{text}");
}

#[test]
fn ethertype_0x817d_needs_a_script_to_decode_as_xtp() {
    if !tshark_available() {
        return;
    }
    let over_ethernet = samples::ethernet(EtherType::from(ETHERTYPE), None, &packet(&cntl()));
    let path = capture("ethertype", &[over_ethernet]);

    // tshark 4.0 registers XTP on IP protocol 36 only: 0x817D is an unknown
    // EtherType and "Decode As" does not offer XTP for it.
    let plain = tshark(&path, &[]);
    assert!(plain.contains("Type: Unknown (0x817d)"), "{plain}");
    assert!(
        plain.contains("[Protocols in frame: eth:ethertype:data]"),
        "{plain}"
    );

    // A Lua line hands the ip.proto 36 dissector to the EtherType table.
    let script = path.with_extension("lua");
    std::fs::write(
        &script,
        "DissectorTable.get(\"ethertype\"):add(0x817d, \
         DissectorTable.get(\"ip.proto\"):get_dissector(36))\n",
    )
    .unwrap();
    let lua = format!("lua_script:{}", script.display());
    let decoded = tshark(&path, &["-X", &lua]);
    assert!(
        decoded.contains("[Protocols in frame: eth:ethertype:xtp]"),
        "{decoded}"
    );
    assert!(decoded.contains("[Checksum Status: Good]"), "{decoded}");
    assert!(
        decoded.contains("Common Control Segment, Recv-Seq: 1000"),
        "{decoded}"
    );
    assert!(!decoded.contains("Malformed"), "{decoded}");
}

/// Fields tshark is asked for, one column each.
const FIELDS: [&str; 17] = [
    "xtp.key",
    "xtp.cmd.ptype.pformat",
    "xtp.dlen",
    "xtp.seq",
    "xtp.sync",
    "xtp.cmd.options",
    "xtp.checksum.status",
    "xtp.cntl.rseq",
    "xtp.ecntl.rseq",
    "xtp.ecntl.nspan",
    "xtp.tcntl.xkey",
    "xtp.aseg.dstport",
    "xtp.aseg.srchost",
    "xtp.tspec.outburst",
    "xtp.diag.code",
    "xtp.diag.val",
    "xtp.data.btag",
];

/// The XTP packet inside an Ethernet / IPv4 or IPv6 sample frame.
fn xtp_bytes(frame: &[u8]) -> &[u8] {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    let ip = &frame[eth.header_len()..];
    let (header_len, payload_len) = match eth.ethertype() {
        EtherType::Ipv4 => {
            let packet = Ipv4Packet::new_checked(ip).unwrap();
            (packet.header_len(), packet.payload().len())
        }
        _ => {
            let packet = Ipv6Packet::new_checked(ip).unwrap();
            (wire::ipv6::HEADER_LEN, packet.payload().len())
        }
    };
    &ip[header_len..header_len + payload_len]
}

fn outburst(traffic: &TrafficRepr) -> String {
    match traffic.traffic {
        Traffic::Rates { outburst, .. } => outburst.to_string(),
        Traffic::None { .. } => String::new(),
    }
}

/// What tshark should report in each of [`FIELDS`] for this packet, by our
/// own parser: Good checksum (1) always.
fn expected_fields(repr: &XtpRepr<'_>, dlen: usize, options: u32) -> Vec<String> {
    let mut f = vec![String::new(); FIELDS.len()];
    f[0] = format!("{:#018x}", repr.key);
    f[1] = u8::from(repr.segment.packet_type()).to_string();
    f[2] = dlen.to_string();
    f[3] = repr.seq.to_string();
    f[4] = repr.sync.to_string();
    f[5] = format!("{options:#08x}");
    f[6] = "1".into();
    match repr.segment {
        Segment::Cntl(c) => f[7] = c.rseq.to_string(),
        Segment::Ecntl { control, spans } => {
            f[8] = control.rseq.to_string();
            f[9] = spans.len().to_string();
        }
        Segment::Tcntl { xkey, traffic, .. } => {
            f[10] = format!("{xkey:#018x}");
            f[13] = outburst(&traffic);
        }
        Segment::First {
            address, traffic, ..
        } => {
            // Wireshark decodes the IPv4 format only (and then looks for
            // the traffic specifier 16 bytes in, where it is only then).
            if let Address::Ipv4 {
                dst_port, src_host, ..
            } = address.address
            {
                f[11] = dst_port.to_string();
                f[12] = src_host.to_string();
                f[13] = outburst(&traffic);
            }
        }
        Segment::Jcntl {
            xkey,
            address,
            traffic,
            ..
        } => {
            f[10] = format!("{xkey:#018x}");
            if let Address::Ipv4 {
                dst_port, src_host, ..
            } = address.address
            {
                f[11] = dst_port.to_string();
                f[12] = src_host.to_string();
                f[13] = outburst(&traffic);
            }
        }
        Segment::Diag { code, value, .. } => {
            f[14] = u32::from(code).to_string();
            f[15] = u32::from(value).to_string();
        }
        Segment::Data { btag, .. } => {
            if let Some(tag) = btag {
                f[16] = format!("{tag:#018x}");
            }
        }
    }
    f
}

#[test]
fn tshark_reads_the_fields_our_parser_reads() {
    if !tshark_available() {
        return;
    }
    let samples: Vec<_> = samples::all()
        .into_iter()
        .filter(|s| s.name.starts_with("xtp-"))
        .collect();
    assert!(samples.len() >= 16, "every type over both families");
    let frames: Vec<_> = samples.iter().map(|s| s.frame.clone()).collect();
    let path = capture("fields", &frames);
    let mut command = Command::new("tshark");
    command
        .arg("-r")
        .arg(&path)
        .args(["-T", "fields", "-E", "separator=|"]);
    for field in FIELDS {
        command.args(["-e", field]);
    }
    let output = command.output().expect("run tshark");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rows: Vec<&str> = stdout.lines().collect();
    assert_eq!(rows.len(), samples.len());
    for (sample, row) in samples.iter().zip(rows) {
        let bytes = xtp_bytes(&sample.frame);
        let packet = XtpPacket::new_checked(bytes).unwrap();
        let repr = XtpRepr::parse(&packet, ChecksumMode::Full).unwrap();
        let expected = expected_fields(&repr, packet.dlen() as usize, packet.options().bits());
        let got: Vec<String> = row.split('|').map(str::to_lowercase).collect();
        assert_eq!(got, expected, "{}: tshark {row}", sample.name);
    }
}
