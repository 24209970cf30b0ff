//! Why a topology was refused. Every error names the offending item and,
//! for a file, where in it the item is.

use core::fmt;
use std::path::PathBuf;

use crate::phy::ConfigError;

/// A place in a topology file (both 1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLocation {
    pub line: usize,
    pub column: usize,
}

impl SourceLocation {
    /// The line and column of byte `offset` of `source`.
    pub(super) fn of_offset(source: &str, offset: usize) -> Self {
        let before = source.get(..offset).unwrap_or(source);
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        let column = before[line_start..].chars().count() + 1;
        Self { line, column }
    }
}

/// Formats an optional location as a suffix: " (line 3, column 8)" or "".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct At(pub Option<SourceLocation>);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(SourceLocation { line, column }) => write!(f, " (line {line}, column {column})"),
            None => Ok(()),
        }
    }
}

/// Why a topology was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TopologyError {
    #[error("cannot read topology file {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("the topology is {size} bytes, more than the limit of {max}")]
    TooLarge { size: u64, max: u64 },
    /// Not TOML, an unknown key, a missing key, or a malformed value.
    #[error("{message}{at}")]
    Parse { message: String, at: At },
    #[error("`{name}` is not a valid {what} name: use 1 to {max} of a-z, 0-9 and '-'{at}")]
    InvalidName {
        what: &'static str,
        name: String,
        max: usize,
        at: At,
    },
    #[error("too many {what} in {owner}: {count}, the limit is {max}{at}")]
    TooMany {
        what: &'static str,
        owner: String,
        count: usize,
        max: usize,
        at: At,
    },
    #[error(
        "the seed {seed} is out of range: TOML integers are at most {}",
        i64::MAX
    )]
    SeedOutOfRange { seed: u64 },
    #[error("two nodes are named `{name}`{at}")]
    DuplicateNode { name: String, at: At },
    #[error("node `{node}` has two interfaces named `{interface}`{at}")]
    DuplicateInterface {
        node: String,
        interface: String,
        at: At,
    },
    #[error("node `{node}` has no interface{at}")]
    NoInterface { node: String, at: At },
    #[error("tunnel {node}:{tunnel}: {reason}{at}")]
    BadTunnel {
        node: String,
        tunnel: String,
        reason: String,
        at: At,
    },
    #[error("interface {node}:{interface}: {reason}{at}")]
    BadOffload {
        node: String,
        interface: String,
        reason: String,
        at: At,
    },
    #[error("interface {node}:{interface} has MTU 0{at}")]
    ZeroMtu {
        node: String,
        interface: String,
        at: At,
    },
    #[error("interface {node}:{interface} has MTU {mtu}, below IPv6's minimum link MTU of 1280 (RFC 8200 §5){at}")]
    MtuBelowIpv6Minimum {
        node: String,
        interface: String,
        mtu: usize,
        at: At,
    },
    #[error("interface {node}:{interface} has MTU {mtu}, above {max}{at}")]
    MtuTooLarge {
        node: String,
        interface: String,
        mtu: usize,
        max: usize,
        at: At,
    },
    #[error("interfaces {first} and {second} have the same MAC address {mac}{at}")]
    DuplicateMac {
        mac: String,
        first: String,
        second: String,
        at: At,
    },
    #[error("interface {node}:{interface}: {address} {reason}{at}")]
    BadAddress {
        node: String,
        interface: String,
        address: String,
        reason: &'static str,
        at: At,
    },
    #[error("interfaces {first} and {second} have the same address {address}{at}")]
    DuplicateAddress {
        address: String,
        first: String,
        second: String,
        at: At,
    },
    #[error("host `{node}` advertises prefixes on {interface}: only routers send router advertisements{at}")]
    AdvertiseOnHost {
        node: String,
        interface: String,
        at: At,
    },
    #[error("{node}:{interface} advertises {prefix}, which {reason}{at}")]
    BadPrefix {
        node: String,
        interface: String,
        prefix: String,
        reason: &'static str,
        at: At,
    },
    #[error("{node}:{interface} advertises {prefix} with a preferred lifetime of {preferred} s above its valid lifetime of {valid} s (RFC 4862 §5.5.3 c){at}")]
    PreferredAboveValid {
        node: String,
        interface: String,
        prefix: String,
        preferred: u32,
        valid: u32,
        at: At,
    },
    #[error("node `{node}`: the route to {to} {reason}{at}")]
    BadRoute {
        node: String,
        to: String,
        reason: String,
        at: At,
    },
    #[error("node `{node}` has two routes to {to}{at}")]
    DuplicateRoute { node: String, to: String, at: At },
    #[error("a wire names node `{node}`, which does not exist{at}")]
    UnknownNode { node: String, at: At },
    #[error("a wire names interface {node}:{interface}, which does not exist{at}")]
    UnknownInterface {
        node: String,
        interface: String,
        at: At,
    },
    #[error("a wire joins interface {endpoint} to itself{at}")]
    WireToItself { endpoint: String, at: At },
    #[error("interface {endpoint} is on two wires{at}")]
    InterfaceOnTwoWires { endpoint: String, at: At },
    #[error(
        "the wire {a} — {b} joins MTU {a_mtu} to MTU {b_mtu}: the ends of a link must agree{at}"
    )]
    MtuMismatch {
        a: String,
        b: String,
        a_mtu: usize,
        b_mtu: usize,
        at: At,
    },
    #[error("the wire {a} — {b}: {source}{at}")]
    WireConfig {
        a: String,
        b: String,
        source: ConfigError,
        at: At,
    },
    #[error("hub `{hub}` has {ports} ports: give 2 to {max}{at}")]
    HubPorts {
        hub: String,
        ports: usize,
        max: usize,
        at: At,
    },
    #[error("a wire names port `{port}` of hub `{hub}`, whose ports are 1 to {ports}{at}")]
    UnknownHubPort {
        hub: String,
        port: String,
        ports: usize,
        at: At,
    },
    #[error("hub port {endpoint} is on two wires: join each port to one interface{at}")]
    HubPortOnTwoWires { endpoint: String, at: At },
    #[error("the wire {a} — {b} joins two hubs: hubs join interfaces only (cascades, and the loops they allow, are not supported){at}")]
    HubToHub { a: String, b: String, at: At },
    #[error("hub `{hub}` has no wires{at}")]
    HubWithoutWires { hub: String, at: At },
    #[error("hub `{hub}` joins {first} (MTU {first_mtu}) and {second} (MTU {second_mtu}): the interfaces on a segment must agree{at}")]
    HubMtuMismatch {
        hub: String,
        first: String,
        first_mtu: usize,
        second: String,
        second_mtu: usize,
        at: At,
    },
    #[error("the wires queue {total} frames in all, more than the limit of {max}")]
    TooManyQueuedFrames { total: usize, max: usize },
}

