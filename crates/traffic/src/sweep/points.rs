//! The grid of a sweep and its points: the cartesian product stack ×
//! protocol × family × socket buffer × rate × size, each point turned into
//! the transfer or echo specs it runs and checked before anything runs.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use super::axis::MAX_POINTS;
use super::load::{LoadOn, MAX_LOAD};
use crate::congestion::Congestion;
use crate::error::TrafficError;
use crate::kernel::KernelPath;
use crate::spec::{EchoSpec, Family, Protocol, StackKind, TransferSpec, XtpOptions};

/// What each point measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Bulk transfers: received bits per second.
    Throughput,
    /// Request/response echoes: round-trip times.
    Delay,
}

/// How much each point moves per repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// This many bytes per flow: count = ceil(total / size), as the XTP
    /// study sent 2 MB per point whatever the message size.
    Total(u64),
    /// This many writes (or exchanges) whatever the size.
    Count(u64),
    /// As `Total`, but at most `max` writes or exchanges: delay mode's
    /// default, so tiny messages do not ask for millions of round trips.
    TotalUpTo { total: u64, max: u64 },
}

/// Delay mode's default cap on exchanges per point and repetition: enough
/// for a steady 99th percentile (a hundred samples above it).
pub const DELAY_EXCHANGES: u64 = 10_000;

impl Amount {
    fn count(self, size: u64) -> u64 {
        match self {
            // A zero size is refused by the spec's validation; count 1 here
            // only avoids dividing by it first.
            Amount::Total(total) => total.div_ceil(size.max(1)).max(1),
            Amount::Count(n) => n,
            Amount::TotalUpTo { total, max } => Amount::Total(total).count(size).min(max.max(1)),
        }
    }
}

/// The parsed flags of a sweep.
#[derive(Debug, Clone)]
pub struct Grid {
    pub mode: Mode,
    pub stacks: Vec<StackKind>,
    /// Each protocol is a point of its own...
    pub protocols: Vec<Protocol>,
    /// ...unless a mix is given: then every point runs one flow of each of
    /// these at the same time (and `protocols` is ignored).
    pub mix: Option<Vec<Protocol>>,
    pub families: Vec<Family>,
    /// Requested SO_SNDBUF/SO_RCVBUF values; empty for the OS default.
    pub sockbufs: Vec<u64>,
    /// Offered loads in bits per second; empty for unpaced. They apply to
    /// UDP and raw flows only: a TCP-only point is run once, unpaced.
    pub rates: Vec<u64>,
    pub sizes: Vec<u64>,
    pub amount: Amount,
    /// Concurrent copies of each point's flow(s). In delay mode each
    /// protocol of a point with several flows is also run alone, the
    /// baseline its circuits' delays are set against.
    pub circuits: u32,
    /// The first flow's port; concurrent flows take the next ones (the
    /// circuits runner assigns them).
    pub port: u16,
    pub timeout: Duration,
    /// Every throughput point's sender goes on past its count until its
    /// window lasts this long; a point whose windows are still shorter is
    /// marked too short.
    pub min_duration: Option<Duration>,
    /// Background load levels (CPU-bound processes), the outermost axis;
    /// empty for none.
    pub loads: Vec<u32>,
    /// Where the load runs, each a point of its own; empty for `both`.
    pub load_on: Vec<LoadOn>,
    /// XTP's association options, for the XTP points.
    pub xtp: XtpOptions,
    /// TCP's congestion control (`-C`), for the TCP flows; each stack's
    /// default if `None`.
    pub congestion: Option<Congestion>,
    /// Delay: each exchange on a new connection (`EchoSpec::connect_each`).
    pub connect_each: bool,
}

/// The most concurrent flows a point may have (circuits × mix).
pub const MAX_FLOWS: u64 = 64;

/// One point of the grid, ready to run.
#[derive(Debug, Clone)]
pub struct Point {
    /// 1-based, in run order.
    pub index: usize,
    pub stack: StackKind,
    /// `tcp`, or a mix such as `tcp+udp`.
    pub protocol: String,
    /// `None` when every flow is raw link-level frames, which have no IP
    /// family.
    pub family: Option<Family>,
    pub size_bytes: u64,
    /// Writes (throughput) or exchanges (delay) per flow and repetition.
    pub count: u64,
    pub sockbuf_bytes: Option<u64>,
    /// Offered load per paced (UDP, raw) flow.
    pub rate_bps: Option<u64>,
    pub circuits: u32,
    /// CPU-bound background processes during the point...
    pub load: u32,
    /// ...and where they ran (and whether the sides were pinned).
    pub load_on: LoadOn,
    pub work: Work,
}

