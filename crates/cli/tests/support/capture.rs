//! Kernel-side captures: `dumpcap` on a device in a test's namespace,
//! started and stopped so that the file holds every frame in between, and
//! the check every interop test makes of such a capture with `tshark`,
//! checksum checks on: no malformed packet and no bad checksum.
//!
//! A few packets that tshark flags are not faults of either stack; each
//! exemption is documented where it is made: [`bad_packets`] (ICMP errors
//! quoting a bad packet, TCP checksums of 0xFFFF, packets cut by the
//! snaplen) and [`tshark`] (payloads that a heuristic dissector takes for
//! its protocol).
//!
//! Where the checksums are complete: a frame the kernel sends is captured
//! before the driver gets it, so a device offering checksum offload (a
//! veth) shows partial checksums on the sending side; turn its offload off
//! (`ethtool -K DEV tx off`) before capturing there. A TAP offers none
//! unless its reader asks: the kernel fills every checksum before the
//! frame reaches it.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{path_str, require_tool, run_ok, Netns, Reaped};

/// How long dumpcap may take to open the device, and to write the last
/// packets once asked to stop.
const DUMPCAP_LIMIT: Duration = Duration::from_secs(10);

/// The kernel's capture buffer for dumpcap, in MiB (`-B`; dumpcap's
/// default is 2). A bulk transfer carries some 30 000 packets a second and
/// a loaded machine may leave dumpcap unscheduled for a while: with 2 MiB
/// the ring overflowed (15 000 packets of a 100 MiB transfer lost, the
/// capture's checks then wrong); 32 MiB hold seconds of headers.
const BUFFER_MIB: &str = "32";

/// Longer than dumpcap's read timeout (250 ms), after which the kernel
/// hands over a block that holds any packet.
const BLOCK_TIMEOUT_MARGIN: Duration = Duration::from_millis(600);

/// How much a capture keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// Bytes kept of each packet (`dumpcap -s`): the headers of a bulk
    /// transfer without its payload. The transport checksum of a packet
    /// cut short is unverifiable, which the check accepts.
    pub snaplen: Option<u32>,
    /// Packets after which dumpcap stops by itself (`-c`): whole packets
    /// of a transfer's beginning, where every checksum can be verified.
    pub packets: Option<u32>,
}

/// A `dumpcap` on one device of a namespace, writing pcapng; stopped with
/// SIGINT (it then finishes the file) by [`stop`](Self::stop), killed if
/// dropped.
///
/// dumpcap reads the kernel's capture ring a block at a time, and a block
/// is handed over when full or 250 ms (dumpcap's read timeout) after its
/// first packet; at SIGINT the block being filled is lost. So a capture is
/// stopped only once dumpcap has written as many packets as the device
/// carried since the capture began: dumpcap says how many it wrote
/// (`Packets: N` on stderr, about every half second), the device's
/// counters say what it carried. (The ND tests used to send a marker frame
/// last and stop once it was in the file; counting needs no frame
/// injected, so the stacks' drop counters see only the test's traffic,
/// as the UDP accounting of interop_transfer needs, and it works the same
/// on a TAP and a veth.) Should dumpcap lose packets, the wait ends after
/// 10 s with a note and the checks get what it wrote.
///
/// A packet the device carries while dumpcap opens it may or may not be
/// captured. One that is makes the count reach its mark one packet early,
/// while the last packet may still sit in an unfinished block (an interop
/// test once lost its last ping reply so). When any packet passed then,
/// the stop waits out one block timeout after the count is reached.
pub struct Capture {
    dumpcap: Reaped,
    dev: String,
    path: PathBuf,
    /// dumpcap's stderr messages (split at `\r` too), as they come.
    lines: mpsc::Receiver<String>,
    said: Vec<String>,
    /// What the device had carried when the capture began.
    carried_before: u64,
    /// Packets the device carried while dumpcap was opening it: each
    /// captured or not.
    carried_while_opening: u64,
}

