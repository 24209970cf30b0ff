//! Loading, attaching, filtering and reading the kernel probes.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use aya::maps::{HashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::{
    BtfTracePoint, CgroupAttachMode, CgroupSkb, CgroupSkbAttachType, CgroupSockAddr,
};
use aya::{Btf, Ebpf, EbpfLoader};
use probe::{Loc, Record, Trace, TraceHeader};

use crate::cgroup::RunCgroup;
use crate::clock_map::ClockMap;
use crate::drop_reasons::DropReasons;
use crate::error::KernelProbeError;
use crate::locations::{Attach, Hook, HOOKS, KFREE_SKB, LOCATIONS};

/// The object built by `bpf/build.sh`, aligned as ELF parsing needs.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../bpf/stackscope.bpf.o");

const RING_MAP: &str = "events";
const FLOWS_MAP: &str = "flows";
const DROPPED_MAP: &str = "dropped";
const BTF_PATH: &str = "/sys/kernel/btf/vmlinux";

/// How the probes run.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Ring buffer size in bytes: a power of two, at least one page.
    pub ring_bytes: u32,
    /// How often the ring is drained. Events are submitted without a
    /// wakeup, so this bounds how long they wait and how full the ring gets.
    pub poll_interval: Duration,
    /// Time spent measuring the counter rate (see [`ClockMap::measure`]).
    pub calibration: Duration,
    /// Most records kept in memory; later ones are counted as dropped, as
    /// a full ring's are, so a long or busy run cannot grow without bound.
    pub max_records: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            // 4 MiB held 650 k events/s without a drop (issue 19).
            ring_bytes: 4 << 20,
            poll_interval: Duration::from_millis(1),
            calibration: Duration::from_millis(50),
            // 64 MiB of records, as the reference stack's per-thread ring.
            max_records: 2 << 20,
        }
    }
}

/// Whether one hook runs, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeStatus {
    pub program: &'static str,
    /// The tracepoint, or the cgroup hook (`cgroup_skb/egress`, ...).
    pub tracepoint: &'static str,
    /// The location it writes first (`kernel.ip_finish_output`).
    pub probe: &'static str,
    /// `None` when attached; else what is missing and why.
    pub missing: Option<String>,
}

impl std::fmt::Display for ProbeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.missing {
            None => write!(f, "kernel probe {}: attached", self.tracepoint),
            Some(why) => write!(f, "kernel probe {}: missing ({why})", self.tracepoint),
        }
    }
}

/// What a run recorded.
#[derive(Debug)]
pub struct KernelTrace {
    /// The records, sorted by time, with the kernel location table; the
    /// header counts the events lost to a full ring.
    pub trace: Trace,
    /// Events lost to a full ring, or read after `Config::max_records`
    /// were kept (also in `trace.header.dropped`).
    pub dropped: u64,
    /// Records whose location the table does not have (a stale object);
    /// left out of the trace.
    pub malformed: u64,
    pub status: Vec<ProbeStatus>,
    /// `kernel.kfree_skb` records by drop reason, named from the kernel's
    /// BTF (`NO_SOCKET`; `reason N` where it has no name).
    pub drops: BTreeMap<String, u64>,
}

/// The probe programs' own run time and run count, as the kernel keeps
/// them (`bpf_prog_info.run_time_ns`/`run_cnt`): the time inside the
/// programs, from their first instruction to their return, ring
/// reservation and submission included; not the tracepoint's or cgroup
/// hook's dispatch around them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProgramTime {
    pub runs: u64,
    pub ns: u64,
}

impl ProgramTime {
    /// What ran between `earlier` and `self`.
    pub fn since(self, earlier: ProgramTime) -> ProgramTime {
        ProgramTime {
            runs: self.runs.saturating_sub(earlier.runs),
            ns: self.ns.saturating_sub(earlier.ns),
        }
    }
}

/// The kernel's run-time statistics for BPF programs, on while this lives
/// (`BPF_ENABLE_STATS`, Linux 5.8). They cost every program run two clock
/// reads, so they are on only for the probe-cost measurement's timed
/// transfers, never while a lab run is traced.
pub struct RunTimeStats {
    // Closing it turns the statistics off.
    _on: std::os::fd::OwnedFd,
}

