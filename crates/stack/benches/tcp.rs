//! The TCP data path's cost: 1 MiB moved from host-a to host-b over one
//! unimpaired wire on the simulator (one thread, no sleeping), so the
//! figure is the stack's own work per byte — segmentation, checksums,
//! IP, the wire copy, reassembly into the receive buffer, ACKs — at MTU
//! 1500, over IPv6 and IPv4.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use stack::iface::host::{TcpError, TcpHandle};
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::topology::Topology;

const BYTES: usize = 1 << 20;

const TOPOLOGY: &str = include_str!("../../../topologies/unlimited.toml");

/// A connected pair: (simulator, sender handle, receiver handle).
fn connected(v6: bool) -> (Simulator, TcpHandle, TcpHandle) {
    let topology = Topology::from_toml_str(TOPOLOGY).expect("topology");
    let mut sim = Simulator::new(&topology, None).expect("simulator");
    sim.run_for(Duration::from_secs(3));
    let b = sim.host("host-b").expect("host-b");
    let ip = if v6 {
        IpAddr::V6(b.global_ipv6_addresses()[0])
    } else {
        IpAddr::V4(b.ipv4_addresses()[0])
    };
    let any: IpAddr = if v6 { "::" } else { "0.0.0.0" }.parse().expect("address");
    let config = TcpConfig {
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        ..TcpConfig::default()
    };
    let listener = sim
        .host_mut("host-b")
        .expect("host-b")
        .tcp_listen(
            SocketAddr::new(any, 5001),
            config,
            ListenerConfig::default(),
        )
        .expect("listen");
    let remote = SocketAddr::new(ip, 5001);
    let client = blocking::connect(&mut sim, "host-a", remote, config, Duration::from_secs(5))
        .expect("connect");
    let server =
        blocking::accept(&mut sim, "host-b", listener, Duration::from_secs(5)).expect("accept");
    (sim, client, server)
}

/// Moves `BYTES` from client to server, reading as it goes.
fn transfer(
    sim: &mut Simulator,
    client: TcpHandle,
    server: TcpHandle,
    data: &[u8],
    buf: &mut [u8],
) {
    let (mut sent, mut got) = (0, 0);
    let done = sim.run_until_with(Duration::from_secs(60), |sim| {
        let a = sim.host_mut("host-a").expect("host-a");
        while sent < data.len() {
            match a.tcp_send(client, &data[sent..]) {
                Ok(n) => sent += n,
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        let b = sim.host_mut("host-b").expect("host-b");
        loop {
            match b.tcp_recv(server, buf) {
                Ok(n) if n > 0 => got += n,
                Ok(_) | Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("recv: {e}"),
            }
        }
        got == data.len()
    });
    assert!(done, "transfer stalled at {got} bytes");
}

fn tcp_transfer(c: &mut Criterion) {
    let data: Vec<u8> = (0..BYTES).map(|i| (i * 7) as u8).collect();
    let mut buf = vec![0u8; 64 * 1024];
    let mut group = c.benchmark_group("tcp_transfer");
    group.throughput(Throughput::Bytes(BYTES as u64));
    group.sample_size(20);
    for (name, v6) in [("ipv6_1MiB", true), ("ipv4_1MiB", false)] {
        let (mut sim, client, server) = connected(v6);
        group.bench_function(name, |b| {
            b.iter(|| transfer(&mut sim, client, server, &data, &mut buf))
        });
    }
    group.finish();
}

criterion_group!(benches, tcp_transfer);
criterion_main!(benches);
