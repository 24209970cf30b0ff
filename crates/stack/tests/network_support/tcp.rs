//! TCP between host-a and host-b for the TCP tests (`tcp_host.rs`,
//! `tcp_impairments.rs`, `offload.rs`): waiting for the hosts' addresses,
//! a connection from host-a to a listener on host-b, and a bulk exchange
//! both ways at once that must finish in time.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use stack::iface::host::{Host, TcpError, TcpHandle};
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;

use super::{address_of, host, host_mut};

/// The port host-b listens on.
pub const PORT: u16 = 5001;

/// Runs `sim` until host-a and host-b both have a global IPv6 address
/// (SLAAC, or DAD on static ones, done); panics if that takes longer than
/// `limit`.
pub fn wait_for_addresses(sim: &mut Simulator, limit: Duration) {
    let ready = sim.run_until_with(limit, |sim| {
        ["host-a", "host-b"]
            .iter()
            .all(|n| !host(sim, n).global_ipv6_addresses().is_empty())
    });
    assert!(
        ready,
        "host-a and host-b have no global address after {limit:?}"
    );
}

/// A connection from host-a to a listener on host-b's first address of
/// the family (`v6`) at [`PORT`], both ends with `config`: (client,
/// server), each established within `limit` (seconds where the wire may
/// lose the handshake's segments).
pub fn connect(
    sim: &mut Simulator,
    v6: bool,
    config: TcpConfig,
    limit: Duration,
) -> (TcpHandle, TcpHandle) {
    let any: IpAddr = if v6 { "::" } else { "0.0.0.0" }.parse().unwrap();
    let listener = host_mut(sim, "host-b")
        .tcp_listen(
            SocketAddr::new(any, PORT),
            config,
            ListenerConfig::default(),
        )
        .expect("listen");
    let remote = SocketAddr::new(address_of(sim, "host-b", v6), PORT);
    let client = blocking::connect(sim, "host-a", remote, config, limit).expect("connect");
    let server = blocking::accept(sim, "host-b", listener, limit).expect("accept");
    (client, server)
}

/// A byte pattern of `len` that does not repeat within a super-segment
/// (so a segment out of place or a byte off shows), different for each
/// `seed`.
pub fn varied(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(9) as u8 ^ seed)
        .collect()
}

/// One end of an exchange.
#[derive(Default)]
struct Side {
    sent: usize,
    shut: bool,
    got: Vec<u8>,
    eof: bool,
}

/// Sends what it can of `data`, shuts down after the last byte, and reads
/// everything that arrived.
fn pump(h: &mut Host, handle: TcpHandle, data: &[u8], side: &mut Side, buf: &mut [u8]) {
    while side.sent < data.len() {
        match h.tcp_send(handle, &data[side.sent..]) {
            Ok(n) => side.sent += n,
            Err(TcpError::WouldBlock) => break,
            Err(e) => panic!("{}: send failed: {e}", h.name()),
        }
    }
    if side.sent == data.len() && !side.shut {
        h.tcp_shutdown(handle).unwrap();
        side.shut = true;
    }
    while !side.eof {
        match h.tcp_recv(handle, buf) {
            Ok(0) => side.eof = true,
            Ok(n) => side.got.extend_from_slice(&buf[..n]),
            Err(TcpError::WouldBlock) => break,
            Err(e) => panic!("{}: recv failed: {e}", h.name()),
        }
    }
}

/// Moves `up` from host-a (`client`) to host-b (`server`) and `down` back
/// at once, each end shutting down after its last byte: (what host-b got,
/// what host-a got). Panics if that takes longer than `limit`, saying how
/// far each end got and what the hosts dropped.
pub fn exchange(
    sim: &mut Simulator,
    (client, server): (TcpHandle, TcpHandle),
    up: &[u8],
    down: &[u8],
    limit: Duration,
) -> (Vec<u8>, Vec<u8>) {
    let mut a = Side::default();
    let mut b = Side::default();
    let mut buf = vec![0u8; 64 * 1024];
    let done = sim.run_until_with(limit, |sim| {
        pump(host_mut(sim, "host-a"), client, up, &mut a, &mut buf);
        pump(host_mut(sim, "host-b"), server, down, &mut b, &mut buf);
        a.shut && a.eof && b.shut && b.eof
    });
    assert!(
        done,
        "the exchange did not finish in {limit:?}: host-a sent {} got {}, host-b sent {} got {}; \
         drops host-a {:?} host-b {:?}",
        a.sent,
        a.got.len(),
        b.sent,
        b.got.len(),
        host(sim, "host-a").drops(),
        host(sim, "host-b").drops()
    );
    (b.got, a.got)
}
