//! The schema of a topology file, as serde reads and writes it. Names are
//! kept with their place in the file so that validation errors can say
//! where they are; everything else is checked by `validate`.

use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::addr::{derived_mac, FileMac, IpCidr, Ipv4Cidr, Ipv6Cidr};
use super::units::{FileDuration, FileRate};
use super::{
    Endpoint, Hub, InterfaceSpec, Node, NodeKind, PrefixAdvertisement, Route, Topology, Wire,
    WireParams, DEFAULT_MTU,
};
use crate::iface::tunnel::{MtuMode, TunnelConfig, TunnelKind};

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TopologyFile {
    #[serde(default)]
    pub seed: u64,
    #[serde(default, rename = "host", skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<NodeFile>,
    #[serde(default, rename = "router", skip_serializing_if = "Vec::is_empty")]
    pub routers: Vec<NodeFile>,
    #[serde(default, rename = "hub", skip_serializing_if = "Vec::is_empty")]
    pub hubs: Vec<HubFile>,
    #[serde(default, rename = "wire", skip_serializing_if = "Vec::is_empty")]
    pub wires: Vec<WireFile>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HubFile {
    pub name: Spanned<String>,
    pub ports: usize,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NodeFile {
    pub name: Spanned<String>,
    #[serde(default, rename = "interface")]
    pub interfaces: Vec<InterfaceFile>,
    #[serde(default, rename = "route", skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<crate::iface::host::Fragmentation>,
    #[serde(default, rename = "tunnel", skip_serializing_if = "Vec::is_empty")]
    pub tunnels: Vec<TunnelFile>,
}

/// `[[host.tunnel]]`: a tunnel over the node's own IPv4 (`iface::tunnel`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TunnelFile {
    pub name: Spanned<String>,
    /// The node's IPv4 address the tunnel uses.
    pub local: Ipv4Addr,
    /// `"configured"` (the default), `"automatic"` (deprecated, RFC 4291
    /// §2.5.5.1) or `"6over4"` (RFC 2529).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<TunnelKindFile>,
    /// A configured tunnel's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<Ipv4Addr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu_mode: Option<MtuModeFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u8>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ipv6: Vec<Ipv6Cidr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_route: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accept_sources: Vec<Ipv6Cidr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dad_transmits: Option<u32>,
    /// Prefixes a router advertises on the tunnel.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advertise: Vec<AdvertiseFile>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum TunnelKindFile {
    Configured,
    Automatic,
    #[serde(rename = "6over4")]
    SixOverFour,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum MtuModeFile {
    Static,
    Dynamic,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InterfaceFile {
    pub name: Spanned<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<FileMac>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv4: Option<Ipv4Cidr>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ipv6: Vec<Ipv6Cidr>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advertise: Vec<AdvertiseFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dad_transmits: Option<u32>,
    /// `["tso", "gro"]`: `iface::offload::Offload::parse`'s names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offload: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AdvertiseFile {
    pub prefix: Spanned<Ipv6Cidr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_lifetime: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_lifetime: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_link: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autonomous: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RouteFile {
    pub to: Spanned<IpCidr>,
    pub via: IpAddr,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WireFile {
    /// `"node:interface"`.
    pub a: Spanned<String>,
    pub b: Spanned<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<FileRate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<FileDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_delay: Option<FileDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrupt: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_frames: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

/// A value with no place in any file (built in code).
fn unplaced<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

/// `Some(value)` unless it is the default, which files leave out.
fn unless_default<T: PartialEq>(value: T, default: T) -> Option<T> {
    (value != default).then_some(value)
}

impl From<&Topology> for TopologyFile {
    fn from(topology: &Topology) -> Self {
        let nodes_of = |kind| {
            topology
                .nodes()
                .iter()
                .filter(|node| node.kind == kind)
                .map(NodeFile::from)
                .collect()
        };
        Self {
            seed: topology.seed(),
            hosts: nodes_of(NodeKind::Host),
            routers: nodes_of(NodeKind::Router),
            hubs: topology
                .hubs()
                .iter()
                .map(|hub: &Hub| HubFile {
                    name: unplaced(hub.name.clone()),
                    ports: hub.ports,
                })
                .collect(),
            wires: topology.wires().iter().map(WireFile::from).collect(),
        }
    }
}

impl From<&Node> for NodeFile {
    fn from(node: &Node) -> Self {
        Self {
            name: unplaced(node.name.clone()),
            interfaces: node
                .interfaces
                .iter()
                .map(|interface| InterfaceFile::new(&node.name, interface))
                .collect(),
            routes: node
                .routes
                .iter()
                .map(|route| RouteFile {
                    to: unplaced(route.to),
                    via: route.via,
                })
                .collect(),
            fragmentation: unless_default(node.fragmentation, Default::default()),
            tunnels: node.tunnels.iter().map(TunnelFile::from).collect(),
        }
    }
}

impl From<&TunnelConfig> for TunnelFile {
    fn from(config: &TunnelConfig) -> Self {
        let (kind, remote, mtu_mode, default_ipv6) = match config.kind {
            TunnelKind::Configured { remote, mtu_mode } => (
                None,
                Some(remote),
                (mtu_mode == MtuMode::Dynamic).then_some(MtuModeFile::Dynamic),
                Vec::new(),
            ),
            TunnelKind::Automatic => (
                Some(TunnelKindFile::Automatic),
                None,
                None,
                TunnelConfig::automatic(&config.name, config.local).ipv6,
            ),
            TunnelKind::SixOverFour => (Some(TunnelKindFile::SixOverFour), None, None, Vec::new()),
        };
        let default = TunnelConfig::configured(&config.name, config.local, config.local);
        Self {
            name: unplaced(config.name.clone()),
            local: config.local,
            kind,
            remote,
            mtu_mode,
            mtu: unless_default(config.mtu, default.mtu),
            ttl: unless_default(config.ttl, default.ttl),
            ipv6: if config.ipv6 == default_ipv6 {
                Vec::new()
            } else {
                config.ipv6.clone()
            },
            default_route: unless_default(config.default_route, false),
            accept_sources: config.accept_sources.clone(),
            dad_transmits: config.dad_transmits,
            advertise: config.advertise.iter().map(AdvertiseFile::from).collect(),
        }
    }
}

impl TunnelFile {
    /// The tunnel's configuration, checked as `TunnelConfig::validate`
    /// does; the error says why not.
    pub fn config(&self) -> Result<TunnelConfig, String> {
        let name = self.name.get_ref();
        let mut config = match self.kind.unwrap_or(TunnelKindFile::Configured) {
            TunnelKindFile::Configured => {
                let remote = self
                    .remote
                    .ok_or("a configured tunnel needs its endpoint, `remote`")?;
                let mut config = TunnelConfig::configured(name, self.local, remote);
                let mtu_mode = match self.mtu_mode {
                    Some(MtuModeFile::Dynamic) => MtuMode::Dynamic,
                    Some(MtuModeFile::Static) | None => MtuMode::Static,
                };
                config.kind = TunnelKind::Configured { remote, mtu_mode };
                config
            }
            TunnelKindFile::Automatic | TunnelKindFile::SixOverFour => {
                if self.remote.is_some() || self.mtu_mode.is_some() {
                    return Err("an automatic or 6over4 tunnel finds its endpoints itself: \
                                no `remote` or `mtu_mode`"
                        .to_string());
                }
                if self.kind == Some(TunnelKindFile::Automatic) {
                    TunnelConfig::automatic(name, self.local)
                } else {
                    TunnelConfig::six_over_four(name, self.local)
                }
            }
        };
        if let Some(mtu) = self.mtu {
            config.mtu = mtu;
        }
        if let Some(ttl) = self.ttl {
            config.ttl = ttl;
        }
        if !self.ipv6.is_empty() {
            config.ipv6 = self.ipv6.clone();
        }
        config.default_route = self.default_route.unwrap_or(false);
        config.accept_sources = self.accept_sources.clone();
        config.dad_transmits = self.dad_transmits;
        config.advertise = self
            .advertise
            .iter()
            .map(AdvertiseFile::advertisement)
            .collect();
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }
}

impl InterfaceFile {
    fn new(node: &str, interface: &InterfaceSpec) -> Self {
        Self {
            name: unplaced(interface.name.clone()),
            mac: unless_default(interface.mac, derived_mac(node, &interface.name)).map(FileMac),
            mtu: unless_default(interface.mtu, DEFAULT_MTU),
            ipv4: interface.ipv4,
            ipv6: interface.ipv6.clone(),
            advertise: interface
                .advertise
                .iter()
                .map(AdvertiseFile::from)
                .collect(),
            dad_transmits: interface.dad_transmits,
            offload: interface
                .offload
                .names()
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    }
}

impl From<&PrefixAdvertisement> for AdvertiseFile {
    fn from(advertisement: &PrefixAdvertisement) -> Self {
        let default = PrefixAdvertisement::new(advertisement.prefix);
        Self {
            prefix: unplaced(advertisement.prefix),
            valid_lifetime: unless_default(advertisement.valid_lifetime, default.valid_lifetime),
            preferred_lifetime: unless_default(
                advertisement.preferred_lifetime,
                default.preferred_lifetime,
            ),
            on_link: unless_default(advertisement.on_link, default.on_link),
            autonomous: unless_default(advertisement.autonomous, default.autonomous),
        }
    }
}

impl From<&Wire> for WireFile {
    fn from(wire: &Wire) -> Self {
        let default = WireParams::default();
        let params = &wire.params;
        Self {
            a: unplaced(wire.a.to_string()),
            b: unplaced(wire.b.to_string()),
            rate: params.rate_bits_per_s.map(FileRate),
            delay: unless_default(params.delay, default.delay).map(FileDuration),
            loss: unless_default(params.loss, default.loss),
            duplicate: unless_default(params.duplicate, default.duplicate),
            reorder: unless_default(params.reorder, default.reorder),
            reorder_delay: unless_default(params.reorder_delay, default.reorder_delay)
                .map(FileDuration),
            corrupt: unless_default(params.corrupt, default.corrupt),
            queue_frames: unless_default(params.queue_frames, default.queue_frames),
            seed: params.seed,
        }
    }
}

impl WireFile {
    /// The wire's parameters, with defaults for those left out.
    pub fn params(&self) -> WireParams {
        let default = WireParams::default();
        WireParams {
            rate_bits_per_s: self.rate.map(|rate| rate.0),
            delay: self.delay.map_or(default.delay, |delay| delay.0),
            loss: self.loss.unwrap_or(default.loss),
            duplicate: self.duplicate.unwrap_or(default.duplicate),
            reorder: self.reorder.unwrap_or(default.reorder),
            reorder_delay: self.reorder_delay.map_or(default.reorder_delay, |d| d.0),
            corrupt: self.corrupt.unwrap_or(default.corrupt),
            queue_frames: self.queue_frames.unwrap_or(default.queue_frames),
            seed: self.seed,
        }
    }
}

/// Splits `"node:interface"`.
pub(super) fn parse_endpoint(text: &str) -> Option<Endpoint> {
    let (node, interface) = text.split_once(':')?;
    Some(Endpoint {
        node: node.to_owned(),
        interface: interface.to_owned(),
    })
}

impl AdvertiseFile {
    pub fn advertisement(&self) -> PrefixAdvertisement {
        let default = PrefixAdvertisement::new(*self.prefix.get_ref());
        PrefixAdvertisement {
            valid_lifetime: self.valid_lifetime.unwrap_or(default.valid_lifetime),
            preferred_lifetime: self
                .preferred_lifetime
                .unwrap_or(default.preferred_lifetime),
            on_link: self.on_link.unwrap_or(default.on_link),
            autonomous: self.autonomous.unwrap_or(default.autonomous),
            ..default
        }
    }
}

/// Keeps `Route` construction next to its file form.
impl From<&RouteFile> for Route {
    fn from(route: &RouteFile) -> Self {
        Route {
            to: *route.to.get_ref(),
            via: route.via,
        }
    }
}
