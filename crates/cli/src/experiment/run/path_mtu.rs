//! The MTU of a link profile's path for one family, for the per-segment
//! prediction (the payload one packet carries, where the stop latency
//! steps): the interfaces' MTUs the topology gives, and over a tunnel the
//! tunnel's (IPv6 over IPv4: 1480 on a 1500-byte Ethernet, the IPv6
//! study's testbed).

use stack::topology::{Node, NodeKind, Topology};
use traffic::spec::Family;

/// The smallest MTU any node of `topology` gives `family`'s packets
/// between the hosts. A host whose IPv6 addresses are on a tunnel
/// (`[[host.tunnel]]`) sends IPv6 at the tunnel's MTU, and its IPv4
/// carries the tunnel's packets 20 bytes bigger, within its interfaces'.
pub fn path_mtu(topology: &Topology, family: Family) -> usize {
    topology
        .nodes()
        .iter()
        .filter_map(|node| node_mtu(node, family))
        .min()
        .unwrap_or(stack::topology::DEFAULT_MTU)
}

fn node_mtu(node: &Node, family: Family) -> Option<usize> {
    let interfaces = node.interfaces.iter();
    let links = match family {
        Family::V4 => interfaces.filter(|i| i.ipv4.is_some()).map(|i| i.mtu).min(),
        Family::V6 => interfaces.map(|i| i.mtu).min(),
    };
    let tunnel = node
        .tunnels
        .iter()
        .filter(|t| !t.ipv6.is_empty())
        .map(|t| t.mtu)
        .min();
    match (family, node.kind, tunnel) {
        // The traffic tools' IPv6 takes the host's first global address,
        // the tunnel's where the interfaces have none.
        (Family::V6, NodeKind::Host, Some(tunnel)) if !has_interface_ipv6(node) => Some(tunnel),
        _ => links,
    }
}

fn has_interface_ipv6(node: &Node) -> bool {
    node.interfaces.iter().any(|i| !i.ipv6.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(text: &str) -> Topology {
        Topology::from_toml_str(text).unwrap()
    }

    #[test]
    fn ethernet_paths_are_1500_and_a_6over4_path_is_1480_for_ipv6_only() {
        let fast = topology(include_str!("../../../../../topologies/fast-ethernet.toml"));
        assert_eq!(path_mtu(&fast, Family::V6), 1500);
        assert_eq!(path_mtu(&fast, Family::V4), 1500);
        let six = topology(include_str!(
            "../../../../../topologies/fast-ethernet-6over4.toml"
        ));
        assert_eq!(path_mtu(&six, Family::V6), 1480);
        assert_eq!(path_mtu(&six, Family::V4), 1500);
        let routed = topology(include_str!("../../../../../topologies/default.toml"));
        assert_eq!(path_mtu(&routed, Family::V6), 1500);
    }

    #[test]
    fn a_narrow_wire_narrows_the_path() {
        let text = include_str!("../../../../../topologies/fast-ethernet.toml")
            .replace("name = \"eth0\"\n", "name = \"eth0\"\nmtu = 1400\n");
        let narrow = topology(&text);
        assert_eq!(path_mtu(&narrow, Family::V6), 1400);
        assert_eq!(path_mtu(&narrow, Family::V4), 1400);
    }
}
