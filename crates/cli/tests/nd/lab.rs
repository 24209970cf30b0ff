//! The lab of one test: a namespace with a persistent TAP whose kernel
//! side is configured and captured before `stackscope host` attaches,
//! radvd when asked for, and the kernel's traffic to the host.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::capture::Capture;
use crate::support::{require_tool, skip_reason, HostProcess, Netns, Reaped, Stopped, TempDir};

/// The TAP's name (the same in every test's namespace).
pub const TAP: &str = "ssnd0";
/// The host's manual addresses and the kernel's, on 2001:db8:77::/64 and
/// 192.0.2.0/24 (documentation prefixes). The kernel's second address of
/// each family is one the host has never heard from.
pub const HOST6: &str = "2001:db8:77::2";
pub const HOST4: &str = "192.0.2.2";
pub const KERNEL6: &str = "2001:db8:77::1";
pub const KERNEL6_OTHER: &str = "2001:db8:77::3";
pub const KERNEL4: &str = "192.0.2.1";
pub const KERNEL4_OTHER: &str = "192.0.2.3";
/// The prefix radvd advertises.
pub const SLAAC_PREFIX: &str = "2001:db8:5a::";
/// A MAC no interface has: the kernel's wrong neighbour entries point at it.
pub const NOBODY_MAC: &str = "02:00:5e:00:53:99";
/// How long the host's addresses may take to be ready: DAD waits up to
/// 1 s before its probe and 1 s after it.
pub const READY: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------
// The lab: namespace, TAP, capture, host (and radvd)

/// What one test needs on each side of the TAP.
pub struct LabConfig<'a> {
    /// `stackscope host` arguments besides --netns and --tap.
    pub host_args: &'a [&'a str],
    /// The kernel's addresses on the TAP (IPv6 ones without DAD).
    pub kernel_addrs: &'a [&'a str],
    /// radvd advertises SLAAC_PREFIX on the TAP.
    pub radvd: bool,
}

/// A running lab. Fields drop in order: the host is killed, radvd and
/// dumpcap are stopped, then the namespace and the directory go.
pub struct Lab {
    host: HostProcess,
    radvd: Option<Radvd>,
    capture: Capture,
    pub ns: Netns,
    dir: TempDir,
    pub host_mac: String,
    pub kernel_mac: String,
    started: Instant,
}

/// What a stopped lab leaves to check: the host's output and the
/// kernel-side capture (in `_dir`, removed when this is dropped).
pub struct Finished {
    pub stopped: Stopped,
    pub capture: PathBuf,
    pub host_mac: String,
    pub kernel_mac: String,
    _dir: TempDir,
}

impl Lab {
    /// Builds the lab, or says why the test is skipped (`None`).
    pub fn start(config: LabConfig<'_>) -> Option<Lab> {
        if let Some(why) = skip_reason() {
            eprintln!("skipped: {why}");
            return None;
        }
        require_tool("ip", "iproute2");
        require_tool("ping", "iputils-ping");
        let radvd_binary = config.radvd.then(radvd_binary);
        let ns = match Netns::create() {
            Ok(ns) => ns,
            Err(why) => {
                eprintln!("skipped: network namespaces are refused here: {why}");
                return None;
            }
        };
        let started = Instant::now();
        let dir = TempDir::new("interop-nd");
        prepare_kernel_side(&ns, &config);
        let capture = Capture::start(&ns, TAP, dir.join("kernel.pcapng"));
        let mut args = vec!["--netns", ns.name(), "--tap", TAP];
        args.extend_from_slice(config.host_args);
        let mut host = HostProcess::start(&args);
        let interface = host
            .wait_for_line(
                |l| l.starts_with(&format!("interface {TAP} tap mac ")),
                Duration::from_secs(5),
            )
            .unwrap_or_else(|why| panic!("the host's interface line: {why}"));
        let host_mac = interface
            .split_whitespace()
            .nth(4)
            .expect("interface NAME tap mac MAC")
            .to_lowercase();
        let kernel_mac = kernel_mac(&ns);
        let radvd = radvd_binary.map(|binary| Radvd::start(&ns, &dir, &binary));
        Some(Lab {
            host,
            radvd,
            capture,
            ns,
            dir,
            host_mac,
            kernel_mac,
            started,
        })
    }

