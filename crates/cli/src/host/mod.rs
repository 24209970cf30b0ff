//! `stackscope host`: a long-running reference-stack host on real links
//! (TAP devices it creates, AF_PACKET on existing interfaces), serving ICMP echo, UDP and TCP echo (7), discard (9),
//! a ttcp sink (5001) and an iperf3 server (5201) until SIGINT or SIGTERM,
//! then printing its counters.
//! The Linux kernel, or anything else on the other side of the links, is
//! the peer.

pub(crate) mod os;
mod services;
mod trace;

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use stack::iface::address::AddressState;
use stack::iface::host::{Host, StaticRoute};
use stack::phy::tap::TapErrors;
use stack::runner::realtime::{RealTime, Turn};
use stack::topology::{derived_mac, IpCidr};
use traffic::program::iperf3;
use wire::ethernet::EthernetAddress;

use crate::attach::{self, LinkKind, LinkRequest};

use services::{Kind, Services};

/// The arguments of `stackscope host`.
#[derive(Debug, Args)]
#[command(after_long_help = EXAMPLE)]
#[command(group(clap::ArgGroup::new("links").required(true).multiple(true).args(["taps", "packets"])))]
pub struct HostArgs {
    /// A TAP interface to create (or attach to, if it is a persistent TAP)
    /// and run on; repeatable, one host interface per TAP. The kernel sees
    /// an interface of this name: configure and bring it up with `ip`.
    #[arg(long = "tap", value_name = "NAME")]
    taps: Vec<String>,
    /// An existing interface (a veth end, a NIC) to take over with an
    /// AF_PACKET socket; repeatable. The host uses the interface's MAC
    /// address; the kernel's IPv6 is turned off on it while the host runs
    /// (their link-local addresses would collide), and the kernel should
    /// hold no IPv4 address there. The interface must be up.
    #[arg(long = "packet", value_name = "IFACE")]
    packets: Vec<String>,
    /// Run in the network namespace NS (made by `ip netns add NS`): the
    /// TAPs are created there and --packet interfaces are looked up there.
    /// Needs root (CAP_SYS_ADMIN).
    #[arg(long, value_name = "NS")]
    netns: Option<String>,
    /// An address of the host, IPv4 or IPv6, with its prefix length;
    /// repeatable (IPv6: several per interface; IPv4: one). With several
    /// interfaces, say which: IFACE=ADDR/LEN. An interface given no
    /// IPv6 address configures one from Router Advertisements (SLAAC);
    /// every interface has a link-local address.
    #[arg(long = "addr", value_name = "[IFACE=]ADDR/LEN", value_parser = parse_addr)]
    addrs: Vec<Assigned<IpCidr>>,
    /// A static route, PREFIX/LEN,GATEWAY or default,GATEWAY (repeatable;
    /// the gateway must be on a link of the host, e.g. one of its --addr
    /// prefixes, or link-local): e.g. `--route default,2001:db8:77::1
    /// --route 10.0.0.0/8,192.0.2.1`. Without one the host reaches only
    /// its links (and IPv6 routers learned from Router Advertisements).
    #[arg(long = "route", value_name = "PREFIX,GATEWAY", value_parser = parse_route)]
    routes: Vec<StaticRoute>,
    /// The MTU of the TAPs (the kernel side of each TAP is set to it too;
    /// default 1500). --packet interfaces keep the interface's MTU unless
    /// this is given.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1280..=65_535))]
    mtu: Option<u32>,
    /// The host's MAC address on a TAP ([TAP=]MAC, repeatable); default: a
    /// stable locally administered address derived from the namespace and
    /// TAP names.
    #[arg(long = "mac", value_name = "[TAP=]MAC", value_parser = parse_mac)]
    macs: Vec<Assigned<EthernetAddress>>,
    /// Duplicate Address Detection probes per IPv6 address (RFC 4862
    /// DupAddrDetectTransmits); 0 turns DAD off, so addresses work at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=10))]
    dad_transmits: u32,
    /// Write a pcapng capture of each interface into DIR (created if
    /// needed): DIR/IFACE.pcapng, flushed every second and at exit.
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    /// Record the reference stack's probes (every flow: an iperf3 test,
    /// the services, pings) while the host runs, and write them at the
    /// stop as a stackscope trace FILE (`stackscope trace info FILE`,
    /// `trace perfetto`). The ring holds --trace-records events; later
    /// ones are counted as dropped in the trace's header.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Events the --trace ring holds (32 bytes each).
    #[arg(long, value_name = "N", default_value_t = 4 << 20, requires = "trace",
          value_parser = clap::value_parser!(u64).range(1..=(64 << 20)))]
    trace_records: u64,
}

