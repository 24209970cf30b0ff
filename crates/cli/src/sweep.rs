//! `stackscope sweep`: runs a grid of throughput or delay points, each
//! repeated until the 95 % interval of its mean is within `--ci-target`
//! or a cap (`--max-reps`, `--max-time`), with a progress bar and busy-
//! machine warnings on stderr, a readable table on stdout and
//! `sweep.csv` / `sweep.json` in `--out DIR`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use traffic::kernel::KernelPath;
use traffic::run::{KernelPeer, PeerLink};
use traffic::spec::{Family, Protocol, StackKind};
use traffic::sweep::load::LoadOn;
use traffic::sweep::{
    self, axis, table, text, Amount, Event, Grid, Mode, Settings, Target, Targets, DELAY_EXCHANGES,
};
use traffic::units;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Bulk transfers: received and sent bits per second, loss.
    Throughput,
    /// Request/response echoes: round-trip times.
    Delay,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// What each point measures.
    #[arg(long, value_enum, default_value = "throughput")]
    mode: ModeArg,
    /// Message sizes in bytes: a list, ranges START..END:STEP (END included
    /// when a step lands on it), or both, e.g. 16,32,64 or 100..20000:100
    /// or 16,1K..16K:1K.
    #[arg(long, value_name = "LIST", default_value = "16,64,256,1K,4K,16K")]
    sizes: String,
    /// Bytes per flow and repetition; count = ceil(BYTES / size), as the
    /// XTP study sent 2 MB per point [default: 2M; in delay mode, at most
    /// 10000 exchanges].
    #[arg(long, value_name = "BYTES", conflicts_with = "count")]
    total: Option<String>,
    /// Writes (throughput) or exchanges (delay) per flow and repetition,
    /// whatever the size.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// The fewest repetitions per point; more follow until the 95 %
    /// confidence interval of the point's mean is within --ci-target, or
    /// --max-reps or --max-time stops it. Mean, median, the interval,
    /// min and max are over them. For exactly N repetitions give
    /// --max-reps N as well.
    #[arg(long, value_name = "N", default_value_t = 3)]
    reps: u32,
    /// Repeat a point until the half-width of the 95 % confidence
    /// interval of its mean is at most this many percent of the mean (2
    /// is ±2 %; in percent, not a fraction). The table and files say per
    /// point whether it was met or which cap stopped it.
    #[arg(long, value_name = "PERCENT", default_value_t = 2.0)]
    ci_target: f64,
    /// The most repetitions of a point, target met or not.
    #[arg(long, value_name = "N", default_value_t = 30)]
    max_reps: u32,
    /// The longest one point repeats, in seconds: no new repetition
    /// starts after it (the last one may end after it; --reps are always
    /// run).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    max_time: f64,
    /// Protocols, one point each: tcp, udp, raw (link-level frames), xtp
    /// (XTP associations, the reference stack only).
    #[arg(long, value_name = "LIST", default_value = "tcp")]
    proto: String,
    /// Protocols run at the same time in every point (one flow of each),
    /// e.g. tcp,udp; instead of --proto. In delay mode one echo series of
    /// each, each timing its own round trips (the XTP study's "TCP with
    /// XTP"), and each protocol is also run alone at every size, the
    /// baseline; raw frames are not mixed (their echoes would answer each
    /// other).
    #[arg(long, value_name = "LIST", conflicts_with = "proto")]
    mix: Option<String>,
    #[command(flatten)]
    xtp: crate::xtp_args::XtpArgs,
    /// Stacks: kernel (the OS's sockets), ref (the reference stack).
    #[arg(long, value_name = "LIST", default_value = "kernel")]
    stack: String,
    /// IP families: 4, 6 (raw frames have none and run once).
    #[arg(long, value_name = "LIST", default_value = "6")]
    family: String,
    /// Concurrent copies of each point's flow(s), each on its own port
    /// (--port + i). Throughput: per-circuit and aggregate figures. Delay:
    /// each circuit's echo series times its own round trips, the point's
    /// figure pooling them (the XTP study's Table 6); each protocol is
    /// also run alone at every size, the one-circuit baseline; not with
    /// raw frames.
    #[arg(long, value_name = "N", default_value_t = 1)]
    circuits: u32,
    /// Delay mode: each exchange on a connection of its own, timed from
    /// the connect call to the answer's last byte (a transaction with its
    /// setup: XTP's FIRST carries the request, TCP's handshake comes
    /// first). TCP and XTP only.
    #[arg(long = "connect-each")]
    connect_each: bool,
    /// Socket buffer sizes (SO_SNDBUF and SO_RCVBUF), a list or ranges,
    /// e.g. 4K,16K,64K [default: the OS's].
    #[arg(long, value_name = "LIST")]
    sockbuf: Option<String>,
    /// TCP's congestion control at both ends of every TCP flow, by its
    /// Linux name, as ttcp's -C (UDP, raw and XTP flows have none): the
    /// kernel sets it on each socket, the reference stack has cubic and
    /// reno (NewReno; `newreno` too). A stack of the sweep that lacks it
    /// is refused before the first point. Default: the system's default
    /// for the kernel (net.ipv4.tcp_congestion_control), CUBIC for the
    /// reference stack; each point's congestion_control column says what
    /// its senders ran.
    #[arg(short = 'C', long = "congestion", value_name = "NAME",
          value_parser = crate::ttcp::parse_congestion)]
    congestion: Option<traffic::congestion::Congestion>,
    /// Offered loads for UDP and raw points in bits per second, a list or
    /// ranges, e.g. 10M..100M:10M; TCP points run once, unpaced.
    #[arg(long, value_name = "LIST")]
    rate: Option<String>,
    /// CPU-bound background processes (spinners) during each point: one
    /// level, or a list or range of levels swept as the outermost axis,
    /// e.g. 0,1,2,4 (the SunOS study's "artificial workload level"); at
    /// most 64. Ctrl-C (or the sweep's death) stops them at once.
    #[arg(long, value_name = "LIST", default_value = "0")]
    load: String,
    /// Where the load runs, a list (each a point of its own): `both`
    /// leaves the spinners and the two sides to the scheduler; `server`
    /// and `client` put the receiver's thread on the first CPU this
    /// process may use and the sender's on the second (kernel: the
    /// sockets' threads; ref: the two hosts' threads, on a topology of two
    /// hosts), and pin the spinners to the server's or the client's CPU.
    /// Each point's `pinned` says whether every pin held (false when the
    /// kernel refused one or there is one CPU). Throughput mode, one flow
    /// per point.
    #[arg(long, value_name = "LIST", default_value = "both")]
    load_on: String,
    /// Repeat the points of each load level in rounds — one repetition
    /// of every point not yet known per round — instead of each point's
    /// repetitions back to back: points compared with each other (IPv4
    /// and IPv6, two sizes) then see the same machine states, and a
    /// disturbance lands on one repetition of several points rather than
    /// on all of one. Each point's time cap counts its own repetitions.
    #[arg(long)]
    interleave: bool,
    /// Kernel: run across a veth pair between two network namespaces the
    /// tool makes and removes (root only), instead of loopback.
    #[arg(long)]
    netns: bool,
    /// MTU of the veth pair (--netns, --link).
    #[arg(long, default_value_t = 1500)]
    mtu: u32,
    /// Reference stack against the kernel, instead of on the reference
    /// stack's own network: `packet` runs every ref point across a veth
    /// pair between two namespaces the tool makes, the reference stack on
    /// one end (AF_PACKET) and the kernel on the other (--ref-end); `tap`
    /// across a TAP in a namespace, the kernel on its kernel side. With
    /// `--stack kernel,ref --netns --link packet` the kernel-to-kernel and
    /// kernel-to-reference points cross the same kind of veth path in one
    /// run. Root only; TCP and UDP transfers, one flow per point.
    #[arg(long, value_enum, value_name = "KIND")]
    link: Option<SweepLink>,
    /// --link: which end the reference stack is (the kernel is the other).
    #[arg(
        long,
        value_enum,
        value_name = "END",
        default_value = "receiver",
        requires = "link"
    )]
    ref_end: crate::ttcp::RefEndArg,
    /// Reference stack: topology file (default: host-a — router —
    /// host-b).
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// First port; concurrent flows take the next ones.
    #[arg(short = 'p', long, default_value_t = 5001,
          value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Give up after SECS seconds waiting for the peer or for data.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
    /// Every throughput point lasts at least SECONDS: its sender goes on
    /// past --total/--count until its window (first write to the last
    /// byte acknowledged, TCP; to the last datagram handed to the stack,
    /// UDP and raw) is this long; a point with a window under half of it
    /// (a receiver's) is marked `too short`, not given as a result. 0
    /// turns it off. `--time` is the same flag (iperf3's -t).
    #[arg(
        long,
        visible_alias = "time",
        value_name = "SECONDS",
        default_value_t = 1.0
    )]
    min_duration: f64,
    /// Write sweep.csv and sweep.json into DIR (created if needed;
    /// refused if it already holds files, unless --force).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Write into an --out directory that already holds files.
    #[arg(long)]
    force: bool,
}