impl RunTimeStats {
    pub fn enable() -> Result<RunTimeStats, KernelProbeError> {
        aya::sys::enable_stats(aya::sys::Stats::RunTime)
            .map(|on| RunTimeStats { _on: on })
            .map_err(|e| KernelProbeError::Invalid(format!("enable BPF run-time statistics: {e}")))
    }
}

/// The loaded and attached probe set. Dropping it detaches everything.
pub struct KernelProbes {
    // Owns the programs and their links; dropped before the cgroup.
    ebpf: Ebpf,
    // The run's cgroup the cgroup programs watch, if they could attach.
    _cgroup: Option<RunCgroup>,
    flows: HashMap<MapData, u64, u32>,
    dropped: PerCpuArray<MapData, u64>,
    status: Vec<ProbeStatus>,
    clock: ClockMap,
    stop: Arc<AtomicBool>,
    poller: Option<JoinHandle<Polled>>,
}

/// What the poller collected.
struct Polled {
    records: Vec<Record>,
    malformed: u64,
    /// Records read after `max_records` were kept: dropped.
    over_limit: u64,
}

impl KernelProbes {
    /// Loads the object, attaches every hook the kernel allows (each that
    /// fails is reported in [`KernelProbes::status`]) and starts draining
    /// the ring. Nothing is recorded until a flow is registered.
    pub fn start(config: &Config) -> Result<KernelProbes, KernelProbeError> {
        check_ring_size(config.ring_bytes)?;
        if !Path::new(BTF_PATH).exists() {
            return Err(KernelProbeError::NoBtf(format!(
                "{BTF_PATH} does not exist"
            )));
        }
        let btf = Btf::from_sys_fs().map_err(|e| KernelProbeError::NoBtf(e.to_string()))?;
        let mut ebpf = EbpfLoader::new()
            .btf(Some(&btf))
            .map_max_entries(RING_MAP, config.ring_bytes)
            .load(OBJECT)
            .map_err(load_error)?;
        // The cgroup programs need the run's cgroup; if it cannot be made,
        // they are missing for that reason and the tracepoints still run.
        let cgroup = RunCgroup::join();
        let status: Vec<ProbeStatus> = HOOKS
            .iter()
            .map(|hook| ProbeStatus {
                program: hook.program,
                tracepoint: hook.tracepoint,
                probe: hook.probe_name(),
                missing: attach(&mut ebpf, hook, &btf, &cgroup).err(),
            })
            .collect();
        if status.iter().all(|s| s.missing.is_some()) {
            let reasons: Vec<String> = status.iter().map(|s| s.to_string()).collect();
            return Err(KernelProbeError::NothingAttached(reasons.join("; ")));
        }
        let ring = RingBuf::try_from(take(&mut ebpf, RING_MAP)?).map_err(map_error(RING_MAP))?;
        let flows = HashMap::try_from(take(&mut ebpf, FLOWS_MAP)?).map_err(map_error(FLOWS_MAP))?;
        let dropped =
            PerCpuArray::try_from(take(&mut ebpf, DROPPED_MAP)?).map_err(map_error(DROPPED_MAP))?;
        let clock = ClockMap::measure(config.calibration);
        let stop = Arc::new(AtomicBool::new(false));
        let poller = {
            let stop = Arc::clone(&stop);
            let interval = config.poll_interval;
            let limit = config.max_records;
            std::thread::Builder::new()
                .name("kernel-probe-poll".into())
                .spawn(move || poll(ring, clock, interval, limit, &stop))
                .map_err(|e| KernelProbeError::Invalid(format!("start the ring poller: {e}")))?
        };
        Ok(KernelProbes {
            ebpf,
            _cgroup: cgroup.ok(),
            flows,
            dropped,
            status,
            clock,
            stop,
            poller: Some(poller),
        })
    }

    /// Per hook: attached, or what is missing and why.
    pub fn status(&self) -> &[ProbeStatus] {
        &self.status
    }

