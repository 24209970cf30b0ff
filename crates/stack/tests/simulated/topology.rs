//! Topology files: the built-in default, the example files, round trips,
//! every refusal, and wire configurations.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::time::Duration;

use proptest::prelude::*;
use stack::topology::{
    Endpoint, NodeKind, Topology, TopologyError, DEFAULT_PREFERRED_LIFETIME,
    DEFAULT_VALID_LIFETIME, MAX_FILE_BYTES,
};

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../topologies")
        .join(name)
}

const EXAMPLES: [&str; 6] = [
    "default.toml",
    "two-routers.toml",
    "impaired.toml",
    "fast-ethernet.toml",
    "unlimited.toml",
    "unlimited-offload.toml",
];

#[test]
fn the_default_network_is_host_router_host() {
    let topology = Topology::default_network();
    let names: Vec<&str> = topology.nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["host-a", "host-b", "router"]);
    assert_eq!(topology.hosts().count(), 2);
    assert_eq!(topology.wires().len(), 2);

    let router = topology.node("router").unwrap();
    assert_eq!(router.kind, NodeKind::Router);
    let advertised: Vec<String> = router
        .interfaces
        .iter()
        .flat_map(|i| &i.advertise)
        .map(|a| a.prefix.to_string())
        .collect();
    assert_eq!(advertised, ["2001:db8:a::/64", "2001:db8:b::/64"]);
    for advertisement in router.interfaces.iter().flat_map(|i| &i.advertise) {
        assert_eq!(advertisement.valid_lifetime, DEFAULT_VALID_LIFETIME);
        assert_eq!(advertisement.preferred_lifetime, DEFAULT_PREFERRED_LIFETIME);
        assert!(advertisement.on_link && advertisement.autonomous);
    }
    let router_v4: Vec<String> = router
        .interfaces
        .iter()
        .filter_map(|i| i.ipv4)
        .map(|c| c.to_string())
        .collect();
    assert_eq!(router_v4, ["192.0.2.1/24", "198.51.100.1/24"]);

    let host_a = topology.node("host-a").unwrap();
    assert_eq!(
        host_a.interfaces[0].ipv4.unwrap().to_string(),
        "192.0.2.10/24"
    );
    assert!(host_a.interfaces[0].ipv6.is_empty(), "hosts use SLAAC");
    assert_eq!(
        host_a.routes[0].via,
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))
    );
    assert_eq!(topology.wire_of(&Endpoint::new("host-b", "eth0")), Some(1));
}

#[test]
fn the_default_file_means_the_built_in_default() {
    assert_eq!(
        Topology::load(example("default.toml")),
        Ok(Topology::default_network())
    );
}

#[test]
fn printing_and_reading_back_gives_the_same_topology() {
    let mut topologies = vec![Topology::default_network()];
    for name in EXAMPLES {
        topologies.push(Topology::load(example(name)).unwrap_or_else(|e| panic!("{name}: {e}")));
    }
    for topology in topologies {
        let printed = topology.to_toml_string();
        assert_eq!(Topology::from_toml_str(&printed), Ok(topology), "{printed}");
    }
}

#[test]
fn dad_transmits_zero_makes_static_addresses_usable_at_once() {
    let topology = Topology::load(example("fast-ethernet.toml")).unwrap();
    for host in topology.hosts() {
        assert_eq!(host.interfaces[0].dad_transmits, Some(0), "{}", host.name);
    }
    let mut sim = stack::runner::Simulator::new(&topology, None).unwrap();
    sim.run_for(Duration::from_millis(1));
    let now = sim.now();
    let state = sim.host("host-a").unwrap().state(now);
    let nte = |address: &str| {
        state.interfaces[0]
            .ntes
            .iter()
            .find(|n| n.address == address)
            .unwrap_or_else(|| panic!("{address} in {:?}", state.interfaces[0].ntes))
            .clone()
    };
    // No solicitation was sent and the address is preferred 1 ms in; with
    // the default (one transmit) it would stay tentative for a second.
    let static_address = nte("2001:db8:1::a");
    assert_eq!(static_address.state, "PREFERRED");
    assert_eq!(static_address.dad_transmits, 0);

    let with_dad = std::fs::read_to_string(example("fast-ethernet.toml"))
        .unwrap()
        .replace("dad_transmits = 0\n", "");
    let topology = Topology::from_toml_str(&with_dad).unwrap();
    assert_eq!(
        topology.hosts().next().unwrap().interfaces[0].dad_transmits,
        None
    );
    let mut sim = stack::runner::Simulator::new(&topology, None).unwrap();
    sim.run_for(Duration::from_millis(1));
    let state = sim.host("host-a").unwrap().state(sim.now());
    let tentative = state.interfaces[0]
        .ntes
        .iter()
        .find(|n| n.address == "2001:db8:1::a")
        .unwrap();
    assert_eq!(tentative.state, "TENTATIVE");
}