/// What `sweep --link` attaches the reference stack to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepLink {
    /// AF_PACKET on one end of a veth pair the tool makes.
    Packet,
    /// A TAP the tool makes in a namespace; the kernel is its other side.
    Tap,
}

pub(crate) fn protocol(name: &str) -> Option<Protocol> {
    match name {
        "tcp" => Some(Protocol::Tcp),
        "udp" => Some(Protocol::Udp),
        "raw" => Some(Protocol::Raw),
        "xtp" => Some(Protocol::Xtp),
        _ => None,
    }
}

pub(crate) fn stack(name: &str) -> Option<StackKind> {
    match name {
        "kernel" => Some(StackKind::Kernel),
        "ref" => Some(StackKind::Ref),
        _ => None,
    }
}

pub(crate) fn family(name: &str) -> Option<Family> {
    match name {
        "4" | "ipv4" => Some(Family::V4),
        "6" | "ipv6" => Some(Family::V6),
        _ => None,
    }
}

/// A numeric axis whose items must fit a `usize`-sized parameter.
fn sizes(flag: &str, text: &str) -> Result<Vec<u64>> {
    axis::numbers(flag, text, units::parse_size).map_err(anyhow::Error::msg)
}

/// Background load levels: counts of processes.
pub(crate) fn loads(flag: &str, text: &str) -> Result<Vec<u32>> {
    axis::numbers(flag, text, |t| {
        t.parse::<u32>()
            .map(u64::from)
            .map_err(|_| format!("`{t}` is not a number of processes"))
    })
    .map_err(anyhow::Error::msg)?
    .into_iter()
    .map(|n| u32::try_from(n).map_err(|_| anyhow::anyhow!("{flag}: {n} is too many")))
    .collect()
}

