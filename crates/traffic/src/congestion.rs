//! The TCP congestion control a run asks for by name (`-C`, as iperf3's
//! `-C ALGO`), so that a comparison of two stacks compares one algorithm:
//! the kernel sets the name on its sockets (`TCP_CONGESTION`), the
//! reference stack maps it onto its own algorithms. Without a name each
//! stack runs its default (the kernel: `net.ipv4.tcp_congestion_control`;
//! the reference stack: CUBIC).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::TrafficError;
use crate::spec::StackKind;

/// Longest name Linux takes: `TCP_CA_NAME_MAX` (16) less its NUL.
/// `setsockopt(TCP_CONGESTION)` silently cuts a longer name to this
/// (`do_tcp_setsockopt`), so one is refused here instead.
pub const MAX_NAME: usize = 15;

/// A congestion control algorithm's name, as Linux spells them (`cubic`,
/// `reno`, `bbr`): checked to be one the kernel could hold, not that
/// any stack has it ([`check`] asks the stacks). Fixed-size, so the
/// socket options that carry it stay `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Congestion {
    name: [u8; MAX_NAME],
    len: u8,
}

impl Congestion {
    /// `name` if it can be an algorithm's name: 1 to 15 ASCII letters,
    /// digits, `_` or `-` (a kernel module's name is `tcp_NAME`).
    pub fn parse(name: &str) -> Result<Self, TrafficError> {
        let well_formed = (1..=MAX_NAME).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !well_formed {
            return Err(TrafficError::Invalid(format!(
                "`{name}` is not a congestion control's name: give 1 to {MAX_NAME} \
                 letters, digits, `_` or `-`, e.g. cubic or reno"
            )));
        }
        let mut bytes = [0; MAX_NAME];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        Ok(Self {
            name: bytes,
            len: name.len() as u8,
        })
    }

    pub fn name(&self) -> &str {
        // Only ASCII was copied in.
        std::str::from_utf8(&self.name[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl FromStr for Congestion {
    type Err = TrafficError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::parse(name)
    }
}

impl fmt::Display for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for Congestion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Congestion({:?})", self.name())
    }
}

impl Serialize for Congestion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Checks that `stack` can run `congestion`, before a run starts (the
/// sockets check again as they open): the reference stack must have
/// the algorithm, the kernel must accept the name on a TCP socket.
pub fn check(congestion: Congestion, stack: StackKind) -> Result<(), TrafficError> {
    match stack {
        StackKind::Kernel => crate::kernel::congestion::check(congestion),
        StackKind::Ref => crate::reference::net::algorithm(congestion).map(drop),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_linux_could_hold_are_taken_as_given() {
        for name in [
            "cubic",
            "reno",
            "bbr",
            "htcp",
            "dctcp",
            "tcp_x-1",
            "a23456789012345",
        ] {
            let c = Congestion::parse(name).unwrap();
            assert_eq!(c.name(), name);
            assert_eq!(c.to_string(), name);
            assert_eq!(serde_json::to_value(c).unwrap(), name);
        }
    }

    #[test]
    fn names_linux_could_not_hold_are_refused() {
        // Empty, 16 bytes (the kernel would cut it to 15), a space, a
        // slash, a NUL, non-ASCII.
        for name in ["", "a234567890123456", "cu bic", "../x", "re\0no", "cübic"] {
            let e = Congestion::parse(name).unwrap_err().to_string();
            assert!(
                e.contains("not a congestion control's name"),
                "{name:?}: {e}"
            );
        }
    }
}
