//! What to run: a transfer (ttcp) or an echo exchange (delay mode), on
//! which target, with which parameters. Validated once, up front, so the
//! runners can trust them.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::congestion::Congestion;
use crate::datagram::HEADER_LEN;
use crate::error::TrafficError;

/// Which stack carries the traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StackKind {
    /// The operating system's sockets.
    Kernel,
    /// stackscope's reference stack, in this process.
    Ref,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
    /// Link-level frames of the local experimental Ethertype 0x88B5.
    Raw,
    /// XTP associations (connection service), the XTP study's protocol:
    /// the reference stack only.
    Xtp,
}

impl Protocol {
    /// A byte stream (TCP, XTP), not datagrams.
    pub fn is_stream(self) -> bool {
        matches!(self, Protocol::Tcp | Protocol::Xtp)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Family {
    #[serde(rename = "IPv4")]
    V4,
    #[serde(rename = "IPv6")]
    V6,
}

impl Family {
    /// The unspecified address of the family: a wildcard bind, or a
    /// sender's "any".
    pub fn unspecified(self) -> std::net::IpAddr {
        match self {
            Family::V4 => std::net::Ipv4Addr::UNSPECIFIED.into(),
            Family::V6 => std::net::Ipv6Addr::UNSPECIFIED.into(),
        }
    }
}

impl fmt::Display for StackKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StackKind::Kernel => "kernel",
            StackKind::Ref => "ref",
        })
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Raw => "raw",
            Protocol::Xtp => "xtp",
        })
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        })
    }
}

/// The local experimental Ethertype raw frames use (IEEE 802, "Local
/// Experimental Ethertype 1").
pub const RAW_ETHERTYPE: u16 = 0x88B5;

/// Largest buffer (`-l`) a stream transfer accepts: 64 MiB.
pub const MAX_STREAM_LEN: usize = 64 << 20;
/// Largest UDP payload over IPv6 without jumbograms (65 535 - 8).
pub const MAX_UDP6_LEN: usize = 65_527;
/// Largest UDP payload over IPv4 (65 535 - 20 - 8).
pub const MAX_UDP4_LEN: usize = 65_507;

/// A bulk transfer: `count` buffers of `len` bytes, ttcp style.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransferSpec {
    pub protocol: Protocol,
    pub family: Family,
    /// Bytes per write (`-l`); for datagrams, the datagram size.
    #[serde(rename = "blksize")]
    pub len: usize,
    /// Writes (`-n`).
    #[serde(rename = "num")]
    pub count: u64,
    pub port: u16,
    /// Requested SO_SNDBUF and SO_RCVBUF (`-b`), if any.
    pub sockbuf: Option<usize>,
    /// TCP_NODELAY (`-D`).
    pub nodelay: bool,
    /// TCP's congestion control (`-C`) at both ends; each stack's default
    /// if `None`. The report's `target.congestion_control` is what the
    /// sender's socket read back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion: Option<Congestion>,
    /// Offered load in bits per second (UDP and raw), if paced.
    pub rate_bps: Option<u64>,
    /// Which of several concurrent transfers this is (stamped on every
    /// datagram, so raw circuits sharing an Ethertype stay apart).
    pub circuit: u8,
    /// Interval reports (`-i`).
    #[serde(serialize_with = "serialize_secs")]
    pub interval: Option<Duration>,
    /// The sender goes on past `count` until its window (first write to
    /// last acknowledged byte or last datagram handed over) lasts this
    /// long (`--time`, `--min-duration`); iperf3's `duration`.
    #[serde(rename = "duration", serialize_with = "serialize_secs")]
    pub min_duration: Option<Duration>,
    /// How long a side waits for its peer (connect, accept, first datagram)
    /// and for more data before it gives up.
    #[serde(skip)]
    pub timeout: Duration,
    /// Pin the receiver's and the sender's thread to these CPUs (a sweep's
    /// `--load-on server|client`); `None` leaves them to the scheduler.
    /// Where the pins held is in the report's `target.placement`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<crate::affinity::SideCpus>,
    /// An XTP association's options (`--xtp` only).
    #[serde(skip_serializing_if = "XtpOptions::is_default")]
    pub xtp: XtpOptions,
}