    /// Waits for the host's line starting with `prefix`; a failure shows
    /// radvd's log too, if it runs.
    pub fn wait_for(&mut self, prefix: &str, timeout: Duration) -> String {
        let waited = self.host.wait_for_line(|l| l.starts_with(prefix), timeout);
        waited.unwrap_or_else(|why| {
            let radvd = match self.radvd {
                Some(_) => std::fs::read_to_string(self.dir.join("radvd.log"))
                    .unwrap_or_else(|e| format!("(no radvd.log: {e})")),
                None => "(not running)".to_string(),
            };
            panic!("waiting for `{prefix}`: {why}\nradvd:\n{radvd}")
        })
    }

    /// The host's process id.
    pub fn host_pid(&self) -> u32 {
        self.host.pid().expect("the host runs")
    }

    /// Stops the host with SIGINT (it must exit 0 and print its
    /// counters), then radvd and the capture.
    pub fn finish(self) -> Finished {
        let Lab {
            host,
            radvd,
            capture,
            ns,
            dir,
            host_mac,
            kernel_mac,
            started,
        } = self;
        // The capture first, while both ends are up: it holds the test's
        // traffic up to here.
        let capture = capture.stop(&ns);
        let stopped = host.stop(libc::SIGINT, Duration::from_secs(5));
        stopped.assert_clean_exit();
        drop(radvd);
        drop(ns);
        eprintln!("test took {:.1} s", started.elapsed().as_secs_f64());
        Finished {
            stopped,
            capture,
            host_mac,
            kernel_mac,
            _dir: dir,
        }
    }
}

/// The persistent TAP, the kernel's addresses and timers, link up: all
/// before the host attaches, so the capture can start first.
fn prepare_kernel_side(ns: &Netns, config: &LabConfig<'_>) {
    ns.ip(&["tuntap", "add", "dev", TAP, "mode", "tap"]);
    let mut settings = vec![
        // The kernel's link-local address usable at once (radvd sends
        // from it); its other addresses are added with nodad.
        (format!("ipv6/conf/{TAP}/accept_dad"), "0"),
        // Short NUD timers, so a wrong neighbour entry fails over in
        // about a second instead of eight (DELAY 5 s, 3 probes 1 s apart).
        (format!("ipv6/neigh/{TAP}/delay_first_probe_time"), "1"),
        (format!("ipv6/neigh/{TAP}/retrans_time_ms"), "200"),
        (format!("ipv4/neigh/{TAP}/delay_first_probe_time"), "1"),
        (format!("ipv4/neigh/{TAP}/retrans_time_ms"), "200"),
    ];
    if config.radvd {
        // radvd refuses to advertise unless the node forwards.
        settings.push(("ipv6/conf/all/forwarding".to_string(), "1"));
    }
    set_sysctls(ns, settings);
    for addr in config.kernel_addrs {
        if addr.contains(':') {
            ns.ip(&["addr", "add", addr, "dev", TAP, "nodad"]);
        } else {
            ns.ip(&["addr", "add", addr, "dev", TAP]);
        }
    }
    ns.ip(&["link", "set", "lo", "up"]);
    ns.ip(&["link", "set", TAP, "up"]);
}