impl Capture {
    /// Captures whole packets on `dev` in `ns` into `path`; see
    /// [`start_with`](Self::start_with).
    pub fn start(ns: &Netns, dev: &str, path: PathBuf) -> Capture {
        Capture::start_with(ns, dev, path, Limits::default())
    }

    /// Starts capturing on `dev` (which must be up) into `path` and
    /// returns once dumpcap captures: its `File: ...` line comes after the
    /// device is open (`Capturing on ...` comes before).
    pub fn start_with(ns: &Netns, dev: &str, path: PathBuf, limits: Limits) -> Capture {
        require_tool("dumpcap", "wireshark-common");
        require_tool("tshark", "tshark");
        let args = ["-i", dev, "-B", BUFFER_MIB, "-w", path_str(&path)];
        let mut command = ns.command("dumpcap", &args);
        if let Some(snaplen) = limits.snaplen {
            command.args(["-s", &snaplen.to_string()]);
        }
        if let Some(packets) = limits.packets {
            command.args(["-c", &packets.to_string()]);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let carried_at_spawn = carried(ns, dev);
        let mut dumpcap = Reaped::spawn(&mut command);
        let stderr = dumpcap.child().stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || forward_messages(stderr, tx));
        let mut capture = Capture {
            dumpcap,
            dev: dev.to_string(),
            path,
            lines,
            said: Vec::new(),
            carried_before: 0,
            carried_while_opening: 0,
        };
        let deadline = Instant::now() + DUMPCAP_LIMIT;
        while !capture.said.iter().any(|l| l.starts_with("File: ")) {
            assert!(
                capture.take_message(deadline),
                "dumpcap on {dev} did not start writing:\n{}",
                capture.said.join("\n")
            );
        }
        // Read once the capture runs: what comes after is captured (and a
        // packet in between is captured without being waited for).
        capture.carried_before = carried(ns, dev);
        capture.carried_while_opening = capture.carried_before.saturating_sub(carried_at_spawn);
        capture
    }

    /// Waits for dumpcap's next message until `deadline`; false if none
    /// came (or dumpcap ended).
    fn take_message(&mut self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.lines.recv_timeout(left) {
            Ok(line) => {
                self.said.push(line);
                true
            }
            Err(_) => false,
        }
    }

