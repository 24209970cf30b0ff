//! Bulk transfers between the Linux kernel and `stackscope host` over a
//! TAP, each test in a network namespace of its own (the host on `sstap0`
//! with 2001:db8:77::2/64 and 192.0.2.2/24, the kernel's side of the TAP
//! 2001:db8:77::1/64 and 192.0.2.1/24):
//!
//! * TCP, with ordinary tools: `socat` pushes 100 MiB of random bytes
//!   through the host's TCP echo (port 7) and `sha256sum` compares what
//!   came back with what was sent; `nc` pushes the same 100 MiB one way
//!   into the ttcp sink (port 5001). Both families; throughputs printed.
//! * UDP, from a kernel socket in the test: datagrams of every size (the
//!   kernel fragments the large ones, the host reassembles them and
//!   fragments its echoes) at a gentle, self-clocked rate lose nothing; a
//!   flood loses many, and every lost datagram is found in exactly one
//!   drop counter of the kernel or of the host. Both families.
//!
//! Every test captures on the kernel's side of the TAP with `dumpcap` and
//! decodes the capture with `tshark`, checksum checks on: no malformed
//! packet and no bad checksum (`support::capture`, which says what is
//! exempt and why). The kernel fills every checksum before a frame
//! reaches a TAP that offers no offloads, and the host fills its own, so
//! checksums captured there are complete.
//!
//! Needs root (namespaces, TAP devices); elsewhere each test prints
//! "skipped: ..." and passes. As root, `ip` and `tc` (iproute2), `socat`,
//! `nc` (netcat-openbsd), `sha256sum` (coreutils), `dumpcap`
//! (wireshark-common) and `tshark` must be installed. Everything a test
//! makes (namespace, host process, captures, data files) is removed
//! afterwards, also when it fails.

mod support;

use std::fs::File;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use support::capture::{check_clean_and_count, Capture, Limits, TCP_CHECKSUM_GOOD};
use support::{
    path_str, require_tool, run_ok, skip_reason, HostProcess, Netns, Reaped, Stopped, TempDir,
};

const TAP: &str = "sstap0";
const HOST6: &str = "2001:db8:77::2";
const HOST4: &str = "192.0.2.2";
const MIB: u64 = 1024 * 1024;
/// What each TCP transfer moves.
const TCP_BYTES: u64 = 100 * MIB;
/// No single tool run may take longer than this (a debug build moves
/// 100 MiB through the echo in a few seconds).
const TOOL_LIMIT: Duration = Duration::from_secs(120);

// ----- The two families ----------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V6,
    V4,
}

impl Family {
    fn host(self) -> IpAddr {
        match self {
            Family::V6 => HOST6.parse().unwrap(),
            Family::V4 => HOST4.parse().unwrap(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Family::V6 => "IPv6",
            Family::V4 => "IPv4",
        }
    }

    /// socat's address of the host's TCP `port`.
    fn socat_tcp(self, port: u16) -> String {
        match self {
            Family::V6 => format!("TCP6:[{HOST6}]:{port}"),
            Family::V4 => format!("TCP4:{HOST4}:{port}"),
        }
    }

    /// The largest UDP payload a 1500-byte packet carries unfragmented.
    fn largest_unfragmented_udp(self) -> usize {
        match self {
            Family::V6 => 1500 - 40 - 8,
            Family::V4 => 1500 - 20 - 8,
        }
    }

    /// The largest UDP payload of the family (no jumbograms): 65 535 less
    /// the UDP header, and for IPv4 less its header too (RFC 768, RFC 791,
    /// RFC 8200 §3).
    fn largest_udp(self) -> usize {
        match self {
            Family::V6 => 65_535 - 8,
            Family::V4 => 65_535 - 20 - 8,
        }
    }
}

// ----- A reference host in a namespace --------------------------------------

/// A reference host on a TAP in a namespace of its own, the kernel's side
/// configured. Fields drop in order: the host is killed, then the
/// namespace deleted.
struct Lab {
    host: HostProcess,
    ns: Netns,
}

/// Sets everything up, or says why the test is skipped (`None`).
fn lab() -> Option<Lab> {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return None;
    }
    for (tool, package) in [
        ("ip", "iproute2"),
        ("tc", "iproute2"),
        ("socat", "socat"),
        ("nc", "netcat-openbsd"),
        ("sha256sum", "coreutils"),
    ] {
        require_tool(tool, package);
    }
    let (ns, host) = support::host_in_netns(TAP, &support::NO_DAD_ADDRESSES)?;
    Some(Lab { host, ns })
}

impl Lab {
    /// Stops the host with SIGINT: it must exit 0 and print its counters.
    fn stop(self) -> Stopped {
        self.stop_then(|_| ()).0
    }

