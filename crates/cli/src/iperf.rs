//! `stackscope iperf`: iperf3's client and server with iperf3's options
//! and output, on the kernel's stack or the reference stack. The client
//! and the server are the traffic crate's programs over `Transport`
//! (`program::iperf3`), run by the same drivers as ttcp's ends.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use stack::topology::IpCidr;
use traffic::env::Environment;
use traffic::program::iperf3::client::{Client, ClientOptions};
use traffic::program::iperf3::output::{self, RunInfo};
use traffic::program::iperf3::params::Protocol;
use traffic::program::iperf3::{Serve, ServerCounts, PORT};
use traffic::report::Timestamp;
use traffic::spec::StackKind;
use traffic::units;

use crate::attach::LinkKind;
use crate::ttcp::StackArg;

#[derive(Debug, Args)]
pub struct IperfArgs {
    /// Client: connect to the iperf3 server on HOST (a name or an address).
    #[arg(
        short = 'c',
        long = "client",
        value_name = "HOST",
        conflicts_with = "server"
    )]
    client: Option<String>,
    /// Server: answer iperf3 clients (tests one at a time) until Ctrl-C.
    #[arg(short = 's', long = "server")]
    server: bool,
    /// Server: serve one test, then exit.
    #[arg(short = '1', long = "one-off", requires = "server")]
    one_off: bool,
    /// The server's port.
    #[arg(short = 'p', long = "port", default_value_t = PORT,
          value_parser = clap::value_parser!(u16).range(1..))]
    port: u16,
    /// Seconds to transmit (whole seconds, as iperf3).
    #[arg(short = 't', long = "time", value_name = "SECS", default_value_t = 10)]
    time: u64,
    /// Bytes to transmit instead of -t (K/M/G = 1024-based).
    #[arg(short = 'n', long = "bytes", value_name = "BYTES", value_parser = units::parse_size)]
    bytes: Option<u64>,
    /// Blocks (writes of -l bytes) to transmit instead of -t.
    #[arg(short = 'k', long = "blockcount", value_name = "BLOCKS", conflicts_with = "bytes",
          value_parser = units::parse_size)]
    blocks: Option<u64>,
    /// Bytes per write (TCP, default 128K) or per datagram (UDP, default
    /// 1460).
    #[arg(short = 'l', long = "length", value_name = "LEN", value_parser = units::parse_size)]
    len: Option<u64>,
    /// Target bitrate per stream in bits/s (k/M/G = 1000-based); UDP's
    /// default is 1M, TCP's unlimited; 0 is unlimited.
    #[arg(short = 'b', long = "bitrate", value_name = "RATE", value_parser = parse_bitrate)]
    bitrate: Option<u64>,
    /// UDP instead of TCP.
    #[arg(short = 'u', long = "udp")]
    udp: bool,
    /// Parallel streams.
    #[arg(short = 'P', long = "parallel", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=128))]
    parallel: u16,
    /// Reverse: the server sends, the client receives.
    #[arg(short = 'R', long = "reverse")]
    reverse: bool,
    /// Socket buffer size (SO_SNDBUF/SO_RCVBUF), e.g. 256K.
    #[arg(short = 'w', long = "window", value_name = "BYTES", value_parser = units::parse_size)]
    window: Option<u64>,
    /// Seconds between interval reports; 0 for none.
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "SECS",
        default_value_t = 1.0
    )]
    interval: f64,
    /// Print iperf3's JSON (schema of iperf3 3.12; stackscope's own
    /// figures under "stackscope") instead of the text lines; with -s,
    /// one document per test on stdout and the log on stderr.
    #[arg(short = 'J', long = "json")]
    json: bool,
    /// IPv4 only (a name resolves to its IPv4 address).
    #[arg(short = '4', long = "version4", conflicts_with = "ipv6")]
    ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    ipv6: bool,
    /// Which stack carries the test: the kernel's sockets, or the
    /// reference stack on a link to the operating system (--link, --iface).
    #[arg(long, value_enum, default_value = "kernel")]
    stack: StackArg,
    /// --stack ref: `tap` creates the TAP --iface, `packet` takes over the
    /// interface --iface with AF_PACKET (as `ttcp --link`). Root only.
    #[arg(long, value_enum, value_name = "KIND")]
    link: Option<LinkKind>,
    /// --stack ref: the TAP to create or the interface to take over.
    #[arg(long, value_name = "NAME", requires = "link")]
    iface: Option<String>,
    /// --stack ref: an address of the reference host with its prefix
    /// length (repeatable); without an IPv6 one the host uses SLAAC.
    #[arg(long = "addr", value_name = "ADDR/LEN", requires = "link")]
    addrs: Vec<IpCidr>,
    /// --stack ref: DAD probes per IPv6 address.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "link",
          value_parser = clap::value_parser!(u32).range(0..=10))]
    dad_transmits: u32,
    /// --stack ref: a pcapng capture of the host's interface into DIR.
    #[arg(long, value_name = "DIR", requires = "link")]
    pcap: Option<PathBuf>,
    /// --link tap: the TAP's MTU.
    #[arg(long, default_value_t = 1500)]
    mtu: u32,
    /// Give up after SECS with no answer from the server.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    timeout: f64,
}

