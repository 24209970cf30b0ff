//! IPv6 over the host's own IPv4: the MSR IPv6 stack's tunnel module
//! (`003_…`: "the tunnel module uses IPv4 as the link layer to send and
//! receive IPv6 packets"), one [`Interface`](crate::iface::interface::Interface)
//! per tunnel with its NTEs, ADEs and NCEs.
//!
//! A tunnel interface's IPv6 output does not reach a link: the host
//! prepends an IPv4 header (protocol 41, RFC 4213 §3.5) and sends the
//! result through its own IPv4 output, over whatever link the IPv4 route
//! names; IPv4 input hands protocol 41 back, and the decapsulated IPv6
//! packet goes on the IP input queue as if the tunnel interface had
//! received it. The pure rules live here; the host's side is
//! `iface::host::tunnel`.
//!
//! Three flavours:
//!
//! * [`configured`]: RFC 4213 §3, to one configured IPv4 endpoint, which
//!   the interface keeps as an NCE in a state that inhibits Neighbor
//!   Discovery ([`EndpointNce`]), with an optional default route through
//!   it (the paper's RLE);
//! * [`automatic`]: packets to IPv4-compatible addresses `::a.b.c.d` go to
//!   `a.b.c.d` (RFC 1933, as the paper had it; deprecated since RFC 4291
//!   §2.5.5.1, so off unless a host asks for it);
//! * [`six_over_four`]: RFC 2529, IPv4 multicast as a virtual link with
//!   Neighbor Discovery over it.
//!
//! The kernel-socket tunnel (`phy::tunnel`) stays the way to tunnel to
//! the operating system's stack.

pub mod automatic;
pub mod configured;
pub mod link;
pub mod six_over_four;

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::iface::route::InterfaceId;
use crate::topology::Ipv6Cidr;

pub use configured::MtuMode;
pub use link::HostIpv4Link;

/// Which flavour a tunnel is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelKind {
    /// RFC 4213 §3: every packet to `remote`.
    Configured { remote: Ipv4Addr, mtu_mode: MtuMode },
    /// RFC 1933 automatic tunnelling: a packet to (or through a next hop
    /// at) `::a.b.c.d` goes to `a.b.c.d`. Deprecated (RFC 4291 §2.5.5.1);
    /// here as the studied system's behaviour.
    Automatic,
    /// RFC 2529 6-over-4: neighbours found by ND over IPv4 multicast.
    SixOverFour,
}

impl TunnelKind {
    /// The name the state dump and `stackscope ipv6` print.
    pub const fn name(&self) -> &'static str {
        match self {
            TunnelKind::Configured { .. } => "configured",
            TunnelKind::Automatic => "automatic",
            TunnelKind::SixOverFour => "6over4",
        }
    }
}

/// How to build a tunnel interface on a host ([`Host::add_tunnel`](crate::iface::host::Host::add_tunnel)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelConfig {
    /// The interface's name.
    pub name: String,
    /// This end's IPv4 address: one of the host's, the source of what the
    /// tunnel sends and the destination it accepts.
    pub local: Ipv4Addr,
    pub kind: TunnelKind,
    /// The tunnel MTU for IPv6, 1280..=65515 (RFC 4213 §3.2; default
    /// 1480, an Ethernet path's 1500 less the IPv4 header).
    pub mtu: usize,
    /// TTL of the encapsulating IPv4 header (RFC 4213 §3.3; default 64).
    pub ttl: u8,
    /// IPv6 addresses on the interface (NTEs and ADEs; their prefixes
    /// on-link through the tunnel).
    pub ipv6: Vec<Ipv6Cidr>,
    /// Adds `::/0` through the tunnel, the endpoint as the default router
    /// (the paper's RLE). Configured tunnels only.
    pub default_route: bool,
    /// Ingress filter on decapsulated packets' IPv6 sources (RFC 4213
    /// §3.6's ingress filtering): when not empty, a source outside every
    /// prefix is dropped.
    pub accept_sources: Vec<Ipv6Cidr>,
    /// DupAddrDetectTransmits on the interface (default 1; 0: no DAD).
    pub dad_transmits: Option<u32>,
    /// Prefixes a router advertises on the tunnel (RFC 4861 §6.2), so
    /// hosts on a 6-over-4 link autoconfigure; routers only.
    pub advertise: Vec<crate::topology::PrefixAdvertisement>,
}

impl TunnelConfig {
    /// A configured tunnel from `local` to `remote` with the static MTU of
    /// 1480 and TTL 64.
    pub fn configured(name: &str, local: Ipv4Addr, remote: Ipv4Addr) -> Self {
        Self {
            name: name.to_string(),
            local,
            kind: TunnelKind::Configured {
                remote,
                mtu_mode: MtuMode::Static,
            },
            mtu: configured::DEFAULT_MTU,
            ttl: configured::DEFAULT_TTL,
            ipv6: Vec::new(),
            default_route: false,
            accept_sources: Vec::new(),
            dad_transmits: None,
            advertise: Vec::new(),
        }
    }

