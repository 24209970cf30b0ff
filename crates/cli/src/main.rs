//! `stackscope`: measure where time goes inside a network protocol stack.

mod attach;
mod calibrate;
mod compare;
mod experiment;
mod host;
mod iperf;
mod ktrace;
mod network;
mod out_dir;
mod sweep;
mod throughput;
mod trace;
mod ttcp;
mod xtp_args;

use clap::{Parser, Subcommand};

/// Measure where time goes inside a network protocol stack.
///
/// stackscope times every layer boundary, queue and cost centre (checksum,
/// copies, buffers, fragmentation, lookups) of a protocol stack with cheap
/// cycle-counter probes, measures and subtracts the probes' own cost, and
/// reports per-layer and per-category latency, throughput and queueing.
#[derive(Debug, Parser)]
#[command(name = "stackscope", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the classic studies' experiments on the reference stack and
    /// write a report: the main job.
    ///
    /// Runs the four built-in recipes (experiments/*.toml) on the embedded
    /// virtual network, no root, no setup: xie1999 (traced messages: start
    /// and stop latency, trend lines, cost shares, CPU shares, call tree,
    /// queues; over native IPv6, IPv4 and IPv6 over 6-over-4 with the
    /// tunnel's layer apart), papadopoulos1993 (socket buffer sweep, a traced 256 KB
    /// transfer's queues, stop-and-wait component delays, background
    /// load), taler1992 (throughput and delay 16 B..16 KB for TCP, UDP,
    /// XTP and raw frames, two circuits, mixed protocols, two-circuit and
    /// mixed delay beside one circuit alone, UDP offered load, traced XTP
    /// and TCP messages split per layer) and
    /// draves1998 (TCP over IPv4 and IPv6 against the header-cost
    /// prediction, and over configured, automatic and 6-over-4 tunnels
    /// against theirs, with each path's per-layer cost); the kernel's stack runs over loopback beside the
    /// reference stack where the recipe says so. Writes
    /// results/<UTC timestamp>/ (or --out DIR):
    ///   report.html      opens with where the time goes on each traced
    ///                    path (stacked bars, sentences with the biggest
    ///                    costs), contents and the machine; then plots
    ///                    (inline SVG) and tables; opens offline
    ///   summary.json     every figure: the opening summary, per-size
    ///                    latencies, trend lines
    ///                    (slope, intercept, R²), category shares, CPU
    ///                    shares, queues, sweep points, probe drops and
    ///                    overhead
    ///   *.csv            a table per run (sizes, CPU, sweep points)
    ///   trace.pcapng     every interface of the traced runs, each traced
    ///                    packet commented with its message
    ///   timeline.pftrace Perfetto trace (native protobuf) of the first
    ///                    run and the kernel runs (timelines/ has every
    ///                    run's); --timeline-format json: timeline.json
    ///                    (Chrome trace events) instead
    ///   traces/          probe traces (stackscope trace info FILE)
    ///   pcap/            pcapng capture of every interface per run
    /// A progress bar on stderr shows the steps (messages, sweep
    /// repetitions) done so far.
    #[command(verbatim_doc_comment)]
    Lab(experiment::LabArgs),
    /// Run one experiment recipe (a TOML file, see experiments/) and write
    /// its report, as `lab` does for the built-in ones.
    Run(experiment::RunArgs),
    /// Compare two result directories of `lab` or `run` (A the baseline,
    /// B the changed run): did the change make the stack faster?
    ///
    /// Every figure both summary.json files have is paired by where it is
    /// (recipe, run, size, sweep point configuration; never by position
    /// when an identity exists) and shown with both values, B/A and its
    /// 95 % interval. Figures with a spread on both sides (n, mean, stdev;
    /// fitted slopes with their interval) are tested by Welch's t-test.
    /// Hundreds are tested at once, so the p-values are corrected (default
    /// Holm–Bonferroni: the chance that noise alone makes any unchanged
    /// figure significant stays under 5 %; --correction bh for
    /// Benjamini–Hochberg), and a change must also exceed the noise
    /// threshold (--threshold, 2 %); each figure not marked says the
    /// smallest change that could have been. Single numbers get their
    /// ratio only, never a verdict. Nor does a figure measured in
    /// different machine states, as the gauges read around its
    /// repetitions say: core-to-core round trips spanning more than 1.5×
    /// over both runs; wake-up round trips between two threads, or the
    /// CPUs' time to copy and checksum a KiB, whose medians differ by
    /// more than 1.25×; or other processes' CPU use differing by more
    /// than half a CPU. On a virtual machine these move with the vCPUs'
    /// placement and speed, the scheduler and other work, not with the
    /// code. The tests know each run's own spread, not what no gauge
    /// saw: repeat both runs before trusting one lone difference.
    ///
    /// Prints a header (what A and B are), the significant differences,
    /// and counts of the rest (--all: everything, and the figures only one
    /// side has); --json prints the comparison as JSON instead. Writes
    /// compare.html into --out (default: B's directory).
    #[command(verbatim_doc_comment)]
    Compare(compare::CompareArgs),
    /// Measure the figures every measurement rests on: counter frequency,
    /// probe cost and overhead, checksum and memcpy throughput.
    ///
    /// * counter: the cycle counter's frequency against the monotonic clock
    ///   (tsc_hz).
    /// * probe, gate open / closed / untraced: nanoseconds per probe call when
    ///   it records, when tracing is off, and when only other flows are
    ///   traced (median and p99 over batches of 1000 calls).
    /// * probe overhead: cycles one probe adds between two others, by the
    ///   IPv6 study's doubled/tripled back-to-back probes; the analysis
    ///   subtracts it once per probe between two timestamps.
    /// * checksum and memcpy: GB/s (10^9 bytes/s) at 64 B, 1500 B and 64 KiB,
    ///   reference RFC 1071 loop vs the optimized sum.
    ///
    /// Run it on an otherwise idle machine: other load shows up in every
    /// figure.
    #[command(verbatim_doc_comment)]
    Calibrate(calibrate::CalibrateArgs),
    /// Inspect a probe trace file and convert it to CSV or a Perfetto timeline
    /// (native protobuf, or JSON).
    Trace(trace::TraceArgs),
    /// Trace a kernel transfer inside the Linux kernel with eBPF: TCP (or
    /// UDP, -u) messages over IPv6 (or IPv4, -4) across a veth pair
    /// between two network namespaces made for the run, recorded at the
    /// kernel's network tracepoints (and, in a cgroup made for the run, at
    /// IP output, transport input and the UDP send's start) for this flow
    /// only, written as a probe
    /// trace (-o, default kernel.trace; read it with `stackscope trace`).
    /// Needs root and BTF; a probe the kernel lacks is named with the
    /// reason and the rest run. See docs/kernel-probes.md.
    Ktrace(ktrace::KtraceArgs),
    /// Ping a host of a simulated network from another (ICMPv6 or ICMPv4
    /// Echo through the reference stack, on the simulator's virtual clock).
    ///
    /// Prints as iputils' ping does: one line per reply (icmp_seq, ttl,
    /// time), "From ROUTER icmp_seq=N Destination unreachable: …" for ICMP
    /// errors about a request, then the statistics and rtt
    /// min/avg/max/mdev. Exit status 0 when a reply came, 1 when none
    /// did, 2 on an error.
    ///
    /// With --json: {"destination", "sent", "received", "rtt_us": [..],
    /// "replies": [{"icmp_seq", "from", "bytes", "ttl", "rtt_us"}],
    /// "errors": [{"icmp_seq", "from", "message"}]}.
    #[command(verbatim_doc_comment)]
    Ping(network::PingArgs),
    /// List the routers between two hosts of a simulated network (UDP
    /// probes with growing hop limits; Time Exceeded from each router, Port
    /// Unreachable from the destination).
    ///
    /// A router's Destination Unreachable ends the trace, marked as
    /// traceroute does: !N no route, !H host or address unreachable, !A
    /// administratively prohibited, !P protocol, !F fragmentation needed,
    /// !S beyond scope.
    ///
    /// With --json: {"destination", "hops": [{"ttl", "addr",
    /// "unreachable"?}], "reached"}.
    #[command(verbatim_doc_comment)]
    Traceroute(network::TracerouteArgs),
    /// Show a host's network-layer state after a simulated run:
    /// interfaces with their NTEs (addresses, DAD state, lifetimes) and ADEs,
    /// neighbour caches with NUD states, routes, the destination cache with
    /// path MTUs, prefix and router lists, counters and drops per reason.
    ///
    /// The names are the MSR IPv6 stack's: IF an interface (a NIC, loopback
    /// or a tunnel), NTE an address it sends from, ADE an address it
    /// receives for, NCE a neighbour cache entry, RCE a route cache
    /// (destination cache) entry, PLE a prefix list entry, RLE a router
    /// list entry. A tunnel interface (a topology's [[host.tunnel]]) shows
    /// its kind and counters; a configured tunnel's endpoint is an NCE in
    /// the state PERMANENT (no ND).
    #[command(verbatim_doc_comment)]
    Ipv6(network::Ipv6Args),
    /// Send a stream of buffers from one end to the other and check every
    /// byte: ttcp's transmit/receive test (-t / -r, -l, -n, -u, -p, -b, -D)
    /// on the kernel's stack or the reference stack.
    ///
    /// Both ends in one process: --pair (loopback; --netns for a veth pair
    /// between two namespaces the tool makes, root only). Two processes:
    /// `stackscope ttcp -r` on the receiver, then `stackscope ttcp -t HOST`.
    ///
    /// -C NAME runs TCP with that congestion control at both ends (default:
    /// each stack's own, the system's for the kernel and CUBIC for the
    /// reference stack): give it when comparing the two stacks.
    ///
    /// The receiver checks every byte against the sender's pattern and
    /// counts corrupted, missing, duplicated and reordered bytes (TCP) or
    /// lost, duplicated, reordered and corrupted datagrams (UDP, raw); the
    /// exit status is non-zero if anything but UDP loss was found.
    ///
    /// With --json: iperf3's shape, {"start": {"test_start", "target"},
    /// "intervals" (with -i), "end": {"sum_sent", "sum_received",
    /// "cpu_utilization_percent"}}; "target" records the kernel, CPU,
    /// granted buffer sizes and congestion control.
    #[command(verbatim_doc_comment)]
    Ttcp(ttcp::TtcpArgs),
    /// iperf3's client and server with iperf3's options, interval lines
    /// and JSON, on the kernel's stack or the reference stack; they talk
    /// iperf3's control protocol, so either end can be Debian's iperf3.
    ///
    ///   stackscope iperf -s                        # a server on 5201
    ///   stackscope iperf -c localhost -t 5         # TCP, 5 s
    ///   stackscope iperf -c ::1 -u -b 200M -R -P 2 # UDP, server sends
    ///   stackscope iperf -c 192.0.2.2 -J           # iperf3's JSON
    ///   stackscope iperf -c HOST --stack ref --link tap --iface tap0 \
    ///       --addr 192.0.2.3/24                    # from the reference stack
    ///
    /// Options: -c HOST / -s (-1: one test), -p PORT (5201), -t SECS (10),
    /// -n BYTES / -k BLOCKS, -l LEN (TCP 128K, UDP 1460), -b RATE per stream (k/M/G,
    /// UDP default 1M), -u, -P N, -R, -w BYTES (socket buffers), -i SECS
    /// (1; 0 none), -J, -4/-6. Text output as iperf3's: a line per stream
    /// and interval (TCP sender: Retr and Cwnd; UDP receiver: jitter and
    /// lost/total), [SUM] with -P, then the sender's and receiver's
    /// summaries. -J: iperf3 3.12's JSON (start.connected, version,
    /// system_info, timestamp, test_start; intervals[].streams and sum with
    /// snd_cwnd, rtt, rttvar, retransmits or UDP's jitter_ms, lost_packets;
    /// end.streams, sum_sent, sum_received, sum (UDP),
    /// cpu_utilization_percent, sender/receiver_tcp_congestion), and
    /// stackscope's own under "stackscope". cwnd, RTT and retransmits come
    /// from TCP_INFO on the kernel, from the connection's control block on
    /// the reference stack. -s -J writes iperf3's server JSON, one
    /// document per test (log lines to stderr).
    #[command(verbatim_doc_comment)]
    Iperf(iperf::IperfArgs),
    /// Measure throughput or delay over a grid of points, each repeated:
    /// stack x protocol x family x socket buffer x offered load x size
    /// (the XTP study's thrput and dela programs, the SunOS socket-buffer
    /// and background-load runs, the IPv6 study's size sweeps).
    ///
    /// Lists take ranges with a step: --sizes 16,32,64 or 100..20000:100.
    /// Each point runs --reps times, then until the 95 % confidence
    /// interval of its mean is within --ci-target percent (default ±2 %)
    /// or --max-reps / --max-time stop it; every point reports n, mean,
    /// median, the interval and the verdict (met, rep cap, time cap). A
    /// busy machine (load average, other processes' CPU) is warned about,
    /// and so is a point whose repetitions ran in two machine states: the
    /// round trip of a cache line between two CPUs, measured before each
    /// repetition and after the last (core_trip_ns, its min and max),
    /// which on a virtual machine moves with
    /// the vCPUs' placement and moves cross-thread throughput with it.
    /// Throughput: per point the received bits/s (mean, its interval,
    /// median, sample stdev, min, max), sent bits/s, and for UDP/raw the
    /// loss; --rate
    /// paces UDP/raw points only (TCP points run once, unpaced). Delay:
    /// request/response echoes, round trips of all reps pooled (mean,
    /// p50/p90/p99 nearest-rank, min, max, a log histogram in the JSON)
    /// and, on the reference stack's threaded runner, the naps: times a
    /// host thread blocked inside a measured exchange (0 expected).
    /// --load N runs N CPU-bound processes throughout.
    ///
    /// Every point is checked before the first runs. Output: a progress
    /// bar on stderr (terminals only), a table on stdout, and with
    /// --out DIR sweep.csv (one row per point; columns such as size_bytes,
    /// mean_bps, p99_us) and sweep.json ({"mode", "command",
    /// "environment", "points": [...]} with per-rep values, histograms and
    /// each point's target record). Exit status is non-zero if a point
    /// failed (the points before it are still written) or a receiver found
    /// damaged or duplicated data.
    #[command(verbatim_doc_comment)]
    Sweep(sweep::SweepArgs),
    /// Run the reference stack as a host on real links (TAP devices it
    /// creates, or existing interfaces over AF_PACKET), with the Linux
    /// kernel or another host as its peer, until SIGINT/SIGTERM.
    ///
    /// It answers pings (ICMPv6 and ICMPv4 echo) and serves UDP and TCP
    /// echo (port 7), discard (9), a ttcp sink (5001) and an iperf3
    /// server (5201: `iperf3 -c` with -u, -R, -P, -t, -n, -l, -b, -J) on
    /// IPv6 and IPv4; prints its interfaces and addresses as they are assigned
    /// (SLAAC when no IPv6 address is given), and on SIGINT or SIGTERM
    /// its counters: host, per service, per link, drops by reason.
    /// Creating TAPs, AF_PACKET and entering namespaces need root.
    #[command(verbatim_doc_comment)]
    Host(host::HostArgs),
}