/// What a point runs.
#[derive(Debug, Clone)]
pub enum Work {
    /// Throughput: these flows at the same time (one unless --circuits or
    /// --mix).
    Transfer(Vec<TransferSpec>),
    /// Delay: these echo series at the same time, each timing its own
    /// exchanges (one unless --circuits or --mix).
    Echo(Vec<EchoSpec>),
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "point {} ({} {}", self.index, self.stack, self.protocol)?;
        if let Some(family) = self.family {
            write!(f, " {family}")?;
        }
        write!(f, " {} B", self.size_bytes)?;
        if let Some(b) = self.sockbuf_bytes {
            write!(f, " sockbuf {b}")?;
        }
        if let Some(r) = self.rate_bps {
            write!(f, " rate {}", crate::units::bits_per_second(r as f64))?;
        }
        if self.circuits > 1 {
            write!(f, " x{} circuits", self.circuits)?;
        }
        if self.load > 0 || self.load_on != LoadOn::Both {
            write!(f, " load {}", self.load)?;
            if self.load_on != LoadOn::Both {
                write!(f, " on {}", self.load_on)?;
            }
        }
        f.write_str(")")
    }
}

fn datagram(p: Protocol) -> bool {
    !p.is_stream()
}

impl Grid {
    /// The XTP options for a point's `protocol` (none but XTP's take them).
    fn xtp_for(&self, protocol: Protocol) -> XtpOptions {
        match protocol {
            Protocol::Xtp => self.xtp,
            _ => XtpOptions::default(),
        }
    }

    /// The congestion control for a flow of `protocol` (TCP's only).
    fn congestion_for(&self, protocol: Protocol) -> Option<Congestion> {
        self.congestion.filter(|_| protocol == Protocol::Tcp)
    }

    /// Every point, validated: a bad point (impossible size, a protocol
    /// the target lacks, a grid too large) fails here, before anything
    /// runs.
    pub fn points(&self, kernel_path: KernelPath) -> Result<Vec<Point>, TrafficError> {
        self.check_shape()?;
        let groups: Vec<Vec<Protocol>> = match &self.mix {
            Some(mix) => vec![mix.clone()],
            None => self.protocols.iter().map(|&p| vec![p]).collect(),
        };
        let groups = self.with_baselines(groups);
        let sockbufs: Vec<Option<u64>> = if self.sockbufs.is_empty() {
            vec![None]
        } else {
            self.sockbufs.iter().copied().map(Some).collect()
        };
        let paced: Vec<Option<u64>> = if self.rates.is_empty() {
            vec![None]
        } else {
            self.rates.iter().copied().map(Some).collect()
        };
        let unpaced = [None];
        let loads = if self.loads.is_empty() {
            vec![0]
        } else {
            self.loads.clone()
        };
        let load_ons = if self.load_on.is_empty() {
            vec![LoadOn::Both]
        } else {
            self.load_on.clone()
        };
        let levels = loads.len() as u64 * load_ons.len() as u64;

        // Counted before built, so a huge grid is refused without
        // allocating it.
        let per_size = sockbufs.len() as u64 * self.sizes.len() as u64;
        let mut total: u64 = 0;
        for (group, _) in &groups {
            let families = if group.iter().all(|&p| p == Protocol::Raw) {
                1
            } else {
                self.families.len() as u64
            };
            let rates = if group.iter().any(|&p| datagram(p)) {
                paced.len() as u64
            } else {
                1
            };
            total = total.saturating_add(
                (self.stacks.len() as u64)
                    .saturating_mul(families)
                    .saturating_mul(rates)
                    .saturating_mul(per_size),
            );
        }
        let total = total.saturating_mul(levels);
        if total > MAX_POINTS {
            return Err(TrafficError::Invalid(format!(
                "the grid has {total} points: a sweep has at most {MAX_POINTS}; \
                 use fewer sizes, rates, buffer sizes or load levels"
            )));
        }

        let mut points = Vec::with_capacity((total / levels.max(1)) as usize);
        for &stack in &self.stacks {
            for (group, circuits) in &groups {
                // Raw frames have no family: one point, not one per family.
                let families: Vec<Option<Family>> = if group.iter().all(|&p| p == Protocol::Raw) {
                    vec![None]
                } else {
                    self.families.iter().copied().map(Some).collect()
                };
                let rates: &[Option<u64>] = if group.iter().any(|&p| datagram(p)) {
                    &paced
                } else {
                    &unpaced
                };
                for &family in &families {
                    for &sockbuf in &sockbufs {
                        for &rate in rates {
                            for &size in &self.sizes {
                                let point = self.point(
                                    points.len() + 1,
                                    stack,
                                    (group, *circuits),
                                    family,
                                    sockbuf,
                                    rate,
                                    size,
                                )?;
                                check_target(&point, kernel_path)?;
                                points.push(point);
                            }
                        }
                    }
                }
            }
        }
        // Each configuration at every level, sides of a level together
        // so slow drifts of the machine touch both sides' curves alike.
        let mut all = Vec::with_capacity(total as usize);
        for &load in &loads {
            for &load_on in &load_ons {
                for base in &points {
                    all.push(Point {
                        index: all.len() + 1,
                        load,
                        load_on,
                        ..base.clone()
                    });
                }
            }
        }
        Ok(all)
    }

