//! From a file's schema to a [`Topology`], refusing anything meaningless.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv6Addr};

use toml::Spanned;

use super::addr::{derived_mac, same_family, IpCidr};
use super::error::{At, SourceLocation, TopologyError};
use super::file::{parse_endpoint, HubFile, InterfaceFile, NodeFile, TopologyFile, WireFile};
use super::*;

/// Finds the place of spanned items in the source, if there is one.
struct Locator<'a> {
    source: Option<&'a str>,
}

impl Locator<'_> {
    fn at<T>(&self, item: &Spanned<T>) -> At {
        let span = item.span();
        match self.source {
            Some(source) if !span.is_empty() => {
                At(Some(SourceLocation::of_offset(source, span.start)))
            }
            _ => At(None),
        }
    }
}

/// What must be unique across the whole topology.
#[derive(Default)]
struct Registry {
    node_names: HashSet<String>,
    macs: HashMap<EthernetAddress, String>,
    addresses: HashMap<IpAddr, String>,
}

pub(super) fn validate(
    file: TopologyFile,
    source: Option<&str>,
) -> Result<Topology, TopologyError> {
    let locator = Locator { source };
    check_seed(file.seed)?;
    let node_count = file.hosts.len() + file.routers.len() + file.hubs.len();
    if node_count > MAX_NODES {
        return Err(TopologyError::TooMany {
            what: "nodes",
            owner: "the topology".to_owned(),
            count: node_count,
            max: MAX_NODES,
            at: At(None),
        });
    }
    let mut registry = Registry::default();
    let kinds = file.hosts.iter().map(|node| (node, NodeKind::Host));
    let kinds = kinds.chain(file.routers.iter().map(|node| (node, NodeKind::Router)));
    let nodes = kinds
        .map(|(node, kind)| node_from_file(node, kind, &mut registry, &locator))
        .collect::<Result<Vec<_>, _>>()?;
    let hubs = file
        .hubs
        .iter()
        .map(|hub| hub_from_file(hub, &mut registry, &locator))
        .collect::<Result<Vec<_>, _>>()?;
    let wires = wires_from_file(&file.wires, &nodes, &hubs, &locator)?;
    check_hubs_wired(&file.hubs, &hubs, &wires, &locator)?;
    Ok(Topology {
        seed: file.seed,
        nodes,
        hubs,
        wires,
    })
}

fn check_seed(seed: u64) -> Result<(), TopologyError> {
    if seed > i64::MAX as u64 {
        return Err(TopologyError::SeedOutOfRange { seed });
    }
    Ok(())
}

fn check_name(
    what: &'static str,
    name: &Spanned<String>,
    max: usize,
    locator: &Locator,
) -> Result<(), TopologyError> {
    let text = name.get_ref();
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    if (1..=max).contains(&text.len()) && text.bytes().all(allowed) {
        return Ok(());
    }
    Err(TopologyError::InvalidName {
        what,
        name: text.chars().take(64).collect(),
        max,
        at: locator.at(name),
    })
}

fn too_many(
    what: &'static str,
    owner: String,
    count: usize,
    max: usize,
    at: At,
) -> Result<(), TopologyError> {
    if count > max {
        return Err(TopologyError::TooMany {
            what,
            owner,
            count,
            max,
            at,
        });
    }
    Ok(())
}

