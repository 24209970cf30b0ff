//! The TCP data path's cost: 1 MiB moved from host-a to host-b over one
//! unimpaired wire in one thread on a virtual clock (no sleeping), so the
//! figure is the stack's own work per byte — segmentation, checksums,
//! IP, the wire copy, reassembly into the receive buffer, ACKs — at MTU
//! 1500, over IPv6 and IPv4; and the same IPv6 work on smoltcp 0.12 in the
//! same run, so the ratio between the two stacks is measured on one
//! machine state (issue 22).
//!
//! The two sides have the same shape:
//!
//! | | stackscope (`ipv6_1MiB`, `ipv4_1MiB`) | smoltcp (`smoltcp_ipv6_1MiB`) |
//! |---|---|---|
//! | hosts | `topologies/unlimited.toml`: two hosts, Ethernet, MTU 1500 | two `Interface`s, Ethernet, MTU 1500, same addresses |
//! | wire | `VirtualWire`, unimpaired, 1024 frames per direction | two `VecDeque` rings of reused frame buffers, 1024 frames each |
//! | wire copies | one in (`Link::transmit` gathers the frame); none out (`Link::receive_into` exchanges the frame's memory for an empty pool buffer) | one in (the stack writes the frame into a ring slot); none out (the stack reads the frame in its slot) |
//! | TCP | CUBIC, SACK and timestamps, 40 ms delayed ACK, Nagle | CUBIC, timestamps, 40 ms delayed ACK, Nagle (smoltcp sends no SACK) |
//! | buffers | send and receive 4 MiB | send and receive 4 MiB |
//! | connection | set up once, reused by every iteration | set up once, reused by every iteration |
//! | per iteration | at each instant with work: `tcp_send` as much of the 1 MiB as fits, `tcp_recv` into a 64 KiB buffer until empty; between, every host polled until none has work; the clock jumps to the next deadline when nothing moves | the same: `send_slice`, `recv_slice` into a 64 KiB buffer, both interfaces polled until neither moves anything and the wire is empty, the clock jumping to the earliest `poll_at` |
//!
//! `TCP_BENCH_CPU=ROUNDS cargo bench -p stackscope-stack --bench tcp`
//! instead alternates the two IPv6 transfers in one process, ROUNDS
//! rounds of ten each, timed by the thread's CPU time rather than wall
//! time, and prints the medians with ranges and the ratio: on a machine
//! shared with other work, wall time mostly measures the wait for a CPU.
//! (`TCP_BENCH_PROFILE=SECONDS` runs stackscope's transfer alone for
//! that much CPU time, for a profiler; `TCP_BENCH_PROFILE_STACK=smoltcp`
//! runs smoltcp's instead; `TCP_BENCH_PROFILE_MIB=N` moves exactly N MiB,
//! so callgrind counts of two builds compare; `TCP_BENCH_PROFILE_RECORD=1`
//! records at the layers level while it runs.) It also prints the segments each stack sent
//! per MiB (the count the
//! per-packet cost multiplies), and, with probes compiled in, a third
//! figure: stackscope recording every flow at the `layers` level. Built
//! with `--no-default-features` the stack's probes are compiled out; the
//! two builds run one after the other give issue 22's probe costs
//! (compiled out, gate closed, recording).
//!
//! What differs is each stack's own work: stackscope's probes (compiled
//! in, gated off, as in default builds), its pool of packet buffers, its
//! routing and neighbour tables; smoltcp's fixed-size socket set.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use criterion::{criterion_group, Criterion, Throughput};
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

/// smoltcp 0.12 doing the same work: two interfaces on a wire of two
/// bounded frame rings, polled in one thread on a virtual clock.
mod smol {
    use std::collections::VecDeque;

