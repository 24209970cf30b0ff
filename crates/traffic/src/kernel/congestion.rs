//! The kernel's TCP congestion control chosen per socket
//! (`setsockopt(TCP_CONGESTION)`, tcp(7)), with the kernel's refusals
//! turned into what it offers instead. Any socket will do (`AsFd`): this
//! crate's kernel target and the kernel probes' message drivers
//! (`kernel_probe::messages`, on std sockets) set and check it alike.

use std::os::fd::AsFd;

use socket2::{Domain, Protocol, SockRef, Socket, Type};

use crate::congestion::Congestion;
use crate::error::TrafficError;

/// What the kernel has (built in, or a module loaded).
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
/// What a socket without CAP_NET_ADMIN may choose.
const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";

/// Sets `congestion` on a TCP socket. Before connect or listen: a
/// listener's choice is its accepted connections' too (Linux's
/// `tcp_ca_openreq_child` keeps a choice made by setsockopt), and a
/// sender's is in effect from its first segment.
pub fn set(socket: &impl AsFd, congestion: Congestion) -> Result<(), TrafficError> {
    SockRef::from(socket)
        .set_tcp_congestion(congestion.name().as_bytes())
        .map_err(|e| refusal(congestion, e))
}

/// The TCP congestion control a socket runs, read back from the kernel.
pub fn in_effect(socket: &impl AsFd) -> Option<String> {
    SockRef::from(socket).tcp_congestion().ok().map(|name| {
        String::from_utf8_lossy(&name)
            .trim_end_matches('\0')
            .to_string()
    })
}

/// Checks the choice against what a connection runs: a route's
/// `congctl` (ip-route(8)) replaces a socket's choice as the connection
/// opens (`tcp_ca_dst_init` on connect, `tcp_ca_openreq_child` on
/// accept), and a run must not measure another algorithm than it names.
pub fn confirm(asked: Option<Congestion>, running: Option<&str>) -> Result<(), TrafficError> {
    match asked {
        Some(c) if running != Some(c.name()) => Err(TrafficError::Unsupported(format!(
            "-C {c} was set, but the connection runs {}: a route's congctl (ip route show) \
             chooses for it",
            running.unwrap_or("an unknown congestion control")
        ))),
        _ => Ok(()),
    }
}

/// What a TCP socket runs, read back after connect or accept, and an
/// error if that is not the choice asked for ([`confirm`]).
pub fn running(
    socket: &impl AsFd,
    asked: Option<Congestion>,
) -> Result<Option<String>, TrafficError> {
    let running = in_effect(socket);
    confirm(asked, running.as_deref())?;
    Ok(running)
}

/// Whether the kernel takes `congestion`, tried on a TCP socket of its
/// own that never connects, so a bad name fails before a run starts.
pub fn check(congestion: Congestion) -> Result<(), TrafficError> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| TrafficError::io("open a TCP socket to try -C", e))?;
    set(&socket, congestion)
}

/// What the kernel's refusal means (`tcp_set_congestion_control`).
fn refusal(congestion: Congestion, e: std::io::Error) -> TrafficError {
    match e.raw_os_error() {
        // Neither registered nor loadable as the module tcp_NAME (root
        // may load one: tcp_ca_find_autoload).
        Some(libc::ENOENT) => TrafficError::Unsupported(format!(
            "the kernel has no TCP congestion control `{congestion}`: it offers {} \
             (net.ipv4.tcp_available_congestion_control)",
            names(AVAILABLE)
        )),
        // Registered, but not in the allowed list and no CAP_NET_ADMIN.
        Some(libc::EPERM) => TrafficError::Unsupported(format!(
            "the kernel lets only CAP_NET_ADMIN choose `{congestion}`: run as root or choose \
             one of {} (net.ipv4.tcp_allowed_congestion_control)",
            names(ALLOWED)
        )),
        _ => TrafficError::io(format!("set TCP_CONGESTION to {congestion}"), e),
    }
}

/// A sysctl's list of names, comma-separated, or why it could not be read.
fn names(path: &str) -> String {
    match std::fs::read_to_string(path) {
        Ok(text) => text.split_whitespace().collect::<Vec<_>>().join(", "),
        Err(e) => format!("(unknown: {path}: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> Congestion {
        Congestion::parse(text).unwrap()
    }

    /// Reno is always built in (net/ipv4/tcp_cong.c), so the kernel
    /// takes it whatever its default, and says what it runs.
    #[test]
    fn reno_is_set_and_read_back() {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).unwrap();
        set(&socket, name("reno")).unwrap();
        assert_eq!(in_effect(&socket).as_deref(), Some("reno"));
    }

    /// A std socket is set and read back the same way (the kernel
    /// probes' message drivers hold std sockets), and [`running`] refuses
    /// one that runs another algorithm than asked.
    #[test]
    fn a_std_socket_is_set_and_checked() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set(&listener, name("reno")).unwrap();
        assert_eq!(
            running(&listener, Some(name("reno"))).unwrap().as_deref(),
            Some("reno")
        );
        assert_eq!(running(&listener, None).unwrap().as_deref(), Some("reno"));
        let e = running(&listener, Some(name("cubic")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("-C cubic was set, but the connection runs reno"),
            "{e}"
        );
    }

    #[test]
    fn an_unknown_name_is_refused_with_what_the_kernel_offers() {
        let e = check(name("no-such-cc")).unwrap_err().to_string();
        assert!(e.contains("no TCP congestion control `no-such-cc`"), "{e}");
        assert!(e.contains("it offers") && e.contains("reno"), "{e}");
    }

    #[test]
    fn a_connection_running_another_algorithm_is_refused() {
        assert!(confirm(None, Some("bbr")).is_ok());
        assert!(confirm(Some(name("reno")), Some("reno")).is_ok());
        let e = confirm(Some(name("reno")), Some("bbr"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("-C reno was set, but the connection runs bbr"),
            "{e}"
        );
    }
}