fn node_from_file(
    node: &NodeFile,
    kind: NodeKind,
    registry: &mut Registry,
    locator: &Locator,
) -> Result<Node, TopologyError> {
    check_name("node", &node.name, MAX_NODE_NAME_LEN, locator)?;
    let name = node.name.get_ref().clone();
    let at = locator.at(&node.name);
    if !registry.node_names.insert(name.clone()) {
        return Err(TopologyError::DuplicateNode { name, at });
    }
    if node.interfaces.is_empty() {
        return Err(TopologyError::NoInterface { node: name, at });
    }
    let owner = format!("node `{name}`");
    too_many(
        "interfaces",
        owner.clone(),
        node.interfaces.len(),
        MAX_INTERFACES_PER_NODE,
        at,
    )?;
    too_many("routes", owner, node.routes.len(), MAX_ROUTES_PER_NODE, at)?;
    let mut interface_names = HashSet::new();
    let mut interfaces = Vec::with_capacity(node.interfaces.len());
    for interface in &node.interfaces {
        // Before the interface's own checks: a duplicate would also
        // duplicate its derived MAC.
        if !interface_names.insert(interface.name.get_ref()) {
            return Err(TopologyError::DuplicateInterface {
                node: name,
                interface: interface.name.get_ref().chars().take(64).collect(),
                at: locator.at(&interface.name),
            });
        }
        interfaces.push(interface_from_file(
            &name, kind, interface, registry, locator,
        )?);
    }
    let mut destinations = HashSet::new();
    let mut routes = Vec::with_capacity(node.routes.len());
    for route_file in &node.routes {
        let route = Route::from(route_file);
        let at = locator.at(&route_file.to);
        check_route(&name, &interfaces, &route, at)?;
        if !destinations.insert(route.to) {
            return Err(TopologyError::DuplicateRoute {
                node: name,
                to: route.to.to_string(),
                at,
            });
        }
        routes.push(route);
    }
    too_many(
        "tunnels",
        format!("node `{name}`"),
        node.tunnels.len(),
        MAX_INTERFACES_PER_NODE,
        at,
    )?;
    let mut tunnels = Vec::with_capacity(node.tunnels.len());
    for tunnel in &node.tunnels {
        check_name("interface", &tunnel.name, MAX_INTERFACE_NAME_LEN, locator)?;
        let at = locator.at(&tunnel.name);
        let bad = |reason: String| TopologyError::BadTunnel {
            node: name.clone(),
            tunnel: tunnel.name.get_ref().clone(),
            reason,
            at,
        };
        if !interface_names.insert(tunnel.name.get_ref()) {
            return Err(bad("an interface has this name".to_string()));
        }
        let config = tunnel.config().map_err(&bad)?;
        if !config.advertise.is_empty() && kind != NodeKind::Router {
            return Err(bad("only a router advertises prefixes".to_string()));
        }
        let ours = interfaces
            .iter()
            .any(|i| i.ipv4.is_some_and(|cidr| cidr.address == config.local));
        if !ours {
            return Err(bad(format!(
                "{} is none of the node's IPv4 addresses",
                config.local
            )));
        }
        tunnels.push(config);
    }
    Ok(Node {
        name,
        kind,
        interfaces,
        routes,
        fragmentation: node.fragmentation.unwrap_or_default(),
        tunnels,
    })
}

fn hub_from_file(
    hub: &HubFile,
    registry: &mut Registry,
    locator: &Locator,
) -> Result<Hub, TopologyError> {
    // Hubs share the nodes' namespace: a wire endpoint names either.
    check_name("hub", &hub.name, MAX_NODE_NAME_LEN, locator)?;
    let name = hub.name.get_ref().clone();
    let at = locator.at(&hub.name);
    if !registry.node_names.insert(name.clone()) {
        return Err(TopologyError::DuplicateNode { name, at });
    }
    if !(2..=MAX_HUB_PORTS).contains(&hub.ports) {
        return Err(TopologyError::HubPorts {
            hub: name,
            ports: hub.ports,
            max: MAX_HUB_PORTS,
            at,
        });
    }
    Ok(Hub {
        name,
        ports: hub.ports,
    })
}

/// A hub with no wire repeats nothing: most likely a wire was forgotten.
fn check_hubs_wired(
    files: &[HubFile],
    hubs: &[Hub],
    wires: &[Wire],
    locator: &Locator,
) -> Result<(), TopologyError> {
    for (file, hub) in files.iter().zip(hubs) {
        let wired = wires
            .iter()
            .any(|wire| wire.a.node == hub.name || wire.b.node == hub.name);
        if !wired {
            return Err(TopologyError::HubWithoutWires {
                hub: hub.name.clone(),
                at: locator.at(&file.name),
            });
        }
    }
    Ok(())
}