    use smoltcp::iface::{Config, Interface, PollResult, SocketHandle, SocketSet};
    use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
    use smoltcp::socket::tcp;
    use smoltcp::time::{Duration, Instant};
    use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv6Address};

    /// Frames one direction of the wire holds, as the stackscope wire's
    /// default `queue_frames`.
    const QUEUE_FRAMES: usize = 1024;
    const MTU: usize = 1500;
    const FRAME: usize = MTU + 14;
    /// The simulator's bound on polling rounds at one instant.
    const MAX_ROUNDS_PER_INSTANT: usize = 10_000;

    /// One direction of the wire: a bounded FIFO of frames whose buffers
    /// are reused, so the wire allocates nothing per frame.
    #[derive(Default)]
    pub struct Ring {
        frames: VecDeque<Vec<u8>>,
        spare: Vec<Vec<u8>>,
        /// Frames pushed so far: the per-packet work's count.
        pub pushed: u64,
    }

    impl Ring {
        fn slot(&mut self) -> Vec<u8> {
            self.spare
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(FRAME))
        }
    }

    /// One end of the wire as a device: it transmits into `tx` and
    /// receives from `rx`, the stack reading a received frame where it
    /// lies in its wire slot, which then goes back to the spares (as
    /// stackscope's wire hands the frame's memory to the host in exchange
    /// for an empty pool buffer: neither copies out of the wire).
    pub struct End<'a> {
        tx: &'a mut Ring,
        rx: &'a mut Ring,
    }

    pub struct Rx<'a> {
        frame: Vec<u8>,
        spare: &'a mut Vec<Vec<u8>>,
    }

    pub struct Tx<'a> {
        ring: &'a mut Ring,
    }

    impl RxToken for Rx<'_> {
        fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
            let r = f(&self.frame);
            self.spare.push(self.frame);
            r
        }
    }

    impl TxToken for Tx<'_> {
        fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
            // The stack writes the frame into a wire slot: the copy into
            // the wire that stackscope's `Link::transmit` makes.
            let mut slot = self.ring.slot();
            slot.resize(len, 0);
            let r = f(&mut slot);
            self.ring.frames.push_back(slot);
            self.ring.pushed += 1;
            r
        }
    }

    impl Device for End<'_> {
        type RxToken<'b>
            = Rx<'b>
        where
            Self: 'b;
        type TxToken<'b>
            = Tx<'b>
        where
            Self: 'b;

        fn receive(&mut self, _: Instant) -> Option<(Rx<'_>, Tx<'_>)> {
            if self.tx.frames.len() >= QUEUE_FRAMES {
                return None;
            }
            let frame = self.rx.frames.pop_front()?;
            let rx = Rx {
                frame,
                spare: &mut self.rx.spare,
            };
            Some((rx, Tx { ring: self.tx }))
        }

        fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
            (self.tx.frames.len() < QUEUE_FRAMES).then_some(Tx { ring: self.tx })
        }

        fn capabilities(&self) -> DeviceCapabilities {
            let mut caps = DeviceCapabilities::default();
            caps.medium = Medium::Ethernet;
            caps.max_transmission_unit = FRAME;
            caps
        }
    }

    /// A host: an interface and its socket set.
    struct Node {
        iface: Interface,
        sockets: SocketSet<'static>,
    }

    impl Node {
        fn poll(&mut self, now: Instant, tx: &mut Ring, rx: &mut Ring) -> bool {
            let mut dev = End { tx, rx };
            self.iface.poll(now, &mut dev, &mut self.sockets) == PollResult::SocketStateChanged
        }
    }

    /// Timestamps on, as on the stackscope side (RFC 7323): a counter
    /// stands in for the clock; its value does not matter to the work.
    fn tsval() -> u32 {
        use std::sync::atomic::{AtomicU32, Ordering};
        static TS: AtomicU32 = AtomicU32::new(1);
        TS.fetch_add(1, Ordering::Relaxed)
    }

    pub struct Pair {
        now: Instant,
        a: Node,
        b: Node,
        ab: Ring,
        ba: Ring,
        client: SocketHandle,
        server: SocketHandle,
    }

    impl Pair {
        /// Frames sent so far (data direction, ACK direction).
        pub fn frames(&self) -> (u64, u64) {
            (self.ab.pushed, self.ba.pushed)
        }
    }

    fn node(mac: u8, addr: Ipv6Address, buffer: usize) -> (Node, SocketHandle) {
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress([
            0x02, 0, 0, 0, 0, mac,
        ])));
        config.random_seed = u64::from(mac);
        let (mut ab, mut ba) = (Ring::default(), Ring::default());
        let mut dev = End {
            tx: &mut ab,
            rx: &mut ba,
        };
        let mut iface = Interface::new(config, &mut dev, Instant::ZERO);
        iface.update_ip_addrs(|addrs| {
            addrs
                .push(IpCidr::new(IpAddress::Ipv6(addr), 64))
                .expect("address");
        });
        let mut socket = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; buffer]),
            tcp::SocketBuffer::new(vec![0; buffer]),
        );
        socket.set_congestion_control(tcp::CongestionControl::Cubic);
        socket.set_ack_delay(Some(Duration::from_millis(40)));
        socket.set_tsval_generator(Some(tsval));
        let mut sockets = SocketSet::new(vec![]);
        let handle = sockets.add(socket);
        (Node { iface, sockets }, handle)
    }

    impl Pair {
        /// Two hosts, a connection from a to b established, with send and
        /// receive buffers of `buffer` bytes each.
        pub fn connected(buffer: usize) -> Self {
            let addr_a = Ipv6Address::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0xa);
            let addr_b = Ipv6Address::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0xb);
            let (a, client) = node(1, addr_a, buffer);
            let (b, server) = node(2, addr_b, buffer);
            let mut pair = Pair {
                now: Instant::ZERO,
                a,
                b,
                ab: Ring::default(),
                ba: Ring::default(),
                client,
                server,
            };
            pair.b
                .sockets
                .get_mut::<tcp::Socket>(server)
                .listen(5001)
                .expect("listen");
            let cx = pair.a.iface.context();
            pair.a
                .sockets
                .get_mut::<tcp::Socket>(client)
                .connect(cx, (IpAddress::Ipv6(addr_b), 5001), 49152)
                .expect("connect");
            let ok = pair.run_until(Duration::from_secs(5), |p| {
                p.a.sockets.get::<tcp::Socket>(p.client).state() == tcp::State::Established
                    && p.b.sockets.get::<tcp::Socket>(p.server).state() == tcp::State::Established
            });
            assert!(ok, "smoltcp handshake");
            pair
        }

        /// Polls both hosts at the current instant until neither moves
        /// anything (the stackscope simulator's `settle`).
        fn settle(&mut self) {
            for _ in 0..MAX_ROUNDS_PER_INSTANT {
                let a = self.a.poll(self.now, &mut self.ab, &mut self.ba);
                let b = self.b.poll(self.now, &mut self.ba, &mut self.ab);
                if !a && !b && self.ab.frames.is_empty() && self.ba.frames.is_empty() {
                    return;
                }
            }
        }

        /// Runs until `done` holds, checked after every instant with work,
        /// the clock jumping to the next deadline (the simulator's
        /// `run_until_with`).
        fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Self) -> bool) -> bool {
            let end = self.now + limit;
            loop {
                self.settle();
                if done(self) {
                    return true;
                }
                let next = [
                    self.a.iface.poll_at(self.now, &self.a.sockets),
                    self.b.iface.poll_at(self.now, &self.b.sockets),
                ]
                .into_iter()
                .flatten()
                .min();
                match next {
                    Some(next) if next <= end => self.now = next.max(self.now),
                    _ => {
                        self.now = end.max(self.now);
                        self.settle();
                        return done(self);
                    }
                }
            }
        }

        /// Moves `data` from client to server, reading as it goes: the
        /// same loop as the stackscope side's `transfer`.
        pub fn transfer(&mut self, data: &[u8], buf: &mut [u8]) {
            let (mut sent, mut got) = (0, 0);
            let (client, server) = (self.client, self.server);
            let done = self.run_until(Duration::from_secs(60), |p| {
                let a = p.a.sockets.get_mut::<tcp::Socket>(client);
                while sent < data.len() {
                    match a.send_slice(&data[sent..]) {
                        Ok(0) => break,
                        Ok(n) => sent += n,
                        Err(e) => panic!("send: {e}"),
                    }
                }
                let b = p.b.sockets.get_mut::<tcp::Socket>(server);
                loop {
                    match b.recv_slice(buf) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) => panic!("recv: {e}"),
                    }
                }
                got == data.len()
            });
            assert!(done, "smoltcp transfer stalled at {got} bytes");
        }
    }
}

