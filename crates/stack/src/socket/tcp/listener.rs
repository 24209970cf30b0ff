//! A listening socket: a bounded queue of half-open connections
//! (SYN-RECEIVED), a bounded queue of established ones waiting for
//! `accept`, and SYN cookies (RFC 4987 §3.6) when the half-open queue is
//! full, so a SYN flood cannot keep legitimate clients out or grow
//! memory. Both queues are bounded by count and by the bytes their
//! connections hold ([`Connection::footprint`]), and give their table
//! memory back when a flood is over.
//!
//! A cookie is the ISN of a SYN-ACK sent without keeping state:
//!
//! ```text
//!  31      27 26  24 23                                   0
//! +----------+------+--------------------------------------+
//! | t mod 32 | MSS  | F(four-tuple, t, client ISN) mod 2^24 |
//! +----------+------+--------------------------------------+
//! ```
//!
//! with t a 64-second counter and F the host's keyed hash (`isn`). The
//! final ACK acknowledges cookie + 1; a cookie from the current or the
//! previous counter whose hash matches rebuilds the connection.

use std::collections::VecDeque;
use std::net::SocketAddr;

use probe::Flow;
use wire::tcp::{TcpFlags, TcpRepr};

use super::connection::{Connection, Outgoing, TcpConfig};
use super::isn::IsnGenerator;
use super::rules::ChallengeLimiter;
use super::seq::Seq;
use super::state::State;
use crate::hash::FastMap;
use crate::time::Instant;

/// The peer MSS values a cookie can carry (3 bits): the largest not above
/// the peer's option is chosen.
const COOKIE_MSS: [u16; 8] = [536, 1024, 1220, 1360, 1400, 1440, 1460, 8960];
/// Seconds per cookie counter tick.
const COOKIE_TICK_SECS: u64 = 64;

/// Bounds of a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerConfig {
    /// Established connections waiting for `accept` (the listen backlog).
    pub backlog: usize,
    /// Connections in SYN-RECEIVED held at once.
    pub half_open: usize,
    /// Bytes the half-open connections may hold together
    /// ([`Connection::footprint`]); beyond, SYNs get cookies as when the
    /// count is reached. A half-open connection holds little more than its
    /// struct (its receive ring comes with the handshake's end), so the
    /// count binds first unless connections are made large.
    pub half_open_bytes: usize,
    /// Bytes the established connections waiting for `accept` may hold
    /// together (each has its receive ring); beyond, a completing
    /// handshake is treated as with the accept queue full.
    pub pending_bytes: usize,
    /// Answer SYNs with cookies once the half-open queue is full (else
    /// drop them).
    pub syn_cookies: bool,
}

impl Default for ListenerConfig {
    fn default() -> Self {
        Self {
            backlog: 128,
            half_open: 256,
            half_open_bytes: 4 << 20,
            pending_bytes: 64 << 20,
            syn_cookies: true,
        }
    }
}

/// Counters of a listener.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenerCounters {
    pub syns: u64,
    pub cookies_sent: u64,
    pub cookies_accepted: u64,
    pub cookies_rejected: u64,
    /// SYNs dropped: half-open queue full and cookies off.
    pub syns_dropped: u64,
    /// Handshakes completed with the accept queue full (the ACK is
    /// dropped; the client's retransmission retries).
    pub accept_queue_full: u64,
    /// SYNs that found the half-open connections at their byte bound
    /// (answered with a cookie, or dropped without cookies).
    pub half_open_bytes_full: u64,
}

/// What the caller sends on the listener's behalf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenerReply {
    Nothing,
    /// A stateless segment: a cookie SYN-ACK or a RST.
    Send(TcpRepr),
}

/// A listening socket on `local`.
#[derive(Debug)]
pub struct Listener {
    local: SocketAddr,
    tcp: TcpConfig,
    config: ListenerConfig,
    mss: u16,
    keys: IsnGenerator,
    /// Keyed by (local, remote): a wildcard listener hears on every
    /// address of its family.
    half_open: FastMap<(SocketAddr, SocketAddr), Connection>,
    ready: VecDeque<Connection>,
    counters: ListenerCounters,
    flow: Flow,
}

impl Listener {
    pub fn new(
        local: SocketAddr,
        tcp: TcpConfig,
        config: ListenerConfig,
        mss: u16,
        keys: IsnGenerator,
        flow: Flow,
    ) -> Self {
        Self {
            local,
            tcp,
            config,
            mss,
            keys,
            half_open: FastMap::default(),
            ready: VecDeque::new(),
            counters: ListenerCounters::default(),
            flow,
        }
    }

    pub fn local(&self) -> SocketAddr {
        self.local
    }

    /// The settings its connections get.
    pub fn connection_config(&self) -> &TcpConfig {
        &self.tcp
    }

    pub fn flow(&self) -> Flow {
        self.flow
    }

    /// Traces the listener and the connections it accepts from now on.
    pub fn set_traced(&mut self, traced: bool) {
        self.flow.traced = traced;
    }