#[test]
fn two_routers_chain_four_nodes() {
    let topology = Topology::load(example("two-routers.toml")).unwrap();
    assert_eq!(topology.routers().count(), 2);
    assert_eq!(topology.wires().len(), 3);
    let r1 = topology.node("r1").unwrap();
    assert_eq!(r1.routes.len(), 2);
}

#[test]
fn wire_configs_carry_rate_delay_mtu_and_seeds() {
    let topology = Topology::load(example("impaired.toml")).unwrap();
    let first = topology.wire_config(0).unwrap();
    assert_eq!(first.rate_bits_per_s, Some(100_000_000));
    assert_eq!(first.delay, Duration::from_millis(2));
    assert_eq!(first.mtu, 1500);
    let second = topology.wire_config(1).unwrap();
    assert_eq!(second.rate_bits_per_s, Some(10_000_000));
    assert_eq!(second.delay, Duration::from_micros(150));
    assert_eq!(second.reorder_delay, Duration::from_millis(1));
    assert_eq!((second.loss, second.corrupt), (0.01, 0.001));
    assert_eq!(second.queue_frames, 256);
    assert_eq!(second.mtu, 1280);
    assert!(second.validate().is_ok());
    assert_ne!(first.seed, second.seed, "seeds differ per wire");
    assert!(topology.wire_config(2).is_none());

    // Stable for a given global seed, different for another.
    let again = Topology::load(example("impaired.toml")).unwrap();
    assert_eq!(again.wire_config(1), Some(second.clone()));
    let text = std::fs::read_to_string(example("impaired.toml")).unwrap();
    let reseeded = Topology::from_toml_str(&text.replace("seed = 42", "seed = 43")).unwrap();
    assert_ne!(reseeded.wire_config(1).unwrap().seed, second.seed);
    assert_eq!(topology.wire_configs().count(), 2);
}

#[test]
fn a_wire_seed_overrides_the_derived_one() {
    let text = format!("{}seed = 99\n", base_file());
    let topology = Topology::from_toml_str(&text).unwrap();
    assert_eq!(topology.wire_config(0).unwrap().seed, 99);
}

#[test]
fn omitted_macs_are_derived_stable_and_distinct() {
    let topology = Topology::default_network();
    let macs: Vec<_> = topology
        .nodes()
        .iter()
        .flat_map(|n| &n.interfaces)
        .map(|i| i.mac)
        .collect();
    assert_eq!(macs.len(), 4);
    for (i, mac) in macs.iter().enumerate() {
        assert_eq!(mac.0[0] & 0x03, 0x02, "locally administered unicast");
        assert!(!macs[i + 1..].contains(mac));
    }
    assert_eq!(Topology::default_network(), topology);
}

#[test]
fn load_refuses_missing_and_oversized_files() {
    assert!(matches!(
        Topology::load(example("no-such-file.toml")),
        Err(TopologyError::Io { .. })
    ));
    let path = std::env::temp_dir().join(format!("stackscope-big-{}.toml", std::process::id()));
    std::fs::write(&path, vec![b'#'; MAX_FILE_BYTES as usize + 1]).unwrap();
    let result = Topology::load(&path);
    let _ = std::fs::remove_file(&path);
    assert!(matches!(result, Err(TopologyError::TooLarge { .. })));
}

/// Two hosts on one wire; tests append to the wire's table.
fn base_file() -> String {
    r#"
[[host]]
name = "one"
[[host.interface]]
name = "eth0"

[[host]]
name = "two"
[[host.interface]]
name = "eth0"

[[wire]]
a = "one:eth0"
b = "two:eth0"
"#
    .to_owned()
}