fn interface_from_file(
    node: &str,
    kind: NodeKind,
    interface: &InterfaceFile,
    registry: &mut Registry,
    locator: &Locator,
) -> Result<InterfaceSpec, TopologyError> {
    check_name(
        "interface",
        &interface.name,
        MAX_INTERFACE_NAME_LEN,
        locator,
    )?;
    let name = interface.name.get_ref().clone();
    let at = locator.at(&interface.name);
    let endpoint = format!("{node}:{name}");
    let mtu = interface.mtu.unwrap_or(DEFAULT_MTU);
    check_mtu(node, &name, mtu, at)?;

    let mac = interface
        .mac
        .map_or_else(|| derived_mac(node, &name), |mac| mac.0);
    if let Some(first) = registry.macs.insert(mac, endpoint.clone()) {
        return Err(TopologyError::DuplicateMac {
            mac: mac.to_string(),
            first,
            second: endpoint,
            at,
        });
    }

    let bad_address = |address: String, reason| TopologyError::BadAddress {
        node: node.to_owned(),
        interface: name.clone(),
        address,
        reason,
        at,
    };
    if let Some(cidr) = interface.ipv4 {
        let address = cidr.address;
        let reason = if address.is_unspecified()
            || address.is_loopback()
            || address.is_multicast()
            || address.is_broadcast()
        {
            Some("is not a unicast address")
        } else if cidr.prefix_len == 0 {
            Some("has no subnet (prefix length 0)")
        } else if cidr.prefix_len <= 30
            && (address == cidr.network() || address == cidr.broadcast())
        {
            Some("is its subnet's network or broadcast address")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(bad_address(cidr.to_string(), reason));
        }
    }
    too_many(
        "IPv6 addresses",
        endpoint.clone(),
        interface.ipv6.len(),
        MAX_IPV6_ADDRESSES_PER_INTERFACE,
        at,
    )?;
    for cidr in &interface.ipv6 {
        let address = cidr.address;
        if address.is_unspecified() || address.is_loopback() || address.is_multicast() {
            return Err(bad_address(cidr.to_string(), "is not a unicast address"));
        }
        if cidr.prefix_len == 0 {
            return Err(bad_address(
                cidr.to_string(),
                "has no subnet (prefix length 0)",
            ));
        }
    }
    let addresses = interface
        .ipv4
        .map(|cidr| (IpAddr::V4(cidr.address), cidr.to_string()));
    let addresses = addresses.into_iter().chain(
        interface
            .ipv6
            .iter()
            .map(|cidr| (IpAddr::V6(cidr.address), cidr.to_string())),
    );
    for (address, text) in addresses {
        if let Some(first) = registry.addresses.insert(address, endpoint.clone()) {
            return Err(TopologyError::DuplicateAddress {
                address: text,
                first,
                second: endpoint,
                at,
            });
        }
    }

    if kind == NodeKind::Host && !interface.advertise.is_empty() {
        return Err(TopologyError::AdvertiseOnHost {
            node: node.to_owned(),
            interface: name,
            at,
        });
    }
    too_many(
        "advertised prefixes",
        endpoint,
        interface.advertise.len(),
        MAX_ADVERTISED_PREFIXES,
        at,
    )?;
    let mut advertise: Vec<PrefixAdvertisement> = Vec::with_capacity(interface.advertise.len());
    for advertise_file in &interface.advertise {
        let advertisement = advertise_file.advertisement();
        let at = locator.at(&advertise_file.prefix);
        let prefix = advertisement.prefix;
        let bad_prefix = |reason| TopologyError::BadPrefix {
            node: node.to_owned(),
            interface: name.clone(),
            prefix: prefix.to_string(),
            reason,
            at,
        };
        if !IpCidr::V6(prefix).is_network() {
            return Err(bad_prefix(
                "has host bits set: write the prefix itself, e.g. 2001:db8:a::/64",
            ));
        }
        if prefix.address.is_multicast() || is_link_local(prefix.address) {
            // RFC 4862 §5.5.3 b: hosts ignore a link-local prefix.
            return Err(bad_prefix("is link-local or multicast"));
        }
        if advertise.iter().any(|earlier| earlier.prefix == prefix) {
            return Err(bad_prefix("is advertised twice"));
        }
        if advertisement.preferred_lifetime > advertisement.valid_lifetime {
            return Err(TopologyError::PreferredAboveValid {
                node: node.to_owned(),
                interface: name,
                prefix: prefix.to_string(),
                preferred: advertisement.preferred_lifetime,
                valid: advertisement.valid_lifetime,
                at,
            });
        }
        advertise.push(advertisement);
    }

    let offload = crate::iface::offload::Offload::parse(&interface.offload).map_err(|reason| {
        TopologyError::BadOffload {
            node: node.to_owned(),
            interface: name.clone(),
            reason,
            at,
        }
    })?;

    Ok(InterfaceSpec {
        name,
        mac,
        mtu,
        ipv4: interface.ipv4,
        ipv6: interface.ipv6.clone(),
        advertise,
        dad_transmits: interface.dad_transmits,
        offload,
    })
}

