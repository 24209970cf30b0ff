//! Congestion control for the TCP sender: the window rules every algorithm
//! shares (RFC 5681 slow start, loss and timeout responses, restart after
//! idle; the fast-recovery window arithmetic of RFC 5681 §3.2 and RFC 6582)
//! and, per socket, the algorithm that grows the window in congestion
//! avoidance and sizes the reduction: NewReno ([`newreno`]) or CUBIC
//! ([`cubic`], the default).
//!
//! Windows are in bytes. The controller never reads a clock or looks at
//! segments; the sender tells it what happened:
//!
//! * An ACK advances SND.UNA: [`CongestionControl::on_ack`] with the bytes
//!   newly acknowledged, the FlightSize left outstanding *after* the ACK,
//!   and the current SRTT. During recovery it leaves the window alone.
//! * The sender decides a segment is lost — three duplicate ACKs (RFC 5681
//!   §3.2, RFC 6582) or the SACK rules of RFC 6675 §5 — and calls
//!   [`CongestionControl::on_congestion_event`] with the FlightSize at that
//!   moment, once per recovery episode (calls during recovery are ignored,
//!   RFC 6582 §3.2 step 2, RFC 6675 §5).
//! * A sender without SACK then inflates the window for segments that left
//!   the network: [`CongestionControl::on_duplicate_acks`] with 3 right
//!   after entering, then 1 per further duplicate ACK (RFC 5681 §3.2 steps
//!   3-4), and [`CongestionControl::on_partial_ack`] for each partial ACK
//!   (RFC 6582 §3.2 step 3). A SACK sender uses neither: RFC 6675 keeps
//!   cwnd = ssthresh and paces by `pipe`.
//! * The ACK that covers `recover` ends recovery:
//!   [`CongestionControl::on_recovery_exit`] with the FlightSize after it.
//! * The retransmission timer expires:
//!   [`CongestionControl::on_retransmission_timeout`] (this also ends any
//!   recovery, RFC 6582 §3.2 step 4).
//! * The connection sends after being idle for longer than the RTO:
//!   [`CongestionControl::on_idle_restart`] first (RFC 5681 §4.1).
//!
//! The window grows only while the sender is limited by it: an ACK that
//! finds the sender had room for another full segment (application- or
//! receiver-window-limited) does not grow cwnd (RFC 9438 §5.8, RFC 7661's
//! reasoning), so an idle or slow application cannot bank a window the
//! path never carried.

/// The read-only half of [`CongestionControl`], the same for every
/// controller: each answers from its `w: Window`.
macro_rules! window_accessors {
    () => {
        fn cwnd(&self) -> usize {
            self.w.cwnd
        }

        fn ssthresh(&self) -> usize {
            self.w.ssthresh
        }

        fn mss(&self) -> usize {
            self.w.smss
        }

        fn in_slow_start(&self) -> bool {
            self.w.in_slow_start()
        }

        fn in_recovery(&self) -> bool {
            self.w.in_recovery
        }

        fn stats(&self) -> CongestionStats {
            self.w.stats
        }
    };
}

pub mod cubic;
pub mod newreno;

use std::time::Duration;

use crate::time::Instant;

pub use cubic::Cubic;
pub use newreno::NewReno;

/// Which congestion-avoidance algorithm a socket runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// RFC 5681 with the RFC 6582 recovery rules.
    NewReno,
    /// RFC 9438, the default (as in Linux, Windows and macOS).
    #[default]
    Cubic,
}

/// How big the first window is, in terms of the sender's MSS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum InitialWindow {
    /// RFC 6928 §2: min(10*MSS, max(2*MSS, 14600)).
    #[default]
    Rfc6928,
    /// RFC 5681 §3.1 equation (1): 2, 3 or 4 segments depending on SMSS.
    Rfc5681,
    /// A fixed number of segments (at least one), e.g. one after repeated
    /// SYN retransmissions (RFC 6928 §2).
    Segments(usize),
}