/// Recognises one kind of error.
type IsError = fn(&TopologyError) -> bool;

/// Parses `text`, expecting an error that `is` accepts and whose message
/// names `item`; returns the message.
fn refused(text: &str, is: IsError, item: &str) -> String {
    let error = Topology::from_toml_str(text).expect_err(text);
    let message = error.to_string();
    assert!(is(&error), "unexpected {error:?}");
    assert!(message.contains(item), "`{message}` does not name `{item}`");
    message
}

#[test]
fn syntax_errors_and_unknown_keys_name_the_line() {
    let message = refused(
        "[[host]\n",
        |e| matches!(e, TopologyError::Parse { .. }),
        "line 1",
    );
    assert!(!message.is_empty());
    let text = base_file().replace("name = \"two\"", "name = \"two\"\ncolour = \"red\"");
    let error = Topology::from_toml_str(&text).unwrap_err();
    assert!(matches!(error, TopologyError::Parse { .. }));
    assert!(error.to_string().contains("colour"), "{error}");
    assert_eq!(error.location().unwrap().line, 9);
}

#[test]
fn malformed_values_are_refused() {
    let parse = |e: &TopologyError| matches!(e, TopologyError::Parse { .. });
    for (key, value) in [
        ("rate", "\"100Mbps\""),
        ("rate", "0"),
        ("delay", "\"2 fortnights\""),
        ("reorder_delay", "5"),
        ("queue_frames", "-1"),
        ("seed", "-3"),
    ] {
        refused(&format!("{}{key} = {value}\n", base_file()), parse, key);
    }
    for (old, new, item) in [
        (
            "name = \"eth0\"\n\n[[host]]",
            "name = \"eth0\"\nipv4 = \"192.0.2.300/24\"\n\n[[host]]",
            "192.0.2.300",
        ),
        (
            "name = \"eth0\"\n\n[[host]]",
            "name = \"eth0\"\nipv6 = [\"2001:db8::1\"]\n\n[[host]]",
            "2001:db8::1",
        ),
        (
            "name = \"eth0\"\n\n[[host]]",
            "name = \"eth0\"\nmac = \"01:00:5e:00:00:01\"\n\n[[host]]",
            "01:00:5e:00:00:01",
        ),
        ("b = \"two:eth0\"", "b = \"two-eth0\"", "two-eth0"),
    ] {
        refused(&base_file().replace(old, new), parse, item);
    }
}

#[test]
fn structural_errors_name_the_item() {
    use TopologyError as E;
    let base = base_file();
    let cases: [(String, IsError, &str); 9] = [
        (
            base.replace("name = \"two\"", "name = \"one\""),
            |e| matches!(e, E::DuplicateNode { .. }),
            "one",
        ),
        (
            base.replace(
                "name = \"eth0\"\n\n[[host]]",
                "name = \"eth0\"\n[[host.interface]]\nname = \"eth0\"\n\n[[host]]",
            ),
            |e| matches!(e, E::DuplicateInterface { .. }),
            "eth0",
        ),
        (
            base.replace("b = \"two:eth0\"", "b = \"three:eth0\""),
            |e| matches!(e, E::UnknownNode { .. }),
            "three",
        ),
        (
            base.replace("b = \"two:eth0\"", "b = \"two:eth9\""),
            |e| matches!(e, E::UnknownInterface { .. }),
            "two:eth9",
        ),
        (
            base.replace("b = \"two:eth0\"", "b = \"one:eth0\""),
            |e| matches!(e, E::WireToItself { .. }),
            "one:eth0",
        ),
        (
            format!("{base}\n[[wire]]\na = \"two:eth0\"\nb = \"one:eth0\"\n"),
            |e| matches!(e, E::InterfaceOnTwoWires { .. }),
            "two:eth0",
        ),
        (
            format!("[[router]]\nname = \"lonely\"\n{base}"),
            |e| matches!(e, E::NoInterface { .. }),
            "lonely",
        ),
        (
            base.replace("name = \"two\"", "name = \"Two\""),
            |e| matches!(e, E::InvalidName { .. }),
            "Two",
        ),
        (
            base.replace(
                "name = \"eth0\"\n\n[[host]]",
                "name = \"an-interface-name-too-long\"\n\n[[host]]",
            ),
            |e| matches!(e, E::InvalidName { .. }),
            "an-interface-name-too-long",
        ),
    ];
    for (text, is, item) in cases {
        let message = refused(&text, is, item);
        assert!(message.contains("line "), "`{message}` gives no line");
    }
}

