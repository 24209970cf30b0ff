//! The XTP association options `ttcp` and `sweep` share: the XTP study's
//! `thrput`/`dela` switches (`002_…` §4.5: checksum off, the interface)
//! and XTP's per-association modes (§2.7: error control, rate and burst,
//! reservation, alloc).

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use traffic::spec::XtpOptions;
use traffic::units;

/// XTP's error control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ErrorControlArg {
    /// The receiver names what it holds beyond the gap (ECNTL spans); the
    /// sender resends only what is missing.
    Selective,
    /// The receiver drops what arrives out of order; the sender resends
    /// everything from the gap on.
    GoBackN,
}

/// The application interface of the study's KRM (§3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InterfaceArg {
    /// Socket calls: a write copies into the send buffer and returns; a
    /// read copies out of the receive buffer.
    Socket,
    /// The character driver: a write lends its buffer (copied under
    /// 256 B) and returns once the peer's reader took it; a read posts
    /// its buffer, filled straight from arriving packets.
    Driver,
}

/// Options of the XTP associations a run opens (`--xtp` / `--proto xtp`).
#[derive(Debug, Clone, Args)]
pub struct XtpArgs {
    /// XTP error control: selective retransmission or go-back-n.
    #[arg(long = "xtp-error-control", value_enum, default_value_t = ErrorControlArg::Selective)]
    xtp_error_control: ErrorControlArg,
    /// XTP NOCHECK: the checksum covers the header only (the study's
    /// "checksum off").
    #[arg(long = "xtp-nocheck")]
    xtp_nocheck: bool,
    /// XTP rate control: at most this many bits per second each way
    /// (e.g. 10M; the peer is asked to respect it too).
    #[arg(long = "xtp-rate", value_name = "RATE")]
    xtp_rate: Option<String>,
    /// XTP burst under --xtp-rate, bytes (e.g. 16K; default 16 KiB).
    #[arg(long = "xtp-burst", value_name = "BYTES")]
    xtp_burst: Option<String>,
    /// XTP application interface: socket, or the KRM's character driver
    /// (the study's Tables 1 and 4 compare the two).
    #[arg(long = "xtp-interface", value_enum, default_value_t = InterfaceArg::Socket)]
    xtp_interface: InterfaceArg,
    /// XTP reservation mode: the receiver grants only what its reader
    /// asked for (RES).
    #[arg(long = "xtp-reservation")]
    xtp_reservation: bool,
    /// XTP alloc: what the receiver grants beyond what its reader took,
    /// bytes (the KRM's ralloc; default: the receive buffer, -b).
    #[arg(long = "xtp-alloc", value_name = "BYTES")]
    xtp_alloc: Option<String>,
}

impl XtpArgs {
    /// The options as given, checked.
    pub fn options(&self) -> Result<XtpOptions> {
        let rate_bps = self
            .xtp_rate
            .as_deref()
            .map(units::parse_rate)
            .transpose()
            .map_err(anyhow::Error::msg)?;
        let burst_bytes = bytes_u32("--xtp-burst", self.xtp_burst.as_deref())?;
        let alloc_bytes = bytes_u32("--xtp-alloc", self.xtp_alloc.as_deref())?;
        let options = XtpOptions {
            go_back_n: self.xtp_error_control == ErrorControlArg::GoBackN,
            nocheck: self.xtp_nocheck,
            rate_bps,
            burst_bytes,
            driver: self.xtp_interface == InterfaceArg::Driver,
            reservation: self.xtp_reservation,
            alloc_bytes,
        };
        options.validate()?;
        Ok(options)
    }
}

/// A byte count that XTP carries in 32 bits.
fn bytes_u32(flag: &str, text: Option<&str>) -> Result<Option<u32>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let bytes = units::parse_size(text).map_err(anyhow::Error::msg)?;
    match u32::try_from(bytes) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(_) => bail!("{flag} {text} is impossible: use at most 4G bytes"),
    }
}
