//! `stackscope host`: a long-running reference-stack host on real links
//! (TAP devices), serving ICMP echo, UDP and TCP echo (7), discard (9) and
//! a ttcp sink (5001) until SIGINT or SIGTERM, then printing its counters.
//! The Linux kernel, or anything else on the other side of the links, is
//! the peer.

mod os;
mod services;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::Ipv6Addr;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use stack::buffer::PoolConfig;
use stack::iface::address::AddressState;
use stack::iface::host::{Host, HostConfig, InterfaceConfig};
use stack::phy::tap::{Tap, TapErrors};
use stack::phy::{Captured, Link};
use stack::time::Instant;
use stack::topology::{derived_mac, IpCidr, Ipv4Cidr, Ipv6Cidr};
use wire::ethernet::EthernetAddress;

use services::{Kind, Services};

/// The arguments of `stackscope host`.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLE)]
pub struct HostArgs {
    /// A TAP interface to create (or attach to, if it is a persistent TAP)
    /// and run on; repeatable, one host interface per TAP. The kernel sees
    /// an interface of this name: configure and bring it up with `ip`.
    #[arg(long = "tap", value_name = "NAME", required = true)]
    taps: Vec<String>,
    /// Run in the network namespace NS (made by `ip netns add NS`): the
    /// TAPs are created there. Needs root (CAP_SYS_ADMIN).
    #[arg(long, value_name = "NS")]
    netns: Option<String>,
    /// An address of the host, IPv4 or IPv6, with its prefix length;
    /// repeatable (IPv6: several per interface; IPv4: one). With several
    /// --tap, say which interface: TAP=ADDR/LEN. An interface given no
    /// IPv6 address configures one from Router Advertisements (SLAAC);
    /// every interface has a link-local address.
    #[arg(long = "addr", value_name = "[TAP=]ADDR/LEN", value_parser = parse_addr)]
    addrs: Vec<Assigned<IpCidr>>,
    /// The links' MTU (the kernel side of each TAP is set to it too).
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u32).range(1280..=65_535))]
    mtu: u32,
    /// The host's MAC address on an interface ([TAP=]MAC, repeatable);
    /// default: a stable locally administered address derived from the
    /// namespace and TAP names.
    #[arg(long = "mac", value_name = "[TAP=]MAC", value_parser = parse_mac)]
    macs: Vec<Assigned<EthernetAddress>>,
    /// Duplicate Address Detection probes per IPv6 address (RFC 4862
    /// DupAddrDetectTransmits); 0 turns DAD off, so addresses work at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=10))]
    dad_transmits: u32,
    /// Write a pcapng capture of each interface into DIR (created if
    /// needed): DIR/TAP.pcapng, flushed every second and at exit.
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
}

const EXAMPLE: &str = "\
What it prints (stdout, one line per event):
  interface NAME tap mac MAC mtu N
  waiting for NAME to be up ...          (the host starts once the kernel's
                                          side of every TAP is up)
  address NAME ADDR/LEN ORIGIN STATE     (each address as it is assigned;
                                          SLAAC addresses when they come)
  ready                                  (no address is tentative any more)
  then, after SIGINT/SIGTERM: host counters, drops by reason, per-service
  connections/datagrams/bytes, link counters and drops; exit status 0.

Example (as root): a host on a TAP in a namespace, pinged by Linux:
  ip netns add demo
  stackscope host --netns demo --tap tap0 \\
      --addr 2001:db8:77::2/64 --addr 192.0.2.2/24 &
  ip -n demo addr add 2001:db8:77::1/64 dev tap0 nodad
  ip -n demo addr add 192.0.2.1/24 dev tap0
  ip -n demo link set tap0 up
  ip netns exec demo ping -c 3 2001:db8:77::2
  ip netns exec demo ping -c 3 -s 20000 192.0.2.2
  kill -INT %1; ip netns del demo";

/// A value for one interface (`TAP=VALUE`), or for the only one.
#[derive(Debug, Clone)]
pub struct Assigned<T> {
    tap: Option<String>,
    value: T,
}