    /// Each group of protocols with the circuits it runs. In delay mode a
    /// group of several flows is preceded by each of its protocols alone
    /// (one circuit), unless the grid has that group already: the
    /// one-circuit delay each circuit's is set against, measured in the
    /// same run (the XTP study's Table 6 beside its Table 5).
    fn with_baselines(&self, groups: Vec<Vec<Protocol>>) -> Vec<(Vec<Protocol>, u32)> {
        let mut out: Vec<(Vec<Protocol>, u32)> = Vec::new();
        for group in groups {
            let several = self.circuits > 1 || group.len() > 1;
            if self.mode == Mode::Delay && several {
                for &p in &group {
                    let alone = (vec![p], 1);
                    if !out.contains(&alone) {
                        out.push(alone);
                    }
                }
            }
            let group = (group, self.circuits);
            if !out.contains(&group) {
                out.push(group);
            }
        }
        out
    }

    /// Refusals that do not depend on a point.
    fn check_shape(&self) -> Result<(), TrafficError> {
        let invalid = |m: &str| Err(TrafficError::Invalid(m.into()));
        if self.circuits == 0 {
            return invalid("--circuits must be at least 1");
        }
        let per_circuit = self.mix.as_ref().map_or(1, Vec::len) as u64;
        if u64::from(self.circuits) * per_circuit > MAX_FLOWS {
            return Err(TrafficError::Invalid(format!(
                "{} concurrent flows are too many: a point runs at most {MAX_FLOWS}",
                u64::from(self.circuits) * per_circuit
            )));
        }
        if u64::from(self.port) + u64::from(self.circuits) * per_circuit - 1 > u64::from(u16::MAX) {
            return invalid("--port is too high: concurrent flows take the ports after it");
        }
        if self.mode == Mode::Delay {
            if !self.rates.is_empty() {
                return invalid("--rate is offered load: use it with --mode throughput");
            }
            let flows = self.mix.as_ref().map_or(&self.protocols, |m| m);
            if (self.circuits > 1 || self.mix.is_some()) && flows.contains(&Protocol::Raw) {
                return invalid(
                    "raw echo series share one Ethertype and would answer each other: \
                     raw delay runs one circuit (no --circuits or --mix with raw)",
                );
            }
        }
        let protocols = self.mix.as_ref().unwrap_or(&self.protocols);
        if !self.rates.is_empty() && !protocols.iter().any(|&p| datagram(p)) {
            return invalid("--rate paces datagrams: use it with --proto udp or raw");
        }
        if self.mix.as_ref().is_some_and(|m| m.len() < 2) {
            return invalid("--mix runs protocols at the same time: name at least two");
        }
        if let Some(&too_many) = self.loads.iter().find(|&&l| l > MAX_LOAD) {
            return Err(TrafficError::Invalid(format!(
                "--load {too_many} is too many: use at most {MAX_LOAD} background processes"
            )));
        }
        if self.load_on.iter().any(|&s| s != LoadOn::Both) {
            if self.mode == Mode::Delay {
                return invalid(
                    "--load-on server or client pins a transfer's two sides: use it with \
                     --mode throughput",
                );
            }
            if self.circuits > 1 || self.mix.is_some() {
                return invalid(
                    "--load-on server or client pins one flow's two sides: not with \
                     --circuits or --mix",
                );
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn point(
        &self,
        index: usize,
        stack: StackKind,
        (group, circuits): (&[Protocol], u32),
        family: Option<Family>,
        sockbuf: Option<u64>,
        rate: Option<u64>,
        size: u64,
    ) -> Result<Point, TrafficError> {
        let count = self.amount.count(size);
        let label: Vec<String> = group.iter().map(ToString::to_string).collect();
        let mut point = Point {
            index,
            stack,
            protocol: label.join("+"),
            family,
            size_bytes: size,
            count,
            sockbuf_bytes: sockbuf,
            rate_bps: rate,
            circuits,
            load: 0,
            load_on: LoadOn::Both,
            work: Work::Transfer(Vec::new()),
        };
        // Raw frames ignore the family; the spec still needs one.
        let spec_family = family.unwrap_or(Family::V6);
        let len = usize::try_from(size).unwrap_or(usize::MAX);
        let sockbuf = sockbuf.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
        let name = point.to_string();
        let bad = |e: TrafficError| match e {
            TrafficError::Invalid(m) => TrafficError::Invalid(format!("{name}: {m}")),
            other => other,
        };
        point.work = match self.mode {
            Mode::Delay => {
                let mut flows = Vec::new();
                for _ in 0..circuits {
                    for &protocol in group {
                        // On the base port: the runner gives flow i port + i.
                        let spec = EchoSpec {
                            protocol,
                            family: spec_family,
                            len,
                            count,
                            port: self.port,
                            circuit: 0,
                            sockbuf,
                            congestion: self.congestion_for(protocol),
                            xtp: self.xtp_for(protocol),
                            connect_each: self.connect_each,
                            timeout: self.timeout,
                        };
                        spec.validate().map_err(bad)?;
                        flows.push(spec);
                    }
                }
                Work::Echo(flows)
            }
            Mode::Throughput => {
                let mut flows = Vec::new();
                for _ in 0..circuits {
                    for &protocol in group {
                        let mut spec = TransferSpec::new(protocol, spec_family);
                        spec.len = len;
                        spec.count = count;
                        // Every flow names the base port: the circuits
                        // runner gives flow i port + i.
                        spec.port = self.port;
                        spec.sockbuf = sockbuf;
                        spec.rate_bps = rate.filter(|_| datagram(protocol));
                        spec.timeout = self.timeout;
                        spec.min_duration = self.min_duration;
                        spec.xtp = self.xtp_for(protocol);
                        spec.congestion = self.congestion_for(protocol);
                        spec.validate().map_err(bad)?;
                        flows.push(spec);
                    }
                }
                Work::Transfer(flows)
            }
        };
        Ok(point)
    }
}

/// What the targets refuse whatever the parameters, checked up front so a
/// sweep does not run for an hour and then stop at its first point.
/// These mirror the targets' own refusals ([`crate::run`]), which stay
/// the authority at run time.
fn check_target(point: &Point, path: KernelPath) -> Result<(), TrafficError> {
    let protocols: Vec<Protocol> = match &point.work {
        Work::Transfer(flows) => flows.iter().map(|f| f.protocol).collect(),
        Work::Echo(flows) => flows.iter().map(|f| f.protocol).collect(),
    };
    for protocol in protocols {
        if (point.stack, protocol) == (StackKind::Kernel, Protocol::Xtp) {
            return Err(TrafficError::Unsupported(format!(
                "{point}: the kernel has no XTP: run XTP on the reference stack (--stack ref)"
            )));
        }
        if let (StackKind::Kernel, Protocol::Raw, KernelPath::Loopback) =
            (point.stack, protocol, path)
        {
            return Err(TrafficError::Unsupported(format!(
                "{point}: raw link-level frames need a link: add --netns (kernel, root) \
                 or use --stack ref"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid {
            mode: Mode::Throughput,
            stacks: vec![StackKind::Kernel],
            protocols: vec![Protocol::Tcp],
            mix: None,
            families: vec![Family::V6],
            sockbufs: vec![],
            rates: vec![],
            sizes: vec![1024],
            amount: Amount::Count(10),
            circuits: 1,
            port: 5001,
            timeout: Duration::from_secs(5),
            min_duration: None,
            loads: vec![],
            load_on: vec![],
            xtp: XtpOptions::default(),
            congestion: None,
            connect_each: false,
        }
    }

    fn flows(point: &Point) -> &[TransferSpec] {
        match &point.work {
            Work::Transfer(flows) => flows,
            Work::Echo(_) => panic!("not a transfer"),
        }
    }

    fn error(grid: &Grid, path: KernelPath) -> String {
        grid.points(path).unwrap_err().to_string()
    }

    #[test]
    fn the_grid_is_the_cartesian_product_sizes_innermost() {
        let mut g = grid();
        g.stacks = vec![StackKind::Kernel];
        g.protocols = vec![Protocol::Tcp, Protocol::Udp];
        g.families = vec![Family::V4, Family::V6];
        g.sockbufs = vec![4096, 65536];
        g.sizes = vec![64, 1024, 8192];
        let points = g.points(KernelPath::Loopback).unwrap();
        assert_eq!(points.len(), 2 * 2 * 2 * 3);
        assert_eq!(
            points.iter().map(|p| p.index).collect::<Vec<_>>(),
            (1..=24).collect::<Vec<_>>()
        );
        let first = &points[0];
        assert_eq!(
            (
                first.protocol.as_str(),
                first.family,
                first.sockbuf_bytes,
                first.size_bytes
            ),
            ("tcp", Some(Family::V4), Some(4096), 64)
        );
        assert_eq!(points[1].size_bytes, 1024);
        assert_eq!(points[3].sockbuf_bytes, Some(65536));
        assert_eq!(points[23].protocol, "udp");
        let spec = &flows(&points[23])[0];
        assert_eq!(
            (spec.protocol, spec.family, spec.len, spec.sockbuf),
            (Protocol::Udp, Family::V6, 8192, Some(65536))
        );
    }

    #[test]
    fn total_becomes_a_count_rounded_up() {
        let mut g = grid();
        g.amount = Amount::Total(2 << 20);
        g.sizes = vec![16, 1000, 3 << 20];
        let counts: Vec<u64> = g
            .points(KernelPath::Loopback)
            .unwrap()
            .iter()
            .map(|p| p.count)
            .collect();
        // 2 MiB / 1000 = 2097.152 -> 2098; a size above the total sends once.
        assert_eq!(counts, vec![131_072, 2098, 1]);
    }

    #[test]
    fn rates_multiply_datagram_points_and_leave_tcp_unpaced() {
        let mut g = grid();
        g.protocols = vec![Protocol::Tcp, Protocol::Udp];
        g.rates = vec![10_000_000, 20_000_000];
        let points = g.points(KernelPath::Loopback).unwrap();
        let rates: Vec<(String, Option<u64>)> = points
            .iter()
            .map(|p| (p.protocol.clone(), flows(p)[0].rate_bps))
            .collect();
        assert_eq!(
            rates,
            vec![
                ("tcp".into(), None),
                ("udp".into(), Some(10_000_000)),
                ("udp".into(), Some(20_000_000)),
            ]
        );
        g.protocols = vec![Protocol::Tcp];
        assert!(error(&g, KernelPath::Loopback).contains("--rate paces datagrams"));
    }

    #[test]
    fn raw_points_run_once_whatever_the_families() {
        let mut g = grid();
        g.stacks = vec![StackKind::Ref];
        g.protocols = vec![Protocol::Udp, Protocol::Raw];
        g.families = vec![Family::V4, Family::V6];
        let points = g.points(KernelPath::Loopback).unwrap();
        let shape: Vec<(&str, Option<Family>)> = points
            .iter()
            .map(|p| (p.protocol.as_str(), p.family))
            .collect();
        assert_eq!(
            shape,
            vec![
                ("udp", Some(Family::V4)),
                ("udp", Some(Family::V6)),
                ("raw", None)
            ]
        );
    }

    #[test]
    fn circuits_and_mixes_make_concurrent_flows() {
        let mut g = grid();
        g.mix = Some(vec![Protocol::Tcp, Protocol::Udp]);
        g.circuits = 2;
        g.rates = vec![1_000_000];
        let points = g.points(KernelPath::Loopback).unwrap();
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].protocol, "tcp+udp");
        let f = flows(&points[0]);
        // All on the base port: the circuits runner spreads them.
        let shape: Vec<(Protocol, u16, Option<u64>)> =
            f.iter().map(|s| (s.protocol, s.port, s.rate_bps)).collect();
        assert_eq!(
            shape,
            vec![
                (Protocol::Tcp, 5001, None),
                (Protocol::Udp, 5001, Some(1_000_000)),
                (Protocol::Tcp, 5001, None),
                (Protocol::Udp, 5001, Some(1_000_000)),
            ]
        );
        g.port = u16::MAX - 2;
        assert!(error(&g, KernelPath::Loopback).contains("--port is too high"));
        g.port = 5001;
        g.circuits = 40;
        assert!(error(&g, KernelPath::Loopback).contains("at most 64"));
    }

    fn echoes(point: &Point) -> &[EchoSpec] {
        match &point.work {
            Work::Echo(flows) => flows,
            Work::Transfer(_) => panic!("delay mode made a transfer"),
        }
    }

    #[test]
    fn delay_points_carry_echo_specs_and_refuse_throughput_only_flags() {
        let mut g = grid();
        g.mode = Mode::Delay;
        g.protocols = vec![Protocol::Udp];
        let points = g.points(KernelPath::Loopback).unwrap();
        assert_eq!(points.len(), 1);
        let flows = echoes(&points[0]);
        assert_eq!(flows.len(), 1);
        assert_eq!((flows[0].len, flows[0].count), (1024, 10));
        g.rates = vec![1000];
        assert!(error(&g, KernelPath::Loopback).contains("--mode throughput"));
    }

    #[test]
    fn delay_circuits_run_at_once_after_each_protocol_alone() {
        let mut g = grid();
        g.mode = Mode::Delay;
        g.stacks = vec![StackKind::Ref];
        g.circuits = 2;
        g.sizes = vec![16, 1024];
        let points = g.points(KernelPath::Loopback).unwrap();
        // TCP alone at each size (the baseline), then two circuits.
        let shape: Vec<(&str, u32, u64, usize)> = points
            .iter()
            .map(|p| {
                (
                    p.protocol.as_str(),
                    p.circuits,
                    p.size_bytes,
                    echoes(p).len(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                ("tcp", 1, 16, 1),
                ("tcp", 1, 1024, 1),
                ("tcp", 2, 16, 2),
                ("tcp", 2, 1024, 2),
            ]
        );
        assert_eq!(
            points[2].to_string(),
            "point 3 (ref tcp IPv6 16 B x2 circuits)"
        );
        // All on the base port: the runner spreads them.
        assert!(echoes(&points[2]).iter().all(|f| f.port == 5001));

        g.circuits = 1;
        g.mix = Some(vec![Protocol::Tcp, Protocol::Xtp]);
        g.xtp = XtpOptions {
            nocheck: true,
            ..XtpOptions::default()
        };
        g.sizes = vec![512];
        let points = g.points(KernelPath::Loopback).unwrap();
        let shape: Vec<(&str, Vec<Protocol>)> = points
            .iter()
            .map(|p| {
                (
                    p.protocol.as_str(),
                    echoes(p).iter().map(|f| f.protocol).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                ("tcp", vec![Protocol::Tcp]),
                ("xtp", vec![Protocol::Xtp]),
                ("tcp+xtp", vec![Protocol::Tcp, Protocol::Xtp]),
            ]
        );
        // XTP's options go to the XTP series only.
        let mixed = echoes(&points[2]);
        assert!(mixed[0].xtp.is_default());
        assert!(!mixed[1].xtp.is_default());

        // Raw echo series would answer each other.
        g.mix = Some(vec![Protocol::Udp, Protocol::Raw]);
        assert!(error(&g, KernelPath::Loopback).contains("one circuit"));
        // Throughput makes no baseline.
        g.mode = Mode::Throughput;
        g.mix = Some(vec![Protocol::Tcp, Protocol::Xtp]);
        assert_eq!(g.points(KernelPath::Loopback).unwrap().len(), 1);
    }

    #[test]
    fn bad_points_fail_before_anything_runs_and_name_the_point() {
        let mut g = grid();
        g.sizes = vec![1024, 0];
        let e = error(&g, KernelPath::Loopback);
        assert!(e.starts_with("point 2 (kernel tcp IPv6 0 B): "), "{e}");
        assert!(e.contains("impossible"), "{e}");

        let mut g = grid();
        g.protocols = vec![Protocol::Udp];
        g.sizes = vec![70_000];
        assert!(error(&g, KernelPath::Loopback).contains("impossible for UDP"));

        // TCP runs on both stacks.
        let mut g = grid();
        g.stacks = vec![StackKind::Kernel, StackKind::Ref];
        assert!(g.points(KernelPath::Loopback).is_ok());

        let mut g = grid();
        g.protocols = vec![Protocol::Raw];
        g.sizes = vec![512];
        assert!(error(&g, KernelPath::Loopback).contains("--netns"));
        let netns = KernelPath::Netns { mtu: 1500 };
        assert!(g.points(netns).is_ok());
        // Concurrent raw flows and raw echo run on the kernel's link too.
        g.circuits = 2;
        assert!(g.points(netns).is_ok());
        g.circuits = 1;
        g.mode = Mode::Delay;
        assert!(g.points(netns).is_ok());
        g.stacks = vec![StackKind::Ref];
        assert!(g.points(netns).is_ok());

        let mut g = grid();
        g.sockbufs = vec![10];
        assert!(error(&g, KernelPath::Loopback).contains("impossible"));
    }

    #[test]
    fn a_grid_over_the_limit_is_refused_without_being_built() {
        let mut g = grid();
        g.protocols = vec![Protocol::Udp];
        g.sizes = (100..50_100).collect();
        g.rates = vec![1, 2, 3];
        let e = error(&g, KernelPath::Loopback);
        assert!(e.contains("150000 points"), "{e}");
        g.rates = vec![1, 2];
        assert_eq!(g.points(KernelPath::Loopback).unwrap().len(), 100_000);
    }

    #[test]
    fn load_levels_and_sides_are_the_outermost_axes() {
        let mut g = grid();
        g.stacks = vec![StackKind::Ref, StackKind::Kernel];
        g.loads = vec![0, 1, 2, 4];
        g.load_on = vec![LoadOn::Server, LoadOn::Client];
        let points = g.points(KernelPath::Loopback).unwrap();
        assert_eq!(points.len(), 4 * 2 * 2);
        let shape: Vec<(u32, LoadOn, StackKind)> = points
            .iter()
            .map(|p| (p.load, p.load_on, p.stack))
            .collect();
        let mut expected = Vec::new();
        for load in [0, 1, 2, 4] {
            for side in [LoadOn::Server, LoadOn::Client] {
                for stack in [StackKind::Ref, StackKind::Kernel] {
                    expected.push((load, side, stack));
                }
            }
        }
        assert_eq!(shape, expected);
        assert_eq!(
            points.iter().map(|p| p.index).collect::<Vec<_>>(),
            (1..=16).collect::<Vec<_>>()
        );
        assert_eq!(
            points[14].to_string(),
            "point 15 (ref tcp IPv6 1024 B load 4 on client)"
        );
        // No load asked: one level, nothing said.
        let plain = grid().points(KernelPath::Loopback).unwrap();
        assert_eq!((plain[0].load, plain[0].load_on), (0, LoadOn::Both));
        assert_eq!(plain[0].to_string(), "point 1 (kernel tcp IPv6 1024 B)");
    }

    #[test]
    fn side_loads_pin_one_transfer_and_levels_are_bounded() {
        let mut g = grid();
        g.load_on = vec![LoadOn::Server];
        g.mode = Mode::Delay;
        assert!(error(&g, KernelPath::Loopback).contains("--mode throughput"));
        g.mode = Mode::Throughput;
        g.circuits = 2;
        assert!(error(&g, KernelPath::Loopback).contains("not with --circuits"));
        g.circuits = 1;
        g.loads = vec![1, MAX_LOAD + 1];
        assert!(error(&g, KernelPath::Loopback).contains("at most 64"));
        // `both` pins nothing: delay mode may run under it.
        let mut g = grid();
        g.mode = Mode::Delay;
        g.loads = vec![0, 2];
        g.load_on = vec![LoadOn::Both];
        assert_eq!(g.points(KernelPath::Loopback).unwrap().len(), 2);
    }
}