    /// The map from kernel time to the counter used for this run.
    pub fn clock(&self) -> ClockMap {
        self.clock
    }

    /// Records the flow between ports `port_a` and `port_b` (either
    /// order) in the network namespace with inode `netns` (see
    /// [`netns_inode`]) under flow id `flow` (not 0). Register each side's
    /// namespace for a flow that crosses two.
    pub fn trace_flow(
        &mut self,
        netns: u32,
        port_a: u16,
        port_b: u16,
        flow: u32,
    ) -> Result<(), KernelProbeError> {
        if flow == 0 {
            return Err(KernelProbeError::Invalid(
                "flow id 0 means untraced to the probes; use another".into(),
            ));
        }
        self.flows
            .insert(flow_key(netns, port_a, port_b), flow, 0)
            .map_err(map_error(FLOWS_MAP))
    }

    /// Records the socket-level events of an unconnected socket (UDP
    /// sent with `sendto`) bound to `port` in namespace `netns`: such a
    /// socket has no peer port, so [`KernelProbes::trace_flow`]'s pair does
    /// not name it. Its packets still need the pair registered.
    pub fn trace_socket(
        &mut self,
        netns: u32,
        port: u16,
        flow: u32,
    ) -> Result<(), KernelProbeError> {
        self.trace_flow(netns, port, 0, flow)
    }

    /// The time the probe programs have run so far and how often, summed
    /// over every loaded program. The kernel counts these only while
    /// run-time statistics are on ([`RunTimeStats`]); outside that they
    /// stand still.
    pub fn program_time(&self) -> Result<ProgramTime, KernelProbeError> {
        let mut total = ProgramTime::default();
        for (name, program) in self.ebpf.programs() {
            let info = program
                .info()
                .map_err(|e| KernelProbeError::Invalid(format!("program {name}'s info: {e}")))?;
            total.runs = total.runs.saturating_add(info.run_count());
            total.ns = total
                .ns
                .saturating_add(u64::try_from(info.run_time().as_nanos()).unwrap_or(u64::MAX));
        }
        Ok(total)
    }

    /// Events lost so far because the ring was full, summed over CPUs.
    pub fn dropped(&self) -> Result<u64, KernelProbeError> {
        let per_cpu = self.dropped.get(&0, 0).map_err(map_error(DROPPED_MAP))?;
        // Saturating: a sum of kernel counters must not panic.
        Ok(per_cpu.iter().fold(0u64, |sum, n| sum.saturating_add(*n)))
    }

    /// Stops polling, drains what is left and returns the trace. The
    /// programs stay attached until `self` is dropped here, so the drop
    /// count read last covers every event recorded.
    pub fn finish(mut self, description: &str) -> Result<KernelTrace, KernelProbeError> {
        self.stop.store(true, Ordering::Release);
        let polled = self
            .poller
            .take()
            .map(|p| {
                p.thread().unpark();
                p.join().map_err(|_| KernelProbeError::PollerPanicked)
            })
            .transpose()?
            .unwrap_or(Polled {
                records: Vec::new(),
                malformed: 0,
                over_limit: 0,
            });
        let dropped = self.dropped()?.saturating_add(polled.over_limit);
        let mut records = polled.records;
        records.sort_by_key(|r| r.tsc);
        let header = TraceHeader::new(
            self.clock.counter_hz,
            // Phase 2 of issue 19 measures the kernel probes' cost; until
            // then nothing is subtracted, and the description says so.
            0.0,
            dropped,
            format!("{description}; kernel probes (eBPF), probe overhead not measured"),
        );
        // Without the enum (an old kernel) the numbers stand.
        let reasons = DropReasons::from_kernel().unwrap_or_default();
        let mut drops = BTreeMap::new();
        for r in records
            .iter()
            .filter(|r| r.location().index() == KFREE_SKB.index())
        {
            *drops.entry(reasons.name(r.len)).or_insert(0) += 1;
        }
        Ok(KernelTrace {
            trace: Trace::new(header, LOCATIONS, records),
            dropped,
            malformed: polled.malformed,
            status: self.status.clone(),
            drops,
        })
    }
}