impl TopologyError {
    /// The error as one sentence about the file at `path`, naming it once:
    /// a read error names it already, the others get it in front.
    pub fn in_file(&self, path: &std::path::Path) -> String {
        match self {
            TopologyError::Io { .. } => self.to_string(),
            other => format!("topology file {}: {other}", path.display()),
        }
    }

    /// Where in the file the offending item is, when known.
    pub fn location(&self) -> Option<SourceLocation> {
        use TopologyError::*;
        match self {
            Parse { at, .. }
            | InvalidName { at, .. }
            | TooMany { at, .. }
            | DuplicateNode { at, .. }
            | DuplicateInterface { at, .. }
            | NoInterface { at, .. }
            | BadTunnel { at, .. }
            | BadOffload { at, .. }
            | ZeroMtu { at, .. }
            | MtuBelowIpv6Minimum { at, .. }
            | MtuTooLarge { at, .. }
            | DuplicateMac { at, .. }
            | BadAddress { at, .. }
            | DuplicateAddress { at, .. }
            | AdvertiseOnHost { at, .. }
            | BadPrefix { at, .. }
            | PreferredAboveValid { at, .. }
            | BadRoute { at, .. }
            | DuplicateRoute { at, .. }
            | UnknownNode { at, .. }
            | UnknownInterface { at, .. }
            | WireToItself { at, .. }
            | InterfaceOnTwoWires { at, .. }
            | MtuMismatch { at, .. }
            | WireConfig { at, .. }
            | HubPorts { at, .. }
            | UnknownHubPort { at, .. }
            | HubPortOnTwoWires { at, .. }
            | HubToHub { at, .. }
            | HubWithoutWires { at, .. }
            | HubMtuMismatch { at, .. } => at.0,
            Io { .. } | TooLarge { .. } | SeedOutOfRange { .. } | TooManyQueuedFrames { .. } => {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let source = "a = 1\nbé = 2\n";
        assert_eq!(
            SourceLocation::of_offset(source, 0),
            SourceLocation { line: 1, column: 1 }
        );
        assert_eq!(
            SourceLocation::of_offset(source, 6),
            SourceLocation { line: 2, column: 1 }
        );
        assert_eq!(
            SourceLocation::of_offset(source, 9),
            SourceLocation { line: 2, column: 3 }
        );
        // Out of range or inside a character: still no panic.
        let _ = SourceLocation::of_offset(source, 8);
        let _ = SourceLocation::of_offset(source, 999);
    }
}