    /// The packets dumpcap last said it wrote.
    fn written(&self) -> u64 {
        self.said
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("Packets: ")?.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Waits until dumpcap wrote what the device carried since the
    /// capture began (or ended by itself, or 10 s passed: then what it has
    /// is what the checks get, and a note says so), then stops it and
    /// returns the complete file. `ns` is the namespace it was started in.
    pub fn stop(mut self, ns: &Netns) -> PathBuf {
        let packets = carried(ns, &self.dev).saturating_sub(self.carried_before);
        let deadline = Instant::now() + DUMPCAP_LIMIT;
        let mut ended = None;
        while ended.is_none() && self.written() < packets {
            ended = self.dumpcap.child().try_wait().expect("wait for dumpcap");
            if ended.is_none() && !self.take_message(deadline) {
                eprintln!(
                    "note: dumpcap wrote {} of the {packets} packets {} carried",
                    self.written(),
                    self.dev
                );
                break;
            }
        }
        if ended.is_none() && self.carried_while_opening > 0 {
            // The count may have counted a packet from before the mark:
            // let dumpcap's read timeout hand over the block being filled.
            std::thread::sleep(BLOCK_TIMEOUT_MARGIN);
        }
        let status = match ended {
            Some(status) => Some(status),
            None => self.dumpcap.stop(libc::SIGINT, DUMPCAP_LIMIT),
        };
        // Its last words (packets captured, dropped) for the log.
        while self.take_message(Instant::now() + Duration::from_millis(200)) {}
        let said = self.said.join("\n");
        let status = status.unwrap_or_else(|| panic!("dumpcap did not stop (killed):\n{said}"));
        assert!(
            status.success() || status.code().is_none(),
            "dumpcap failed ({status}):\n{said}"
        );
        eprintln!(
            "capture {}: {}",
            self.path.display(),
            self.said.last().map_or("", String::as_str)
        );
        self.path.clone()
    }
}

/// Packets `dev` carried so far, as a capture on it sees them: sent (or
/// dropped by the driver after the capture saw them, as a TAP does when
/// its reader's queue is full) and received.
fn carried(ns: &Netns, dev: &str) -> u64 {
    ["tx_packets", "tx_dropped", "rx_packets"]
        .into_iter()
        .map(|stat| ns.link_stat(dev, stat))
        .sum()
}

/// Sends each message of dumpcap's stderr: its lines, and each update of
/// its running count, `\rPackets: N ` (sent when complete: the next `\r`
/// may be long in coming, or never).
fn forward_messages(stderr: impl Read, tx: mpsc::Sender<String>) {
    let mut reader = BufReader::new(stderr);
    let mut piece = String::new();
    let mut byte = [0u8; 1];
    while matches!(reader.read(&mut byte), Ok(1)) {
        let end = matches!(byte[0], b'\r' | b'\n');
        if !end {
            piece.push(char::from(byte[0]));
        }
        let count_done = byte[0] == b' ' && is_packet_count(&piece);
        if (end || count_done) && !piece.trim().is_empty() {
            if tx.send(piece.trim().to_string()).is_err() {
                return;
            }
            piece.clear();
        }
    }
}

/// `Packets: N ` with its number complete.
fn is_packet_count(piece: &str) -> bool {
    piece
        .strip_prefix("Packets: ")
        .and_then(|rest| rest.strip_suffix(' '))
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

// ---------------------------------------------------------------------
// Decoding with tshark

/// tshark over a capture with every checksum check on (tshark checks only
/// ICMP's by default) and:
///
/// * the interop services' payloads (echo 7, discard 9, ttcp 5001, TCP
///   and UDP) decoded as plain data: they are arbitrary bytes, which a
///   heuristic dissector may take for its protocol (THRIFT did, on 5001)
///   and then, in a capture cut by the snaplen, report as a malformed
///   message of that protocol;
/// * TCP streams not reassembled: no check needs it, and it would keep a
///   bulk transfer's payload in memory.
pub fn tshark(path: &Path, extra: &[&str]) -> String {
    let mut args = vec!["-r", path_str(path)];
    for service in SERVICES_AS_DATA {
        args.extend(["-d", service]);
    }
    args.extend([
        "-o",
        "ip.check_checksum:TRUE",
        "-o",
        "udp.check_checksum:TRUE",
        "-o",
        "tcp.check_checksum:TRUE",
        "-o",
        "tcp.desegment_tcp_streams:FALSE",
    ]);
    args.extend_from_slice(extra);
    run_ok("tshark", &args)
}

/// tshark's "decode as" of the interop services' ports (see [`tshark`]).
const SERVICES_AS_DATA: [&str; 6] = [
    "tcp.port==7,data",
    "udp.port==7,data",
    "tcp.port==9,data",
    "udp.port==9,data",
    "tcp.port==5001,data",
    "udp.port==5001,data",
];

/// ICMP error messages, by their outermost ICMP header (`#1`): ICMPv6
/// types below 128 (RFC 4443 §2.1); ICMPv4 Destination Unreachable, Source
/// Quench, Redirect, Time Exceeded, Parameter Problem.
const ICMP_ERROR: &str = "icmpv6.type#1 < 128 || icmp.type#1 == 3 || icmp.type#1 == 4 \
                          || icmp.type#1 == 5 || icmp.type#1 == 11 || icmp.type#1 == 12";

/// A malformed packet, an expert error, or a bad checksum (status 0 is
/// "Bad"; 2, "Unverified", is what a transport checksum gets where the
/// packet was cut by the snaplen: not a fault).
const MALFORMED_OR_BAD_CHECKSUM: &str = "_ws.malformed || _ws.expert.severity >= error \
    || ip.checksum.status == 0 || icmp.checksum.status == 0 \
    || icmpv6.checksum.status == 0 || udp.checksum.status == 0 || tcp.checksum.status == 0";

/// A TCP checksum of 0xFFFF where 0x0000 was computed: Linux, completing a
/// checksum in software (`skb_checksum_help`, e.g. for a TAP without
/// offloads), writes a zero result as 0xFFFF, the other ones'-complement
/// zero, which every receiver accepts (RFC 1624 §3); tshark calls it a bad
/// checksum and an expert error. About one TCP segment in 65 536 has it.
pub const TCP_CHECKSUM_FFFF: &str = "tcp.checksum.ffff";

/// A TCP checksum tshark verified, or the 0xFFFF that stands for zero.
pub const TCP_CHECKSUM_GOOD: &str = "tcp.checksum.status == 1 || tcp.checksum.ffff";

/// The display filter of the packets that fail the check "no malformed
/// packet, no bad checksum":
///
/// * any packet malformed, with an expert error or a bad checksum, except
///   a TCP checksum of 0xFFFF ([`TCP_CHECKSUM_FFFF`]);
/// * but of an ICMP error only its own headers: it quotes the packet that
///   caused it, malformed if that was (a test may send malformed packets
///   on purpose), and cut short as the error's size limit demands. Its
///   outermost ICMP checksum (over the quote too) and IPv4 header
///   checksum must not be bad.
pub fn bad_packets() -> String {
    format!(
        "(!({ICMP_ERROR}) && ({MALFORMED_OR_BAD_CHECKSUM}) && !{TCP_CHECKSUM_FFFF}) \
         || (({ICMP_ERROR}) && (icmpv6.checksum.status#1 == 0 \
             || icmp.checksum.status#1 == 0 || ip.checksum.status#1 == 0))"
    )
}

/// How many packets of the capture match each filter, in one pass
/// (tshark's I/O statistics over a single interval). A filter must not
/// contain a comma (it separates the filters).
pub fn count_matching(path: &Path, filters: &[&str]) -> Vec<u64> {
    assert!(filters.iter().all(|f| !f.contains(',')), "{filters:?}");
    let stat = format!("io,stat,0,{}", filters.join(","));
    let table = tshark(path, &["-q", "-z", &stat]);
    // The one data row: `| 0.000 <> 2.993 | frames | bytes | frames | ...`.
    let row = table
        .lines()
        .find(|l| l.contains("<>"))
        .unwrap_or_else(|| panic!("no statistics row in:\n{table}"));
    let cells: Vec<u64> = row
        .split('|')
        .skip(2)
        .filter_map(|cell| cell.trim().parse().ok())
        .collect();
    // Frames and bytes per filter: the frames.
    let frames: Vec<u64> = cells.iter().step_by(2).copied().collect();
    assert_eq!(frames.len(), filters.len(), "{table}");
    frames
}

/// Checks that no packet of the capture is malformed or has a bad
/// checksum, and counts the packets matching each of `filters` in the
/// same pass (a tshark pass over a large capture takes seconds).
pub fn check_clean_and_count(path: &Path, filters: &[&str]) -> Vec<u64> {
    check_clean_where_and_count(path, "frame", filters)
}

/// No malformed packet and no bad checksum in the capture.
pub fn check_clean(path: &Path) {
    check_clean_where_and_count(path, "frame", &[]);
}

/// No malformed packet and no bad checksum among the packets matching
/// `scope` (e.g. those of one stack, where the other sends malformed ones
/// on purpose).
pub fn check_clean_where(path: &Path, scope: &str) {
    check_clean_where_and_count(path, scope, &[]);
}

fn check_clean_where_and_count(path: &Path, scope: &str, filters: &[&str]) -> Vec<u64> {
    let bad = format!("({scope}) && ({})", bad_packets());
    let mut all = vec![bad.as_str()];
    all.extend_from_slice(filters);
    let mut counts = count_matching(path, &all);
    let found = counts.remove(0);
    if found > 0 {
        let listed = tshark(path, &["-Y", &bad]);
        let head: Vec<&str> = listed.lines().take(40).collect();
        panic!(
            "tshark finds {found} bad packets in {}:\n{}",
            path.display(),
            head.join("\n")
        );
    }
    counts
}