/// A list of names.
fn names<T>(
    flag: &str,
    text: &str,
    parse: fn(&str) -> Option<T>,
    expected: &str,
) -> Result<Vec<T>> {
    axis::names(flag, text, parse, expected).map_err(anyhow::Error::msg)
}

impl SweepArgs {
    fn grid(&self) -> Result<Grid> {
        let amount = match (self.count, &self.total) {
            (Some(0), _) => bail!("--count must be at least 1"),
            (Some(n), _) => Amount::Count(n),
            (None, Some(text)) => match units::parse_size(text).map_err(anyhow::Error::msg)? {
                0 => bail!("--total must be at least 1 byte"),
                bytes => Amount::Total(bytes),
            },
            (None, None) => match self.mode {
                ModeArg::Throughput => Amount::Total(2 << 20),
                ModeArg::Delay => Amount::TotalUpTo {
                    total: 2 << 20,
                    max: DELAY_EXCHANGES,
                },
            },
        };
        if !(self.timeout.is_finite() && self.timeout > 0.0 && self.timeout <= 86_400.0) {
            bail!(
                "--timeout {} is impossible: use a number of seconds above 0 and at most a day",
                self.timeout
            );
        }
        if !(self.min_duration.is_finite() && (0.0..=86_400.0).contains(&self.min_duration)) {
            bail!(
                "--min-duration {} is impossible: use 0 to 86400 seconds",
                self.min_duration
            );
        }
        if self.connect_each && self.mode != ModeArg::Delay {
            bail!("--connect-each times exchanges: give --mode delay");
        }
        Ok(Grid {
            min_duration: (self.min_duration > 0.0)
                .then(|| Duration::from_secs_f64(self.min_duration)),
            mode: match self.mode {
                ModeArg::Throughput => Mode::Throughput,
                ModeArg::Delay => Mode::Delay,
            },
            stacks: names("--stack", &self.stack, stack, "kernel, ref")?,
            protocols: names("--proto", &self.proto, protocol, "tcp, udp, raw, xtp")?,
            mix: self
                .mix
                .as_deref()
                .map(|m| names("--mix", m, protocol, "tcp, udp, raw, xtp"))
                .transpose()?,
            families: names("--family", &self.family, family, "4, 6")?,
            sockbufs: self
                .sockbuf
                .as_deref()
                .map(|text| sizes("--sockbuf", text))
                .transpose()?
                .unwrap_or_default(),
            rates: self
                .rate
                .as_deref()
                .map(|text| axis::numbers("--rate", text, units::parse_rate))
                .transpose()
                .map_err(anyhow::Error::msg)?
                .unwrap_or_default(),
            sizes: sizes("--sizes", &self.sizes)?,
            amount,
            circuits: self.circuits,
            port: self.port,
            timeout: Duration::from_secs_f64(self.timeout),
            loads: loads("--load", &self.load)?,
            xtp: self.xtp.options()?,
            congestion: self.congestion,
            connect_each: self.connect_each,
            load_on: names("--load-on", &self.load_on, LoadOn::parse, LoadOn::NAMES)?,
        })
    }

