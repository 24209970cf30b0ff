//! The kernel-side capture: dumpcap on the TAP, stopped only once it has
//! written everything, and its decoding by tshark (fields of each frame,
//! and the frames tshark finds malformed or with bad checksums).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::frames::{ethernet, send_frames, ETHERTYPE_MARKER};
use super::lab::{reap, signal, wall_clock, TAP};
use crate::support::{self, Netns};

/// `dumpcap` on the kernel's side of the TAP, writing pcapng. `ip netns
/// exec` execs dumpcap in place, so the child's pid is dumpcap's.
pub struct Capture {
    pub child: Option<Child>,
    pub path: PathBuf,
    pub stderr: Option<JoinHandle<String>>,
}

impl Capture {
    /// Starts dumpcap and waits until it captures: its `File: ...` line
    /// comes after the device is open (`Capturing on` comes before).
    pub fn start(ns: &Netns, dev: &str, path: PathBuf) -> Capture {
        let file = path.to_str().expect("UTF-8 temp dir");
        let mut child = Command::new("ip")
            .args([
                "netns",
                "exec",
                ns.name(),
                "dumpcap",
                "-q",
                "-i",
                dev,
                "-w",
                file,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dumpcap");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                all.push_str(&line);
                all.push('\n');
                let _ = tx.send(line);
            }
            all
        });
        let mut capture = Capture {
            child: Some(child),
            path,
            stderr: Some(reader),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if line.starts_with("File:") => return capture,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => panic!("dumpcap did not start capturing"),
                Err(RecvTimeoutError::Disconnected) => {
                    let said = capture.stderr.take().and_then(|r| r.join().ok());
                    panic!(
                        "dumpcap ended before capturing:\n{}",
                        said.unwrap_or_default()
                    )
                }
            }
        }
    }

    /// Stops dumpcap with SIGINT and returns the file, once it holds
    /// everything sent so far. dumpcap loses the frames it has not read
    /// yet when it stops, so a marker frame goes out last (an
    /// experimental EtherType, broadcast: the host drops it as
    /// `ethertype_unsupported`) and dumpcap stops once the marker's bytes
    /// are in the file (dumpcap writes each batch it reads).
    pub fn stop(mut self, ns: &Netns) -> PathBuf {
        let nonce = format!("stackscope-capture-marker-{}", wall_clock());
        let mut marker = ethernet(
            [0xff; 6],
            [0x02, 0, 0x5e, 0, 0x53, 0x01],
            ETHERTYPE_MARKER,
            b"",
        );
        marker.extend_from_slice(nonce.as_bytes());
        let deadline = Instant::now() + Duration::from_secs(10);
        'sync: loop {
            send_frames(ns, TAP, vec![marker.clone()], false);
            let resent = Instant::now() + Duration::from_millis(500);
            while Instant::now() < resent {
                if file_contains(&self.path, nonce.as_bytes()) {
                    break 'sync;
                }
                assert!(
                    Instant::now() < deadline,
                    "dumpcap did not write the marker frame (the host gone, the TAP down?)"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let mut child = self.child.take().expect("a running dumpcap");
        signal(&child, libc::SIGINT);
        let clean = reap(&mut child, Duration::from_secs(10));
        let said = self.stderr.take().and_then(|r| r.join().ok());
        assert!(clean, "dumpcap did not stop:\n{}", said.unwrap_or_default());
        self.path.clone()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(&child, libc::SIGINT);
            reap(&mut child, Duration::from_secs(5));
        }
    }
}

/// Whether the file at `path` contains `needle` (a marker's bytes).
fn file_contains(path: &Path, needle: &[u8]) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    bytes.windows(needle.len()).any(|w| w == needle)
}

// ---------------------------------------------------------------------
// Reading the capture

/// The fields of one captured frame that the tests look at (empty when
/// the frame has no such field).
#[derive(Debug, Clone, Default)]
pub struct Frame {
    pub time: f64,
    pub eth_src: String,
    pub eth_dst: String,
    pub ip6_src: String,
    pub ip6_dst: String,
    pub hop_limit: String,
    pub icmp6_type: String,
    pub ns_target: String,
    pub na_target: String,
    pub na_solicited: bool,
    pub na_override: bool,
    pub na_router: bool,
    /// ND option types in order (1 SLLA, 2 TLLA, 14 nonce, ...).
    pub option_types: Vec<String>,
    /// Link-layer addresses of the SLLA/TLLA options.
    pub option_macs: Vec<String>,
    /// Multicast addresses of an MLDv2 report's records.
    pub mld_groups: Vec<String>,
    pub prefix: String,
    pub arp_opcode: String,
    pub arp_sender_mac: String,
    pub arp_sender_ip: String,
    pub arp_target_ip: String,
}