fn split_assigned(text: &str) -> (Option<String>, &str) {
    match text.split_once('=') {
        Some((tap, value)) => (Some(tap.to_string()), value),
        None => (None, text),
    }
}

fn parse_addr(text: &str) -> Result<Assigned<IpCidr>, String> {
    let (tap, value) = split_assigned(text);
    let value: IpCidr = value.parse()?;
    Ok(Assigned { tap, value })
}

fn parse_mac(text: &str) -> Result<Assigned<EthernetAddress>, String> {
    let (tap, value) = split_assigned(text);
    let malformed = || format!("`{value}` is not a MAC address such as 02:00:5e:00:53:01");
    let octets: Vec<u8> = value
        .split(':')
        .map(|part| {
            if part.len() == 2 {
                u8::from_str_radix(part, 16).map_err(|_| malformed())
            } else {
                Err(malformed())
            }
        })
        .collect::<Result<_, _>>()?;
    let mac = EthernetAddress::from_bytes(&octets).ok_or_else(malformed)?;
    if mac.is_multicast() {
        return Err(format!(
            "`{value}` is a group (multicast) MAC address, not an interface's"
        ));
    }
    Ok(Assigned { tap, value: mac })
}

/// One interface as the command line asks for it.
#[derive(Debug)]
struct InterfacePlan {
    tap: String,
    mac: EthernetAddress,
    ipv4: Option<Ipv4Cidr>,
    ipv6: Vec<Ipv6Cidr>,
}

/// Checks the flags against each other and says what each interface gets.
fn plan(args: &HostArgs) -> Result<Vec<InterfacePlan>> {
    let mut plans: Vec<InterfacePlan> = Vec::new();
    for tap in &args.taps {
        if plans.iter().any(|p| &p.tap == tap) {
            bail!("--tap {tap} is given twice");
        }
        let node = args.netns.as_deref().unwrap_or("stackscope-host");
        plans.push(InterfacePlan {
            tap: tap.clone(),
            mac: derived_mac(node, tap),
            ipv4: None,
            ipv6: Vec::new(),
        });
    }
    let index_of =
        |flag: &str, tap: &Option<String>, shown: &dyn std::fmt::Display| match tap {
            Some(name) => args.taps.iter().position(|t| t == name).ok_or_else(|| {
                anyhow::anyhow!("--{flag} {name}={shown}: there is no --tap {name}")
            }),
            None if args.taps.len() == 1 => Ok(0),
            None => Err(anyhow::anyhow!(
                "--{flag} {shown}: with several --tap, say which interface: --{flag} TAP={shown}"
            )),
        };
    for addr in &args.addrs {
        let index = index_of("addr", &addr.tap, &addr.value)?;
        let plan = &mut plans[index];
        match addr.value {
            IpCidr::V4(cidr) => {
                if let Some(first) = plan.ipv4 {
                    bail!(
                        "--addr {cidr}: {} already has the IPv4 address {first} (one per interface)",
                        plan.tap
                    );
                }
                if cidr.prefix_len == 0 || cidr.prefix_len > 30 && cidr.prefix_len != 32 {
                    bail!("--addr {cidr}: an interface's IPv4 prefix length is 1..=30 or 32");
                }
                plan.ipv4 = Some(cidr);
            }
            IpCidr::V6(cidr) => {
                if cidr.address.is_multicast() || cidr.address.is_unspecified() {
                    bail!("--addr {cidr}: not a unicast address");
                }
                if cidr.prefix_len == 0 {
                    bail!("--addr {cidr}: the prefix length must not be 0");
                }
                if plan.ipv6.iter().any(|c| c.address == cidr.address) {
                    bail!("--addr {cidr} is given twice");
                }
                plan.ipv6.push(cidr);
            }
        }
    }
    for mac in &args.macs {
        let index = index_of("mac", &mac.tap, &mac.value)?;
        plans[index].mac = mac.value;
    }
    for (i, a) in plans.iter().enumerate() {
        if plans[..i].iter().any(|b| b.mac == a.mac) {
            bail!("--mac: {} and another interface share {}", a.tap, a.mac);
        }
    }
    Ok(plans)
}