    /// The automatic tunnelling interface of `local`, with its
    /// IPv4-compatible address `::local`/96 (RFC 1933 §5.1).
    pub fn automatic(name: &str, local: Ipv4Addr) -> Self {
        Self {
            kind: TunnelKind::Automatic,
            ipv6: vec![Ipv6Cidr {
                address: automatic::compatible(local),
                prefix_len: 96,
            }],
            ..Self::configured(name, local, Ipv4Addr::UNSPECIFIED)
        }
    }

    /// The 6-over-4 interface of `local` (RFC 2529): MTU 1480 (§3), no
    /// address but its link-local one until configured or autoconfigured.
    pub fn six_over_four(name: &str, local: Ipv4Addr) -> Self {
        Self {
            kind: TunnelKind::SixOverFour,
            ..Self::configured(name, local, Ipv4Addr::UNSPECIFIED)
        }
    }

    /// Checks what a host cannot check against its own state.
    pub fn validate(&self) -> Result<(), TunnelError> {
        if !(configured::MIN_MTU..=configured::MAX_MTU).contains(&self.mtu) {
            return Err(TunnelError::Mtu(self.mtu));
        }
        if self.ttl == 0 {
            return Err(TunnelError::Ttl);
        }
        match self.kind {
            TunnelKind::Configured { remote, .. } => {
                if !automatic::is_unicast_endpoint(remote) || remote == self.local {
                    return Err(TunnelError::Remote(remote));
                }
            }
            TunnelKind::Automatic | TunnelKind::SixOverFour => {
                if self.default_route {
                    return Err(TunnelError::DefaultRouteWithoutEndpoint);
                }
            }
        }
        if !automatic::is_unicast_endpoint(self.local) {
            return Err(TunnelError::Local(self.local));
        }
        Ok(())
    }
}

/// Why a tunnel could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TunnelError {
    #[error("tunnels are added before the host's first poll")]
    HostStarted,
    #[error("tunnel MTU {0} is outside 1280..=65515 (RFC 4213 §3.2)")]
    Mtu(usize),
    #[error("tunnel TTL must be at least 1")]
    Ttl,
    #[error("tunnel endpoint {0} is not a unicast IPv4 address of another node")]
    Remote(Ipv4Addr),
    #[error("{0} is none of the host's IPv4 addresses")]
    LocalNotOurs(Ipv4Addr),
    #[error("an interface called {0} exists")]
    DuplicateName(String),
    #[error("a tunnel from {local} to {remote} exists")]
    Duplicate { local: Ipv4Addr, remote: Ipv4Addr },
    #[error("only a configured tunnel has an endpoint to route ::/0 through")]
    DefaultRouteWithoutEndpoint,
    #[error("{0} is not a unicast IPv4 address to tunnel from")]
    Local(Ipv4Addr),
    #[error("route: {0}")]
    Route(String),
    #[error("only a router advertises prefixes")]
    AdvertiseOnHost,
}

/// The state of a tunnel endpoint's NCE: the paper's "special state value
/// that inhibits Neighbor Discovery" — no solicitation, no reachability
/// timer, never stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointState {
    Permanent,
}

impl fmt::Display for EndpointState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PERMANENT (no ND)")
    }
}

/// A configured tunnel's endpoint as its interface's NCE: the IPv6
/// neighbour (its link-local address, RFC 4213 §3.7) and its link-layer
/// address, the IPv4 endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointNce {
    pub neighbor: Ipv6Addr,
    pub link_address: Ipv4Addr,
    pub state: EndpointState,
}

/// What a tunnel did, beyond its interface's frame counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TunnelCounters {
    /// IPv6 packets wrapped in IPv4 and handed to IPv4 output.
    pub encapsulated: u64,
    /// IPv6 packets taken out of IPv4 and queued for IPv6 input.
    pub decapsulated: u64,
    /// Decapsulated packets dropped by the ingress checks (§3.6).
    pub ingress_dropped: u64,
    /// ICMPv4 errors about our encapsulated packets turned into ICMPv6
    /// for the IPv6 source (§3.4), or applied to our own path MTU.
    pub icmpv4_relayed: u64,
    /// Packets too big for the IPv4 path with DF to be set (§3.2.2): the
    /// source was told the tunnel MTU instead.
    pub too_big: u64,
}