    /// When a point has been repeated enough.
    fn target(&self) -> Result<Target> {
        if !(self.ci_target.is_finite() && self.ci_target > 0.0 && self.ci_target <= 100.0) {
            bail!(
                "--ci-target {} is impossible: give a percentage above 0 and at most 100 (2 is ±2 %)",
                self.ci_target
            );
        }
        if !(self.max_time.is_finite() && self.max_time > 0.0 && self.max_time <= 3600.0) {
            bail!(
                "--max-time {} is impossible: give seconds above 0 and at most 3600",
                self.max_time
            );
        }
        if self.reps == 0 {
            bail!("--reps must be at least 1");
        }
        if self.max_reps < self.reps {
            bail!(
                "--max-reps {} is below --reps {}: give at least as many",
                self.max_reps,
                self.reps
            );
        }
        let target = Target {
            relative: self.ci_target / 100.0,
            min_reps: self.reps as usize,
            max_reps: self.max_reps as usize,
            max_time: Duration::from_secs_f64(self.max_time),
        };
        sweep::repeat::check(&target).map_err(anyhow::Error::from)?;
        Ok(target)
    }

    fn targets(&self, grid: &Grid) -> Result<Targets> {
        let uses = |s| grid.stacks.contains(&s);
        if self.netns && !uses(StackKind::Kernel) {
            bail!("--netns is for --stack kernel; the reference stack has its own network");
        }
        if self.topology.is_some() && !uses(StackKind::Ref) {
            bail!("--topology is for --stack ref");
        }
        if self.link.is_some() && !uses(StackKind::Ref) {
            bail!("--link attaches the reference stack: add ref to --stack");
        }
        if self.link.is_some() && self.topology.is_some() {
            bail!(
                "--link runs the reference stack on a veth pair, not a topology: drop --topology"
            );
        }
        if uses(StackKind::Ref) && self.link.is_none() {
            // Read now, so a bad file fails before the kernel points run.
            let topology = traffic::reference::load(self.topology.as_deref())?;
            traffic::reference::hosts(&topology)?;
            // A side load pins every node's thread: a router's could not be.
            let nodes = topology.nodes().len();
            if grid.load_on.iter().any(|&s| s != LoadOn::Both) && nodes != 2 {
                bail!(
                    "--load-on server or client puts the reference stack's two hosts on two \
                     CPUs: give a --topology of two hosts on one wire (this one has {nodes} \
                     nodes), e.g. topologies/fast-ethernet.toml"
                );
            }
        }
        Ok(Targets {
            kernel_path: if self.netns {
                KernelPath::Netns { mtu: self.mtu }
            } else {
                KernelPath::Loopback
            },
            topology: self.topology.clone(),
            ref_link: self.link.map(|link| KernelPeer {
                link: match link {
                    SweepLink::Packet => PeerLink::Packet,
                    SweepLink::Tap => PeerLink::Tap,
                },
                mtu: self.mtu,
                ref_end: self.ref_end.into(),
                offload: stack::iface::offload::Offload::NONE,
            }),
        })
    }
}