    /// Stops the host like [`stop`](Self::stop), then runs `after` in the
    /// namespace's last moments (nothing comes from the host any more).
    fn stop_then<T>(self, after: impl FnOnce(&Netns) -> T) -> (Stopped, T) {
        let Lab { host, ns } = self;
        let stopped = host.stop(libc::SIGINT, Duration::from_secs(5));
        let outcome = after(&ns);
        drop(ns);
        stopped.assert_clean_exit();
        (stopped, outcome)
    }
}

/// A counter of the host's output that may be absent (drop reasons are
/// printed only when they happened): `  name: N` on a line of its own.
fn optional_counter(stopped: &Stopped, name: &str) -> u64 {
    let prefix = format!("{name}:");
    stopped
        .stdout
        .lines()
        .filter_map(|line| line.trim().strip_prefix(&prefix))
        .find_map(|value| value.trim().parse().ok())
        .unwrap_or(0)
}

/// The host's drops by reason (`drops:` up to `services:`).
fn host_drops(stopped: &Stopped) -> Vec<(String, u64)> {
    let lines = stopped.stdout.lines();
    let section = lines
        .skip_while(|l| l.trim() != "drops:")
        .skip(1)
        .take_while(|l| l.starts_with("  "));
    section
        .filter_map(|line| {
            let (reason, count) = line.trim().split_once(':')?;
            Some((reason.to_string(), count.trim().parse().ok()?))
        })
        .collect()
}

// ----- Files and processes --------------------------------------------------