/// One tunnel of a host.
#[derive(Debug, Clone)]
pub struct Tunnel {
    pub interface: InterfaceId,
    pub config: TunnelConfig,
    /// A configured tunnel's endpoint.
    pub endpoint: Option<EndpointNce>,
    pub counters: TunnelCounters,
}

impl Tunnel {
    pub fn new(interface: InterfaceId, config: TunnelConfig) -> Self {
        let endpoint = match config.kind {
            TunnelKind::Configured { remote, .. } => Some(EndpointNce {
                neighbor: configured::link_local(remote),
                link_address: remote,
                state: EndpointState::Permanent,
            }),
            TunnelKind::Automatic | TunnelKind::SixOverFour => None,
        };
        Self {
            interface,
            config,
            endpoint,
            counters: TunnelCounters::default(),
        }
    }

    /// The IPv4 destination of a packet for the IPv6 next hop
    /// `neighbor`: a configured tunnel's endpoint whatever the neighbour
    /// (a point-to-point link: multicast too), the address inside an
    /// IPv4-compatible neighbour, or a 6-over-4 multicast group (a
    /// 6-over-4 unicast neighbour is found by ND instead).
    pub fn remote_for(&self, neighbor: Ipv6Addr) -> Result<Ipv4Addr, &'static str> {
        match self.config.kind {
            TunnelKind::Configured { remote, .. } => Ok(remote),
            TunnelKind::Automatic => {
                if neighbor.is_multicast() {
                    return Err("tunnel_automatic_multicast");
                }
                automatic::ipv4_of_compatible(neighbor).ok_or("tunnel_automatic_not_compatible")
            }
            TunnelKind::SixOverFour if neighbor.is_multicast() => {
                Ok(six_over_four::ipv4_group(neighbor))
            }
            TunnelKind::SixOverFour => Err("tunnel_6over4_unicast_without_nd"),
        }
    }

    /// Whether an IPv4 packet from `src` to `dst` carries this tunnel's
    /// traffic (RFC 4213 §3.6: only the configured endpoint's).
    pub fn accepts_outer(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if dst != self.config.local {
            return false;
        }
        match self.config.kind {
            TunnelKind::Configured { remote, .. } => src == remote,
            TunnelKind::Automatic | TunnelKind::SixOverFour => automatic::is_unicast_endpoint(src),
        }
    }

    /// Whether an IPv4 multicast packet from `src` to `group`, arrived on
    /// the IPv4 interface whose address is `arrival`, is this 6-over-4
    /// link's (RFC 2529 §6).
    pub fn accepts_multicast(
        &self,
        arrival: Option<Ipv4Addr>,
        src: Ipv4Addr,
        group: Ipv4Addr,
    ) -> bool {
        self.config.kind == TunnelKind::SixOverFour
            && arrival == Some(self.config.local)
            && six_over_four::is_mapped_group(group)
            && automatic::is_unicast_endpoint(src)
    }

    /// RFC 4213 §3.6 on a decapsulated packet from IPv6 `src` to `dst`
    /// (which arrived from IPv4 `outer`): the reason to drop it, if any.
    pub fn ingress_check(
        &self,
        outer: Ipv4Addr,
        src: Ipv6Addr,
        dst: Ipv6Addr,
    ) -> Result<(), &'static str> {
        if self.config.kind == TunnelKind::Automatic {
            automatic::check_source(outer, src)?;
        }
        // RFC 4862 §5.4.2: DAD's solicitations come from the unspecified
        // address, to a multicast group.
        if src.is_unspecified() && dst.is_multicast() {
            return Ok(());
        }
        configured::martian_source(src)?;
        if !self.config.accept_sources.is_empty()
            && !self.config.accept_sources.iter().any(|p| p.contains(src))
        {
            return Err("tunnel_ingress_filtered");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(text: &str) -> Ipv4Addr {
        text.parse().unwrap()
    }

    #[test]
    fn a_configured_tunnel_goes_to_its_endpoint_whatever_the_next_hop() {
        let tunnel = Tunnel::new(
            InterfaceId(1),
            TunnelConfig::configured("tun0", v4("192.0.2.1"), v4("198.51.100.2")),
        );
        for neighbor in ["ff02::1", "2001:db8::9", "fe80::c633:6402"] {
            assert_eq!(
                tunnel.remote_for(neighbor.parse().unwrap()),
                Ok(v4("198.51.100.2"))
            );
        }
        let nce = tunnel.endpoint.unwrap();
        assert_eq!(nce.neighbor, "fe80::c633:6402".parse::<Ipv6Addr>().unwrap());
        assert_eq!(nce.state.to_string(), "PERMANENT (no ND)");
        assert!(tunnel.accepts_outer(v4("198.51.100.2"), v4("192.0.2.1")));
        // §3.6: anyone else's protocol 41 is not this tunnel's.
        assert!(!tunnel.accepts_outer(v4("198.51.100.3"), v4("192.0.2.1")));
        assert!(!tunnel.accepts_outer(v4("198.51.100.2"), v4("192.0.2.9")));
    }

    #[test]
    fn an_automatic_tunnel_takes_the_endpoint_from_the_address() {
        let tunnel = Tunnel::new(
            InterfaceId(1),
            TunnelConfig::automatic("auto0", v4("192.0.2.1")),
        );
        assert_eq!(
            tunnel.remote_for("::198.51.100.7".parse().unwrap()),
            Ok(v4("198.51.100.7"))
        );
        assert!(tunnel.remote_for("2001:db8::1".parse().unwrap()).is_err());
        assert!(tunnel.remote_for("ff02::1".parse().unwrap()).is_err());
        assert_eq!(
            tunnel.config.ipv6[0].address,
            "::192.0.2.1".parse::<Ipv6Addr>().unwrap()
        );
        // The inner source must be the outer source's compatible address.
        assert!(tunnel
            .ingress_check(
                v4("198.51.100.7"),
                "::198.51.100.7".parse().unwrap(),
                "::192.0.2.1".parse().unwrap()
            )
            .is_ok());
        assert!(tunnel
            .ingress_check(
                v4("198.51.100.7"),
                "::198.51.100.8".parse().unwrap(),
                "::192.0.2.1".parse().unwrap()
            )
            .is_err());
    }

    #[test]
    fn the_ingress_filter_keeps_to_its_prefixes() {
        let mut config = TunnelConfig::configured("tun0", v4("192.0.2.1"), v4("198.51.100.2"));
        config.accept_sources = vec![Ipv6Cidr {
            address: "2001:db8:2::".parse().unwrap(),
            prefix_len: 48,
        }];
        let tunnel = Tunnel::new(InterfaceId(0), config);
        let outer = v4("198.51.100.2");
        let check = |src: &str, dst: &str| {
            tunnel.ingress_check(outer, src.parse().unwrap(), dst.parse().unwrap())
        };
        assert!(check("2001:db8:2::5", "2001:db8:1::1").is_ok());
        assert_eq!(
            check("2001:db8:3::5", "2001:db8:1::1"),
            Err("tunnel_ingress_filtered")
        );
        assert!(check("::1", "2001:db8:1::1").is_err());
        // DAD: the unspecified source to a solicited-node group passes,
        // to a unicast address it does not.
        assert!(check("::", "ff02::1:ff00:1").is_ok());
        assert!(check("::", "2001:db8:1::1").is_err());
    }

    #[test]
    fn bad_configurations_are_refused_with_a_reason() {
        let mut config = TunnelConfig::configured("tun0", v4("192.0.2.1"), v4("198.51.100.2"));
        assert_eq!(config.validate(), Ok(()));
        config.mtu = 1279;
        assert_eq!(config.validate(), Err(TunnelError::Mtu(1279)));
        config.mtu = 1480;
        config.kind = TunnelKind::Configured {
            remote: v4("224.0.0.1"),
            mtu_mode: MtuMode::Static,
        };
        assert!(matches!(config.validate(), Err(TunnelError::Remote(_))));
        let mut automatic = TunnelConfig::automatic("auto0", v4("192.0.2.1"));
        automatic.default_route = true;
        assert_eq!(
            automatic.validate(),
            Err(TunnelError::DefaultRouteWithoutEndpoint)
        );
        let six = TunnelConfig::six_over_four("6o4", v4("192.0.2.1"));
        assert_eq!(six.validate(), Ok(()));
        assert_eq!(six.mtu, 1480);
        let nowhere = TunnelConfig::six_over_four("6o4", v4("0.0.0.0"));
        assert!(matches!(nowhere.validate(), Err(TunnelError::Local(_))));
    }

    #[test]
    fn a_six_over_four_link_takes_its_groups_on_its_own_ipv4_interface() {
        let tunnel = Tunnel::new(
            InterfaceId(1),
            TunnelConfig::six_over_four("6o4", v4("192.0.2.1")),
        );
        assert!(tunnel.endpoint.is_none());
        assert_eq!(
            tunnel.remote_for("ff02::1".parse().unwrap()),
            Ok(v4("239.192.0.1"))
        );
        assert!(tunnel
            .remote_for("fe80::c000:202".parse().unwrap())
            .is_err());
        let src = v4("192.0.2.2");
        let group = v4("239.192.0.1");
        assert!(tunnel.accepts_multicast(Some(v4("192.0.2.1")), src, group));
        assert!(!tunnel.accepts_multicast(Some(v4("198.51.100.1")), src, group));
        assert!(!tunnel.accepts_multicast(Some(v4("192.0.2.1")), src, v4("224.0.0.1")));
    }
}
