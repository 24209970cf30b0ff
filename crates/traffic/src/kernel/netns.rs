//! Two network namespaces joined by a veth pair, made and removed by the
//! tool (`--netns`), so kernel traffic crosses a real device path instead
//! of loopback. Each side of a transfer runs on a thread that has entered
//! its namespace (`setns` moves only the calling thread).
//!
//! Namespaces are named `stackscope-<pid>-a` / `-b`; ones left by a
//! process that no longer exists (killed before it could clean up) are
//! removed when the next pair is made.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;
use std::process::Command;

use crate::error::TrafficError;
use crate::spec::Family;

/// Where namespaces made by `ip netns add` are mounted.
const NETNS_DIR: &str = "/run/netns";
const PREFIX: &str = "stackscope-";

/// One end of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The receiver's namespace.
    A,
    /// The sender's namespace.
    B,
}

impl Side {
    fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }
}

/// Two namespaces and the veth pair between them, removed on drop.
#[derive(Debug)]
pub struct VethPair {
    namespaces: [String; 2],
    interfaces: [String; 2],
    mtu: u32,
}

// Documentation prefixes (RFC 5737 TEST-NET-1, RFC 3849): the namespaces
// are isolated, so these never reach another network.
const V4: [Ipv4Addr; 2] = [Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2)];
const V6: [Ipv6Addr; 2] = [
    Ipv6Addr::new(0x2001, 0xdb8, 0x5c, 0, 0, 0, 0, 1),
    Ipv6Addr::new(0x2001, 0xdb8, 0x5c, 0, 0, 0, 0, 2),
];

/// `side`'s address in `family` (on a veth end or a TAP's side).
pub fn address(side: Side, family: Family) -> IpAddr {
    match family {
        Family::V4 => IpAddr::V4(V4[side.index()]),
        Family::V6 => IpAddr::V6(V6[side.index()]),
    }
}

/// Whether this process runs as root (namespaces, veth pairs and raw
/// links need it; a hint to run as root is noise when it does).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Refuses what a path cannot be made with: not root, an MTU out of range.
fn check_path(mtu: u32, what: &'static str, flag: &'static str) -> Result<(), TrafficError> {
    if !is_root() {
        return Err(TrafficError::NeedRoot { what, flag });
    }
    if !(1280..=65535).contains(&mtu) {
        return Err(TrafficError::Invalid(format!(
            "--mtu {mtu} is impossible: IPv6 needs at least 1280 and links allow 65535"
        )));
    }
    Ok(())
}

impl VethPair {
    /// Makes the namespaces and the veth pair with `mtu`, addresses
    /// configured (IPv6 without DAD, so they are usable at once) and links
    /// up.
    pub fn create(mtu: u32) -> Result<Self, TrafficError> {
        check_path(
            mtu,
            "--netns (network namespaces and a veth pair)",
            "--netns",
        )?;
        remove_stale();
        let pid = std::process::id();
        let pair = Self {
            namespaces: [format!("{PREFIX}{pid}-a"), format!("{PREFIX}{pid}-b")],
            // Interface names are at most 15 bytes.
            interfaces: [format!("ssa{pid}"), format!("ssb{pid}")],
            mtu,
        };
        // From here on, dropping `pair` removes whatever was made.
        for ns in &pair.namespaces {
            ip(&["netns", "add", ns])?;
        }
        let [a, b] = &pair.interfaces;
        let [na, nb] = &pair.namespaces;
        ip(&[
            "link", "add", a, "netns", na, "type", "veth", "peer", "name", b, "netns", nb,
        ])?;
        let mtu = mtu.to_string();
        for side in [Side::A, Side::B] {
            let (ns, ifname) = (
                &pair.namespaces[side.index()],
                &pair.interfaces[side.index()],
            );
            let v4 = format!("{}/24", V4[side.index()]);
            let v6 = format!("{}/64", V6[side.index()]);
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", ifname, "mtu", &mtu, "up"])?;
            ip(&["-n", ns, "addr", "add", &v4, "dev", ifname])?;
            ip(&["-n", ns, "-6", "addr", "add", &v6, "dev", ifname, "nodad"])?;
        }
        Ok(pair)
    }

    /// Moves the calling thread into `side`'s namespace: sockets it opens
    /// from now on live there.
    pub fn enter(&self, side: Side) -> Result<(), TrafficError> {
        enter_namespace(&self.namespaces[side.index()])
    }

    /// `side`'s address in `family`.
    pub fn addr(&self, side: Side, family: Family) -> IpAddr {
        address(side, family)
    }