impl Drop for KernelProbes {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(poller) = self.poller.take() {
            poller.thread().unpark();
            let _ = poller.join();
        }
    }
}

/// The inode of a network namespace file (`/proc/self/ns/net`,
/// `/run/netns/NAME`, `/proc/PID/ns/net`): the id the probes filter on.
pub fn netns_inode(path: impl AsRef<Path>) -> Result<u32, KernelProbeError> {
    let path = path.as_ref();
    let meta = std::fs::metadata(path).map_err(|e| {
        KernelProbeError::Invalid(format!("network namespace {}: {e}", path.display()))
    })?;
    u32::try_from(meta.ino()).map_err(|_| {
        KernelProbeError::Invalid(format!(
            "network namespace {}: inode {} does not fit 32 bits",
            path.display(),
            meta.ino()
        ))
    })
}

/// The key of `struct flow_key` in the eBPF source: namespace inode, then
/// the lower and the higher port, as one little-endian u64.
fn flow_key(netns: u32, a: u16, b: u16) -> u64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    u64::from(netns) | u64::from(lo) << 32 | u64::from(hi) << 48
}

fn check_ring_size(bytes: u32) -> Result<(), KernelProbeError> {
    if bytes < 4096 || !bytes.is_power_of_two() {
        return Err(KernelProbeError::Invalid(format!(
            "ring size {bytes} bytes: the kernel needs a power of two of at least one page (4096)"
        )));
    }
    Ok(())
}

fn attach(
    ebpf: &mut Ebpf,
    hook: &Hook,
    btf: &Btf,
    cgroup: &Result<RunCgroup, String>,
) -> Result<(), String> {
    let program = ebpf.program_mut(hook.program).ok_or_else(|| {
        "the eBPF object lacks its program (rebuild with crates/kernel-probe/bpf/build.sh)"
            .to_string()
    })?;
    let tracepoint = match hook.attach {
        Attach::Tracepoint(tracepoint) => tracepoint,
        Attach::CgroupEgress | Attach::CgroupIngress | Attach::CgroupSendmsg => {
            let cgroup = cgroup
                .as_ref()
                .map_err(|why| format!("no cgroup v2 for the run: {why}"))?;
            return attach_cgroup(program, hook, cgroup);
        }
    };
    let program: &mut BtfTracePoint = program
        .try_into()
        .map_err(|e| format!("not a tp_btf program: {e}"))?;
    program.load(tracepoint, btf).map_err(|e| {
        format!("the kernel refused the program for tracepoint {tracepoint} (not in this kernel's BTF, or rejected by the verifier): {e}")
    })?;
    program
        .attach()
        .map(|_| ())
        .map_err(|e| format!("attaching to tracepoint {tracepoint} failed: {e}"))
}

/// Loads a cgroup program and attaches it to the run's cgroup with a BPF
/// link. A link attachment always sits beside the cgroup's other programs
/// (parallel probe sets share the cgroup) and the kernel refuses it any
/// flag (`EINVAL` for `BPF_F_ALLOW_MULTI`), so the mode is the default.
fn attach_cgroup(
    program: &mut aya::programs::Program,
    hook: &Hook,
    cgroup: &RunCgroup,
) -> Result<(), String> {
    let refused = |e: aya::programs::ProgramError| {
        format!("the kernel refused the {} program: {e}", hook.tracepoint)
    };
    let failed = |e: aya::programs::ProgramError| {
        format!(
            "attaching {} to the run's cgroup failed: {e}",
            hook.tracepoint
        )
    };
    let mode = CgroupAttachMode::Single;
    match hook.attach {
        Attach::CgroupEgress | Attach::CgroupIngress => {
            let direction = if hook.attach == Attach::CgroupEgress {
                CgroupSkbAttachType::Egress
            } else {
                CgroupSkbAttachType::Ingress
            };
            let program: &mut CgroupSkb = program
                .try_into()
                .map_err(|e| format!("not a cgroup_skb program: {e}"))?;
            program.load().map_err(refused)?;
            program
                .attach(&cgroup.dir, direction, mode)
                .map_err(failed)?;
        }
        _ => {
            let program: &mut CgroupSockAddr = program
                .try_into()
                .map_err(|e| format!("not a cgroup sock_addr program: {e}"))?;
            program.load().map_err(refused)?;
            program.attach(&cgroup.dir, mode).map_err(failed)?;
        }
    }
    Ok(())
}