fn smoltcp_transfer(c: &mut Criterion) {
    let data: Vec<u8> = (0..BYTES).map(|i| (i * 7) as u8).collect();
    let mut buf = vec![0u8; 64 * 1024];
    let mut group = c.benchmark_group("tcp_transfer");
    group.throughput(Throughput::Bytes(BYTES as u64));
    group.sample_size(20);
    let mut pair = smol::Pair::connected(4 << 20);
    group.bench_function("smoltcp_ipv6_1MiB", |b| {
        b.iter(|| pair.transfer(&data, &mut buf))
    });
    group.finish();
}

/// This thread's CPU time: on a machine shared with other work, the time
/// the stack itself took, without the waits for a CPU that wall time
/// carries.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `TCP_BENCH_CPU=ROUNDS`: both stacks alternately, ROUNDS rounds of ten
/// IPv6 transfers each, timed by thread CPU time; prints each round and
/// the medians with ranges, and the ratio per round.
fn cpu_rounds(rounds: usize) {
    const PER_ROUND: usize = 10;
    let data: Vec<u8> = (0..BYTES).map(|i| (i * 7) as u8).collect();
    let mut buf = vec![0u8; 64 * 1024];
    let (mut sim, client, server) = connected(true);
    let mut pair = smol::Pair::connected(4 << 20);
    // Warm both up: windows open, caches and buffers touched.
    for _ in 0..PER_ROUND {
        transfer(&mut sim, client, server, &data, &mut buf);
        pair.transfer(&data, &mut buf);
    }
    let mib = (PER_ROUND * BYTES) as f64 / f64::from(1 << 20);
    // Segments each way per MiB: what the per-packet work is multiplied by.
    let segments = |sim: &Simulator| {
        let count = |host: &str, handle| {
            let host = sim.host(host).expect("host");
            host.tcp_connection(handle)
                .expect("connection")
                .counters()
                .segments_sent
        };
        (count("host-a", client), count("host-b", server))
    };
    let (ours_before, theirs_before) = (segments(&sim), pair.frames());
    transfer(&mut sim, client, server, &data, &mut buf);
    pair.transfer(&data, &mut buf);
    let (ours_after, theirs_after) = (segments(&sim), pair.frames());
    println!(
        "per MiB: stackscope {} data + {} ACK segments, smoltcp {} + {} frames",
        ours_after.0 - ours_before.0,
        ours_after.1 - ours_before.1,
        theirs_after.0 - theirs_before.0,
        theirs_after.1 - theirs_before.1
    );
    let (mut ours, mut recording, mut theirs, mut ratios) = (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        // Each timed batch follows one untimed transfer of its own: the
        // caches then hold what that stack left, not what the batch
        // before it did. Without it smoltcp's batch followed the
        // recording's, whose ring writes (about 700 KB per MiB moved)
        // had evicted its buffers: in a probes build smoltcp ran 4 %
        // slower than in a probes-compiled-out one, which flattered the
        // ratio (issue 22).
        transfer(&mut sim, client, server, &data, &mut buf);
        let start = thread_cpu();
        for _ in 0..PER_ROUND {
            transfer(&mut sim, client, server, &data, &mut buf);
        }
        let a = mib / (thread_cpu() - start).as_secs_f64();
        let r = recorded_rounds(PER_ROUND, mib, round == 0, || {
            transfer(&mut sim, client, server, &data, &mut buf)
        });
        pair.transfer(&data, &mut buf);
        let start = thread_cpu();
        for _ in 0..PER_ROUND {
            pair.transfer(&data, &mut buf);
        }
        let b = mib / (thread_cpu() - start).as_secs_f64();
        match r {
            Some(r) => println!(
                "round {round}: stackscope {a:.0} MiB/s-cpu (recording at the layers level: {r:.0}), smoltcp {b:.0} MiB/s-cpu, ratio {:.2}",
                a / b
            ),
            None => println!(
                "round {round}: stackscope {a:.0} MiB/s-cpu (probes compiled out), smoltcp {b:.0} MiB/s-cpu, ratio {:.2}",
                a / b
            ),
        }
        ours.push(a);
        recording.extend(r);
        theirs.push(b);
        ratios.push(a / b);
    }
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        format!("[{lo:.2}–{hi:.2}]")
    };
    let (ro, rt, rr) = (range(&ours), range(&theirs), range(&ratios));
    let probes = if cfg!(feature = "probes") {
        "probes compiled in, gate closed"
    } else {
        "probes compiled out"
    };
    println!(
        "median over {rounds} rounds: stackscope {:.0} {ro} MiB/s-cpu ({probes}), smoltcp {:.0} {rt} MiB/s-cpu, ratio {:.2} {rr}",
        median(&mut ours),
        median(&mut theirs),
        median(&mut ratios)
    );
    if !recording.is_empty() {
        let rg = range(&recording);
        println!(
            "median over {rounds} rounds: stackscope recording every flow at the layers level {:.0} {rg} MiB/s-cpu",
            median(&mut recording)
        );
    }
}

