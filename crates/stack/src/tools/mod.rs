//! Tools that run on a simulated network: `ping`, `traceroute` and the
//! `ipv6` state dump. They drive a [`Simulator`] like a user at a host's
//! console would: through sockets, on the virtual clock.

mod ping;
mod traceroute;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

pub use ping::{ping, PingOptions, PingReport};
pub use traceroute::{traceroute, Hop, TracerouteOptions, TracerouteReport};

use crate::runner::Simulator;

/// Which IP version a tool uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    /// IPv4 for an IPv4 address, else IPv6.
    #[default]
    Any,
    V4,
    V6,
}

/// Why a tool could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("no host named {0:?} in the topology")]
    UnknownHost(String),
    #[error("{0:?} is neither a host of the topology nor an IP address")]
    UnknownDestination(String),
    #[error("{host} has no {family} address after {waited:?} of simulated time")]
    NoAddress {
        host: String,
        family: &'static str,
        waited: Duration,
    },
    #[error("{0} is an IPv{1} address but -{2} was given")]
    FamilyMismatch(IpAddr, u8, u8),
    #[error("the socket refused to send: {0}")]
    Send(String),
}

/// How long a tool waits for addresses to configure (SLAAC takes a Router
/// Advertisement and two DAD rounds: a few seconds of simulated time).
pub const ADDRESS_WAIT: Duration = Duration::from_secs(30);

/// An address of `host` of `family` (V6: a global one), if it has one yet.
fn address_of(sim: &Simulator, host: &str, family: Family) -> Option<IpAddr> {
    let host = sim.host(host)?;
    match family {
        Family::V4 => host.ipv4_addresses().first().copied().map(IpAddr::V4),
        Family::V6 | Family::Any => host
            .global_ipv6_addresses()
            .first()
            .copied()
            .map(IpAddr::V6),
    }
}

fn family_name(family: Family) -> &'static str {
    match family {
        Family::V4 => "IPv4",
        Family::V6 | Family::Any => "global IPv6",
    }
}

/// Runs the network until `host` has an address of `family`.
fn wait_for_address(sim: &mut Simulator, host: &str, family: Family) -> Result<IpAddr, ToolError> {
    if sim.host(host).is_none() {
        return Err(ToolError::UnknownHost(host.to_string()));
    }
    sim.run_until_with(ADDRESS_WAIT, |sim| address_of(sim, host, family).is_some());
    address_of(sim, host, family).ok_or_else(|| ToolError::NoAddress {
        host: host.to_string(),
        family: family_name(family),
        waited: ADDRESS_WAIT,
    })
}

/// Resolves `dest` (a host name of the topology or an address) and makes
/// sure `from` has a source address of the same family.
pub fn resolve(
    sim: &mut Simulator,
    from: &str,
    dest: &str,
    family: Family,
) -> Result<IpAddr, ToolError> {
    let target = match dest.parse::<IpAddr>() {
        Ok(addr) => {
            match (addr, family) {
                (IpAddr::V4(_), Family::V6) => return Err(ToolError::FamilyMismatch(addr, 4, 6)),
                (IpAddr::V6(_), Family::V4) => return Err(ToolError::FamilyMismatch(addr, 6, 4)),
                _ => {}
            }
            addr
        }
        Err(_) => {
            if sim.host(dest).is_none() {
                return Err(ToolError::UnknownDestination(dest.to_string()));
            }
            wait_for_address(sim, dest, family)?
        }
    };
    let source_family = if target.is_ipv4() {
        Family::V4
    } else {
        Family::V6
    };
    wait_for_address(sim, from, source_family)?;
    Ok(target)
}

/// An unspecified address of `addr`'s family.
fn unspecified_like(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}