fn main() -> std::process::ExitCode {
    // Like every Unix filter: stop quietly when the reader of our output
    // goes away (`stackscope sweep | head`), instead of panicking on
    // EPIPE.
    // SAFETY: setting SIGPIPE's disposition to the default before any
    // thread exists; no handler runs our code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    // One line per error, causes joined with ": ", whatever RUST_BACKTRACE
    // says: errors here are the user's to fix, not crashes to debug.
    match run(&cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // A command that has said everything and chose its status (ping:
        // 1 when nothing came back, 2 on error, as iputils).
        Err(error) if error.downcast_ref::<network::Exit>().is_some() => {
            let network::Exit(code) = error.downcast_ref::<network::Exit>().expect("matched");
            std::process::ExitCode::from(*code)
        }
        Err(error) => {
            eprintln!("stackscope: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    match &cli.command {
        Command::Lab(args) => experiment::lab(args),
        Command::Run(args) => experiment::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Trace(args) => trace::run(args),
        Command::Ktrace(args) => ktrace::run(args),
        Command::Ping(args) => network::ping(args),
        Command::Traceroute(args) => network::traceroute(args),
        Command::Ipv6(args) => network::ipv6(args),
        Command::Ttcp(args) => ttcp::run(args),
        Command::Iperf(args) => iperf::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Host(args) => host::run(args),
    }
}