/// What an XTP association runs with, beyond its buffers (the study's
/// `thrput`/`dela` options, `002_…` §4.5, and XTP's per-association
/// modes, §2.7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct XtpOptions {
    /// Go-back-n instead of selective retransmission.
    pub go_back_n: bool,
    /// NOCHECK: the checksum covers the header only.
    pub nocheck: bool,
    /// Rate control: at most this many bits per second...
    pub rate_bps: Option<u64>,
    /// ...in bursts of at most this many bytes.
    pub burst_bytes: Option<u32>,
    /// The KRM's character-driver interface (§3.4.2) instead of the
    /// socket interface: writes lend their buffer and end once the peer's
    /// reader took it; reads post their buffer.
    pub driver: bool,
    /// Reservation mode (RES, §2.7): the receiver grants only what its
    /// reader asked for, not its whole buffer.
    pub reservation: bool,
    /// The receiver's grant beyond what its reader took (the KRM's
    /// `ralloc`), bytes; default: its receive buffer.
    pub alloc_bytes: Option<u32>,
}

impl XtpOptions {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// Checks the options against each other and what XTP can carry.
    pub fn validate(&self) -> Result<(), TrafficError> {
        let invalid = |m: String| Err(TrafficError::Invalid(m));
        match self.rate_bps {
            // The traffic specifier carries the rate in bytes per second
            // in 32 bits.
            Some(bps) if bps < 8 || bps / 8 > u64::from(u32::MAX) => invalid(format!(
                "--xtp-rate {bps} is impossible: use 8 bit/s to {} bit/s",
                u64::from(u32::MAX) * 8
            )),
            None if self.burst_bytes.is_some() => {
                invalid("--xtp-burst shapes a rate: give --xtp-rate too".into())
            }
            _ if self.burst_bytes == Some(0) => {
                invalid("--xtp-burst must be at least 1 byte".into())
            }
            _ if self
                .alloc_bytes
                .is_some_and(|a| !(1024..=1 << 30).contains(&a)) =>
            {
                invalid(format!(
                    "--xtp-alloc {} is impossible: use 1K..1G bytes",
                    self.alloc_bytes.unwrap_or_default()
                ))
            }
            _ => Ok(()),
        }
    }
}