/// Writes `/proc/sys/net/KEY` values from a thread in the namespace (the
/// net sysctls are per namespace, resolved for the writing thread).
fn set_sysctls(ns: &Netns, settings: Vec<(String, &'static str)>) {
    ns.within(move || {
        for (key, value) in settings {
            let path = format!("/proc/sys/net/{key}");
            std::fs::write(&path, value).unwrap_or_else(|e| panic!("{path} = {value}: {e}"));
        }
    });
}

/// The kernel side's MAC (`link/ether MAC` of `ip link show`).
fn kernel_mac(ns: &Netns) -> String {
    let shown = ns.ip(&["link", "show", "dev", TAP]);
    let mut words = shown.split_whitespace();
    words
        .find(|w| *w == "link/ether")
        .and_then(|_| words.next())
        .unwrap_or_else(|| panic!("no link/ether in:\n{shown}"))
        .to_lowercase()
}

/// Where radvd is: /usr/sbin (often not on a user's PATH), else PATH.
fn radvd_binary() -> String {
    let sbin = "/usr/sbin/radvd";
    if Path::new(sbin).exists() {
        return sbin.to_string();
    }
    require_tool("radvd", "radvd");
    "radvd".to_string()
}

/// radvd advertising SLAAC_PREFIX on the TAP, in the foreground (`-n`),
/// logging to a file in the lab's directory; stopped when dropped.
struct Radvd(Reaped);

impl Radvd {
    fn start(ns: &Netns, dir: &TempDir, binary: &str) -> Radvd {
        // MinRtrAdvInterval 3 and MaxRtrAdvInterval 4 are the shortest
        // radvd allows without Mobile IPv6; it also answers the host's
        // Router Solicitations and advertises once at start.
        let config = format!(
            "interface {TAP} {{\n\
             \tAdvSendAdvert on;\n\
             \tMinRtrAdvInterval 3;\n\
             \tMaxRtrAdvInterval 4;\n\
             \tprefix {SLAAC_PREFIX}/64 {{\n\
             \t\tAdvOnLink on;\n\
             \t\tAdvAutonomous on;\n\
             \t}};\n\
             }};\n"
        );
        let config_path = dir.join("radvd.conf");
        std::fs::write(&config_path, config).expect("write radvd.conf");
        let log = std::fs::File::create(dir.join("radvd.log")).expect("radvd.log");
        let child = Reaped::spawn(
            ns.command(binary, &["-n", "-m", "stderr", "-C"])
                .arg(&config_path)
                .arg("-p")
                .arg(dir.join("radvd.pid"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log),
        );
        Radvd(child)
    }
}

impl Drop for Radvd {
    fn drop(&mut self) {
        // radvd's orderly stop; killed if it does not end.
        self.0.stop(libc::SIGTERM, Duration::from_secs(5));
    }
}

// ---------------------------------------------------------------------
// Traffic from the kernel's side

/// `ping -c 1` from `from` to `to`; whether it was answered.
fn ping_once(ns: &Netns, from: &str, to: &str) -> bool {
    let family = if to.contains(':') { "-6" } else { "-4" };
    let output = ns.exec("ping", &[family, "-c", "1", "-W", "1", "-I", from, to]);
    output.status.success()
}

/// Three pings from `from` to `to`, every one answered.
pub fn ping(ns: &Netns, from: &str, to: &str) {
    let family = if to.contains(':') { "-6" } else { "-4" };
    let args = [family, "-c", "3", "-i", "0.2", "-W", "2", "-I", from, to];
    let output = ns.exec("ping", &args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("3 received"),
        "ping {} failed ({}):\n{stdout}{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Pings until one is answered, within `timeout`; returns the attempts.
pub fn ping_until_answered(ns: &Netns, from: &str, to: &str, timeout: Duration) -> u32 {
    let deadline = Instant::now() + timeout;
    let mut attempts = 0;
    loop {
        attempts += 1;
        if ping_once(ns, from, to) {
            return attempts;
        }
        assert!(
            Instant::now() < deadline,
            "{from} → {to}: no answer within {timeout:?} ({attempts} pings)"
        );
    }
}

/// Seconds since the epoch: the clock dumpcap stamps frames with.
pub fn wall_clock() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// The drops the host printed (reason → count; an absent reason is 0).
pub fn drops(stopped: &Stopped) -> BTreeMap<String, u64> {
    let mut drops = BTreeMap::new();
    let mut inside = false;
    for line in stopped.stdout.lines() {
        if line.starts_with("drops:") {
            inside = true;
            continue;
        }
        if inside {
            let Some((reason, count)) = line.trim().split_once(": ") else {
                break;
            };
            let Ok(count) = count.parse::<u64>() else {
                break;
            };
            drops.insert(reason.to_string(), count);
        }
    }
    drops
}

pub fn drop_count(drops: &BTreeMap<String, u64>, reason: &str) -> u64 {
    drops.get(reason).copied().unwrap_or(0)
}

/// Reads the kernel's TX drop count of the TAP: frames the TAP's queue
/// could not take never reached the host.
pub fn tap_tx_dropped(ns: &Netns) -> u64 {
    ns.link_stat(TAP, "tx_dropped")
}

/// One UDP echo round trip from the kernel (retried once: the first
/// datagram may wait on neighbour resolution).
pub fn udp_echo(to: SocketAddr) {
    let any: SocketAddr = if to.is_ipv6() {
        "[::]:0".parse().unwrap()
    } else {
        "0.0.0.0:0".parse().unwrap()
    };
    let socket = UdpSocket::bind(any).expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let payload = b"stackscope after the storm";
    let mut buf = [0u8; 256];
    for attempt in 0..2 {
        socket.send_to(payload, to).expect("send");
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => {
                assert_eq!(from, to);
                assert_eq!(&buf[..len], payload);
                return;
            }
            Err(e) if attempt == 0 => eprintln!("UDP echo {to}: {e}; once more"),
            Err(e) => panic!("no UDP echo from {to}: {e}"),
        }
    }
}

/// `len` bytes through the TCP echo service and back.
pub fn tcp_echo(to: SocketAddr, len: usize) {
    let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
    crate::support::tcp_echo(to, data);
}