impl InitialWindow {
    /// The window in bytes for a sender MSS of `smss`.
    pub fn bytes(self, smss: usize) -> usize {
        match self {
            InitialWindow::Rfc6928 => smss
                .saturating_mul(10)
                .min(smss.saturating_mul(2).max(14_600)),
            InitialWindow::Rfc5681 => {
                let segments = if smss > 2190 {
                    2
                } else if smss > 1095 {
                    3
                } else {
                    4
                };
                smss.saturating_mul(segments)
            }
            InitialWindow::Segments(n) => smss.saturating_mul(n.max(1)),
        }
    }
}

/// The largest window a peer can advertise (RFC 7323 §2.3: 2^30 bytes), the
/// default ceiling on cwnd: more could never be used.
pub const MAX_WINDOW: usize = 1 << 30;

/// Per-socket congestion-control settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CongestionConfig {
    pub algorithm: Algorithm,
    pub initial_window: InitialWindow,
    /// Ceiling on cwnd in bytes (held to at least one MSS).
    pub max_cwnd: usize,
    /// CUBIC fast convergence (RFC 9438 §4.7). The RFC says it SHOULD be
    /// on, and SHOULD be off where one CUBIC flow runs alone.
    pub fast_convergence: bool,
}

impl Default for CongestionConfig {
    fn default() -> Self {
        Self {
            algorithm: Algorithm::default(),
            initial_window: InitialWindow::default(),
            max_cwnd: MAX_WINDOW,
            fast_convergence: true,
        }
    }
}

/// Event counts for the analysis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CongestionStats {
    /// Fast retransmit / fast recovery entries (window reductions on loss).
    pub congestion_events: u64,
    /// Retransmission timeouts.
    pub rto_events: u64,
    /// Restarts after idle (RFC 5681 §4.1).
    pub idle_restarts: u64,
}

/// What the TCP sender calls; see the module documentation for when.
/// `flight_size` is always the data outstanding at the time of the call,
/// after the event being reported has been applied.
pub trait CongestionControl {
    /// An ACK newly acknowledged `acked_bytes`; `srtt` is the sender's
    /// smoothed RTT (RFC 6298), `None` before the first sample.
    fn on_ack(
        &mut self,
        now: Instant,
        acked_bytes: usize,
        flight_size: usize,
        srtt: Option<Duration>,
    );
    /// Loss detected outside recovery: reduce and enter recovery.
    fn on_congestion_event(&mut self, now: Instant, flight_size: usize);
    /// Duplicate ACKs during recovery without SACK: each means a segment
    /// left the network, so cwnd grows by one SMSS (RFC 5681 §3.2 steps 3-4).
    fn on_duplicate_acks(&mut self, count: usize);
    /// A partial ACK during recovery without SACK (RFC 6582 §3.2 step 3).
    fn on_partial_ack(&mut self, acked_bytes: usize);
    /// The full ACK: recovery is over.
    fn on_recovery_exit(&mut self, now: Instant, flight_size: usize);
    /// The retransmission timer expired.
    fn on_retransmission_timeout(&mut self, now: Instant, flight_size: usize);
    /// The sender resumes after an idle period longer than the RTO.
    fn on_idle_restart(&mut self, now: Instant);
    /// The sender's MSS changed (handshake, path MTU).
    fn set_mss(&mut self, mss: usize);
    /// The congestion window in bytes.
    fn cwnd(&self) -> usize;
    /// The slow-start threshold in bytes (`usize::MAX` until the first loss).
    fn ssthresh(&self) -> usize;
    /// The SMSS the window is counted in.
    fn mss(&self) -> usize;
    /// cwnd < ssthresh (RFC 5681 §3.1).
    fn in_slow_start(&self) -> bool;
    /// Between a congestion event and the recovery exit.
    fn in_recovery(&self) -> bool;
    fn stats(&self) -> CongestionStats;
}

/// The controller of one socket, dispatched by `match` rather than through
/// a vtable: the sender calls it on every ACK.
#[derive(Debug, Clone)]
pub enum Controller {
    NewReno(NewReno),
    Cubic(Cubic),
}

impl Controller {
    /// A controller for `config.algorithm`, sized for a sender MSS of `mss`.
    pub fn new(config: &CongestionConfig, mss: usize) -> Self {
        match config.algorithm {
            Algorithm::NewReno => Controller::NewReno(NewReno::new(config, mss)),
            Algorithm::Cubic => Controller::Cubic(Cubic::new(config, mss)),
        }
    }

