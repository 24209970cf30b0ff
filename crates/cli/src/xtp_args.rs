//! The XTP association options `ttcp` and `sweep` share: the XTP study's
//! `thrput`/`dela` switches (`002_…` §4.5: checksum off) and XTP's
//! per-association modes (§2.7: error control, rate and burst).

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
        let burst_bytes = match self.xtp_burst.as_deref() {
            None => None,
            Some(text) => {
                let bytes = units::parse_size(text).map_err(anyhow::Error::msg)?;
                match u32::try_from(bytes) {
                    Ok(bytes) => Some(bytes),
                    Err(_) => bail!("--xtp-burst {text} is impossible: use at most 4G bytes"),
                }
            }
        };
        let options = XtpOptions {
            go_back_n: self.xtp_error_control == ErrorControlArg::GoBackN,
            nocheck: self.xtp_nocheck,
            rate_bps,
            burst_bytes,
        };
        options.validate()?;
        Ok(options)
    }
}
