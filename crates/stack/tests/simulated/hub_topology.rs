//! Hubs in topology files: lan.toml, round trips, and every refusal
//! naming the item and its line.

use std::path::PathBuf;

use stack::topology::{Endpoint, Topology, TopologyError, MAX_HUB_PORTS};

fn lan() -> Topology {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../topologies/lan.toml");
    Topology::load(path).expect("lan.toml is valid")
}

#[test]
fn lan_is_a_router_and_three_hosts_on_one_hub() {
    let topology = lan();
    let names: Vec<&str> = topology.nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["host-a", "host-b", "host-c", "router"]);
    assert_eq!(topology.hubs().len(), 1);
    let hub = topology.hub("lan").unwrap();
    assert_eq!(hub.ports, 4);
    assert_eq!(topology.wires().len(), 4);
    for (index, wire) in topology.wires().iter().enumerate() {
        assert_eq!(wire.b, hub.port(index + 1));
        let config = topology
            .wire_config(index)
            .expect("a hub wire has a config");
        assert_eq!(config.rate_bits_per_s, Some(100_000_000));
        assert_eq!(config.mtu, 1500);
    }
    assert_eq!(topology.wire_of(&Endpoint::new("lan", "3")), Some(2));
}

#[test]
fn hubs_print_and_read_back() {
    let topology = lan();
    let printed = topology.to_toml_string();
    assert!(printed.contains("[[hub]]"), "{printed}");
    assert_eq!(Topology::from_toml_str(&printed), Ok(topology));
}

/// Two hosts on a hub of `ports` ports; `wires` are appended.
fn hub_file(ports: usize, wires: &str) -> String {
    format!(
        r#"
[[host]]
name = "one"
[[host.interface]]
name = "eth0"

[[host]]
name = "two"
[[host.interface]]
name = "eth0"
mtu = MTU_TWO

[[hub]]
name = "lan"
ports = {ports}
{wires}"#
    )
    .replace("MTU_TWO", "1500")
}

const TWO_PORTS: &str = r#"
[[wire]]
a = "one:eth0"
b = "lan:1"

[[wire]]
a = "lan:2"
b = "two:eth0"
"#;

/// Parses `text`, expecting an error `is` accepts whose message names
/// `item` and whose line is `line`.
fn refused(text: &str, is: fn(&TopologyError) -> bool, item: &str, line: usize) {
    let error = Topology::from_toml_str(text).expect_err(text);
    let message = error.to_string();
    assert!(is(&error), "unexpected {error:?}");
    assert!(message.contains(item), "`{message}` does not name `{item}`");
    assert_eq!(error.location().map(|l| l.line), Some(line), "{message}");
    assert!(message.contains(&format!("line {line}")), "{message}");
}

#[test]
fn a_well_formed_hub_file_is_accepted() {
    let topology = Topology::from_toml_str(&hub_file(2, TWO_PORTS)).unwrap();
    assert_eq!(topology.hubs()[0].port(2), Endpoint::new("lan", "2"));
    // Either end of a wire may be the hub's.
    assert_eq!(topology.wire_config(1).unwrap().mtu, 1500);
}

#[test]
fn a_hub_port_on_two_wires_is_refused() {
    let text = hub_file(
        3,
        r#"
[[wire]]
a = "one:eth0"
b = "lan:1"

[[wire]]
a = "two:eth0"
b = "lan:1"
"#,
    );
    refused(
        &text,
        |e| matches!(e, TopologyError::HubPortOnTwoWires { .. }),
        "lan:1",
        23,
    );
}

#[test]
fn a_hub_without_wires_is_refused() {
    let text = hub_file(
        2,
        r#"
[[wire]]
a = "one:eth0"
b = "two:eth0"
"#,
    );
    refused(
        &text,
        |e| matches!(e, TopologyError::HubWithoutWires { .. }),
        "`lan`",
        14,
    );
}

#[test]
fn unknown_ports_and_bad_port_counts_are_refused() {
    let unknown = |e: &TopologyError| matches!(e, TopologyError::UnknownHubPort { .. });
    for port in ["3", "0", "01", "eth0", ""] {
        let text = hub_file(2, &TWO_PORTS.replace("lan:2", &format!("lan:{port}")));
        refused(&text, unknown, "1 to 2", 22);
    }
    let ports = |e: &TopologyError| matches!(e, TopologyError::HubPorts { .. });
    for count in [0, 1, MAX_HUB_PORTS + 1] {
        refused(&hub_file(count, TWO_PORTS), ports, "`lan`", 14);
    }
}

#[test]
fn hubs_joined_to_hubs_are_refused() {
    let text = hub_file(3, TWO_PORTS)
        + r#"
[[hub]]
name = "other"
ports = 2

[[wire]]
a = "lan:3"
b = "other:1"
"#;
    refused(
        &text,
        |e| matches!(e, TopologyError::HubToHub { .. }),
        "two hubs",
        30,
    );
    // A wire between two ports of one hub is a loop too.
    let text = hub_file(4, TWO_PORTS) + "\n[[wire]]\na = \"lan:3\"\nb = \"lan:4\"\n";
    refused(
        &text,
        |e| matches!(e, TopologyError::HubToHub { .. }),
        "lan:3",
        26,
    );
}

#[test]
fn interfaces_of_different_mtus_on_one_hub_are_refused() {
    let text = hub_file(2, TWO_PORTS).replace("mtu = 1500", "mtu = 9000");
    refused(
        &text,
        |e| matches!(e, TopologyError::HubMtuMismatch { .. }),
        "one:eth0 (MTU 1500) and two:eth0 (MTU 9000)",
        22,
    );
}

#[test]
fn a_hub_named_like_a_node_is_refused() {
    let text = hub_file(2, TWO_PORTS).replace("name = \"lan\"", "name = \"one\"");
    let error = Topology::from_toml_str(&text).unwrap_err();
    assert!(
        matches!(error, TopologyError::DuplicateNode { ref name, .. } if name == "one"),
        "{error:?}"
    );
    let text = hub_file(2, TWO_PORTS).replace("name = \"lan\"", "name = \"Lan\"");
    let error = Topology::from_toml_str(&text).unwrap_err();
    assert!(
        matches!(error, TopologyError::InvalidName { what: "hub", .. }),
        "{error:?}"
    );
}