/// What the loop keeps of each link besides the host's view of it.
struct LinkInfo {
    name: String,
    fd: RawFd,
    errors: Arc<TapErrors>,
    capture: Option<PathBuf>,
    /// No IPv6 address given: SLAAC only.
    slaac: bool,
}

/// Runs `stackscope host` until SIGINT or SIGTERM.
pub fn run(args: &HostArgs) -> Result<()> {
    let plans = plan(args)?;
    // Before any link is opened and any thread spawned: setns moves only
    // this thread, and threads made later inherit its namespace.
    if let Some(ns) = &args.netns {
        os::enter_netns(ns)?;
    }
    os::catch_stop_signals()?;
    if let Some(dir) = &args.pcap {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--pcap: creating {}", dir.display()))?;
    }
    let mtu = args.mtu as usize;
    let mut taps = Vec::with_capacity(plans.len());
    let mut infos = Vec::with_capacity(plans.len());
    for plan in &plans {
        let tap = Tap::open(&plan.tap, mtu).map_err(|error| tap_error(&plan.tap, error))?;
        infos.push(LinkInfo {
            name: tap.name().to_string(),
            fd: tap.as_raw_fd(),
            errors: tap.errors(),
            capture: args
                .pcap
                .as_ref()
                .map(|dir| dir.join(format!("{}.pcapng", tap.name()))),
            slaac: plan.ipv6.is_empty(),
        });
        taps.push(tap);
    }
    print_start(args, &plans, &infos);
    // Like Linux, start (DAD, router solicitation, ARP announcement) only
    // once the link is up: the kernel refuses frames before.
    if let Some(signal) = wait_until_up(&taps, args.netns.as_deref())? {
        println!("stopped by {signal} before the links were up");
        return Ok(());
    }
    let mut interfaces = Vec::with_capacity(plans.len());
    for ((tap, plan), info) in taps.into_iter().zip(&plans).zip(&infos) {
        let link: Box<dyn Link + Send> = match &info.capture {
            Some(path) => {
                let file = File::create(path)
                    .with_context(|| format!("--pcap: creating {}", path.display()))?;
                Box::new(Captured::new(tap, PeriodicFlush::new(file), &info.name))
            }
            None => Box::new(tap),
        };
        interfaces.push(InterfaceConfig {
            name: info.name.clone(),
            link,
            mac: plan.mac,
            ipv4: plan.ipv4,
            ipv6: plan.ipv6.clone(),
            advertise: Vec::new(),
            dad_transmits: Some(args.dad_transmits),
        });
    }
    let mut config = HostConfig::new(args.netns.as_deref().unwrap_or("stackscope-host"), false);
    config.pool = pool_for(mtu);
    config.seed = fresh_seed();
    let mut host = Host::new(config, interfaces, &[]).context("building the host")?;
    let mut services = Services::open(&mut host)?;
    let (stopped_by, ran) = serve(&mut host, &mut services, &infos);
    print_counters(&stopped_by, ran, &host, &services, &infos);
    drop(host); // closes the TAPs (they disappear) and flushes captures
    match stopped_by {
        Stop::Signal(_) => Ok(()),
        Stop::LinkGone(name) => bail!("TAP {name} was deleted under the host"),
    }
}