/// `len` random bytes (the kernel's CSPRNG: nothing a compressor or a
/// repeating-pattern bug could hide behind) in a new file at `path`.
fn random_file(path: &Path, len: u64) {
    let mut source = File::open("/dev/urandom").expect("/dev/urandom");
    let mut file = File::create(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let copied = std::io::copy(&mut std::io::Read::take(&mut source, len), &mut file)
        .expect("write the random file");
    assert_eq!(copied, len);
}

/// `sha256sum`'s digest of a file.
fn sha256_of_file(path: &Path) -> String {
    let output = run_ok("sha256sum", &[path_str(path)]);
    first_word(&output)
}

fn first_word(text: &str) -> String {
    text.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

// ----- TCP: 100 MiB through the echo and into the sink ----------------------

/// How long a tool took to move `bytes`, and the rate.
fn rate(bytes: u64, took: Duration) -> String {
    let mib = bytes as f64 / MIB as f64;
    format!(
        "{mib:.0} MiB in {:.2} s = {:.1} MiB/s",
        took.as_secs_f64(),
        mib / took.as_secs_f64()
    )
}

/// socat sends the file to the host's TCP echo and pipes what comes back
/// into sha256sum; returns that digest and how long it took. socat
/// half-closes after the file (`-t`: then waits for the echo's end), and
/// the echo closes once everything is echoed.
fn echo_through_socat(lab: &Lab, family: Family, data: &Path) -> (String, Duration) {
    let started = Instant::now();
    let mut socat = Reaped::spawn(
        lab.ns
            .command(
                "socat",
                &["-T", "60", "-t", "60", &family.socat_tcp(7), "STDIO"],
            )
            .stdin(File::open(data).expect("the data file"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let echoed = socat.child().stdout.take().expect("piped stdout");
    let mut sha = Reaped::spawn(
        Command::new("sha256sum")
            .stdin(echoed)
            .stdout(Stdio::piped()),
    );
    let status = socat.wait(TOOL_LIMIT, "socat through the echo");
    let took = started.elapsed();
    assert!(status.success(), "socat: {status}\n{}", socat.stderr());
    sha.wait(Duration::from_secs(30), "sha256sum");
    let mut digest = String::new();
    let mut out = sha.child().stdout.take().expect("piped stdout");
    std::io::Read::read_to_string(&mut out, &mut digest).expect("sha256sum's output");
    (first_word(&digest), took)
}

/// nc sends the file to the host's TCP `port` and half-closes (`-N`), then
/// waits for the service to close in turn, which it does once it has read
/// everything: the time is the whole transfer's.
fn send_through_nc(lab: &Lab, family: Family, port: u16, data: &Path) -> Duration {
    let started = Instant::now();
    let host = family.host().to_string();
    let port = port.to_string();
    let mut nc = Reaped::spawn(
        lab.ns
            .command("nc", &["-N", "-w", "60", &host, &port])
            .stdin(File::open(data).expect("the data file"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let status = nc.wait(TOOL_LIMIT, "nc into the sink");
    let took = started.elapsed();
    assert!(status.success(), "nc: {status}\n{}", nc.stderr());
    took
}

fn tcp_transfers(family: Family, test: &str) {
    let Some(lab) = lab() else { return };
    // Dropped before the lab: after the captures, before the namespace.
    let scratch = TempDir::new(&format!("xfer-{test}"));
    let started = Instant::now();
    let data = scratch.join("data");
    random_file(&data, TCP_BYTES);
    let sent_digest = sha256_of_file(&data);

    // Two captures of the kernel's side: the first 128 bytes of every
    // packet (all headers, a small file), and the first 20 000 packets
    // whole (about 14 MiB of the echo), where tshark can check every TCP
    // checksum. A cut packet's TCP checksum is unverifiable, not bad.
    let headers = Limits {
        snaplen: Some(128),
        packets: None,
    };
    let whole = Limits {
        snaplen: None,
        packets: Some(20_000),
    };
    let headers = Capture::start_with(&lab.ns, TAP, scratch.join("headers.pcapng"), headers);
    let whole = Capture::start_with(&lab.ns, TAP, scratch.join("whole.pcapng"), whole);

    let (echoed_digest, echo_took) = echo_through_socat(&lab, family, &data);
    let sink_took = send_through_nc(&lab, family, 5001, &data);
    let headers = headers.stop(&lab.ns);
    let whole = whole.stop(&lab.ns);
    let stopped = lab.stop();

    eprintln!(
        "{} TCP echo (socat, both ways at once): {} each way",
        family.name(),
        rate(TCP_BYTES, echo_took)
    );
    eprintln!(
        "{} TCP into the ttcp sink (nc, one way): {}",
        family.name(),
        rate(TCP_BYTES, sink_took)
    );
    assert_eq!(
        echoed_digest,
        sent_digest,
        "SHA-256 of the {} echo differs from what was sent\n{}",
        family.name(),
        stopped.stdout
    );
    let bytes = TCP_BYTES;
    let echo = "tcp echo (7)";
    let sink = "tcp ttcp sink (5001)";
    assert_eq!(
        stopped.counter_on(echo, "connections"),
        1,
        "{}",
        stopped.stdout
    );
    assert_eq!(stopped.counter_on(echo, "bytes_in"), bytes);
    assert_eq!(stopped.counter_on(echo, "bytes_out"), bytes);
    assert_eq!(stopped.counter_on(echo, "connection_errors"), 0);
    assert_eq!(stopped.counter_on(sink, "connections"), 1);
    assert_eq!(stopped.counter_on(sink, "bytes_in"), bytes);
    assert_eq!(stopped.counter_on(sink, "connection_errors"), 0);
    stopped.assert_link_healthy(TAP);

    check_tcp_captures(family, &headers, &whole);
    eprintln!("{test} took {:.1} s", started.elapsed().as_secs_f64());
}

/// Both captures decode cleanly; the whole one's TCP checksums were all
/// verified good (or 0xFFFF for zero, see [`TCP_CHECKSUM_GOOD`]), the
/// header one holds the transfers' segments.
fn check_tcp_captures(family: Family, headers: &Path, whole: &Path) {
    let ip = match family {
        Family::V6 => "ipv6",
        Family::V4 => "ip",
    };
    let from_host = format!("{ip}.src == {} && tcp.len > 0", family.host());
    let to_host = format!("{ip}.dst == {} && tcp.len > 0", family.host());
    let fins_from_host = format!("{ip}.src == {} && tcp.flags.fin == 1", family.host());
    let fins_to_host = format!("{ip}.dst == {} && tcp.flags.fin == 1", family.host());
    let counts = check_clean_and_count(
        headers,
        &[
            &from_host,
            &to_host,
            "tcp.analysis.retransmission",
            &fins_from_host,
            &fins_to_host,
        ],
    );
    let [out, into, retransmitted, fins_out, fins_in] = counts[..] else {
        unreachable!()
    };
    // 100 MiB from the host (the echo), 200 MiB to it (echo and sink), in
    // segments of at most 1460 bytes.
    let segments = TCP_BYTES / 1460;
    assert!(out >= segments, "{out} data segments from the host");
    assert!(into >= 2 * segments, "{into} data segments to the host");
    // Both connections closed both ways: the capture holds the ends too.
    // At least: on a loaded machine a FIN may be sent again before its
    // ACK comes (a complete capture then holds five).
    assert!(
        fins_out >= 2 && fins_in >= 2,
        "FINs: {fins_out} from the host, {fins_in} to it"
    );
    let counts = check_clean_and_count(whole, &["tcp", TCP_CHECKSUM_GOOD]);
    let [tcp, verified] = counts[..] else {
        unreachable!()
    };
    assert!(
        verified == tcp && tcp > 10_000,
        "{verified} of {tcp} TCP checksums verified good in the whole capture"
    );
    eprintln!(
        "{} capture: {out} data segments from the host, {into} to it, {retransmitted} retransmissions",
        family.name()
    );
}

#[test]
fn a_hundred_mib_go_through_the_tcp_echo_and_into_the_sink_over_ipv6() {
    tcp_transfers(Family::V6, "tcp6");
}

#[test]
fn a_hundred_mib_go_through_the_tcp_echo_and_into_the_sink_over_ipv4() {
    tcp_transfers(Family::V4, "tcp4");
}

// ----- UDP: every datagram found, echoed or counted as lost -----------------

/// The bytes of datagram `seq`, `len` long (at least 8): the sequence
/// number, then a pattern that depends on it, so a corrupted, truncated or
/// misplaced echo shows.
fn datagram(seq: u64, len: usize) -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..len)
        .map(|i| (seq as usize).wrapping_mul(7).wrapping_add(i) as u8)
        .collect();
    bytes[..8].copy_from_slice(&seq.to_be_bytes());
    bytes
}

/// The sequence number of an echo, if it is intact.
fn intact(echo: &[u8]) -> Option<u64> {
    let seq = u64::from_be_bytes(echo.get(..8)?.try_into().ok()?);
    (datagram(seq, echo.len()) == echo).then_some(seq)
}

/// How one exchange of datagrams went, from the kernel socket's side.
#[derive(Debug, Default)]
struct Exchange {
    /// Datagrams the kernel took (send_to succeeded).
    sent: u64,
    /// send_to failed: not sent, not counted as lost.
    send_errors: u64,
    /// Distinct intact echoes.
    echoed: u64,
    duplicates: u64,
    corrupt: u64,
    /// Barrier datagrams sent and echoed (see [`exchange`]).
    barriers_sent: u64,
    barriers_echoed: u64,
}

impl Exchange {
    /// Every datagram sent, barriers included: what the counters saw.
    fn all_sent(&self) -> u64 {
        self.sent + self.barriers_sent
    }

    fn all_echoed(&self) -> u64 {
        self.echoed + self.barriers_echoed
    }
}

/// Sends one datagram, again if a signal interrupted the call (it was
/// not sent then).
fn send_datagram(socket: &UdpSocket, bytes: &[u8], to: SocketAddr) -> std::io::Result<()> {
    loop {
        match socket.send_to(bytes, to) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            outcome => return outcome.map(drop),
        }
    }
}

/// What one exchange sends: `count` datagrams of `sizes` (in turn),
/// numbered from `first`; with at most `window` of them unanswered (a
/// self-clocked, gentle rate however anything is scheduled), or with
/// `None` as fast as the kernel takes them.
struct Burst<'a> {
    first: u64,
    count: u64,
    sizes: &'a [usize],
    window: Option<u64>,
}

/// Marks a barrier's number (see [`exchange`]).
const BARRIER: u64 = 1 << 62;

/// Sends `burst` to `to` from another thread while this one collects the
/// echoes.
///
/// The end is exact, not a guess from a quiet spell: once the sender is
/// done and an echo is missing, this thread waits until the host has
/// taken every frame queued on the TAP, then sends a barrier (a datagram
/// numbered apart) and waits for its echo, sending another if none comes
/// within half a second (the host may have had no room for it). Every
/// queue from here to the host's echo and back is first in, first out,
/// so once a barrier's echo is here, every echo sent before it is in the
/// socket's queue, or was dropped and counted: reading what the queue
/// holds completes the count.
fn exchange(lab: &Lab, socket: &UdpSocket, to: SocketAddr, burst: &Burst) -> Exchange {
    let Burst {
        first,
        count,
        window,
        ..
    } = *burst;
    let echoed_so_far = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sender = {
        let socket = socket.try_clone().expect("clone the socket");
        let sizes = burst.sizes.to_vec();
        let echoed = echoed_so_far.clone();
        std::thread::spawn(move || {
            let (mut sent, mut errors) = (0, 0);
            for i in 0..count {
                if let Some(window) = window {
                    wait_for_room(i, window, &echoed);
                }
                let bytes = datagram(first + i, sizes[i as usize % sizes.len()]);
                match send_datagram(&socket, &bytes, to) {
                    Ok(()) => sent += 1,
                    Err(_) => errors += 1,
                }
            }
            (sent, errors)
        })
    };
    let mut tally = Tally {
        first,
        count,
        seen: vec![false; count as usize],
        result: Exchange::default(),
        barrier_back: false,
    };
    let mut buf = vec![0u8; 65_536];
    socket
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last_arrival = Instant::now();
    let mut next_barrier = None;
    while tally.result.echoed < count && !tally.barrier_back {
        if let Some(len) = receive(socket, &mut buf, to) {
            tally.take(&buf[..len]);
            echoed_so_far.store(tally.result.echoed, Ordering::Relaxed);
            last_arrival = Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "the exchange did not end: {:?}",
            tally.result
        );
        // Barriers only once echoes stopped coming for a moment (most
        // exchanges end with their last echo, no barrier needed).
        if !sender.is_finished() || last_arrival.elapsed() < Duration::from_millis(100) {
            continue;
        }
        if next_barrier.is_none() {
            wait_for_empty_tap(lab);
        }
        let now = Instant::now();
        if next_barrier.is_none_or(|at| now >= at) {
            let number = BARRIER | (first + count + tally.result.barriers_sent);
            send_datagram(socket, &datagram(number, 8), to).expect("send a barrier");
            tally.result.barriers_sent += 1;
            next_barrier = Some(now + Duration::from_millis(500));
        }
    }
    drain(socket, &mut buf, to, |echo| tally.take(echo));
    let mut result = tally.result;
    (result.sent, result.send_errors) = sender.join().expect("the sender");
    result
}

/// Reads every datagram the socket holds now (without waiting).
fn drain(socket: &UdpSocket, buf: &mut [u8], from: SocketAddr, mut take: impl FnMut(&[u8])) {
    socket.set_nonblocking(true).unwrap();
    while let Some(len) = receive(socket, buf, from) {
        take(&buf[..len]);
    }
    socket.set_nonblocking(false).unwrap();
}

/// Frames the kernel queued on the TAP that the host has not read yet:
/// the TAP's qdisc counts every frame it passed on, the TAP every frame
/// the host read (`tx_packets`) or that found its queue full.
fn tap_backlog(ns: &Netns) -> u64 {
    let tc = ns.exec("tc", &["-s", "qdisc", "show", "dev", TAP]);
    let text = String::from_utf8_lossy(&tc.stdout);
    // "Sent 443628856 bytes 318940 pkt (dropped 0, overlimits 0 ...)"
    let words: Vec<&str> = text.split_whitespace().collect();
    let passed: u64 = words
        .windows(5)
        .find(|w| w[0] == "Sent" && w[2] == "bytes" && w[4] == "pkt")
        .and_then(|w| w[3].parse().ok())
        .unwrap_or_else(|| panic!("no qdisc statistics for {TAP}:\n{text}"));
    let taken = ns.link_stat(TAP, "tx_packets") + ns.link_stat(TAP, "tx_dropped");
    passed.saturating_sub(taken)
}

/// Waits until the host has read every frame the kernel queued for it.
fn wait_for_empty_tap(lab: &Lab) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let backlog = tap_backlog(&lab.ns);
        if backlog == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the host left {backlog} frames on the TAP"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The echoes of one exchange, by number.
struct Tally {
    first: u64,
    count: u64,
    seen: Vec<bool>,
    result: Exchange,
    /// One of this exchange's barriers came back.
    barrier_back: bool,
}

impl Tally {
    fn take(&mut self, echo: &[u8]) {
        let result = &mut self.result;
        let Some(number) = intact(echo) else {
            result.corrupt += 1;
            return;
        };
        if number & BARRIER != 0 {
            // Ours, or a late one of an earlier exchange (counted where it
            // comes: the totals are what the accounting needs).
            result.barriers_echoed += 1;
            self.barrier_back |= number & !BARRIER >= self.first + self.count;
            return;
        }
        match number.checked_sub(self.first).filter(|&i| i < self.count) {
            Some(i) if self.seen[i as usize] => result.duplicates += 1,
            Some(i) => {
                self.seen[i as usize] = true;
                result.echoed += 1;
            }
            None => result.corrupt += 1,
        }
    }
}

/// Waits (at most 2 s: an echo may be lost) until fewer than `window` of
/// the `sent` datagrams are unanswered.
fn wait_for_room(sent: u64, window: u64, echoed: &std::sync::atomic::AtomicU64) {
    let give_up = Instant::now() + Duration::from_secs(2);
    while sent - echoed.load(Ordering::Relaxed).min(sent) >= window && Instant::now() < give_up {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// The next echo's length, if one came within the read timeout (a
/// signal interrupting the wait counts as none).
fn receive(socket: &UdpSocket, buf: &mut [u8], from: SocketAddr) -> Option<usize> {
    match socket.recv_from(buf) {
        Ok((len, sender)) => {
            assert_eq!(sender, from, "an echo from somewhere else");
            Some(len)
        }
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::Interrupted
            ) =>
        {
            None
        }
        Err(e) => panic!("receiving echoes: {e}"),
    }
}
/// Sizes sent one at a time: the smallest, the largest a 1500-byte packet
/// carries whole and one more (fragmented by the kernel, reassembled by
/// the host, and the echo fragmented by the host), up to the largest UDP
/// payload of the family.
fn one_by_one_sizes(family: Family) -> Vec<usize> {
    let whole = family.largest_unfragmented_udp();
    vec![
        8,
        100,
        1232,
        whole,
        whole + 1,
        3000,
        8952,
        20_000,
        40_000,
        family.largest_udp(),
    ]
}

/// A gentle mix, fragmented datagrams included, at most `WINDOW`
/// unanswered: a quarter of the host's echo socket's queue (64), so
/// nothing overflows however the host is scheduled.
const MIX_SIZES: &[usize] = &[64, 512, 1000, 1400, 3000, 200];
const MIX_COUNT: u64 = 300;
const WINDOW: u64 = 16;
/// The flood: datagrams that fit a packet, so each lost one is one lost
/// frame in every counter below.
const FLOOD_SIZES: &[usize] = &[18, 200, 700, 1000, 1400];
const FLOOD_COUNT: u64 = 10_000;
/// The kernel's queue towards the host for the UDP test, longer than the
/// flood. With the default (1000 frames) a host slow to read (a loaded
/// machine) makes the kernel drop at the TAP, counted only as frames
/// (`tx_dropped`), and then and there the kernel's own frames (ARP, Router
/// Solicitations, MLD reports) may be among the dropped: a datagram count
/// off by one. With this queue every flood loss is one of the host's or
/// of the receiving socket's, each counted per datagram.
const FLOOD_TAP_QUEUE: &str = "16384";

/// Kernel counters of the lab's namespace: /proc/net/snmp (as
/// `UdpInErrors`, `IpInDiscards`) and /proc/net/snmp6 (`Udp6InErrors`).
fn snmp_counters(ns: &Netns) -> Counters {
    let mut counters = std::collections::BTreeMap::new();
    let read = |path: &str| {
        let output = ns.exec("cat", &[path]);
        assert!(output.status.success(), "cat {path} in the namespace");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // Pairs of lines: `Udp: InDatagrams NoPorts ...` then `Udp: 5 0 ...`.
    let snmp = read("/proc/net/snmp");
    let lines: Vec<&str> = snmp.lines().collect();
    for pair in lines.chunks(2) {
        let [names, values] = pair else { continue };
        let mut names = names.split_whitespace();
        let group = names.next().unwrap_or_default().trim_end_matches(':');
        for (name, value) in names.zip(values.split_whitespace().skip(1)) {
            if let Ok(value) = value.parse() {
                counters.insert(format!("{group}{name}"), value);
            }
        }
    }
    for line in read("/proc/net/snmp6").lines() {
        if let Some((name, value)) = line.split_once(char::is_whitespace) {
            if let Ok(value) = value.trim().parse() {
                counters.insert(name.to_string(), value);
            }
        }
    }
    counters
}

/// The statistics of the TAP's kernel side (as `tap_tx_dropped`); they
/// go with the TAP when the host ends.
fn tap_counters(ns: &Netns) -> Counters {
    ["tx_dropped", "rx_dropped", "tx_packets", "rx_packets"]
        .into_iter()
        .map(|stat| (format!("tap_{stat}"), ns.link_stat(TAP, stat)))
        .collect()
}

/// Named kernel counters.
type Counters = std::collections::BTreeMap<String, u64>;

/// What changed between two readings of the same counters.
fn counter_changes(before: &Counters, after: &Counters) -> Counters {
    after
        .iter()
        .map(|(name, &value)| {
            let was = before.get(name).copied().unwrap_or(0);
            (name.clone(), value.saturating_sub(was))
        })
        .collect()
}

fn udp_exchanges(family: Family, test: &str) {
    let Some(lab) = lab() else { return };
    // Dropped before the lab: after the captures, before the namespace.
    let scratch = TempDir::new(&format!("xfer-{test}"));
    let started = Instant::now();
    let to = SocketAddr::new(family.host(), 7);
    lab.ns
        .ip(&["link", "set", TAP, "txqueuelen", FLOOD_TAP_QUEUE]);
    let capture = Capture::start(&lab.ns, TAP, scratch.join("udp.pcapng"));
    let (snmp_before, tap_before) = (snmp_counters(&lab.ns), tap_counters(&lab.ns));
    let any: SocketAddr = match family {
        Family::V6 => "[::]:0".parse().unwrap(),
        Family::V4 => "0.0.0.0:0".parse().unwrap(),
    };
    // The socket stays in the namespace it was opened in.
    let socket = lab
        .ns
        .within(move || UdpSocket::bind(any).expect("bind a kernel UDP socket"));

    // Gentle: one at a time, each echo awaited, then a windowed mix.
    let sizes = one_by_one_sizes(family);
    let mut gentle = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        let one = Burst {
            first: i as u64 * 10,
            count: 1,
            sizes: &[size],
            window: Some(1),
        };
        gentle.push(exchange(&lab, &socket, to, &one));
    }
    let mix = Burst {
        first: 1_000,
        count: MIX_COUNT,
        sizes: MIX_SIZES,
        window: Some(WINDOW),
    };
    let mixed = exchange(&lab, &socket, to, &mix);
    let flood_started = Instant::now();
    let burst = Burst {
        first: 100_000,
        count: FLOOD_COUNT,
        sizes: FLOOD_SIZES,
        window: None,
    };
    let flood = exchange(&lab, &socket, to, &burst);
    let flood_took = flood_started.elapsed();
    // A barrier sent again because the host had no room for the first
    // may still be on its way: the host takes it before it stops, and
    // its echo is read after.
    wait_for_empty_tap(&lab);
    let mut kernel = counter_changes(&tap_before, &tap_counters(&lab.ns));
    let capture = capture.stop(&lab.ns);
    let mut late = 0;
    let (stopped, snmp) = lab.stop_then(|ns| {
        drain(&socket, &mut [0u8; 65_536], to, |_| late += 1);
        counter_changes(&snmp_before, &snmp_counters(ns))
    });
    kernel.extend(snmp);

    for (exchange, size) in gentle.iter().zip(&sizes) {
        assert_eq!(
            (exchange.echoed, exchange.corrupt),
            (1, 0),
            "{} UDP echo of {size} bytes: {exchange:?}\n{}",
            family.name(),
            stopped.stdout
        );
    }
    assert_eq!(
        (mixed.echoed, mixed.corrupt, mixed.send_errors),
        (MIX_COUNT, 0, 0),
        "{} windowed UDP mix: {mixed:?}\n{}",
        family.name(),
        stopped.stdout
    );
    assert_eq!((flood.corrupt, flood.duplicates), (0, 0), "{flood:?}");
    eprintln!(
        "{} UDP flood: {} sent in {:.2} s, {} echoed, {} lost",
        family.name(),
        flood.sent,
        flood_took.as_secs_f64(),
        flood.echoed,
        flood.sent - flood.echoed
    );
    let all = || gentle.iter().chain([&mixed, &flood]);
    let sent = all().map(Exchange::all_sent).sum();
    let echoed = all().map(Exchange::all_echoed).sum::<u64>() + late;
    check_udp_accounting(family, sent, echoed, &kernel, &stopped);
    stopped.assert_link_healthy(TAP);
    check_udp_capture(family, &capture);
    eprintln!("{test} took {:.1} s", started.elapsed().as_secs_f64());
}

/// Drop reasons of the host that are not about the test's datagrams, or
/// not losses: multicast frames for groups it did not join, and frames it
/// left in the TAP's queue for want of a buffer (read again later).
const NOT_LOSSES: &[&str] = &["ethernet_not_for_us", "rx_no_buffer"];

/// Every datagram the kernel sent is either echoed or counted as lost by
/// exactly one counter on its way, kernel or host:
///
/// ```text
/// kernel socket ─► TAP queue ─► host: UDP in ─► echo socket ─► echo service ─► UDP out ─► interface queue ─► TAP ─► kernel: IP ─► UDP ─► socket
///   SndbufErrors   tx_dropped       (other drops)  receive_queue_full  echo_dropped      queue_drops       rx_dropped  InDiscards  InErrors
/// ```
fn check_udp_accounting(
    family: Family,
    sent: u64,
    echoed: u64,
    kernel: &Counters,
    stopped: &Stopped,
) {
    let (udp, ip) = match family {
        Family::V6 => ("Udp6", "Ip6"),
        Family::V4 => ("Udp", "Ip"),
    };
    let k = |name: &str| kernel.get(name).copied().unwrap_or(0);
    let out_datagrams = k(&format!("{udp}OutDatagrams"));
    let sndbuf_errors = k(&format!("{udp}SndbufErrors"));
    let in_datagrams = k(&format!("{udp}InDatagrams"));
    let in_errors = k(&format!("{udp}InErrors"));
    let in_discards = k(&format!("{ip}InDiscards"));
    let (tap_tx_dropped, tap_rx_dropped) = (k("tap_tx_dropped"), k("tap_rx_dropped"));

    let service = "udp echo (7)";
    let datagrams_in = stopped.counter_on(service, "datagrams_in");
    let datagrams_out = stopped.counter_on(service, "datagrams_out");
    let echo_dropped = stopped.counter_on(service, "echo_dropped");
    let udp_received = stopped.counter("udp_received");
    let udp_sent = stopped.counter("udp_sent");
    let queue_full = optional_counter(stopped, "udp_receive_queue_full");
    let queue_drops = stopped.counter_on("interface queue", "queue_drops");
    let link_queue_full = stopped.counter_on(&format!("{TAP}: tx_frames"), "dropped_queue_full");
    let other: Vec<(String, u64)> = host_drops(stopped)
        .into_iter()
        .filter(|(reason, _)| {
            !NOT_LOSSES.contains(&reason.as_str()) && reason != "udp_receive_queue_full"
        })
        .collect();

    let table = format!(
        "{} UDP accounting: sent {sent}, echoed {echoed}, lost {}\n\
         kernel: {udp}OutDatagrams {out_datagrams} SndbufErrors {sndbuf_errors} \
         tap tx_dropped {tap_tx_dropped}\n\
         host: udp_received {udp_received} udp_receive_queue_full {queue_full} \
         datagrams_in {datagrams_in} echo_dropped {echo_dropped} datagrams_out {datagrams_out} \
         udp_sent {udp_sent} queue_drops {queue_drops} dropped_queue_full {link_queue_full} \
         other drops {other:?}\n\
         kernel: tap rx_dropped {tap_rx_dropped} {ip}InDiscards {in_discards} \
         {udp}InErrors {in_errors} (RcvbufErrors {}) {udp}InDatagrams {in_datagrams}",
        family.name(),
        sent - echoed,
        k(&format!("{udp}RcvbufErrors")),
    );
    eprintln!("{table}");
    let context = format!("{table}\nhost output:\n{}", stopped.stdout);
    assert!(other.is_empty(), "unexpected host drops\n{context}");
    assert_eq!(
        sent,
        out_datagrams + sndbuf_errors,
        "the kernel took every datagram sent\n{context}"
    );
    assert_eq!(
        sent,
        udp_received + sndbuf_errors + tap_tx_dropped,
        "each datagram reached the host's UDP or is counted lost before\n{context}"
    );
    assert_eq!(
        udp_received,
        datagrams_in + queue_full,
        "the echo service read each one the host's UDP took, or it overflowed the socket\n{context}"
    );
    assert_eq!(
        datagrams_in,
        datagrams_out + echo_dropped,
        "the echo service answered each one it read, or counted the refusal\n{context}"
    );
    assert_eq!(datagrams_out, udp_sent, "{context}");
    assert_eq!(
        datagrams_out,
        echoed + queue_drops + link_queue_full + tap_rx_dropped + in_discards + in_errors,
        "each echo reached the test's socket or is counted lost after the service\n{context}"
    );
    assert_eq!(
        echoed, in_datagrams,
        "the test read every echo the kernel delivered\n{context}"
    );
    assert_eq!(k(&format!("{udp}InCsumErrors")), 0, "{context}");
    assert_eq!(k(&format!("{udp}NoPorts")), 0, "{context}");
}

/// The UDP capture decodes cleanly, UDP checksums verified (after
/// tshark's reassembly of the fragmented ones), fragments both ways.
fn check_udp_capture(family: Family, path: &Path) {
    let (ip, fragment) = match family {
        Family::V6 => ("ipv6", "ipv6.fraghdr"),
        Family::V4 => ("ip", "ip.flags.mf == 1 || ip.frag_offset > 0"),
    };
    let from_host = format!("{ip}.src == {} && ({fragment})", family.host());
    let to_host = format!("{ip}.dst == {} && ({fragment})", family.host());
    let counts = check_clean_and_count(path, &["udp.checksum.status == 1", &from_host, &to_host]);
    let [verified, fragments_out, fragments_in] = counts[..] else {
        unreachable!()
    };
    assert!(verified >= MIX_COUNT, "{verified} UDP checksums verified");
    // 65 507 bytes alone are 45 fragments each way.
    assert!(
        fragments_out >= 45 && fragments_in >= 45,
        "fragments: {fragments_out} from the host, {fragments_in} to it"
    );
}

#[test]
fn udp_echoes_arrive_or_are_counted_lost_over_ipv6() {
    udp_exchanges(Family::V6, "udp6");
}

#[test]
fn udp_echoes_arrive_or_are_counted_lost_over_ipv4() {
    udp_exchanges(Family::V4, "udp4");
}