fn serialize_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_f64(d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

impl TransferSpec {
    /// ttcp's defaults: TCP, 2048 writes of 8192 bytes to port 5001.
    pub fn new(protocol: Protocol, family: Family) -> Self {
        Self {
            protocol,
            family,
            len: 8192,
            count: 2048,
            port: 5001,
            sockbuf: None,
            nodelay: false,
            congestion: None,
            rate_bps: None,
            circuit: 0,
            interval: None,
            min_duration: None,
            timeout: Duration::from_secs(10),
            cpus: None,
            xtp: XtpOptions::default(),
        }
    }

    /// True while the sender must go on: fewer than `count` writes made,
    /// or the minimum duration not reached since its first write.
    pub fn keep_sending(&self, writes: u64, since_first_write: Duration) -> bool {
        writes < self.count || self.min_duration.is_some_and(|d| since_first_write < d)
    }

    /// Bytes the sender writes at least (more when a minimum duration
    /// extends the run).
    pub fn total_bytes(&self) -> u64 {
        self.len as u64 * self.count
    }

    /// Checks the parameters against each other and the protocol's limits.
    pub fn validate(&self) -> Result<(), TrafficError> {
        let invalid = |m: String| Err(TrafficError::Invalid(m));
        if self.count == 0 {
            return invalid("-n must be at least 1 buffer".into());
        }
        match self.protocol {
            Protocol::Tcp | Protocol::Xtp => {
                if self.len == 0 || self.len > MAX_STREAM_LEN {
                    return invalid(format!(
                        "-l {} is impossible for {}: use 1..={MAX_STREAM_LEN} bytes",
                        self.len,
                        self.protocol.to_string().to_uppercase()
                    ));
                }
                if self.rate_bps.is_some() {
                    return invalid("--rate paces datagrams: use it with -u (UDP) or raw".into());
                }
            }
            Protocol::Udp => {
                let max = match self.family {
                    Family::V4 => MAX_UDP4_LEN,
                    Family::V6 => MAX_UDP6_LEN,
                };
                if self.len < HEADER_LEN || self.len > max {
                    return invalid(format!(
                        "-l {} is impossible for UDP over {}: a datagram carries a \
                         {HEADER_LEN}-byte sequence header and at most {max} bytes",
                        self.len, self.family
                    ));
                }
            }
            Protocol::Raw => {
                if self.len < HEADER_LEN || self.len > 1500 {
                    return invalid(format!(
                        "-l {} is impossible for raw frames: use {HEADER_LEN}..=1500 bytes \
                         (one Ethernet payload)",
                        self.len
                    ));
                }
            }
        }
        if self.congestion.is_some() && self.protocol != Protocol::Tcp {
            return invalid(format!(
                "-C chooses TCP's congestion control: {} has none to choose",
                self.protocol.to_string().to_uppercase()
            ));
        }
        if self.rate_bps == Some(0) {
            return invalid("--rate must be more than 0 bits per second".into());
        }
        if let Some(b) = self.sockbuf {
            if !(1024..=1 << 30).contains(&b) {
                return invalid(format!("-b {b} is impossible: use 1K..1G bytes"));
            }
        }
        if self
            .min_duration
            .is_some_and(|d| d > Duration::from_secs(24 * 3600))
        {
            return invalid("--time is at most a day (86400 seconds)".into());
        }
        if self.interval.is_some_and(|i| i < Duration::from_millis(10)) {
            return invalid("-i must be at least 0.01 seconds".into());
        }
        if !self.xtp.is_default() && self.protocol != Protocol::Xtp {
            return invalid(format!(
                "the XTP options (--xtp-error-control, --xtp-nocheck, --xtp-rate, --xtp-burst, --xtp-interface, --xtp-reservation, --xtp-alloc) apply to XTP (--xtp), not {}",
                self.protocol
            ));
        }
        self.xtp.validate()
    }
}

/// The most exchanges one echo run may ask for: the round-trip times are
/// kept (8 bytes each), so this bounds memory at 80 MB.
pub const MAX_EXCHANGES: u64 = 10_000_000;

/// A request/response exchange (delay mode): `count` round trips of
/// `len`-byte requests echoed back whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EchoSpec {
    pub protocol: Protocol,
    pub family: Family,
    pub len: usize,
    pub count: u64,
    pub port: u16,
    /// Which of several concurrent echo series this is (0 when alone;
    /// the runner numbers them as it numbers transfers).
    pub circuit: u8,
    pub sockbuf: Option<usize>,
    /// TCP's congestion control at both ends (`-C`), as a transfer's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion: Option<Congestion>,
    /// An XTP association's options (`--xtp` only).
    #[serde(skip_serializing_if = "XtpOptions::is_default")]
    pub xtp: XtpOptions,
    /// Each exchange on a connection of its own, timed from the connect
    /// call to the answer's last byte: a transaction with its setup
    /// (Sandia's comparison: XTP's FIRST carries the request, TCP's
    /// handshake comes before it). Streams only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub connect_each: bool,
    /// How long one exchange may take before it counts as lost (UDP) or
    /// fails the run (TCP).
    #[serde(skip)]
    pub timeout: Duration,
}

impl EchoSpec {
    /// `count` exchanges of `len` bytes with the defaults of a transfer
    /// (port 5001, 10 s timeout).
    pub fn new(protocol: Protocol, family: Family, len: usize, count: u64) -> Self {
        let defaults = TransferSpec::new(protocol, family);
        Self {
            protocol,
            family,
            len,
            count,
            port: defaults.port,
            circuit: 0,
            sockbuf: None,
            congestion: None,
            xtp: XtpOptions::default(),
            connect_each: false,
            timeout: defaults.timeout,
        }
    }

    /// The same parameters as a transfer, for opening sockets.
    pub fn as_transfer(&self) -> TransferSpec {
        let mut spec = TransferSpec::new(self.protocol, self.family);
        spec.len = self.len;
        spec.count = self.count;
        spec.port = self.port;
        spec.circuit = self.circuit;
        spec.sockbuf = self.sockbuf;
        spec.congestion = self.congestion;
        spec.nodelay = true;
        spec.timeout = self.timeout;
        spec.xtp = self.xtp;
        spec
    }

    pub fn validate(&self) -> Result<(), TrafficError> {
        if self.connect_each && !self.protocol.is_stream() {
            return Err(TrafficError::Invalid(format!(
                "a connection per exchange (--connect-each) needs a stream protocol (tcp, xtp), not {}",
                self.protocol
            )));
        }
        if self.count > MAX_EXCHANGES {
            return Err(TrafficError::Invalid(format!(
                "{} exchanges is too many for one run: use at most {}",
                self.count, MAX_EXCHANGES
            )));
        }
        if !self.protocol.is_stream() && self.len < HEADER_LEN {
            return Err(TrafficError::Invalid(format!(
                "size {} is too small for {} echo: a datagram carries a {HEADER_LEN}-byte \
                 sequence header",
                self.len, self.protocol
            )));
        }
        self.as_transfer().validate()
    }
}
