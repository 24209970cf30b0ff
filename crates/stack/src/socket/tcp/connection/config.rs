//! A connection's settings.

use std::time::Duration;

use super::super::congestion::CongestionConfig;
use super::super::rtt::RttConfig;

/// A connection's settings.
#[derive(Debug, Clone, Copy)]
pub struct TcpConfig {
    /// Bytes the send queue holds (SO_SNDBUF).
    pub send_buffer: usize,
    /// Bytes the receive buffer holds (SO_RCVBUF); bounds the window.
    pub recv_buffer: usize,
    pub sack: bool,
    pub timestamps: bool,
    /// TCP_NODELAY: send small segments while data is in flight (no
    /// Nagle, RFC 9293 §3.7.4).
    pub nodelay: bool,
    /// The longest an ACK is delayed (RFC 9293 §3.8.6.3: < 0.5 s).
    pub delayed_ack: Duration,
    /// How long TIME-WAIT lasts: 2·MSL (RFC 9293 §3.4.2).
    pub time_wait: Duration,
    /// Retransmissions of one segment before the connection is dropped
    /// (RFC 9293 §3.8.3, R2).
    pub max_retries: u32,
    /// Keep-alive probing (SO_KEEPALIVE), off by default (RFC 9293
    /// §3.8.4: it MUST default to off).
    pub keepalive: Option<Keepalive>,
    pub rtt: RttConfig,
    pub congestion: CongestionConfig,
}

/// When an idle connection is probed (RFC 1122 §4.2.3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Silence before the first probe (RFC 9293 §3.8.4: no less than two
    /// hours by default; settable).
    pub idle: Duration,
    /// Between unanswered probes.
    pub interval: Duration,
    /// Unanswered probes before the connection is dropped.
    pub count: u32,
}

impl Default for Keepalive {
    fn default() -> Self {
        Self {
            idle: Duration::from_secs(2 * 3600),
            interval: Duration::from_secs(75),
            count: 9,
        }
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            sack: true,
            timestamps: true,
            nodelay: false,
            delayed_ack: Duration::from_millis(40),
            time_wait: Duration::from_secs(60),
            max_retries: 15,
            keepalive: None,
            rtt: RttConfig::default(),
            congestion: CongestionConfig::default(),
        }
    }
}