#[test]
fn mtu_errors_name_the_interface() {
    use TopologyError as E;
    let with_mtu = |mtu: &str| {
        base_file().replace(
            "name = \"eth0\"\n\n[[host]]",
            &format!("name = \"eth0\"\nmtu = {mtu}\n\n[[host]]"),
        )
    };
    refused(
        &with_mtu("0"),
        |e| matches!(e, E::ZeroMtu { .. }),
        "one:eth0",
    );
    let message = refused(
        &with_mtu("1279"),
        |e| matches!(e, E::MtuBelowIpv6Minimum { .. }),
        "one:eth0",
    );
    assert!(message.contains("RFC 8200"));
    refused(
        &with_mtu("65536"),
        |e| matches!(e, E::MtuTooLarge { .. }),
        "one:eth0",
    );
    refused(
        &with_mtu("9000"),
        |e| matches!(e, E::MtuMismatch { .. }),
        "one:eth0",
    );
}

#[test]
fn wire_parameters_are_checked() {
    use TopologyError as E;
    let with = |extra: &str| format!("{}{extra}\n", base_file());
    for key in ["loss", "duplicate", "reorder", "corrupt"] {
        refused(
            &with(&format!("{key} = 1.5")),
            |e| matches!(e, E::WireConfig { .. }),
            key,
        );
        refused(
            &with(&format!("{key} = nan")),
            |e| matches!(e, E::WireConfig { .. }),
            "one:eth0",
        );
    }
    refused(
        &with("reorder = 0.5"),
        |e| matches!(e, E::WireConfig { .. }),
        "reorder_delay",
    );
    refused(
        &with("queue_frames = 0"),
        |e| matches!(e, E::WireConfig { .. }),
        "queue_frames",
    );
    assert!(Topology::from_toml_str(&with("loss = 1.0\nrate = 64000")).is_ok());
}

fn router_file(interface_extra: &str, routes: &str) -> String {
    format!(
        r#"
[[router]]
name = "gw"
[[router.interface]]
name = "eth0"
ipv4 = "192.0.2.1/24"
ipv6 = ["2001:db8:a::1/64"]
{interface_extra}
{routes}
"#
    )
}