const EXAMPLE: &str = "\
What it prints (stdout, one line per event):
  interface NAME tap|packet mac MAC mtu N
  waiting for NAME to be up ...          (the host starts once the kernel's
                                          side of every TAP is up)
  address NAME ADDR/LEN ORIGIN STATE     (each address as it is assigned;
                                          SLAAC addresses when they come)
  ready                                  (no address is tentative any more)
  iperf3 test ...                        (each iperf3 test: its start, and
                                          what the server counted at its end)
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
  ip netns exec demo iperf3 -c 192.0.2.2 -t 3          (TCP to the host)
  ip netns exec demo iperf3 -c 2001:db8:77::2 -R -P 2  (the host sends)
  ip netns exec demo iperf3 -c 192.0.2.2 -u -b 50M -J  (UDP, iperf3's JSON)
  kill -INT %1; ip netns del demo

A trace of an iperf3 test: start the host as above with --trace iperf.sstrace,
run e.g. `iperf3 -c 192.0.2.2 -n 20M`, stop the host (kill -INT), then
  stackscope trace info iperf.sstrace

Or on one end of a veth pair (the other end stays with Linux):
  ip netns add demo
  ip link add ssk0 type veth peer name ssr0 netns demo
  ip addr add 2001:db8:78::1/64 dev ssk0 nodad; ip link set ssk0 up
  ip -n demo link set ssr0 up
  stackscope host --netns demo --packet ssr0 --addr 2001:db8:78::2/64 &
  ping -c 3 2001:db8:78::2";

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

fn parse_route(text: &str) -> Result<StaticRoute, String> {
    let (prefix, gateway) = text
        .split_once(',')
        .ok_or_else(|| format!("`{text}`: say PREFIX/LEN,GATEWAY or default,GATEWAY"))?;
    let via: IpAddr = gateway
        .parse()
        .map_err(|_| format!("`{gateway}` is not an IP address (the gateway)"))?;
    let to: IpCidr = if prefix == "default" {
        match via {
            IpAddr::V6(_) => "::/0".parse()?,
            IpAddr::V4(_) => "0.0.0.0/0".parse()?,
        }
    } else {
        prefix.parse()?
    };
    if matches!(
        (to, via),
        (IpCidr::V6(_), IpAddr::V4(_)) | (IpCidr::V4(_), IpAddr::V6(_))
    ) {
        return Err(format!(
            "`{text}`: the prefix and the gateway are of different families"
        ));
    }
    Ok(StaticRoute { to, via })
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

/// Checks the flags against each other and says what each interface gets.
fn plan(args: &HostArgs) -> Result<Vec<LinkRequest>> {
    let mut plans: Vec<LinkRequest> = Vec::new();
    let node = args.netns.as_deref().unwrap_or("stackscope-host");
    let named = args
        .taps
        .iter()
        .map(|t| (LinkKind::Tap, t))
        .chain(args.packets.iter().map(|p| (LinkKind::Packet, p)));
    for (kind, name) in named {
        if plans.iter().any(|p| &p.name == name) {
            bail!("interface {name} is given twice");
        }
        plans.push(LinkRequest {
            kind,
            name: name.clone(),
            mac: derived_mac(node, name),
            ipv4: None,
            ipv6: Vec::new(),
        });
    }
    let index_of = |flag: &str, name: &Option<String>, shown: &dyn std::fmt::Display| match name {
        Some(name) => plans.iter().position(|p| &p.name == name).ok_or_else(|| {
            anyhow::anyhow!("--{flag} {name}={shown}: there is no --tap or --packet {name}")
        }),
        None if plans.len() == 1 => Ok(0),
        None => Err(anyhow::anyhow!(
            "--{flag} {shown}: with several interfaces, say which: --{flag} IFACE={shown}"
        )),
    };
    let mut assigned: Vec<(usize, IpCidr)> = Vec::new();
    for addr in &args.addrs {
        assigned.push((index_of("addr", &addr.tap, &addr.value)?, addr.value));
    }
    let mut macs = Vec::new();
    for mac in &args.macs {
        let index = index_of("mac", &mac.tap, &mac.value)?;
        if plans[index].kind == LinkKind::Packet {
            bail!(
                "--mac {}: {} is an AF_PACKET link, which uses the interface's own MAC address",
                mac.value,
                plans[index].name
            );
        }
        macs.push((index, mac.value));
    }
    for (index, cidr) in assigned {
        plans[index].add_address(cidr)?;
    }
    for (index, mac) in macs {
        plans[index].mac = mac;
    }
    let taps: Vec<&LinkRequest> = plans.iter().filter(|p| p.kind == LinkKind::Tap).collect();
    for (i, a) in taps.iter().enumerate() {
        if taps[..i].iter().any(|b| b.mac == a.mac) {
            bail!("--mac: {} and another interface share {}", a.name, a.mac);
        }
    }
    Ok(plans)
}

/// What the loop keeps of each link besides the host's view of it.
struct LinkInfo {
    name: String,
    kind: LinkKind,
    mac: EthernetAddress,
    mtu: usize,
    tap_errors: Option<Arc<TapErrors>>,
    capture: Option<PathBuf>,
    /// No IPv6 address given: SLAAC only.
    slaac: bool,
    ipv4: Option<stack::topology::Ipv4Cidr>,
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
    let mut links = Vec::with_capacity(plans.len());
    for plan in &plans {
        links.push(attach::open(
            plan,
            args.mtu.map(|m| m as usize),
            args.pcap.as_deref(),
        )?);
    }
    let infos: Vec<LinkInfo> = links
        .iter()
        .map(|l| LinkInfo {
            name: l.name.clone(),
            kind: l.kind,
            mac: l.mac,
            mtu: l.mtu,
            tap_errors: l.tap_errors.clone(),
            capture: l.capture.clone(),
            slaac: l.slaac,
            ipv4: plans.iter().find(|p| p.name == l.name).and_then(|p| p.ipv4),
        })
        .collect();
    print_start(args, &infos);
    // Like Linux, start (DAD, router solicitation, ARP announcement) only
    // once the link is up: the kernel refuses frames before.
    if let Some(signal) = attach::wait_until_up(&links, args.netns.as_deref(), os::stop_requested)?
    {
        println!("stopped by {signal} before the links were up");
        return Ok(());
    }
    let name = args.netns.as_deref().unwrap_or("stackscope-host");
    let (mut host, kernel_settings) =
        attach::build_host(name, links, args.dad_transmits, &args.routes)?;
    let mut services = Services::open(&mut host)?;
    let mut iperf = iperf3::Server::open(&mut host, iperf3::PORT)
        .with_context(|| format!("iperf3 server: listen on port {}", iperf3::PORT))?;
    // On this thread, which runs the host.
    let recorder = match &args.trace {
        Some(path) => Some(trace::Recorder::start(path, args.trace_records as usize)?),
        None => None,
    };
    let (stopped_by, ran) = serve(&mut host, &mut services, &mut iperf, &infos);
    print_counters(&stopped_by, ran, &host, &services, &iperf, &infos);
    if let (Some(recorder), Some(path)) = (recorder, &args.trace) {
        let written = recorder.finish(name)?;
        println!(
            "trace {}: {} records, {} dropped (events the full ring could not hold)",
            path.display(),
            written.records,
            written.dropped
        );
    }
    drop(host); // closes the links (TAPs disappear) and flushes captures
    drop(kernel_settings);
    match stopped_by {
        Stop::Signal(_) => Ok(()),
        Stop::LinkGone(name) => bail!("TAP {name} was deleted under the host"),
    }
}

/// The longest the loop sleeps without looking for address changes and
/// stop signals (a signal also wakes it at once).
const MAX_SLEEP: Duration = Duration::from_millis(10);
/// How long a stopping host keeps polling so closing connections' FINs
/// leave.
const LINGER: Duration = Duration::from_millis(20);
/// How often the loop looks for address changes to print.
const ADDRESS_CHECK: Duration = Duration::from_millis(10);

/// The host's loop: services, then `host.poll(now)`, on the real-time
/// runner (which sleeps on the links when idle). Returns why it stopped
/// and how long it ran.
fn serve(
    host: &mut Host,
    services: &mut Services,
    iperf: &mut iperf3::Server<Host>,
    infos: &[LinkInfo],
) -> (Stop, Duration) {
    let runner = RealTime::new(MAX_SLEEP);
    let mut shown = AddressesShown::default();
    let mut last_check = std::time::Instant::now();
    let mut stopped = None;
    runner.run(host, |host, now| {
        let stop = match os::stop_requested() {
            Some(signal) => Some(Stop::Signal(signal)),
            None => infos
                .iter()
                .find(|i| i.tap_errors.as_ref().is_some_and(|e| e.device_gone()))
                .map(|i| Stop::LinkGone(i.name.clone())),
        };
        if let Some(stop) = stop {
            stopped = Some(stop);
            return Turn::Stop;
        }
        if last_check.elapsed() >= ADDRESS_CHECK {
            last_check = std::time::Instant::now();
            shown.print_changes(host);
        }
        let served = services.run(host);
        let iperf_moved = iperf.run(host);
        print_events(iperf);
        if served || iperf_moved.any {
            Turn::Busy
        } else if let Some(at) = iperf_moved.wake {
            // A paced iperf3 sender's next write, a drain's end; still
            // look at signals and addresses as often as when idle.
            Turn::Until(at.min(now + MAX_SLEEP))
        } else {
            Turn::Idle
        }
    });
    let ran = runner.elapsed();
    // Close the connections and give their FINs a moment to leave.
    services.close_all(host);
    // What arrived with the signal (an iperf3 client's last message) is
    // taken before the server stops.
    host.poll(runner.now());
    iperf.run(host);
    iperf.stop(host);
    print_events(iperf);
    let end = std::time::Instant::now() + LINGER;
    while std::time::Instant::now() < end {
        host.poll(runner.now());
        std::thread::sleep(Duration::from_millis(1));
    }
    (stopped.unwrap_or(Stop::Signal("a signal")), ran)
}

/// Prints what the iperf3 server reported since the last call.
fn print_events(iperf: &mut iperf3::Server<Host>) {
    let events = iperf.take_events();
    if events.is_empty() {
        return;
    }
    let mut out = io::stdout().lock();
    for event in events {
        let _ = writeln!(out, "{event}");
    }
    let _ = out.flush();
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

fn print_start(args: &HostArgs, infos: &[LinkInfo]) {
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
        "services: ICMP echo; UDP and TCP echo {}, discard {}, ttcp sink {}, iperf3 server {} (IPv6 and IPv4)",
        Kind::Echo.port(),
        Kind::Discard.port(),
        Kind::Sink.port(),
        iperf3::PORT
    );
    for info in infos {
        let _ = write!(
            out,
            "interface {} {} mac {} mtu {}",
            info.name,
            info.kind.name(),
            info.mac,
            info.mtu
        );
        if let Some(path) = &info.capture {
            let _ = write!(out, " capture {}", path.display());
        }
        let _ = writeln!(out);
        if let Some(v4) = &info.ipv4 {
            let _ = writeln!(out, "address {} {v4} ipv4", info.name);
        }
        for route in &args.routes {
            let _ = writeln!(out, "route {} via {}", route.to, route.via);
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
    iperf: &iperf3::Server<Host>,
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
    let c = iperf.counts();
    let _ = writeln!(
        out,
        "  iperf3 ({}): tests_completed {} tests_failed {} busy_refusals {} bytes_in {} bytes_out {}",
        iperf3::PORT,
        c.completed,
        c.failed,
        c.busy,
        c.bytes_in,
        c.bytes_out
    );
    let _ = writeln!(out, "links:");
    for (interface, info) in host.interfaces().iter().zip(infos) {
        let s = interface.link.stats();
        let _ = write!(
            out,
            "  {}: tx_frames {} tx_bytes {} rx_frames {} rx_bytes {} dropped_too_big {} \
             dropped_queue_full {} dropped_rx_too_long {} dropped_rx_overrun {} dropped_link_down {} dropped_os_error {}",
            info.name,
            s.tx_frames,
            s.tx_bytes,
            s.rx_frames,
            s.rx_bytes,
            s.dropped_too_big,
            s.dropped_queue_full,
            s.dropped_rx_too_long,
            s.dropped_rx_overrun,
            s.dropped_link_down,
            s.dropped_os_error,
        );
        match &info.tap_errors {
            Some(errors) => {
                let _ = writeln!(
                    out,
                    " tx_link_down {} tx_errors {} rx_errors {}",
                    errors.tx_link_down(),
                    errors.tx(),
                    errors.rx(),
                );
                if errors.tx_link_down() > 0 {
                    let _ = writeln!(
                        out,
                        "    (tx_link_down: frames the kernel refused while its side of the TAP \
                         was down; `ip link set {} up` brings it up)",
                        info.name
                    );
                }
                if let Some(error) = errors.last() {
                    let _ = writeln!(out, "    last error: {error}");
                }
            }
            None => {
                let _ = writeln!(out);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_parse_with_their_family_and_refuse_mixtures() {
        let route = parse_route("default,2001:db8:77::1").unwrap();
        assert_eq!(route.to, "::/0".parse().unwrap());
        assert_eq!(route.via, "2001:db8:77::1".parse::<IpAddr>().unwrap());
        let route = parse_route("default,192.0.2.1").unwrap();
        assert_eq!(route.to, "0.0.0.0/0".parse().unwrap());
        let route = parse_route("10.0.0.0/8,192.0.2.1").unwrap();
        assert_eq!(route.to, "10.0.0.0/8".parse().unwrap());
        assert!(parse_route("10.0.0.0/8,2001:db8::1").is_err());
        assert!(parse_route("2001:db8::/32").is_err(), "no gateway");
        assert!(parse_route("default,gateway").is_err());
        assert!(parse_route("10.0.0.0/33,192.0.2.1").is_err());
    }
}