    /// `side`'s veth interface name (inside its namespace).
    pub fn interface(&self, side: Side) -> &str {
        &self.interfaces[side.index()]
    }

    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// Takes the kernel off `side`'s interface so another stack can run
    /// there with AF_PACKET, using the interface's MAC: its addresses are
    /// removed (it would answer for them, and reset TCP connections to
    /// them) and its IPv6 turned off (its link-local address, made from the
    /// same MAC, would be the other stack's). The link stays up.
    pub fn hand_over(&self, side: Side) -> Result<(), TrafficError> {
        let (ns, ifname) = (
            &self.namespaces[side.index()],
            &self.interfaces[side.index()],
        );
        ip(&["-n", ns, "addr", "flush", "dev", ifname])?;
        let path = format!("/proc/sys/net/ipv6/conf/{ifname}/disable_ipv6");
        // /proc/sys/net shows the namespace of the thread that reads it.
        let ns = ns.clone();
        let written = std::thread::spawn(move || {
            enter_namespace(&ns)?;
            std::fs::write(&path, "1").map_err(|e| TrafficError::io(format!("write {path}"), e))
        })
        .join()
        .map_err(|_| TrafficError::Invalid("turning IPv6 off: the thread panicked".into()))?;
        written
    }

    /// The path from sender to receiver, for a run's record: `veth B -> A
    /// between network namespaces NB and NA`.
    pub fn describe(&self) -> String {
        format!(
            "veth {} -> {} between network namespaces {} and {}",
            self.interface(Side::B),
            self.interface(Side::A),
            self.namespace(Side::B),
            self.namespace(Side::A)
        )
    }

    /// The namespace's name, for `ip netns exec`.
    pub fn namespace(&self, side: Side) -> &str {
        &self.namespaces[side.index()]
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        // Deleting a namespace destroys the veth end inside it, and with
        // it the peer.
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// One namespace made and removed by the tool, for a path through a TAP:
/// the kernel's end is the TAP's kernel side there, with one side's
/// addresses; whoever holds the TAP's descriptor is the other end.
#[derive(Debug)]
pub struct TapNamespace {
    name: String,
    interface: String,
    mtu: u32,
}

impl TapNamespace {
    /// Makes `stackscope-<pid>-t` with its loopback up; the TAP is made by
    /// the caller (in the namespace, see [`TapNamespace::enter`]) and
    /// configured with [`TapNamespace::configure_kernel_side`].
    pub fn create(mtu: u32) -> Result<Self, TrafficError> {
        check_path(mtu, "--link tap (a network namespace and a TAP)", "--link")?;
        remove_stale();
        let pid = std::process::id();
        let this = Self {
            name: format!("{PREFIX}{pid}-t"),
            interface: format!("sst{pid}"),
            mtu,
        };
        ip(&["netns", "add", &this.name])?;
        ip(&["-n", &this.name, "link", "set", "lo", "up"])?;
        Ok(this)
    }

    pub fn enter(&self) -> Result<(), TrafficError> {
        enter_namespace(&self.name)
    }

    /// The TAP's name (at most 15 bytes).
    pub fn interface(&self) -> &str {
        &self.interface
    }

    pub fn mtu(&self) -> u32 {
        self.mtu
    }

    /// Gives the TAP's kernel side `side`'s addresses (IPv6 without DAD)
    /// and brings it up.
    pub fn configure_kernel_side(&self, side: Side) -> Result<(), TrafficError> {
        let (ns, dev) = (&self.name, &self.interface);
        let v4 = format!("{}/24", V4[side.index()]);
        let v6 = format!("{}/64", V6[side.index()]);
        ip(&["-n", ns, "addr", "add", &v4, "dev", dev])?;
        ip(&["-n", ns, "-6", "addr", "add", &v6, "dev", dev, "nodad"])?;
        ip(&["-n", ns, "link", "set", dev, "up"])
    }

    pub fn describe(&self) -> String {
        format!("TAP {} in network namespace {}", self.interface, self.name)
    }
}

impl Drop for TapNamespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Moves the calling thread into the namespace `name` (made by `ip netns
/// add`).
fn enter_namespace(name: &str) -> Result<(), TrafficError> {
    let path = format!("{NETNS_DIR}/{name}");
    let file = File::open(&path).map_err(|e| TrafficError::io(format!("open {path}"), e))?;
    // SAFETY: setns on a namespace file descriptor we hold open; it
    // changes the calling thread's network namespace only.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(TrafficError::io(
            format!("enter network namespace {name}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Runs `ip ARGS`; a failure carries ip's own message.
fn ip(args: &[&str]) -> Result<(), TrafficError> {
    let output = Command::new("ip").args(args).output().map_err(|e| {
        TrafficError::io("run `ip` (iproute2): install it (apt install iproute2)", e)
    })?;
    if output.status.success() {
        return Ok(());
    }
    Err(TrafficError::Invalid(format!(
        "`ip {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// Removes namespaces left by stackscope processes that no longer run.
fn remove_stale() {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}