    pub fn algorithm(&self) -> Algorithm {
        match self {
            Controller::NewReno(_) => Algorithm::NewReno,
            Controller::Cubic(_) => Algorithm::Cubic,
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $cc:ident => $call:expr) => {
        match $self {
            Controller::NewReno($cc) => $call,
            Controller::Cubic($cc) => $call,
        }
    };
}

impl CongestionControl for Controller {
    fn on_ack(&mut self, now: Instant, acked: usize, flight: usize, srtt: Option<Duration>) {
        dispatch!(self, cc => cc.on_ack(now, acked, flight, srtt))
    }
    fn on_congestion_event(&mut self, now: Instant, flight_size: usize) {
        dispatch!(self, cc => cc.on_congestion_event(now, flight_size))
    }
    fn on_duplicate_acks(&mut self, count: usize) {
        dispatch!(self, cc => cc.on_duplicate_acks(count))
    }
    fn on_partial_ack(&mut self, acked_bytes: usize) {
        dispatch!(self, cc => cc.on_partial_ack(acked_bytes))
    }
    fn on_recovery_exit(&mut self, now: Instant, flight_size: usize) {
        dispatch!(self, cc => cc.on_recovery_exit(now, flight_size))
    }
    fn on_retransmission_timeout(&mut self, now: Instant, flight_size: usize) {
        dispatch!(self, cc => cc.on_retransmission_timeout(now, flight_size))
    }
    fn on_idle_restart(&mut self, now: Instant) {
        dispatch!(self, cc => cc.on_idle_restart(now))
    }
    fn set_mss(&mut self, mss: usize) {
        dispatch!(self, cc => cc.set_mss(mss))
    }
    fn cwnd(&self) -> usize {
        dispatch!(self, cc => cc.cwnd())
    }
    fn ssthresh(&self) -> usize {
        dispatch!(self, cc => cc.ssthresh())
    }
    fn mss(&self) -> usize {
        dispatch!(self, cc => cc.mss())
    }
    fn in_slow_start(&self) -> bool {
        dispatch!(self, cc => cc.in_slow_start())
    }
    fn in_recovery(&self) -> bool {
        dispatch!(self, cc => cc.in_recovery())
    }
    fn stats(&self) -> CongestionStats {
        dispatch!(self, cc => cc.stats())
    }
}

/// The state and rules both algorithms share. Every write to cwnd goes
/// through [`Window::set_cwnd`], which keeps it within one SMSS and the
/// ceiling.
#[derive(Debug, Clone)]
struct Window {
    smss: usize,
    cwnd: usize,
    ssthresh: usize,
    /// The configured ceiling; the effective one is at least `smss`.
    max_cwnd: usize,
    initial_window: InitialWindow,
    in_recovery: bool,
    /// A timeout struck and no new data has been acknowledged since.
    timed_out: bool,
    /// Nothing acknowledged, lost or restarted yet, so the initial window
    /// still follows the MSS.
    fresh: bool,
    stats: CongestionStats,
}

impl Window {
    fn new(config: &CongestionConfig, mss: usize) -> Self {
        let mut w = Self {
            smss: mss.max(1),
            cwnd: 0,
            // RFC 5681 §3.1: "arbitrarily high" until the first loss.
            ssthresh: usize::MAX,
            max_cwnd: config.max_cwnd,
            initial_window: config.initial_window,
            in_recovery: false,
            timed_out: false,
            fresh: true,
            stats: CongestionStats::default(),
        };
        w.set_cwnd(w.initial_window.bytes(w.smss));
        w
    }

    fn set_cwnd(&mut self, bytes: usize) {
        self.cwnd = bytes.clamp(self.smss, self.ceiling());
    }