fn take(ebpf: &mut Ebpf, name: &'static str) -> Result<aya::maps::Map, KernelProbeError> {
    ebpf.take_map(name)
        .ok_or(KernelProbeError::MissingMap(name))
}

fn map_error(map: &'static str) -> impl Fn(aya::maps::MapError) -> KernelProbeError {
    move |e| KernelProbeError::Map {
        map,
        message: e.to_string(),
    }
}

/// Not permitted is the common case (not root); say so plainly.
fn load_error(e: aya::EbpfError) -> KernelProbeError {
    let text = format!("{e}");
    let chain = format!("{e:?}");
    if chain.contains("PermissionDenied") || chain.contains("EPERM") || text.contains("ermission") {
        KernelProbeError::NotPermitted(text)
    } else {
        KernelProbeError::Load(text)
    }
}

/// Drains the ring every `interval` until `stop`, then once more; keeps
/// at most `limit` records and counts the rest.
fn poll(
    mut ring: RingBuf<MapData>,
    clock: ClockMap,
    interval: Duration,
    limit: usize,
    stop: &AtomicBool,
) -> Polled {
    let mut polled = Polled {
        records: Vec::new(),
        malformed: 0,
        over_limit: 0,
    };
    loop {
        let stopping = stop.load(Ordering::Acquire);
        while let Some(item) = ring.next() {
            match decode(&item, &clock) {
                Some(_) if polled.records.len() >= limit => polled.over_limit += 1,
                Some(record) => polled.records.push(record),
                None => polled.malformed += 1,
            }
        }
        if stopping {
            return polled;
        }
        // Woken early by `finish` (unpark) so a long interval does not
        // delay the end of a run.
        std::thread::park_timeout(interval);
    }
}

/// One ring entry as a trace record, its time mapped onto the counter;
/// `None` for an entry of the wrong size or an unknown location.
fn decode(bytes: &[u8], clock: &ClockMap) -> Option<Record> {
    let raw: &[u8; Record::SIZE] = bytes.try_into().ok()?;
    let r = Record::from_le_bytes(raw);
    if usize::from(r.loc) >= LOCATIONS.len() {
        return None;
    }
    Some(Record::new(
        clock.to_counter(r.tsc),
        Loc(r.loc),
        r.len,
        r.flow,
        r.aux,
        r.thread,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_keys_ignore_direction() {
        assert_eq!(flow_key(7, 5001, 40000), flow_key(7, 40000, 5001));
        assert_eq!(flow_key(7, 1, 2), 7 | 1 << 32 | 2 << 48);
        assert_ne!(flow_key(7, 1, 2), flow_key(8, 1, 2));
    }

    #[test]
    fn ring_sizes_are_checked() {
        assert!(check_ring_size(4096).is_ok());
        assert!(check_ring_size(4 << 20).is_ok());
        assert!(check_ring_size(4095).is_err());
        assert!(check_ring_size(6000).is_err());
    }

    #[test]
    fn decode_maps_time_and_rejects_garbage() {
        let clock = ClockMap::new(1_000, 0, 1e9);
        let r = Record::new(3_000, Loc(4), 100, 9, 0xdead, 1);
        let d = decode(&r.to_le_bytes(), &clock).expect("valid");
        assert_eq!(
            (d.tsc, d.loc, d.len, d.flow, d.aux),
            (2_000, 4, 100, 9, 0xdead)
        );
        assert!(decode(&[0u8; 31], &clock).is_none());
        let unknown = Record::new(0, Loc(LOCATIONS.len() as u16), 0, 0, 0, 0);
        assert!(decode(&unknown.to_le_bytes(), &clock).is_none());
    }

    #[test]
    fn the_own_namespace_has_an_inode() {
        assert!(netns_inode("/proc/self/ns/net").unwrap() > 0);
        assert!(netns_inode("/nonexistent/ns").is_err());
    }
}
