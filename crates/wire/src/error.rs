//! The one error type of the wire crate: small, `Copy`, and specific enough to
//! count drops by reason.

/// Why a buffer could not be read or written as a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer is shorter than the header or than a length field claims.
    #[error("truncated: buffer shorter than the header or its length field")]
    Truncated,
    /// A field holds a value the format forbids (a lying length, a bad version).
    #[error("malformed: {0}")]
    Malformed(&'static str),
    /// Well-formed, but a variant this crate does not model.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// The checksum does not verify.
    #[error("bad checksum")]
    Checksum,
}

/// Result with the wire crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;