    pub fn counters(&self) -> ListenerCounters {
        self.counters
    }

    pub fn half_open_len(&self) -> usize {
        self.half_open.len()
    }

    /// Bytes the half-open connections hold (see
    /// [`ListenerConfig::half_open_bytes`]).
    pub fn half_open_bytes(&self) -> usize {
        self.half_open.values().map(Connection::footprint).sum()
    }

    /// Bytes the established connections waiting for `accept` hold.
    pub fn pending_bytes(&self) -> usize {
        self.ready.iter().map(Connection::footprint).sum()
    }

    /// Whether one more connection of `footprint` bytes fits the accept
    /// queue, by count and by bytes.
    fn accept_queue_has_room(&self, footprint: usize) -> bool {
        self.ready.len() < self.config.backlog
            && self.pending_bytes() + footprint <= self.config.pending_bytes
    }

    /// The oldest established connection, if any.
    pub fn accept(&mut self) -> Option<Connection> {
        self.ready.pop_front()
    }

    /// Every connection held, half-open or established (the listener is
    /// closing: the caller resets them).
    pub fn take_all(&mut self) -> Vec<Connection> {
        let mut all: Vec<Connection> = self.half_open.drain().map(|(_, c)| c).collect();
        all.extend(self.ready.drain(..));
        all
    }

    pub fn pending(&self) -> usize {
        self.ready.len()
    }

    /// A segment from `remote` to `local`, an address the listener covers
    /// (RFC 9293 §3.10.7.2, LISTEN). Connections it opens are bound to
    /// `local`, never to the wildcard.
    #[allow(clippy::too_many_arguments)]
    pub fn input(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        seg: &TcpRepr,
        payload: &[&[u8]],
        challenges: &mut ChallengeLimiter,
    ) -> ListenerReply {
        let key = (local, remote);
        if let Some(conn) = self.half_open.get_mut(&key) {
            conn.input(now, seg, payload, challenges);
            self.promote(key);
            return ListenerReply::Nothing;
        }
        // Established but not yet accepted: the connection is live (it
        // receives and acknowledges) while it waits for the application.
        if let Some(conn) = self
            .ready
            .iter_mut()
            .find(|c| c.remote() == remote && c.local() == local)
        {
            conn.input(now, seg, payload, challenges);
            return ListenerReply::Nothing;
        }
        let flags = seg.flags;
        if flags.contains(TcpFlags::RST) {
            return ListenerReply::Nothing;
        }
        if let Some(ack) = seg.ack_number {
            if flags.contains(TcpFlags::SYN) {
                return ListenerReply::Send(self.rst(remote, seg, Seq(ack)));
            }
            return self.cookie_ack(now, key, seg, payload, Seq(ack), challenges);
        }
        if !flags.contains(TcpFlags::SYN) {
            return ListenerReply::Nothing;
        }
        self.counters.syns += 1;
        let bytes_full = self.half_open_bytes() + std::mem::size_of::<Connection>()
            > self.config.half_open_bytes;
        if bytes_full {
            self.counters.half_open_bytes_full += 1;
        }
        if self.half_open.len() < self.config.half_open && !bytes_full {
            let iss = self.keys.isn(now, local, remote);
            let conn =
                Connection::accept(self.tcp, local, remote, seg, iss, self.mss, now, self.flow);
            self.half_open.insert(key, conn);
            return ListenerReply::Nothing;
        }
        if !self.config.syn_cookies {
            self.counters.syns_dropped += 1;
            return ListenerReply::Nothing;
        }
        self.counters.cookies_sent += 1;
        ListenerReply::Send(self.cookie_syn_ack(now, key, seg))
    }

    /// Moves a half-open connection that completed its handshake to the
    /// accept queue (or drops one that died).
    fn promote(&mut self, key: (SocketAddr, SocketAddr)) {
        let Some(conn) = self.half_open.get(&key) else {
            return;
        };
        match conn.state() {
            State::SynReceived => {}
            State::Closed => {
                self.half_open.remove(&key);
            }
            _ if self.accept_queue_has_room(conn.footprint()) => {
                if let Some(conn) = self.half_open.remove(&key) {
                    self.ready.push_back(conn);
                }
            }
            _ => self.counters.accept_queue_full += 1,
        }
    }

    fn counter(now: Instant) -> u32 {
        (now.as_nanos() / 1_000_000_000 / COOKIE_TICK_SECS) as u32
    }

    fn cookie(
        &self,
        (local, remote): (SocketAddr, SocketAddr),
        t: u32,
        mss_index: u32,
        client_isn: u32,
    ) -> u32 {
        let hash = self
            .keys
            .hash(local, remote, t.wrapping_mul(0x9E37_79B9) ^ client_isn);
        ((t & 31) << 27) | ((mss_index & 7) << 24) | (hash & 0x00FF_FFFF)
    }

