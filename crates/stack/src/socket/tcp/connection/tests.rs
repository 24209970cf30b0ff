use super::*;
use crate::buffer::PoolConfig;

/// An established connection whose SND.UNA is `distance` bytes past
/// its ISS, as after a long transfer (white-box: a real one would
/// have to move gigabytes first).
fn after(distance: usize) -> (Connection, Pool) {
    let pool = Pool::new(PoolConfig::default()).unwrap();
    let local = "[2001:db8::a]:40000".parse().unwrap();
    let remote = "[2001:db8::b]:5001".parse().unwrap();
    let mut c = Connection::connect(
        TcpConfig::default(),
        local,
        remote,
        Seq(0x8000_0000),
        1440,
        Instant::ZERO,
        Flow::untraced(1),
    );
    c.state = State::Established;
    c.syn_acked = true;
    c.negotiated = Some(Negotiated {
        send_mss: 1428,
        send_window_shift: 0,
        recv_window_shift: 0,
        sack: true,
        timestamps: false,
    });
    let una = c.iss + 1 + distance;
    (c.snd_una, c.snd_nxt, c.snd_max, c.data_end) = (una, una, una, una);
    c.snd_wnd = 65_535;
    (c, pool)
}

#[test]
fn data_is_found_however_far_the_stream_has_gone() {
    // Past 2^31 bytes, ISS + 1 compares as *after* SND.UNA modulo
    // 2^32: the send queue's offsets must not depend on it.
    for distance in [
        0usize,
        1 << 20,
        (1 << 31) - 1,
        1 << 31,
        (1 << 31) + 7,
        u32::MAX as usize,
    ] {
        let (mut c, pool) = after(distance);
        let data: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(c.send(&pool, &data).unwrap(), 3000);
        let out = c.poll_output(Instant::ZERO).expect("a segment");
        let payload: Vec<u8> = out
            .payload
            .iter()
            .flat_map(|s| s.as_slice().to_vec())
            .collect();
        assert_eq!(out.repr.seq_number, c.snd_una.0, "distance {distance}");
        assert_eq!(payload.len(), out.repr.payload_len);
        assert_eq!(payload[..], data[..payload.len()], "distance {distance}");
        // An ACK of the first segment frees exactly its bytes.
        let mut ack = bare_ack(&c, out.repr.seq_number.wrapping_add(payload.len() as u32));
        ack.window_len = 65_535;
        c.input(Instant::ZERO, &ack, &[], &mut ChallengeLimiter::default());
        assert_eq!(c.send_queued(), 3000 - payload.len(), "distance {distance}");
    }
}

/// Two connected ends (client, server) with their pool, every segment
/// of each taking the full input path when `unpredicted`.
struct World {
    ends: [Connection; 2],
    /// Segments in flight towards end 0 and end 1.
    flight: [Vec<(TcpRepr, Vec<u8>)>; 2],
    pool: Pool,
    now: Instant,
    /// Segments that took the predicted path.
    predicted: usize,
    /// What each step sent, for comparison across worlds.
    log: Vec<String>,
}

impl World {
    fn new(unpredicted: bool) -> World {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let a: SocketAddr = "[2001:db8::a]:40000".parse().unwrap();
        let b: SocketAddr = "[2001:db8::b]:5001".parse().unwrap();
        let config = TcpConfig {
            send_buffer: 24 * 1024,
            recv_buffer: 6 * 1024,
            ..TcpConfig::default()
        };
        let now = Instant::ZERO;
        let mut client =
            Connection::connect(config, a, b, Seq(0xfff0_0000), 1000, now, Flow::untraced(1));
        let syn = client.poll_output(now).expect("a SYN").repr;
        let server = Connection::accept(config, b, a, &syn, Seq(7), 1000, now, Flow::untraced(2));
        let mut world = World {
            ends: [client, server],
            flight: [Vec::new(), Vec::new()],
            pool,
            now,
            predicted: 0,
            log: Vec::new(),
        };
        for end in &mut world.ends {
            end.unpredicted = unpredicted;
        }
        world.output();
        world
    }