fn is_link_local(address: Ipv6Addr) -> bool {
    address.segments()[0] & 0xffc0 == 0xfe80
}

fn check_mtu(node: &str, interface: &str, mtu: usize, at: At) -> Result<(), TopologyError> {
    let (node, interface) = (node.to_owned(), interface.to_owned());
    if mtu == 0 {
        return Err(TopologyError::ZeroMtu {
            node,
            interface,
            at,
        });
    }
    if mtu < IPV6_MIN_MTU {
        return Err(TopologyError::MtuBelowIpv6Minimum {
            node,
            interface,
            mtu,
            at,
        });
    }
    if mtu > MAX_MTU {
        return Err(TopologyError::MtuTooLarge {
            node,
            interface,
            mtu,
            max: MAX_MTU,
            at,
        });
    }
    Ok(())
}

fn check_route(
    node: &str,
    interfaces: &[InterfaceSpec],
    route: &Route,
    at: At,
) -> Result<(), TopologyError> {
    let reason = route_problem(interfaces, route);
    match reason {
        None => Ok(()),
        Some(reason) => Err(TopologyError::BadRoute {
            node: node.to_owned(),
            to: route.to.to_string(),
            reason,
            at,
        }),
    }
}

fn route_problem(interfaces: &[InterfaceSpec], route: &Route) -> Option<String> {
    let via = route.via;
    if !route.to.is_network() {
        return Some("has host bits set: write the prefix itself, e.g. 0.0.0.0/0".to_owned());
    }
    if !same_family(&route.to, &via) {
        return Some(format!("goes via {via}, of the other address family"));
    }
    let own = interfaces.iter().any(|interface| match via {
        IpAddr::V4(via) => interface.ipv4.is_some_and(|cidr| cidr.address == via),
        IpAddr::V6(via) => interface.ipv6.iter().any(|cidr| cidr.address == via),
    });
    if own {
        return Some(format!("goes via {via}, the node's own address"));
    }
    if let IpAddr::V6(address) = via {
        if is_link_local(address) {
            return Some(format!(
                "goes via the link-local {via}: name the neighbour's global address"
            ));
        }
    }
    let on_link = interfaces.iter().any(|interface| match via {
        IpAddr::V4(via) => interface.ipv4.is_some_and(|cidr| cidr.contains(via)),
        IpAddr::V6(via) => {
            interface.ipv6.iter().any(|cidr| cidr.contains(via))
                || interface
                    .advertise
                    .iter()
                    .any(|adv| adv.prefix.contains(via))
        }
    });
    if !on_link {
        return Some(format!(
            "goes via {via}, which is on none of the node's subnets"
        ));
    }
    None
}

/// What a wire's end is joined to.
enum End {
    /// A node's interface, of this MTU.
    Interface(usize),
    /// A port of hub `index`.
    HubPort(usize),
}