#[test]
fn addresses_prefixes_and_routes_are_checked() {
    use TopologyError as E;
    let advertise =
        |body: &str| router_file(&format!("[[router.interface.advertise]]\n{body}"), "");
    assert!(Topology::from_toml_str(&advertise("prefix = \"2001:db8:a::/64\"")).is_ok());
    refused(
        &advertise("prefix = \"2001:db8:a::1/64\""),
        |e| matches!(e, E::BadPrefix { .. }),
        "2001:db8:a::1/64",
    );
    refused(
        &advertise("prefix = \"fe80::/64\""),
        |e| matches!(e, E::BadPrefix { .. }),
        "fe80::/64",
    );
    refused(
        &advertise("prefix = \"2001:db8:a::/64\"\nvalid_lifetime = 10\npreferred_lifetime = 20"),
        |e| matches!(e, E::PreferredAboveValid { .. }),
        "2001:db8:a::/64",
    );
    let host_advertising = router_file(
        "[[router.interface.advertise]]\nprefix = \"2001:db8:a::/64\"",
        "",
    )
    .replace("[[router", "[[host");
    refused(
        &host_advertising,
        |e| matches!(e, E::AdvertiseOnHost { .. }),
        "gw",
    );

    let address = |v4: &str| router_file("", "").replace("192.0.2.1/24", v4);
    refused(
        &address("192.0.2.0/24"),
        |e| matches!(e, E::BadAddress { .. }),
        "192.0.2.0/24",
    );
    refused(
        &address("224.0.0.1/24"),
        |e| matches!(e, E::BadAddress { .. }),
        "224.0.0.1/24",
    );
    let twice = router_file(
        "[[router.interface]]\nname = \"eth1\"\nipv4 = \"192.0.2.1/24\"",
        "",
    );
    refused(
        &twice,
        |e| matches!(e, E::DuplicateAddress { .. }),
        "gw:eth1",
    );
    let same_mac = router_file(
        "mac = \"02:00:00:00:00:01\"\n[[router.interface]]\nname = \"eth1\"\nmac = \"02:00:00:00:00:01\"",
        "",
    );
    refused(
        &same_mac,
        |e| matches!(e, E::DuplicateMac { .. }),
        "gw:eth1",
    );

    let route = |to: &str, via: &str| {
        router_file(
            "",
            &format!("[[router.route]]\nto = \"{to}\"\nvia = \"{via}\""),
        )
    };
    assert!(Topology::from_toml_str(&route("198.51.100.0/24", "192.0.2.2")).is_ok());
    assert!(Topology::from_toml_str(&route("2001:db8:b::/64", "2001:db8:a::2")).is_ok());
    let bad_route = |e: &E| matches!(e, E::BadRoute { .. });
    refused(
        &route("198.51.100.1/24", "192.0.2.2"),
        bad_route,
        "198.51.100.1/24",
    );
    refused(
        &route("198.51.100.0/24", "2001:db8:a::2"),
        bad_route,
        "198.51.100.0/24",
    );
    refused(
        &route("198.51.100.0/24", "203.0.113.1"),
        bad_route,
        "203.0.113.1",
    );
    refused(
        &route("198.51.100.0/24", "192.0.2.1"),
        bad_route,
        "own address",
    );
    refused(
        &route("2001:db8:b::/64", "fe80::1"),
        bad_route,
        "link-local",
    );
    let two_defaults = router_file(
        "",
        "[[router.route]]\nto = \"0.0.0.0/0\"\nvia = \"192.0.2.2\"\n[[router.route]]\nto = \"0.0.0.0/0\"\nvia = \"192.0.2.3\"",
    );
    refused(
        &two_defaults,
        |e| matches!(e, E::DuplicateRoute { .. }),
        "0.0.0.0/0",
    );
}

#[test]
fn counts_are_bounded() {
    let many_nodes: String = (0..257)
        .map(|i| format!("[[host]]\nname = \"h{i}\"\n[[host.interface]]\nname = \"eth0\"\n"))
        .collect();
    refused(
        &many_nodes,
        |e| matches!(e, TopologyError::TooMany { .. }),
        "nodes",
    );
    let many_interfaces: String = (0..65)
        .map(|i| format!("[[host.interface]]\nname = \"eth{i}\"\n"))
        .collect();
    let text = format!("[[host]]\nname = \"wide\"\n{many_interfaces}");
    refused(
        &text,
        |e| matches!(e, TopologyError::TooMany { .. }),
        "wide",
    );
    let huge = " ".repeat(MAX_FILE_BYTES as usize + 1);
    assert!(matches!(
        Topology::from_toml_str(&huge),
        Err(TopologyError::TooLarge { .. })
    ));
}

#[test]
fn topologies_built_in_code_are_validated_too() {
    let topology = Topology::default_network();
    let mut nodes = topology.nodes().to_vec();
    let rebuilt = Topology::new(topology.seed(), nodes.clone(), topology.wires().to_vec());
    assert_eq!(rebuilt, Ok(topology.clone()));
    nodes[1].name = "host-a".to_owned();
    let error = Topology::new(0, nodes, topology.wires().to_vec()).unwrap_err();
    assert!(matches!(error, TopologyError::DuplicateNode { .. }));
    assert_eq!(error.location(), None);
    assert!(matches!(
        Topology::new(u64::MAX, vec![], vec![]),
        Err(TopologyError::SeedOutOfRange { .. })
    ));
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let _ = Topology::from_toml_str(&text);
    }

    #[test]
    fn mutated_files_never_panic(cut in 0usize..400, insert in "[a-z0-9:\\[\\]=\". /\\n-]{0,12}") {
        let mut text = base_file() + "rate = \"1Gbit\"\ndelay = \"1ms\"\n";
        let cut = text.char_indices().map(|(i, _)| i).nth(cut).unwrap_or(text.len());
        text.insert_str(cut, &insert);
        let _ = Topology::from_toml_str(&text);
    }
}