fn parse_bitrate(text: &str) -> Result<u64, String> {
    if text.trim() == "0" {
        return Ok(0);
    }
    units::parse_rate(text)
}

/// HOST as an address of the family asked for; names through the
/// system's resolver (so `localhost` works).
fn resolve(host: &str, port: u16, v4: bool, v6: bool) -> Result<SocketAddr> {
    let fits = |a: &SocketAddr| (!v4 || a.is_ipv4()) && (!v6 || a.is_ipv6());
    if let Ok(ip) = host.parse::<IpAddr>() {
        let addr = SocketAddr::new(ip, port);
        if !fits(&addr) {
            bail!("{host} is not of the family asked for (-4/-6)");
        }
        return Ok(addr);
    }
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}"))?
        .collect();
    // iperf3 takes the resolver's first answer of the family.
    found
        .iter()
        .find(|a| fits(a))
        .copied()
        .with_context(|| format!("{host} has no address of the family asked for (-4/-6)"))
}

pub fn run(args: &IperfArgs) -> Result<()> {
    if args.server {
        return serve(args);
    }
    let Some(host) = &args.client else {
        bail!("say -c HOST (client) or -s (server)");
    };
    if !args.interval.is_finite() || args.interval < 0.0 || args.interval > 3600.0 {
        bail!("-i {}: 0 (none) to 3600 seconds", args.interval);
    }
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 86_400.0) {
        bail!(
            "--timeout {}: more than 0, at most 86400 seconds",
            args.timeout
        );
    }
    let protocol = if args.udp {
        Protocol::Udp
    } else {
        Protocol::Tcp
    };
    let len = args.len.unwrap_or(match protocol {
        Protocol::Tcp => 128 * 1024,
        Protocol::Udp => 1460,
    });
    match protocol {
        Protocol::Tcp if len == 0 || len > 1 << 20 => bail!("-l {len}: 1 to 1048576 bytes"),
        Protocol::Udp if !(16..=65_507).contains(&len) => bail!("-u -l {len}: 16 to 65507 bytes"),
        _ => {}
    }
    let bytes = match (args.bytes, args.blocks) {
        (Some(0), _) | (_, Some(0)) => bail!("-n 0 / -k 0: give a positive count"),
        (Some(n), _) => Some(n),
        (None, Some(k)) => Some(
            k.checked_mul(len)
                .with_context(|| format!("-k {k} blocks of {len} bytes is too many"))?,
        ),
        (None, None) => None,
    };
    if bytes.is_none() && (args.time == 0 || args.time > 86_400) {
        bail!("-t {}: 1 to 86400 seconds", args.time);
    }
    let server = resolve(host, args.port, args.ipv4, args.ipv6)?;
    let options = ClientOptions {
        server,
        host_name: host.clone(),
        protocol,
        reverse: args.reverse,
        parallel: usize::from(args.parallel),
        len: len as usize,
        rate: args.bitrate,
        bytes,
        time: args.time,
        window: args.window.map(|w| w as usize),
        interval: (args.interval > 0.0).then(|| Duration::from_secs_f64(args.interval)),
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let timestamp = Timestamp::now();
    let text = !args.json;
    if text {
        println!("Connecting to host {host}, port {}", args.port);
        if args.reverse {
            println!("Reverse mode, remote host {host} is sending");
        }
    }
    let sender = !args.reverse;
    let header_printed = std::sync::atomic::AtomicBool::new(false);
    let printer = move |i: &traffic::program::iperf3::client::Interval| {
        if !header_printed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            println!("{}", output::interval_header(protocol, sender));
        }
        for line in output::interval_lines(protocol, sender, i) {
            println!("{line}");
        }
    };
    let (run, path) = match args.stack {
        StackArg::Kernel => {
            if args.link.is_some() {
                bail!("--link is for --stack ref");
            }
            let clock = traffic::kernel::net::KernelNet::new();
            let now = traffic::transport::Transport::now(&clock);
            let mut client = Client::new(options, now);
            if text {
                client = client.on_interval(printer).on_connected(print_connected);
            }
            let run = traffic::run::program_on_kernel(&mut client)?;
            (run, format!("this host to {server}"))
        }
        StackArg::Ref => {
            let (mut host, settings, path) = ref_host(args)?;
            let now = host.now();
            let mut client = Client::new(options, now);
            if text {
                client = client.on_interval(printer).on_connected(print_connected);
            }
            let run = traffic::run::program_attached(&mut host, client)?;
            drop(settings);
            (run, path)
        }
    };
    if text {
        for line in output::summary_lines(&run) {
            println!("{line}");
        }
        println!("\niperf Done.");
    } else {
        let stack = match args.stack {
            StackArg::Kernel => StackKind::Kernel,
            StackArg::Ref => StackKind::Ref,
        };
        let mut info = run_info(stack, path);
        info.timesecs = timestamp.timesecs;
        println!("{}", output::json_text(&output::json(&run, &info)));
    }
    Ok(())
}