    /// Every segment both ends have to send, into flight.
    fn output(&mut self) {
        for from in 0..2 {
            while let Some(out) = self.ends[from].poll_output(self.now) {
                self.sent(from, out);
            }
        }
    }

    fn sent(&mut self, from: usize, out: Outgoing) {
        let payload: Vec<u8> = out
            .payload
            .iter()
            .flat_map(|s| s.as_slice().to_vec())
            .collect();
        self.log.push(format!("{from} {:?} {payload:?}", out.repr));
        self.flight[1 - from].push((out.repr, payload));
    }

    /// Delivers the segment at `index` of those in flight to `to`.
    fn deliver(&mut self, to: usize, index: usize, keep: bool) {
        let Some((seg, payload)) = self.flight[to].get(index).cloned() else {
            return;
        };
        if !keep {
            self.flight[to].remove(index);
        }
        let end = &mut self.ends[to];
        if end.state == State::Established && end.predicted(&seg, payload.len()) {
            self.predicted += 1;
        }
        let reply = end.input(
            self.now,
            &seg,
            &[&payload],
            &mut ChallengeLimiter::default(),
        );
        self.log.push(format!("{to} reply {reply:?}"));
        if let Some(ack) = self.ends[to].poll_ack(self.now) {
            self.sent(to, ack);
        }
    }

    /// The state of both ends, whichever path they were told to take.
    fn state(&self) -> String {
        format!("{:?}", self.ends).replace("unpredicted: true", "unpredicted: false")
    }

    fn step(&mut self, (op, arg): (u8, u16)) {
        let end = usize::from(arg & 1);
        let arg = usize::from(arg >> 1);
        match op % 8 {
            0 => {
                let data: Vec<u8> = (0..arg * 40).map(|i| i as u8).collect();
                let _ = self.ends[end].send(&self.pool, &data);
            }
            1..=3 => self.deliver(end, 0, false),
            4 => {
                // Out of order, or lost.
                let len = self.flight[end].len();
                self.deliver(end, arg % len.max(1), arg % 5 == 0);
            }
            5 => {
                let mut out = vec![0; arg * 30];
                self.ends[end].recv(&mut out);
            }
            6 => {
                self.now += Duration::from_millis(arg as u64 % 300);
                for c in &mut self.ends {
                    c.poll_timers(self.now);
                }
            }
            _ => {
                if arg % 7 == 0 {
                    self.ends[end].close();
                }
            }
        }
        self.output();
    }
}

proptest::proptest! {
    /// Header prediction is an optimization only: a connection whose
    /// segments all take the full input path sends exactly the same
    /// segments and ends in exactly the same state, through data both
    /// ways, loss, reordering, duplicates, zero windows, timeouts and
    /// closing.
    #[test]
    fn predicted_input_matches_the_full_path(
        ops in proptest::collection::vec((0u8..8, 0u16..512), 1..400),
    ) {
        let mut fast = World::new(false);
        let mut full = World::new(true);
        for &op in &ops {
            fast.step(op);
            full.step(op);
            proptest::prop_assert_eq!(&fast.log, &full.log);
            proptest::prop_assert_eq!(fast.state(), full.state());
        }
        proptest::prop_assert_eq!(full.predicted, 0);
    }
}

/// A bulk transfer takes the predicted path for most segments (the
/// property above would pass vacuously otherwise).
#[test]
fn bulk_transfer_is_predicted() {
    let mut world = World::new(false);
    for _ in 0..200 {
        world.step((0, 100 << 1));
        for _ in 0..8 {
            world.step((1, 1));
            world.step((1, 0));
        }
        world.step((5, 400 << 1 | 1));
    }
    let received = world.ends[1].counters().segments_received as usize;
    assert!(
        world.predicted * 10 > received * 9,
        "{} of {received}",
        world.predicted
    );
}

fn bare_ack(c: &Connection, ack: u32) -> TcpRepr {
    super::super::bare_header(
        c.remote.port(),
        c.local.port(),
        c.recv.rcv_nxt(),
        Some(Seq(ack)),
        TcpFlags::empty(),
    )
}