    fn ceiling(&self) -> usize {
        self.max_cwnd.max(self.smss)
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Bookkeeping for an ACK of new data; returns whether the window may
    /// grow on it.
    fn ack(&mut self, acked: usize, flight: usize) -> bool {
        if acked == 0 {
            return false;
        }
        self.fresh = false;
        self.timed_out = false;
        // RFC 5681 §3.2 / RFC 6675 §5: recovery has its own window rules.
        !self.in_recovery && self.cwnd_limited(acked, flight)
    }

    /// Whether the sender was using the window when this ACK arrived: with
    /// the data outstanding before it, could another full segment have
    /// been sent? If so, something other than cwnd held the sender back.
    fn cwnd_limited(&self, acked: usize, flight: usize) -> bool {
        flight.saturating_add(acked).saturating_add(self.smss) > self.cwnd
    }

    /// RFC 5681 §3.1 equation (2), with appropriate byte counting at
    /// L = 1 SMSS (RFC 3465 §2.2): cwnd += min(N, SMSS) per ACK.
    fn slow_start(&mut self, acked: usize) {
        self.set_cwnd(self.cwnd.saturating_add(acked.min(self.smss)));
    }

    /// Enters recovery with the algorithm's new threshold, floored at
    /// 2*SMSS (RFC 5681 §3.1 equation (4), RFC 9438 §4.6), and cwnd set to
    /// it (RFC 6675 §5 step 4.2; RFC 5681's extra 3*SMSS is the sender's
    /// `on_duplicate_acks(3)`). Returns false if already recovering.
    fn enter_recovery(&mut self, ssthresh: usize) -> bool {
        if self.in_recovery {
            return false;
        }
        self.ssthresh = ssthresh.max(self.smss.saturating_mul(2));
        self.set_cwnd(self.ssthresh);
        self.in_recovery = true;
        self.fresh = false;
        self.stats.congestion_events = self.stats.congestion_events.saturating_add(1);
        true
    }

    /// RFC 5681 §3.2 steps 3-4: each duplicate ACK inflates cwnd by SMSS.
    fn duplicate_acks(&mut self, count: usize) {
        if self.in_recovery {
            let inflation = self.smss.saturating_mul(count);
            self.set_cwnd(self.cwnd.saturating_add(inflation));
        }
    }

    /// RFC 6582 §3.2 step 3, partial acknowledgments: deflate cwnd by the
    /// newly acknowledged data, then add back one SMSS if at least one SMSS
    /// was acknowledged, so about ssthresh worth stays in flight.
    fn partial_ack(&mut self, acked: usize) {
        if !self.in_recovery {
            return;
        }
        self.fresh = false;
        self.timed_out = false;
        let mut cwnd = self.cwnd.saturating_sub(acked);
        if acked >= self.smss {
            cwnd = cwnd.saturating_add(self.smss);
        }
        self.set_cwnd(cwnd);
    }

    /// RFC 6582 §3.2 step 3, full acknowledgments, option (1):
    /// cwnd = min(ssthresh, max(FlightSize, SMSS) + SMSS), which deflates
    /// the window without allowing a burst when little is in flight.
    fn exit_recovery(&mut self, flight: usize) -> bool {
        if !self.in_recovery {
            return false;
        }
        self.in_recovery = false;
        self.timed_out = false;
        let allowed = flight.max(self.smss).saturating_add(self.smss);
        self.set_cwnd(self.ssthresh.min(allowed));
        true
    }

    /// RFC 5681 §3.1: on a timeout, ssthresh takes the algorithm's value
    /// (equation (4) for Reno) unless the timer already expired without
    /// progress, in which case it is held; cwnd drops to the loss window
    /// of one SMSS. Recovery ends (RFC 6582 §3.2 step 4). Returns whether
    /// this was the first timeout of the episode.
    fn timeout(&mut self, ssthresh: usize) -> bool {
        let first = !self.timed_out;
        if first {
            self.ssthresh = ssthresh.max(self.smss.saturating_mul(2));
        }
        self.set_cwnd(self.smss);
        self.in_recovery = false;
        self.timed_out = true;
        self.fresh = false;
        self.stats.rto_events = self.stats.rto_events.saturating_add(1);
        first
    }

    /// RFC 5681 §4.1: after an idle period longer than the RTO, cwnd =
    /// min(RW, cwnd) with the restart window RW = min(IW, cwnd).
    fn idle_restart(&mut self) {
        let restart = self.initial_window.bytes(self.smss);
        self.set_cwnd(self.cwnd.min(restart));
        self.fresh = false;
        self.stats.idle_restarts = self.stats.idle_restarts.saturating_add(1);
    }

    /// A new SMSS: before any traffic the initial window is recomputed for
    /// it (the MSS is often settled only by the handshake); afterwards the
    /// byte window carries over, held within the new bounds.
    fn set_mss(&mut self, mss: usize) {
        self.smss = mss.max(1);
        if self.fresh {
            self.set_cwnd(self.initial_window.bytes(self.smss));
        } else {
            self.set_cwnd(self.cwnd);
            self.ssthresh = self.ssthresh.max(self.smss.saturating_mul(2));
        }
    }
}

/// `bytes * num / den` without overflow, rounded down (for num <= den the
/// result fits).
fn fraction(bytes: usize, num: u32, den: u32) -> usize {
    let scaled = bytes as u128 * u128::from(num) / u128::from(den.max(1));
    usize::try_from(scaled).unwrap_or(usize::MAX)
}

/// Test drivers shared by the algorithm modules' tests.
#[cfg(test)]
mod sim {
    use super::*;