/// What the JSON says about where the test ran (its time: now).
fn run_info(stack: StackKind, path: String) -> RunInfo {
    let env = Environment::detect(stack, path);
    RunInfo {
        system_info: env.kernel.clone(),
        timesecs: Timestamp::now().timesecs,
        stackscope: json!({
            "stack": format!("{stack:?}").to_lowercase(),
            "path": env.path,
            "cpu_model": env.cpu_model,
            "cpus": env.cpus,
            "stackscope_version": env.stackscope_version,
        }),
    }
}

/// iperf3's line for a stream that opened.
fn print_connected(socket: u32, local: SocketAddr, remote: SocketAddr) {
    println!(
        "[{socket:3}] local {} port {} connected to {} port {}",
        local.ip(),
        local.port(),
        remote.ip(),
        remote.port()
    );
}

fn ref_host(
    args: &IperfArgs,
) -> Result<(
    stack::iface::host::Host,
    crate::attach::KernelSettings,
    String,
)> {
    let (Some(kind), Some(iface)) = (args.link, args.iface.as_deref()) else {
        bail!(
            "--stack ref needs --link tap|packet and --iface NAME (a link to the operating system)"
        );
    };
    crate::ttcp::attach_host(
        "stackscope-iperf",
        kind,
        iface,
        &args.addrs,
        args.dad_transmits,
        args.pcap.as_deref(),
        args.mtu,
        Duration::from_secs_f64(args.timeout),
    )
}

fn serve(args: &IperfArgs) -> Result<()> {
    crate::host::os::catch_stop_signals()?;
    let stop = || crate::host::os::stop_requested().is_some();
    // -J: stdout holds one JSON document per test; the log goes to stderr.
    let json = args.json;
    let log = move |line: String| {
        if json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    let interval = (args.interval > 0.0).then(|| Duration::from_secs_f64(args.interval));
    let stack = match args.stack {
        StackArg::Kernel => StackKind::Kernel,
        StackArg::Ref => StackKind::Ref,
    };
    let print_json = move |run: traffic::program::iperf3::client::ClientRun| {
        if json {
            let info = run_info(stack, "iperf3 server".into());
            println!("{}", output::json_text(&output::json(&run, &info)));
        }
    };
    let counts: ServerCounts = match args.stack {
        StackArg::Kernel => {
            let mut program =
                Serve::new(args.port, stop, args.one_off, log).on_test(interval, print_json);
            traffic::run::program_on_kernel(&mut program)?
        }
        StackArg::Ref => {
            let (mut host, settings, path) = ref_host(args)?;
            eprintln!("iperf server on the {path}");
            let program =
                Serve::new(args.port, stop, args.one_off, log).on_test(interval, print_json);
            let counts = traffic::run::program_attached(&mut host, program)?;
            drop(settings);
            counts
        }
    };
    let counts_line = format!(
        "iperf3 ({}): tests_completed {} tests_failed {} busy_refusals {} bytes_in {} bytes_out {}",
        args.port, counts.completed, counts.failed, counts.busy, counts.bytes_in, counts.bytes_out
    );
    if json {
        eprintln!("{counts_line}");
    } else {
        println!("{counts_line}");
    }
    if args.one_off && counts.failed > 0 {
        bail!("the test failed");
    }
    Ok(())
}