fn wires_from_file(
    wires: &[WireFile],
    nodes: &[Node],
    hubs: &[Hub],
    locator: &Locator,
) -> Result<Vec<Wire>, TopologyError> {
    let nodes_by_name: HashMap<&str, &Node> = nodes
        .iter()
        .map(|node| (node.name.as_str(), node))
        .collect();
    let mut used = HashSet::new();
    // Each hub's MTU, set by the first interface joined to it.
    let mut hub_mtus: Vec<Option<(usize, Endpoint)>> = vec![None; hubs.len()];
    let mut total_frames = 0usize;
    let mut result = Vec::with_capacity(wires.len().min(MAX_NODES * MAX_INTERFACES_PER_NODE));
    for wire_file in wires {
        let mut kinds = Vec::with_capacity(2);
        let mut ends = Vec::with_capacity(2);
        for end in [&wire_file.a, &wire_file.b] {
            let at = locator.at(end);
            let (endpoint, kind) = resolve_endpoint(end, &nodes_by_name, hubs, at)?;
            if !used.insert(endpoint.clone()) {
                return Err(if ends.contains(&endpoint) {
                    TopologyError::WireToItself {
                        endpoint: endpoint.to_string(),
                        at,
                    }
                } else if matches!(kind, End::HubPort(_)) {
                    TopologyError::HubPortOnTwoWires {
                        endpoint: endpoint.to_string(),
                        at,
                    }
                } else {
                    TopologyError::InterfaceOnTwoWires {
                        endpoint: endpoint.to_string(),
                        at,
                    }
                });
            }
            ends.push(endpoint);
            kinds.push(kind);
        }
        let b = ends.pop().unwrap_or_else(|| Endpoint::new("", ""));
        let a = ends.pop().unwrap_or_else(|| Endpoint::new("", ""));
        let at = locator.at(&wire_file.a);
        let mtu = match (&kinds[0], &kinds[1]) {
            (End::Interface(a_mtu), End::Interface(b_mtu)) => {
                if a_mtu != b_mtu {
                    return Err(TopologyError::MtuMismatch {
                        a: a.to_string(),
                        b: b.to_string(),
                        a_mtu: *a_mtu,
                        b_mtu: *b_mtu,
                        at,
                    });
                }
                *a_mtu
            }
            (End::HubPort(_), End::HubPort(_)) => {
                return Err(TopologyError::HubToHub {
                    a: a.to_string(),
                    b: b.to_string(),
                    at,
                })
            }
            (End::HubPort(hub), End::Interface(mtu)) | (End::Interface(mtu), End::HubPort(hub)) => {
                let interface = if matches!(kinds[0], End::Interface(_)) {
                    &a
                } else {
                    &b
                };
                match &hub_mtus[*hub] {
                    Some((first_mtu, first)) if first_mtu != mtu => {
                        return Err(TopologyError::HubMtuMismatch {
                            hub: hubs[*hub].name.clone(),
                            first: first.to_string(),
                            first_mtu: *first_mtu,
                            second: interface.to_string(),
                            second_mtu: *mtu,
                            at,
                        });
                    }
                    Some(_) => {}
                    None => hub_mtus[*hub] = Some((*mtu, interface.clone())),
                }
                *mtu
            }
        };
        let params = wire_file.params();
        if let Some(seed) = params.seed {
            check_seed(seed)?;
        }
        if let Err(source) = params.to_config(mtu, 0).validate() {
            return Err(TopologyError::WireConfig {
                a: a.to_string(),
                b: b.to_string(),
                source,
                at,
            });
        }
        total_frames = total_frames.saturating_add(params.queue_frames);
        if total_frames > MAX_TOTAL_QUEUE_FRAMES {
            return Err(TopologyError::TooManyQueuedFrames {
                total: total_frames,
                max: MAX_TOTAL_QUEUE_FRAMES,
            });
        }
        result.push(Wire { a, b, params });
    }
    Ok(result)
}

fn resolve_endpoint(
    end: &Spanned<String>,
    nodes: &HashMap<&str, &Node>,
    hubs: &[Hub],
    at: At,
) -> Result<(Endpoint, End), TopologyError> {
    let text = end.get_ref();
    let endpoint = parse_endpoint(text).ok_or_else(|| TopologyError::Parse {
        message: format!(
            "`{}` is not `node:interface`",
            text.chars().take(80).collect::<String>()
        ),
        at,
    })?;
    if let Some(index) = hubs.iter().position(|hub| hub.name == endpoint.node) {
        let ports = hubs[index].ports;
        // Ports are written as plain numbers: `"07"` would name port 7
        // twice over, so only the canonical form is accepted.
        let port = endpoint.interface.parse::<usize>().ok();
        if port.is_none_or(|port| {
            !(1..=ports).contains(&port) || port.to_string() != endpoint.interface
        }) {
            return Err(TopologyError::UnknownHubPort {
                hub: endpoint.node,
                port: endpoint.interface.chars().take(64).collect(),
                ports,
                at,
            });
        }
        return Ok((endpoint, End::HubPort(index)));
    }
    let node = nodes
        .get(endpoint.node.as_str())
        .ok_or_else(|| TopologyError::UnknownNode {
            node: endpoint.node.chars().take(64).collect(),
            at,
        })?;
    let Some(interface) = node.interface(&endpoint.interface) else {
        return Err(TopologyError::UnknownInterface {
            node: endpoint.node,
            interface: endpoint.interface.chars().take(64).collect(),
            at,
        });
    };
    let mtu = interface.mtu;
    Ok((endpoint, End::Interface(mtu)))
}