/// With probes compiled in: `rounds` transfers recording every flow at
/// the `layers` level into this thread's ring, timed by CPU time, as
/// MiB/s; the ring is emptied between transfers, outside the timing, as
/// a run's flush is outside its windows. `None` with probes compiled out.
/// With `show_locations`, prints the last transfer's records per MiB by
/// location: which probes the recording cost falls on.
fn recorded_rounds(
    rounds: usize,
    mib: f64,
    show_locations: bool,
    mut transfer: impl FnMut(),
) -> Option<f64> {
    if !cfg!(feature = "probes") {
        return None;
    }
    probe::init_thread(1 << 20);
    probe::set_level(probe::Level::Layers);
    probe::set_mode(probe::Mode::All);
    let mut spent = Duration::ZERO;
    let mut records = 0;
    for _ in 0..rounds {
        probe::reset_thread();
        let start = thread_cpu();
        transfer();
        spent += thread_cpu() - start;
        records += probe::recorded();
        assert_eq!(probe::dropped(), 0, "the ring overflowed: size it up");
    }
    probe::set_mode(probe::Mode::Off);
    // The last round's records by location, for where the cost falls.
    // Counter reads: records sharing one (`probe::Stamp`,
    // `SpanGuard::end_after`) carry the value of the first.
    let mut by_location = std::collections::BTreeMap::<&str, (usize, usize)>::new();
    let (mut reads, mut last_tsc) = (0usize, None);
    let drained = probe::drain_thread();
    let last_round = drained.len();
    for record in drained {
        let name = stack::probes::LOCATIONS
            .get(usize::from(record.loc))
            .map_or("?", |l| l.name);
        let entry = by_location.entry(name).or_default();
        entry.0 += 1;
        if last_tsc != Some(record.tsc) {
            reads += 1;
            entry.1 += 1;
            last_tsc = Some(record.tsc);
        }
    }
    probe::reset_thread();
    assert!(records > 0, "recording on, yet nothing recorded");
    println!(
        "recording: {:.0} records per MiB, {:.0} counter reads per 100 records",
        records as f64 / mib,
        100.0 * reads as f64 / last_round.max(1) as f64
    );
    if !show_locations {
        return Some(mib / spent.as_secs_f64());
    }
    let mut counts: Vec<(&str, (usize, usize))> = by_location.into_iter().collect();
    counts.sort_by_key(|&(_, (count, _))| std::cmp::Reverse(count));
    let per_mib = rounds as f64 / mib;
    println!("  records and counter reads per MiB, by location:");
    for (name, (count, reads)) in counts {
        println!(
            "  {:>8.0} {:>8.0}  {name}",
            count as f64 * per_mib,
            reads as f64 * per_mib
        );
    }
    Some(mib / spent.as_secs_f64())
}

