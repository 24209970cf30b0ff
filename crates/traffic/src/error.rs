//! What can go wrong, each as one line that says what to do.

use std::io;

/// A traffic run's failure. Every message is one line naming the problem
/// and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    /// A parameter that cannot work (size, count, rate, combination).
    #[error("{0}")]
    Invalid(String),
    /// The target cannot do this (e.g. TCP on the reference stack before
    /// it has TCP).
    #[error("{0}")]
    Unsupported(String),
    /// Needs root (namespaces, AF_PACKET).
    #[error("{what} needs root (CAP_NET_ADMIN and CAP_NET_RAW): run as root or drop {flag}")]
    NeedRoot {
        what: &'static str,
        flag: &'static str,
    },
    /// A wait ran out.
    #[error("timed out after {seconds:.1} s {waiting}")]
    Timeout { seconds: f64, waiting: String },
    /// This side stopped because the other side of the run failed; the
    /// other's error is the one to report.
    #[error("stopped: the other side of the run failed")]
    PeerFailed,
    /// A system call failed; `context` says what was being done. The
    /// cause is in the message, not chained, so it prints once.
    #[error("{context}: {cause}")]
    Io { context: String, cause: io::Error },
}

impl TrafficError {
    pub fn io(context: impl Into<String>, cause: io::Error) -> Self {
        TrafficError::Io {
            context: context.into(),
            cause,
        }
    }

    pub fn timeout(after: std::time::Duration, waiting: impl Into<String>) -> Self {
        TrafficError::Timeout {
            seconds: after.as_secs_f64(),
            waiting: waiting.into(),
        }
    }
}

/// Attaches what was being done to an I/O error.
pub trait IoContext<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, TrafficError>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, TrafficError> {
        self.map_err(|e| TrafficError::io(what(), e))
    }
}