/// Waits until the kernel's side of every TAP is up, saying once which
/// ones it waits for. Returns the signal if one stopped the wait.
fn wait_until_up(taps: &[Tap], netns: Option<&str>) -> Result<Option<&'static str>> {
    let mut said = false;
    loop {
        if let Some(signal) = os::stop_requested() {
            return Ok(Some(signal));
        }
        let mut down = Vec::new();
        for tap in taps {
            let up = tap
                .is_up()
                .with_context(|| format!("TAP {}: reading its flags", tap.name()))?;
            if !up {
                down.push(tap.name());
            }
        }
        if down.is_empty() {
            return Ok(None);
        }
        if !said {
            said = true;
            let ip = match netns {
                Some(ns) => format!("ip -n {ns}"),
                None => "ip".to_string(),
            };
            let mut out = io::stdout().lock();
            for name in down {
                let _ = writeln!(
                    out,
                    "waiting for {name} to be up on the kernel's side (`{ip} link set {name} up`)"
                );
            }
            let _ = out.flush();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The error of a TAP that could not be opened, with what to do. (The
/// error names the TAP already.)
fn tap_error(name: &str, error: io::Error) -> anyhow::Error {
    match error.kind() {
        io::ErrorKind::PermissionDenied if error.to_string().contains("TUNSETIFF") => {
            anyhow::anyhow!(
                "{error}\n  run as root, or use a persistent TAP you own: \
             `sudo ip tuntap add {name} mode tap user $USER`"
            )
        }
        _ => anyhow::anyhow!("{error}"),
    }
}

/// A pool whose buffers hold a whole frame of `mtu`: the default for
/// Ethernet's 1500, bigger (and fewer) for jumbo frames.
fn pool_for(mtu: usize) -> PoolConfig {
    let default = PoolConfig::default();
    let needed = default.headroom + mtu + wire::ethernet::TAGGED_HEADER_LEN;
    if needed <= default.buffer_size {
        return PoolConfig {
            buffers: 8192,
            ..default
        };
    }
    // Round up to 256 bytes; about 64 MiB in all, at least 1024 buffers.
    let buffer_size = needed.div_ceil(256) * 256;
    PoolConfig {
        buffer_size,
        buffers: (64 * 1024 * 1024 / buffer_size).max(1024),
        ..default
    }
}

/// A seed for the host's random choices (ISN key, ports, DAD delays):
/// different for every run, as a real host's must be.
fn fresh_seed() -> u64 {
    let mut seed = [0u8; 8];
    // SAFETY: getrandom writes at most `seed.len()` bytes into `seed`,
    // which is live and writable for the call.
    let got = unsafe { libc::getrandom(seed.as_mut_ptr().cast(), seed.len(), 0) };
    if got == seed.len() as isize {
        return u64::from_ne_bytes(seed);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// After this long with nothing moving and nothing due, the loop sleeps in
/// `ppoll` on the links instead of spinning (so an idle host costs no CPU).
const SPIN_BEFORE_SLEEP: Duration = Duration::from_micros(50);
/// The longest sleep: a stop signal also wakes it at once.
const MAX_SLEEP: Duration = Duration::from_millis(50);
/// How long a stopping host keeps polling so closing connections' FINs
/// leave.
const LINGER: Duration = Duration::from_millis(20);
/// How often the loop looks for address changes to print.
const ADDRESS_CHECK: Duration = Duration::from_millis(10);

/// The host's loop: services, then `host.poll(now)`; sleeps when idle.
/// Returns why it stopped and how long it ran.
fn serve(host: &mut Host, services: &mut Services, infos: &[LinkInfo]) -> (Stop, Duration) {
    let clock = std::time::Instant::now();
    let now = || Instant::from_nanos(clock.elapsed().as_nanos() as u64);
    let fds: Vec<RawFd> = infos.iter().map(|i| i.fd).collect();
    let mut shown = AddressesShown::default();
    let mut last_check = clock;
    let mut seen = host.counters().packets_moved();
    let mut last_busy = clock;
    loop {
        let stop = match os::stop_requested() {
            Some(signal) => Some(Stop::Signal(signal)),
            None => infos
                .iter()
                .find(|i| i.errors.device_gone())
                .map(|i| Stop::LinkGone(i.name.clone())),
        };
        if let Some(stop) = stop {
            let ran = clock.elapsed();
            // Close the connections and give their FINs a moment to leave.
            services.close_all(host);
            let end = std::time::Instant::now() + LINGER;
            while std::time::Instant::now() < end {
                host.poll(now());
                std::thread::sleep(Duration::from_millis(1));
            }
            return (stop, ran);
        }
        let t = now();
        let served = services.run(host);
        host.poll(t);
        if last_check.elapsed() >= ADDRESS_CHECK {
            last_check = std::time::Instant::now();
            shown.print_changes(host);
        }
        let moved = host.counters().packets_moved();
        let deadline = host.next_deadline(t);
        if served || moved != seen || deadline.is_some_and(|d| d <= t) {
            seen = moved;
            last_busy = std::time::Instant::now();
            continue;
        }
        if last_busy.elapsed() < SPIN_BEFORE_SLEEP {
            std::hint::spin_loop();
            continue;
        }
        let until_due = deadline.map_or(MAX_SLEEP, |d| d.saturating_duration_since(now()));
        let until_check = ADDRESS_CHECK.saturating_sub(last_check.elapsed());
        let sleep = until_due
            .min(MAX_SLEEP)
            .min(until_check.max(Duration::from_millis(1)));
        os::wait_readable(&fds, sleep);
    }
}

/// Why the host stopped.
enum Stop {
    Signal(&'static str),
    /// A TAP was deleted under the host (`ip link del`).
    LinkGone(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Signal(signal) => write!(f, "{signal}"),
            Stop::LinkGone(name) => write!(f, "the deletion of {name}"),
        }
    }
}

/// Which addresses were printed, and in which state.
#[derive(Default)]
struct AddressesShown {
    v6: BTreeMap<(String, Ipv6Addr), AddressState>,
    ready: bool,
}

impl AddressesShown {
    /// Prints every address that reached a new state other than TENTATIVE
    /// (or went away), then `ready` once none is tentative.
    fn print_changes(&mut self, host: &Host) {
        let mut out = io::stdout().lock();
        let mut current = BTreeMap::new();
        let mut tentative = false;
        for interface in host.interfaces() {
            for nte in interface.v6.addresses.entries() {
                let key = (interface.name.clone(), nte.address());
                let state = nte.state();
                if state == AddressState::Tentative {
                    tentative = true;
                    continue;
                }
                if self.v6.get(&key) != Some(&state) {
                    let _ = writeln!(
                        out,
                        "address {} {}/{} {} {}",
                        interface.name,
                        nte.address(),
                        nte.prefix_len(),
                        nte.origin(),
                        state
                    );
                }
                current.insert(key, state);
            }
        }
        for (name, address) in self.v6.keys() {
            if !current.contains_key(&(name.clone(), *address)) {
                let _ = writeln!(out, "address {name} {address} removed");
            }
        }
        self.v6 = current;
        if !tentative && !self.ready {
            self.ready = true;
            let _ = writeln!(out, "ready");
        }
        let _ = out.flush();
    }
}

fn print_start(args: &HostArgs, plans: &[InterfacePlan], infos: &[LinkInfo]) {
    let mut out = io::stdout().lock();
    let place = match &args.netns {
        Some(ns) => format!("network namespace {ns}"),
        None => "the current network namespace".to_string(),
    };
    let _ = writeln!(
        out,
        "stackscope host: pid {}, {place}; stop with SIGINT (Ctrl-C) or SIGTERM",
        std::process::id()
    );
    let _ = writeln!(
        out,
        "services: ICMP echo; UDP and TCP echo {}, discard {}, ttcp sink {} (IPv6 and IPv4)",
        Kind::Echo.port(),
        Kind::Discard.port(),
        Kind::Sink.port()
    );
    for (plan, info) in plans.iter().zip(infos) {
        let _ = write!(
            out,
            "interface {} tap mac {} mtu {}",
            info.name, plan.mac, args.mtu
        );
        if let Some(path) = &info.capture {
            let _ = write!(out, " capture {}", path.display());
        }
        let _ = writeln!(out);
        if let Some(v4) = &plan.ipv4 {
            let _ = writeln!(out, "address {} {v4} ipv4", info.name);
        }
        if info.slaac {
            let _ = writeln!(
                out,
                "  (no IPv6 address given: SLAAC from Router Advertisements)"
            );
        }
    }
    let _ = out.flush();
}

fn print_counters(
    stopped_by: &Stop,
    ran: Duration,
    host: &Host,
    services: &Services,
    infos: &[LinkInfo],
) {
    let mut out = io::stdout().lock();
    let _ = writeln!(
        out,
        "stopped by {stopped_by} after {:.3} s",
        ran.as_secs_f64()
    );
    let _ = writeln!(out, "host counters:");
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(host.counters()) {
        for (name, value) in fields {
            let _ = writeln!(out, "  {name}: {value}");
        }
    }
    let drops = host.drops();
    if drops.is_empty() {
        let _ = writeln!(out, "drops: none");
    } else {
        let _ = writeln!(out, "drops:");
        for (reason, count) in drops {
            let _ = writeln!(out, "  {reason}: {count}");
        }
    }
    let _ = writeln!(out, "services:");
    for (transport, kind, stats) in services.stats() {
        let label = format!("{transport} {} ({})", kind.name(), kind.port());
        if transport == "tcp" {
            let _ = writeln!(
                out,
                "  {label}: connections {} connection_errors {} bytes_in {} bytes_out {}",
                stats.connections, stats.connection_errors, stats.bytes_in, stats.bytes_out
            );
        } else {
            let _ = writeln!(
                out,
                "  {label}: datagrams_in {} datagrams_out {} bytes_in {} bytes_out {} echo_dropped {}",
                stats.datagrams_in,
                stats.datagrams_out,
                stats.bytes_in,
                stats.bytes_out,
                stats.echo_dropped
            );
        }
    }
    let _ = writeln!(
        out,
        "  icmp echo: echo_replies_sent {} (the stack answers Echo Requests itself)",
        host.counters().echo_replies_sent
    );
    let _ = writeln!(
        out,
        "  tcp connections open at the stop: {}",
        services.open_connections()
    );
    let _ = writeln!(out, "links:");
    for (interface, info) in host.interfaces().iter().zip(infos) {
        let s = interface.link.stats();
        let _ = writeln!(
            out,
            "  {}: tx_frames {} tx_bytes {} rx_frames {} rx_bytes {} dropped_too_big {} \
             dropped_queue_full {} dropped_rx_too_long {} tx_link_down {} tx_errors {} rx_errors {}",
            info.name,
            s.tx_frames,
            s.tx_bytes,
            s.rx_frames,
            s.rx_bytes,
            s.dropped_too_big,
            s.dropped_queue_full,
            s.dropped_rx_too_long,
            info.errors.tx_link_down(),
            info.errors.tx(),
            info.errors.rx(),
        );
        if info.errors.tx_link_down() > 0 {
            let _ = writeln!(
                out,
                "    (tx_link_down: frames the kernel refused while its side of the TAP was down; \
                 `ip link set {} up` brings it up)",
                info.name
            );
        }
        if let Some(error) = info.errors.last() {
            let _ = writeln!(out, "    last error: {error}");
        }
        let c = &interface.counters;
        let _ = writeln!(
            out,
            "  {} interface queue: queue_drops {} tx_link_errors {} queue_high_water {}",
            info.name, c.queue_drops, c.tx_link_errors, c.queue_high_water
        );
    }
    let _ = out.flush();
}

/// A capture file's writer: buffered, and flushed at least every second
/// while frames keep coming, so a capture can be read while the host runs.
struct PeriodicFlush {
    inner: BufWriter<File>,
    last_flush: std::time::Instant,
}

impl PeriodicFlush {
    fn new(file: File) -> Self {
        Self {
            inner: BufWriter::new(file),
            last_flush: std::time::Instant::now(),
        }
    }
}

impl Write for PeriodicFlush {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(buf)?;
        if self.last_flush.elapsed() >= Duration::from_secs(1) {
            self.last_flush = std::time::Instant::now();
            self.inner.flush()?;
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
