//! The per-association options an application chooses (study §2.7, "Upper
//! Layer Interface to XTP"): error-control mode, checksum, rate and burst,
//! buffers, the timers and the retry count.

use std::time::Duration;

pub use wire::xtp::Service;

/// How lost data is recovered (study §2.4.2, "Error Control").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum ErrorControl {
    /// The receiver keeps data that arrives out of order and names what it
    /// holds beyond `rseq` in ECNTL spans; the sender resends only the gaps.
    #[default]
    Selective,
    /// The receiver discards data that arrives out of order and answers
    /// with CNTL; the sender resends everything from `rseq` on ("for
    /// reliable networks", study §2.7).
    GoBackN,
}

/// Rate control (study §2.4.2, "Rate Control"): at most `burst` bytes per
/// RTIMER period, the period being `burst / rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct RateLimit {
    /// Bytes per second.
    pub rate: u32,
    /// Bytes per burst.
    pub burst: u32,
}

/// An association's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XtpConfig {
    /// The service type the initiator asks for in FIRST's traffic
    /// specifier (study §2.7, "Service Type Specification"); the
    /// responder takes the initiator's. `UnicastStream` (connection, the
    /// default) is a byte stream each way; `Transaction` is one message
    /// each way (each end's first `send` is its whole message, WCLOSE
    /// after it); `AcknowledgedDatagram` one message from the initiator,
    /// none back, its delivery confirmed by the close handshake;
    /// `UnacknowledgedDatagram` the same without error control (NOERR).
    /// Other values are sent as given and run as a connection.
    pub service: Service,
    pub error_control: ErrorControl,
    /// NOCHECK: the checksum covers the header only.
    pub nocheck: bool,
    /// NOERR: no error control; nothing is resent, and the receiver
    /// gives up what is missing (study §2.4.2: "error control can be
    /// disabled").
    pub noerr: bool,
    /// NOFLOW: this end, as receiver, tells its peer to ignore `alloc`
    /// (study §2.4.2: "flow control can be disabled"); what overflows the
    /// receive buffer is dropped and left to error control.
    pub noflow: bool,
    /// FASTNAK: answer a gap at once instead of waiting for a status
    /// request (study §2.7, "Enable Aggressive Error Control").
    pub fastnak: bool,
    /// Rate and burst this end sends at, and asks its peer to respect
    /// (traffic specifier `inrate`/`inburst`); `None`: unconstrained.
    pub rate: Option<RateLimit>,
    /// Reservation mode (RES): the receiver's `alloc` is the space the
    /// reading application asked for, not the receive buffer.
    pub reservation: bool,
    /// Implicit setup: data follows FIRST at once (study §2.4.1); else the
    /// sender waits for the answer (explicit setup).
    pub implicit: bool,
    /// Ask for status with DREQ (answered once the data reached the
    /// reading application) instead of SREQ.
    pub delivery_requests: bool,
    /// Bytes the send buffer holds (written, not yet acknowledged).
    pub send_buffer: usize,
    /// Bytes the receive buffer holds (arrived, not yet read).
    pub recv_buffer: usize,
    /// `talloc`: what the sender may send before the receiver's first
    /// `alloc` arrives (implicit setup).
    pub initial_alloc: u64,
    /// WTIMER before any round trip was measured.
    pub wtimer: Duration,
    /// The floor of WTIMER once it follows the round-trip time.
    pub wtimer_min: Duration,
    /// Unanswered status requests in a row that abort the association.
    pub retries: u32,
    /// CTIMER: an idle association asks for status this often (keep-alive).
    pub ctimer: Duration,
    /// CTIMEOUT: silence from the peer for this long, while waiting for
    /// it, aborts the association.
    pub ctimeout: Duration,
    /// How long the end that sent END answers a peer that missed it.
    pub quiet_time: Duration,
    /// Priority sorting (SORT, study §2.6): the host sends for
    /// associations with a higher value first, those without last.
    pub sort: Option<u16>,
}

impl Default for XtpConfig {
    fn default() -> Self {
        Self {
            service: Service::UnicastStream,
            error_control: ErrorControl::Selective,
            nocheck: false,
            noerr: false,
            noflow: false,
            fastnak: false,
            rate: None,
            reservation: false,
            implicit: true,
            delivery_requests: false,
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            initial_alloc: 64 * 1024,
            wtimer: Duration::from_millis(200),
            wtimer_min: Duration::from_millis(2),
            retries: 12,
            ctimer: Duration::from_secs(30),
            ctimeout: Duration::from_secs(120),
            quiet_time: Duration::from_secs(2),
            sort: None,
        }
    }
}

/// Whether `service` carries one message per direction at most.
pub fn is_message_service(service: Service) -> bool {
    matches!(
        service,
        Service::Transaction | Service::AcknowledgedDatagram | Service::UnacknowledgedDatagram
    )
}

/// Whether only the initiator sends (the datagram services).
pub fn is_datagram_service(service: Service) -> bool {
    matches!(
        service,
        Service::AcknowledgedDatagram | Service::UnacknowledgedDatagram
    )
}