    fn cookie_syn_ack(
        &self,
        now: Instant,
        key: (SocketAddr, SocketAddr),
        syn: &TcpRepr,
    ) -> TcpRepr {
        let peer_mss = syn.max_seg_size.unwrap_or(COOKIE_MSS[0]);
        let mss_index = COOKIE_MSS.iter().rposition(|&m| m <= peer_mss).unwrap_or(0) as u32;
        let iss = self.cookie(key, Self::counter(now), mss_index, syn.seq_number);
        let mut repr = self.bare(
            key.1,
            Seq(iss),
            Some(Seq(syn.seq_number).add_one()),
            TcpFlags::SYN,
        );
        repr.max_seg_size = Some(self.mss);
        repr.window_len = self.tcp.recv_buffer.min(usize::from(u16::MAX)) as u16;
        repr
    }

    /// The final ACK of a cookie handshake, or a stray ACK (answered with
    /// RST, RFC 9293 §3.10.7.2).
    fn cookie_ack(
        &mut self,
        now: Instant,
        key: (SocketAddr, SocketAddr),
        seg: &TcpRepr,
        payload: &[&[u8]],
        ack: Seq,
        challenges: &mut ChallengeLimiter,
    ) -> ListenerReply {
        let (local, remote) = key;
        let cookie = Seq(ack.0.wrapping_sub(1));
        let client_isn = seg.seq_number.wrapping_sub(1);
        let t_now = Self::counter(now);
        let valid = self.config.syn_cookies
            && [t_now, t_now.wrapping_sub(1)].iter().any(|&t| {
                let mss_index = (cookie.0 >> 24) & 7;
                (cookie.0 >> 27) == (t & 31)
                    && self.cookie(key, t, mss_index, client_isn) == cookie.0
            });
        if !valid {
            if self.config.syn_cookies {
                self.counters.cookies_rejected += 1;
            }
            return ListenerReply::Send(self.rst(remote, seg, ack));
        }
        // A rebuilt connection holds its struct and its receive ring.
        let footprint = std::mem::size_of::<Connection>() + self.tcp.recv_buffer;
        if !self.accept_queue_has_room(footprint) {
            self.counters.accept_queue_full += 1;
            return ListenerReply::Nothing;
        }
        self.counters.cookies_accepted += 1;
        let peer_mss = usize::from(COOKIE_MSS[((cookie.0 >> 24) & 7) as usize]);
        let mut conn = Connection::from_cookie(
            self.tcp,
            local,
            remote,
            cookie,
            Seq(client_isn),
            peer_mss,
            seg,
            self.mss,
            now,
            self.flow,
        );
        if super::assembler::payload_len(payload) > 0 || seg.flags.contains(TcpFlags::FIN) {
            conn.input(now, seg, payload, challenges);
        }
        self.ready.push_back(conn);
        ListenerReply::Nothing
    }

    /// RFC 9293 §3.10.7.2: <SEQ=SEG.ACK><CTL=RST>.
    fn rst(&self, remote: SocketAddr, _seg: &TcpRepr, ack: Seq) -> TcpRepr {
        self.bare(remote, ack, None, TcpFlags::RST)
    }

    fn bare(&self, remote: SocketAddr, seq: Seq, ack: Option<Seq>, flags: TcpFlags) -> TcpRepr {
        super::bare_header(self.local.port(), remote.port(), seq, ack, flags)
    }

    /// What the half-open and not-yet-accepted connections send (SYN-ACKs,
    /// retransmissions, ACKs), with the connection's local and remote
    /// addresses.
    pub fn poll_output(&mut self, now: Instant) -> Option<(SocketAddr, SocketAddr, Outgoing)> {
        self.half_open
            .values_mut()
            .chain(self.ready.iter_mut())
            .find_map(|conn| {
                conn.poll_output(now)
                    .map(|out| (conn.local(), conn.remote(), out))
            })
    }

    /// Runs the held connections' timers; forgets half-open ones that
    /// gave up.
    pub fn poll_timers(&mut self, now: Instant) {
        for conn in self.half_open.values_mut().chain(self.ready.iter_mut()) {
            conn.poll_timers(now);
        }
        self.half_open
            .retain(|_, conn| conn.state() != State::Closed);
        self.shrink_tables();
    }

    /// Gives back the table memory a flood grew once it has drained: a
    /// table holding under a quarter of its room is cut to twice what it
    /// holds (so a steady load does not grow and shrink it every time).
    pub fn shrink_tables(&mut self) {
        const KEEP: usize = 16;
        let len = self.half_open.len();
        if self.half_open.capacity() > KEEP.max(4 * len) {
            self.half_open.shrink_to(KEEP.max(2 * len));
        }
        let len = self.ready.len();
        if self.ready.capacity() > KEEP.max(4 * len) {
            self.ready.shrink_to(KEEP.max(2 * len));
        }
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.half_open
            .values()
            .chain(self.ready.iter())
            .filter_map(Connection::next_deadline)
            .min()
    }
}