pub fn run(args: &SweepArgs) -> Result<()> {
    let grid = args.grid()?;
    let target = args.target()?;
    let targets = args.targets(&grid)?;
    let points = grid.points(targets.kernel_path)?;
    // Made before the first point, so a bad --out fails now and not after
    // an hour of measuring.
    if let Some(dir) = &args.out {
        crate::out_dir::prepare(dir, args.force)?;
    }
    let settings = Settings {
        target,
        targets,
        interleave: args.interleave,
    };

    let bar = progress_bar(points.len() as u64);
    let outcome = sweep::run(&points, &settings, |event| match event {
        Event::Rep(p) => {
            bar.set_position(p.points_done as u64);
            bar.set_message(format!(
                "{} rep {} (at least {})",
                p.point, p.rep, args.reps
            ));
        }
        // Above the bar, so it stays readable.
        Event::Busy(warning) => bar.suspend(|| eprintln!("stackscope: warning: {warning}")),
    });
    bar.finish_and_clear();
    let outcome = outcome?;

    let failure = outcome.failure.as_ref().map(ToString::to_string);
    if let Some(dir) = &args.out {
        write_files(dir, &grid, &settings, &outcome, failure.as_deref())?;
    }
    if !outcome.results.is_empty() {
        print!("{}", text::render(grid.mode, &outcome.results));
    }
    let missed: Vec<String> = outcome
        .results
        .iter()
        .filter(|r| !r.run().verdict.met())
        .map(|r| r.point().index.to_string())
        .collect();
    if !missed.is_empty() {
        eprintln!(
            "stackscope: {} of {} points stopped at a cap with the 95 % interval wider than \
             ±{} % (point(s) {}; see the table's target column): their means are less \
             certain than asked",
            missed.len(),
            outcome.results.len(),
            args.ci_target,
            missed.join(", ")
        );
    }
    let unpinned: Vec<String> = outcome
        .results
        .iter()
        .filter(|r| r.point().load_on != LoadOn::Both && r.run().pinned != Some(true))
        .map(|r| r.point().index.to_string())
        .collect();
    if !unpinned.is_empty() {
        eprintln!(
            "stackscope: warning: point(s) {} were to put their load on one side, but a pin \
             did not hold or the machine has one CPU: their sides and load ran where the \
             scheduler put them (pinned = false in the files, `!unpinned` above)",
            unpinned.join(", ")
        );
    }
    if let Some(failure) = failure {
        bail!(
            "{failure} ({} of {} points finished{})",
            outcome.results.len(),
            points.len(),
            if args.out.is_some() {
                " and were written"
            } else {
                ""
            }
        );
    }
    let flagged: Vec<String> = outcome
        .results
        .iter()
        .filter(|r| !r.clean())
        .map(|r| r.point().index.to_string())
        .collect();
    if !flagged.is_empty() {
        bail!(
            "the receiver found damaged, duplicated or missing data at point(s) {} \
             (marked ! in the table)",
            flagged.join(", ")
        );
    }
    Ok(())
}

/// A bar on stderr when it is a terminal; nothing otherwise, so logs and
/// pipes get no control characters.
fn progress_bar(points: u64) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(points);
    if let Ok(style) = ProgressStyle::with_template(
        "{bar:30} {pos}/{len} points, {elapsed} (eta {eta})  {wide_msg}",
    ) {
        bar.set_style(style);
    }
    bar
}

fn write_files(
    dir: &Path,
    grid: &Grid,
    settings: &Settings,
    outcome: &sweep::Outcome,
    failure: Option<&str>,
) -> Result<()> {
    let results = &outcome.results;
    let csv_path = dir.join("sweep.csv");
    std::fs::write(&csv_path, table::csv(grid.mode, results))
        .with_context(|| format!("cannot write {}", csv_path.display()))?;
    let command = command_line();
    let json = table::json(&table::Sweep {
        mode: grid.mode,
        command: &command,
        target: &settings.target,
        loads: &grid.loads,
        load_on: &grid.load_on,
        load_check: &outcome.load_check,
        results,
        failure,
    });
    let json_path = dir.join("sweep.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)? + "\n")
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    eprintln!(
        "stackscope: wrote {} and {}",
        csv_path.display(),
        json_path.display()
    );
    Ok(())
}

/// This process's command line, words with spaces or quotes quoted, for
/// the record.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"\\$".contains(c)) {
                format!("'{}'", a.replace('\'', r"'\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