const FRAME_FIELDS: [&str; 20] = [
    "frame.time_epoch",
    "eth.src",
    "eth.dst",
    "ipv6.src",
    "ipv6.dst",
    "ipv6.hlim",
    "icmpv6.type",
    "icmpv6.nd.ns.target_address",
    "icmpv6.nd.na.target_address",
    "icmpv6.nd.na.flag.s",
    "icmpv6.nd.na.flag.o",
    "icmpv6.nd.na.flag.r",
    "icmpv6.opt.type",
    "icmpv6.opt.linkaddr",
    "icmpv6.mldr.mar.multicast_address",
    "icmpv6.opt.prefix",
    "arp.opcode",
    "arp.src.hw_mac",
    "arp.src.proto_ipv4",
    "arp.dst.proto_ipv4",
];

impl Frame {
    fn from_fields(values: &[&str]) -> Frame {
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .collect()
        };
        let flag = |s: &str| matches!(s, "1" | "True" | "true");
        let first = |s: &str| s.split(',').next().unwrap_or("").to_string();
        Frame {
            time: values[0].parse().unwrap_or(0.0),
            eth_src: values[1].to_string(),
            eth_dst: values[2].to_string(),
            ip6_src: first(values[3]),
            ip6_dst: first(values[4]),
            hop_limit: first(values[5]),
            icmp6_type: first(values[6]),
            ns_target: values[7].to_string(),
            na_target: values[8].to_string(),
            na_solicited: flag(values[9]),
            na_override: flag(values[10]),
            na_router: flag(values[11]),
            option_types: list(values[12]),
            option_macs: list(values[13]),
            mld_groups: list(values[14]),
            prefix: values[15].to_string(),
            arp_opcode: values[16].to_string(),
            arp_sender_mac: values[17].to_string(),
            arp_sender_ip: values[18].to_string(),
            arp_target_ip: values[19].to_string(),
        }
    }

    pub fn is_ns(&self) -> bool {
        self.icmp6_type == "135"
    }

    pub fn is_na(&self) -> bool {
        self.icmp6_type == "136"
    }
}

/// Every frame of the capture, in order.
pub fn read_frames(capture: &Path) -> Vec<Frame> {
    let mut args = vec![
        "-r".to_string(),
        capture.to_str().expect("UTF-8 path").to_string(),
        "-T".to_string(),
        "fields".to_string(),
        "-E".to_string(),
        "occurrence=a".to_string(),
        "-E".to_string(),
        "aggregator=,".to_string(),
    ];
    for field in FRAME_FIELDS {
        args.push("-e".to_string());
        args.push(field.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = support::run_ok("tshark", &args);
    text.lines()
        .map(|line| {
            let values: Vec<&str> = line.split('\t').collect();
            assert_eq!(values.len(), FRAME_FIELDS.len(), "tshark line {line:?}");
            Frame::from_fields(&values)
        })
        .collect()
}

/// Frames that tshark (checksum checks on) finds bad.
const BAD: &str = "_ws.malformed || _ws.expert.severity >= error || ip.checksum.status == 0 \
                   || icmp.checksum.status == 0 || icmpv6.checksum.status == 0 \
                   || tcp.checksum.status == 0 || udp.checksum.status == 0";
/// ICMP error messages (ICMPv6 types below 128, RFC 4443 §2.1; ICMPv4
/// Destination Unreachable, Source Quench, Redirect, Time Exceeded,
/// Parameter Problem), by their outermost ICMP header (`#1`).
const ICMP_ERROR: &str = "icmpv6.type#1 < 128 || icmp.type#1 == 3 || icmp.type#1 == 4 \
                          || icmp.type#1 == 5 || icmp.type#1 == 11 || icmp.type#1 == 12";

/// The summary lines of the frames matching `filter`, decoded with
/// checksum checks on.
pub fn tshark_matches(capture: &Path, filter: &str) -> String {
    let path = capture.to_str().expect("UTF-8 path");
    let args = [
        "-r",
        path,
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
        "-Y",
        filter,
    ];
    support::run_ok("tshark", &args)
}

/// No malformed packet and no bad checksum in the whole capture.
pub fn check_clean(capture: &Path) {
    let found = tshark_matches(capture, BAD);
    assert!(
        found.trim().is_empty(),
        "tshark finds bad packets:\n{found}"
    );
}

/// No malformed packet and no bad checksum among the frames from `mac`.
/// An ICMP error quotes the packet that caused it, malformed if that was,
/// so there only the error's own headers count: its outermost ICMP
/// checksum (and IPv4 header checksum) must be good.
pub fn check_clean_from(capture: &Path, mac: &str) {
    let own = format!("eth.src == {mac} && !({ICMP_ERROR}) && ({BAD})");
    let found = tshark_matches(capture, &own);
    assert!(
        found.trim().is_empty(),
        "tshark finds bad packets:\n{found}"
    );
    let errors = format!(
        "eth.src == {mac} && ((icmpv6.type#1 < 128 && !(icmpv6.checksum.status#1 == 1)) \
         || (({ICMP_ERROR}) && ip && !(ip.checksum.status#1 == 1 && icmp.checksum.status#1 == 1)))"
    );
    let found = tshark_matches(capture, &errors);
    assert!(found.trim().is_empty(), "bad ICMP errors:\n{found}");
}

/// Lines of the frames, for assertion messages.
pub fn show(frames: &[&Frame]) -> String {
    frames
        .iter()
        .map(|f| format!("{f:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}