criterion_group!(benches, tcp_transfer, smoltcp_transfer);

/// `TCP_BENCH_PROFILE=SECONDS`: only one stack's IPv6 transfer (gate
/// closed), repeated for about SECONDS of thread CPU time, so a profiler
/// (`perf record`, `valgrind --tool=callgrind`) sees that stack's work
/// alone; prints the rate seen. The stack is stackscope, or smoltcp with
/// `TCP_BENCH_PROFILE_STACK=smoltcp`: profiling both the same way gives
/// their costs per MiB side by side. `TCP_BENCH_PROFILE_MIB=N` moves
/// exactly N MiB instead; `TCP_BENCH_PROFILE_RECORD=1` records every flow
/// at the layers level (the recording's own cost, counted).
fn profile_only(seconds: f64, smoltcp: bool) {
    /// One transfer of `BYTES`, reading into the buffer given.
    type Transfer = Box<dyn FnMut(&mut [u8])>;
    let data: Vec<u8> = (0..BYTES).map(|i| (i * 7) as u8).collect();
    let mut buf = vec![0u8; 64 * 1024];
    let mut transfer: Transfer = if smoltcp {
        let mut pair = smol::Pair::connected(4 << 20);
        Box::new(move |buf| pair.transfer(&data, buf))
    } else {
        let (mut sim, client, server) = connected(true);
        Box::new(move |buf| transfer(&mut sim, client, server, &data, buf))
    };
    // A fixed count, when given, makes instruction counts of two builds
    // comparable (the per-MiB figure drifts by about 1 % with the count
    // as the connection's state evolves).
    let fixed: Option<usize> = std::env::var("TCP_BENCH_PROFILE_MIB")
        .ok()
        .and_then(|v| v.parse().ok());
    // Recording every flow at the layers level, the ring emptied between
    // transfers (outside the closure a profiler is told to count).
    let record = std::env::var("TCP_BENCH_PROFILE_RECORD").is_ok_and(|v| v == "1");
    if record {
        probe::init_thread(1 << 20);
        probe::set_level(probe::Level::Layers);
        probe::set_mode(probe::Mode::All);
    }
    let start = thread_cpu();
    let mut moved = 0usize;
    while match fixed {
        Some(mib) => moved < mib * BYTES,
        None => (thread_cpu() - start).as_secs_f64() < seconds,
    } {
        transfer(&mut buf);
        moved += BYTES;
        if record {
            assert_eq!(probe::dropped(), 0, "the ring overflowed: size it up");
            probe::reset_thread();
        }
    }
    probe::set_mode(probe::Mode::Off);
    let mib = moved as f64 / f64::from(1 << 20);
    let name = if smoltcp { "smoltcp" } else { "stackscope" };
    println!(
        "{name} alone: {mib:.0} MiB at {:.0} MiB/s-cpu",
        mib / (thread_cpu() - start).as_secs_f64()
    );
}

fn main() {
    if let Some(seconds) = std::env::var("TCP_BENCH_PROFILE")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
    {
        let smoltcp = std::env::var("TCP_BENCH_PROFILE_STACK").is_ok_and(|s| s == "smoltcp");
        profile_only(seconds, smoltcp);
        return;
    }
    if let Some(rounds) = std::env::var("TCP_BENCH_CPU")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        cpu_rounds(rounds.max(1));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