    /// A bulk sender that keeps the window full, at whole segments.
    pub struct Bulk {
        pub flight: usize,
    }

    impl Bulk {
        /// A sender that filled the initial window.
        pub fn new(cc: &impl CongestionControl) -> Self {
            let mss = cc.mss();
            Self {
                flight: cc.cwnd() / mss * mss,
            }
        }

        /// One round trip: every segment outstanding at its start is
        /// acknowledged singly, evenly spread over `rtt` from `now`, and the
        /// sender refills the window after each ACK. Returns the time at the
        /// end of the round.
        pub fn round(
            &mut self,
            cc: &mut impl CongestionControl,
            now: Instant,
            rtt: Duration,
        ) -> Instant {
            let mss = cc.mss();
            let segments = (self.flight / mss).max(1);
            let step = rtt / u32::try_from(segments).unwrap_or(u32::MAX);
            let mut t = now;
            for _ in 0..segments {
                t += step;
                self.flight = self.flight.saturating_sub(mss);
                cc.on_ack(t, mss, self.flight, Some(rtt));
                while self.flight + mss <= cc.cwnd() {
                    self.flight += mss;
                }
            }
            now + rtt
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sim::Bulk;
    use super::*;
    use proptest::prelude::*;

    const MSS: usize = 1000;
    const RTT: Duration = Duration::from_millis(50);

    fn controller(algorithm: Algorithm) -> Controller {
        Controller::new(
            &CongestionConfig {
                algorithm,
                ..CongestionConfig::default()
            },
            MSS,
        )
    }

    fn both() -> [Controller; 2] {
        [controller(Algorithm::NewReno), controller(Algorithm::Cubic)]
    }

    #[test]
    fn cubic_is_the_default() {
        let cc = Controller::new(&CongestionConfig::default(), 1460);
        assert_eq!(cc.algorithm(), Algorithm::Cubic);
        assert_eq!(
            controller(Algorithm::NewReno).algorithm(),
            Algorithm::NewReno
        );
    }

    #[test]
    fn initial_windows_follow_the_rfcs() {
        // RFC 6928: min(10*MSS, max(2*MSS, 14600)).
        assert_eq!(InitialWindow::Rfc6928.bytes(1460), 14_600);
        assert_eq!(InitialWindow::Rfc6928.bytes(536), 5_360);
        assert_eq!(InitialWindow::Rfc6928.bytes(9000), 18_000);
        // RFC 5681 equation (1).
        assert_eq!(InitialWindow::Rfc5681.bytes(1460), 4_380);
        assert_eq!(InitialWindow::Rfc5681.bytes(536), 2_144);
        assert_eq!(InitialWindow::Rfc5681.bytes(2500), 5_000);
        assert_eq!(InitialWindow::Segments(0).bytes(1460), 1460);
        let cc = Controller::new(&CongestionConfig::default(), 1460);
        assert_eq!(cc.cwnd(), 14_600);
        assert_eq!(cc.ssthresh(), usize::MAX);
        assert!(cc.in_slow_start());
    }

    #[test]
    fn slow_start_doubles_every_round_trip() {
        for mut cc in both() {
            let mut bulk = Bulk::new(&cc);
            let mut now = Instant::ZERO;
            for expected in [20, 40, 80, 160] {
                now = bulk.round(&mut cc, now, RTT);
                assert_eq!(cc.cwnd(), expected * MSS, "{:?}", cc.algorithm());
            }
        }
    }

    #[test]
    fn slow_start_counts_at_most_one_mss_per_ack() {
        for mut cc in both() {
            // A stretch ACK of 4 segments grows cwnd by one SMSS (RFC 3465, L = 1).
            cc.on_ack(Instant::ZERO, 4 * MSS, 6 * MSS, None);
            assert_eq!(cc.cwnd(), 11 * MSS);
            // Small ACKs count their bytes.
            cc.on_ack(Instant::ZERO, 100, 10 * MSS, None);
            assert_eq!(cc.cwnd(), 11 * MSS + 100);
        }
    }

    #[test]
    fn an_application_limited_sender_does_not_grow_the_window() {
        for mut cc in both() {
            // Two segments were outstanding of a ten-segment window.
            cc.on_ack(Instant::ZERO, MSS, MSS, None);
            cc.on_ack(Instant::ZERO, MSS, 0, None);
            assert_eq!(cc.cwnd(), 10 * MSS);
            // A full window grows it.
            cc.on_ack(Instant::ZERO, MSS, 9 * MSS, None);
            assert_eq!(cc.cwnd(), 11 * MSS);
        }
    }

    #[test]
    fn loss_halves_for_reno_and_cuts_to_0_7_for_cubic() {
        let [mut reno, mut cubic] = both();
        for cc in [&mut reno, &mut cubic] {
            cc.on_congestion_event(Instant::ZERO, 30 * MSS);
            assert!(cc.in_recovery());
            assert_eq!(cc.stats().congestion_events, 1);
        }
        // RFC 5681 equation (4): max(FlightSize/2, 2*SMSS).
        assert_eq!(reno.ssthresh(), 15 * MSS);
        assert_eq!(reno.cwnd(), 15 * MSS);
        // RFC 9438 §4.6: FlightSize * 0.7.
        assert_eq!(cubic.ssthresh(), 21 * MSS);
        assert_eq!(cubic.cwnd(), 21 * MSS);
    }

    #[test]
    fn loss_threshold_is_at_least_two_segments() {
        for mut cc in both() {
            cc.on_congestion_event(Instant::ZERO, MSS);
            assert_eq!(cc.ssthresh(), 2 * MSS);
            assert_eq!(cc.cwnd(), 2 * MSS);
        }
    }

    #[test]
    fn a_second_loss_in_the_same_recovery_is_ignored() {
        for mut cc in both() {
            cc.on_congestion_event(Instant::ZERO, 40 * MSS);
            let (cwnd, ssthresh) = (cc.cwnd(), cc.ssthresh());
            cc.on_congestion_event(Instant::ZERO, 10 * MSS);
            assert_eq!((cc.cwnd(), cc.ssthresh()), (cwnd, ssthresh));
            assert_eq!(cc.stats().congestion_events, 1);
        }
    }

    #[test]
    fn acks_during_recovery_do_not_grow_the_window() {
        for mut cc in both() {
            cc.on_congestion_event(Instant::ZERO, 40 * MSS);
            let cwnd = cc.cwnd();
            cc.on_ack(Instant::ZERO, 5 * MSS, 40 * MSS, Some(RTT));
            assert_eq!(cc.cwnd(), cwnd);
        }
    }

    #[test]
    fn timeout_collapses_to_one_segment_and_holds_ssthresh_on_repeats() {
        let [mut reno, mut cubic] = both();
        for cc in [&mut reno, &mut cubic] {
            cc.on_retransmission_timeout(Instant::ZERO, 40 * MSS);
            assert_eq!(cc.cwnd(), MSS);
            assert!(cc.in_slow_start());
            // The retransmission times out again: ssthresh is held (RFC 5681 §3.1).
            let ssthresh = cc.ssthresh();
            cc.on_retransmission_timeout(Instant::ZERO, MSS);
            assert_eq!(cc.ssthresh(), ssthresh);
            assert_eq!(cc.cwnd(), MSS);
            assert_eq!(cc.stats().rto_events, 2);
            // After progress, a new timeout recomputes it.
            cc.on_ack(Instant::ZERO, MSS, 0, Some(RTT));
            cc.on_retransmission_timeout(Instant::ZERO, 4 * MSS);
        }
        assert_eq!(reno.stats().rto_events, 3);
        // Equation (4) for Reno, beta_cubic for CUBIC (RFC 9438 §4.8); the
        // last timeout had 4 segments in flight.
        assert_eq!(reno.ssthresh(), 2 * MSS);
        assert_eq!(cubic.ssthresh(), 2_800);
    }

    #[test]
    fn timeout_ssthresh_uses_the_flight_size() {
        let [mut reno, mut cubic] = both();
        reno.on_retransmission_timeout(Instant::ZERO, 40 * MSS);
        cubic.on_retransmission_timeout(Instant::ZERO, 40 * MSS);
        assert_eq!(reno.ssthresh(), 20 * MSS);
        assert_eq!(cubic.ssthresh(), 28 * MSS);
    }

    #[test]
    fn timeout_ends_recovery() {
        for mut cc in both() {
            cc.on_congestion_event(Instant::ZERO, 40 * MSS);
            cc.on_retransmission_timeout(Instant::ZERO, 40 * MSS);
            assert!(!cc.in_recovery());
            assert_eq!(cc.cwnd(), MSS);
        }
    }

    #[test]
    fn dupack_recovery_inflates_and_deflates() {
        for mut cc in both() {
            cc.on_congestion_event(Instant::ZERO, 20 * MSS);
            let ssthresh = cc.ssthresh();
            // RFC 5681 §3.2 step 3: cwnd = ssthresh + 3*SMSS.
            cc.on_duplicate_acks(3);
            assert_eq!(cc.cwnd(), ssthresh + 3 * MSS);
            // Step 4: one SMSS per further duplicate ACK.
            cc.on_duplicate_acks(1);
            assert_eq!(cc.cwnd(), ssthresh + 4 * MSS);
            // RFC 6582 partial ACK of 3 segments: deflate by 3, add one back.
            cc.on_partial_ack(3 * MSS);
            assert_eq!(cc.cwnd(), ssthresh + 2 * MSS);
            // Less than an SMSS acknowledged: no add-back.
            cc.on_partial_ack(100);
            assert_eq!(cc.cwnd(), ssthresh + 2 * MSS - 100);
            assert!(cc.in_recovery());
            // Full ACK with plenty in flight: cwnd = ssthresh.
            cc.on_recovery_exit(Instant::ZERO, 20 * MSS);
            assert_eq!(cc.cwnd(), ssthresh);
            assert!(!cc.in_recovery());
        }
    }

    #[test]
    fn full_ack_with_little_in_flight_avoids_a_burst() {
        for mut cc in both() {
            cc.on_congestion_event(Instant::ZERO, 40 * MSS);
            // RFC 6582 option (1): min(ssthresh, max(FlightSize, SMSS) + SMSS).
            cc.on_recovery_exit(Instant::ZERO, 3 * MSS);
            assert_eq!(cc.cwnd(), 4 * MSS);
            let mut other = controller(cc.algorithm());
            other.on_congestion_event(Instant::ZERO, 40 * MSS);
            other.on_recovery_exit(Instant::ZERO, 0);
            assert_eq!(other.cwnd(), 2 * MSS);
        }
    }

    #[test]
    fn recovery_calls_outside_recovery_change_nothing() {
        for mut cc in both() {
            cc.on_duplicate_acks(3);
            cc.on_partial_ack(5 * MSS);
            cc.on_recovery_exit(Instant::ZERO, 0);
            assert_eq!(cc.cwnd(), 10 * MSS);
        }
    }

    #[test]
    fn idle_restart_falls_back_to_the_initial_window() {
        for mut cc in both() {
            let mut bulk = Bulk::new(&cc);
            let now = bulk.round(&mut cc, Instant::ZERO, RTT);
            assert_eq!(cc.cwnd(), 20 * MSS);
            cc.on_idle_restart(now + Duration::from_secs(5));
            assert_eq!(cc.cwnd(), 10 * MSS);
            assert_eq!(cc.stats().idle_restarts, 1);
            // A window already below the IW is kept.
            cc.on_retransmission_timeout(now, 10 * MSS);
            cc.on_idle_restart(now + Duration::from_secs(10));
            assert_eq!(cc.cwnd(), MSS);
        }
    }

    #[test]
    fn mss_before_traffic_resizes_the_initial_window() {
        for mut cc in both() {
            cc.set_mss(1460);
            assert_eq!(cc.cwnd(), 14_600);
            cc.on_ack(Instant::ZERO, 1460, 14_600 - 1460, None);
            assert_eq!(cc.cwnd(), 16_060);
            // Later the byte window carries over.
            cc.set_mss(1200);
            assert_eq!(cc.cwnd(), 16_060);
            assert_eq!(cc.mss(), 1200);
        }
    }

    #[test]
    fn the_ceiling_holds() {
        for algorithm in [Algorithm::NewReno, Algorithm::Cubic] {
            let mut cc = Controller::new(
                &CongestionConfig {
                    algorithm,
                    max_cwnd: 15 * MSS,
                    ..CongestionConfig::default()
                },
                MSS,
            );
            let mut bulk = Bulk::new(&cc);
            bulk.round(&mut cc, Instant::ZERO, RTT);
            assert_eq!(cc.cwnd(), 15 * MSS);
            // A ceiling below one MSS still lets one segment out.
            let tiny = Controller::new(
                &CongestionConfig {
                    algorithm,
                    max_cwnd: 1,
                    ..CongestionConfig::default()
                },
                MSS,
            );
            assert_eq!(tiny.cwnd(), MSS);
        }
    }

    #[derive(Debug, Clone)]
    enum Event {
        Ack {
            acked: usize,
            flight: usize,
            srtt: Option<u64>,
        },
        Loss {
            flight: usize,
        },
        DupAcks(usize),
        Partial(usize),
        Exit {
            flight: usize,
        },
        Timeout {
            flight: usize,
        },
        Idle,
        Mss(usize),
    }

    fn event() -> impl Strategy<Value = Event> {
        let size = prop_oneof![0usize..200_000, any::<usize>()];
        prop_oneof![
            6 => (size.clone(), size.clone(), proptest::option::of(any::<u64>()))
                .prop_map(|(acked, flight, srtt)| Event::Ack { acked, flight, srtt }),
            1 => size.clone().prop_map(|flight| Event::Loss { flight }),
            1 => (0usize..10).prop_map(Event::DupAcks),
            1 => size.clone().prop_map(Event::Partial),
            1 => size.clone().prop_map(|flight| Event::Exit { flight }),
            1 => size.clone().prop_map(|flight| Event::Timeout { flight }),
            1 => Just(Event::Idle),
            1 => prop_oneof![0usize..9000, any::<usize>()].prop_map(Event::Mss),
        ]
    }

    proptest! {
        #[test]
        fn cwnd_stays_between_one_mss_and_the_ceiling(
            cubic in any::<bool>(),
            mss in 1usize..9000,
            max_cwnd in prop_oneof![0usize..1_000_000, any::<usize>()],
            fast_convergence in any::<bool>(),
            events in proptest::collection::vec((event(), any::<u64>()), 0..200),
        ) {
            let config = CongestionConfig {
                algorithm: if cubic { Algorithm::Cubic } else { Algorithm::NewReno },
                max_cwnd,
                fast_convergence,
                ..CongestionConfig::default()
            };
            let mut cc = Controller::new(&config, mss);
            let mut now = Instant::ZERO;
            for (event, step) in events {
                now += Duration::from_nanos(step % 10_000_000_000);
                match event {
                    Event::Ack { acked, flight, srtt } => {
                        cc.on_ack(now, acked, flight, srtt.map(Duration::from_nanos))
                    }
                    Event::Loss { flight } => cc.on_congestion_event(now, flight),
                    Event::DupAcks(n) => cc.on_duplicate_acks(n),
                    Event::Partial(acked) => cc.on_partial_ack(acked),
                    Event::Exit { flight } => cc.on_recovery_exit(now, flight),
                    Event::Timeout { flight } => cc.on_retransmission_timeout(now, flight),
                    Event::Idle => cc.on_idle_restart(now),
                    Event::Mss(m) => cc.set_mss(m),
                }
                let smss = cc.mss();
                prop_assert!(smss >= 1);
                prop_assert!(cc.cwnd() >= smss);
                prop_assert!(cc.cwnd() <= max_cwnd.max(smss));
                prop_assert!(cc.ssthresh() >= 2 * smss.min(usize::MAX / 2));
            }
        }
    }
}
