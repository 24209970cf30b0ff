//! Opening kernel sockets the way every kernel-target side needs them:
//! the requested buffer sizes set before connect/listen (so TCP's window
//! scale covers them), IPv6 sockets IPv6-only, and errors turned into
//! one line that says what to do.

use std::io;
use std::net::SocketAddr;

use socket2::{Domain, Protocol as SockProtocol, SockAddr, Socket, Type};

use crate::env::GrantedBuffers;
use crate::error::TrafficError;
use crate::spec::Protocol;

/// A new socket for `protocol` in `addr`'s family with `sockbuf` applied.
pub fn open(
    protocol: Protocol,
    addr: SocketAddr,
    sockbuf: Option<usize>,
) -> Result<Socket, TrafficError> {
    let domain = Domain::for_address(addr);
    let (ty, proto) = match protocol {
        Protocol::Tcp => (Type::STREAM, SockProtocol::TCP),
        Protocol::Udp => (Type::DGRAM, SockProtocol::UDP),
        // Callers name TCP or UDP: frames use AF_PACKET sockets, and the
        // kernel has no XTP (its transport refuses it before this).
        Protocol::Raw | Protocol::Xtp => unreachable!("only TCP and UDP sockets open here"),
    };
    let socket = Socket::new(domain, ty, Some(proto))
        .map_err(|e| TrafficError::io(format!("open a {protocol} socket"), e))?;
    if addr.is_ipv6() {
        socket
            .set_only_v6(true)
            .map_err(|e| TrafficError::io("set IPV6_V6ONLY", e))?;
    }
    if let Some(bytes) = sockbuf {
        socket
            .set_send_buffer_size(bytes)
            .map_err(|e| TrafficError::io(format!("set SO_SNDBUF to {bytes}"), e))?;
        socket
            .set_recv_buffer_size(bytes)
            .map_err(|e| TrafficError::io(format!("set SO_RCVBUF to {bytes}"), e))?;
    }
    Ok(socket)
}

/// Binds `socket` to `addr`, saying clearly when the port is taken.
pub fn bind(socket: &Socket, addr: SocketAddr) -> Result<(), TrafficError> {
    socket
        .bind(&SockAddr::from(addr))
        .map_err(|e| match e.kind() {
            io::ErrorKind::AddrInUse => TrafficError::Invalid(format!(
                "port {} is in use on {}: stop whatever holds it or pick another port with -p",
                addr.port(),
                addr.ip()
            )),
            io::ErrorKind::AddrNotAvailable => TrafficError::Invalid(format!(
                "{} is not an address of this host (or its namespace): bind to one it has",
                addr.ip()
            )),
            _ => TrafficError::io(format!("bind {addr}"), e),
        })
}

/// Turns a connect or first-send error into what the user should do.
pub fn peer_error(e: io::Error, dest: SocketAddr, timeout: std::time::Duration) -> TrafficError {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => TrafficError::Invalid(format!(
            "nothing listens on {dest}: start the receiver first (stackscope ttcp -r) or check -p"
        )),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            TrafficError::timeout(timeout, format!("connecting to {dest}: is the host up?"))
        }
        io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => {
            TrafficError::Invalid(format!(
                "{} is unreachable from here: check the address and the routes",
                dest.ip()
            ))
        }
        _ => TrafficError::io(format!("connect to {dest}"), e),
    }
}

/// The buffer sizes the kernel granted.
pub fn granted(socket: &Socket) -> GrantedBuffers {
    GrantedBuffers {
        send: socket.send_buffer_size().ok(),
        recv: socket.recv_buffer_size().ok(),
    }
}

/// A TCP socket's `TCP_INFO` (Linux's `struct tcp_info`), if the kernel
/// answers.
fn raw_tcp_info(socket: &impl std::os::fd::AsRawFd) -> Option<libc::tcp_info> {
    let mut info = std::mem::MaybeUninit::<libc::tcp_info>::zeroed();
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` is writable for `len` bytes, and the descriptor is
    // open for the call: `socket` borrows its owner.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    // SAFETY: zero-initialised plain integers, filled (partly or wholly)
    // by the kernel: every bit pattern is a valid `tcp_info`.
    Some(unsafe { info.assume_init() })
}

/// The kernel's count of segments a TCP socket retransmitted
/// (`tcpi_total_retrans` of `TCP_INFO`), if it answers.
pub fn total_retransmits(socket: &impl std::os::fd::AsRawFd) -> Option<u64> {
    raw_tcp_info(socket).map(|info| u64::from(info.tcpi_total_retrans))
}

/// A TCP socket's congestion window, RTT, retransmissions and MSS from
/// `TCP_INFO`, as iperf3 reads them (cwnd in bytes: `tcpi_snd_cwnd`
/// segments times `tcpi_snd_mss`).
pub fn tcp_info(socket: &impl std::os::fd::AsRawFd) -> Option<crate::transport::TcpInfo> {
    let info = raw_tcp_info(socket)?;
    let mss = u64::from(info.tcpi_snd_mss);
    Some(crate::transport::TcpInfo {
        snd_cwnd: u64::from(info.tcpi_snd_cwnd) * mss,
        // tcpi_snd_wnd is past the end of libc's struct: not read.
        snd_wnd: 0,
        rtt_us: u64::from(info.tcpi_rtt),
        rttvar_us: u64::from(info.tcpi_rttvar),
        retransmits: u64::from(info.tcpi_total_retrans),
        pmtu: u64::from(info.tcpi_pmtu),
        mss,
    })
}

/// Bytes of a TCP socket's send queue not yet acknowledged by the peer
/// (`SIOCOUTQ`: unsent plus unacknowledged), or `None` when the kernel
/// will not say.
pub fn unacknowledged_bytes(socket: &impl std::os::fd::AsRawFd) -> Option<u64> {
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one int through the pointer,
    // which is valid for the call; the descriptor is open (borrowed).
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
    (rc == 0).then(|| u64::try_from(queued).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    /// Both readers of `TCP_INFO` answer for a connected loopback socket,
    /// and agree on its retransmissions; a socket that is not TCP gets none.
    #[test]
    fn tcp_info_is_read_from_a_connected_socket() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let _server = listener.accept().unwrap();
        let info = tcp_info(&client).expect("TCP_INFO");
        assert!(info.mss > 0 && info.snd_cwnd >= info.mss, "{info:?}");
        assert_eq!(total_retransmits(&client), Some(info.retransmits));
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(total_retransmits(&udp), None);
    }
}
