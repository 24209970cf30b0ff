//! A run's `link`: the topology it runs on.
//!
//! * A link profile by name: `ethernet`, `fast-ethernet`,
//!   `fast-ethernet-6over4`, `unlimited`, `default`.
//! * Any other topology of the repository's `topologies/`, by name with or
//!   without `.toml` or `topologies/` (`two-routers`, `impaired.toml`).
//!   Every one is embedded, so the lab and `run` need no files.
//! * Any other topology file: a path ending in `.toml` or holding a `/`,
//!   relative to the recipe's directory (or absolute).
//!
//! A topology file is read and checked when the recipe is: a missing
//! file, one that is not a topology, or one with fewer than two hosts is
//! the recipe's error, at the `link` key. Traffic runs from its first host
//! to its last (`traffic::reference::hosts`).

use std::path::Path;
use std::sync::Arc;

use stack::topology::Topology;

/// The topology a run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// Two hosts on a 10 Mbit/s wire, MTU 1500 (Ethernet as the 1990s
    /// studies ran it).
    Ethernet,
    /// Two hosts on a 100 Mbit/s wire, MTU 1500.
    FastEthernet,
    /// The same wire, the hosts' IPv6 over 6-over-4 (RFC 2529) on their
    /// own IPv4: the IPv6 study's testbed path, IPv6 MTU 1480.
    FastEthernet6over4,
    /// The same wire, the hosts' IPv6 over a configured tunnel (RFC 4213)
    /// each to the other's IPv4: IPv6 MTU 1480.
    FastEthernetConfigured,
    /// The same wire, the hosts' IPv6 by automatic tunnelling to their
    /// IPv4-compatible addresses (RFC 1933; deprecated, here as the MSR
    /// stack had it): IPv6 MTU 1480.
    FastEthernetAutomatic,
    /// Two hosts on a wire with no rate limit, MTU 1500.
    Unlimited,
    /// host-a — router — host-b on 1 Gbit/s wires.
    Default,
    /// Another topology file, read and checked.
    File(Arc<TopologyFile>),
}

/// A topology named by a recipe.
#[derive(Debug, PartialEq, Eq)]
pub struct TopologyFile {
    /// The file's name without `.toml` (it names the copy a sweep writes).
    pub name: String,
    pub toml: String,
    /// The slowest wire's rate, if every wire has one.
    pub rate_bps: Option<u64>,
}

/// The topologies of `topologies/` that are not link profiles.
const TOPOLOGIES: &[(&str, &str)] = &[
    (
        "impaired",
        include_str!("../../../../../topologies/impaired.toml"),
    ),
    ("lan", include_str!("../../../../../topologies/lan.toml")),
    (
        "two-routers",
        include_str!("../../../../../topologies/two-routers.toml"),
    ),
    // `unlimited` with TSO and GRO on both interfaces: the lab's
    // offload-on row beside the per-packet one.
    (
        "unlimited-offload",
        include_str!("../../../../../topologies/unlimited-offload.toml"),
    ),
];

impl Link {
    pub const NAMES: &'static str =
        "ethernet, fast-ethernet, unlimited, default, fast-ethernet-6over4, \
         fast-ethernet-configured, fast-ethernet-automatic";

    fn profile(name: &str) -> Option<Link> {
        match name {
            "ethernet" => Some(Link::Ethernet),
            "fast-ethernet" => Some(Link::FastEthernet),
            "fast-ethernet-6over4" => Some(Link::FastEthernet6over4),
            "fast-ethernet-configured" => Some(Link::FastEthernetConfigured),
            "fast-ethernet-automatic" => Some(Link::FastEthernetAutomatic),
            "unlimited" => Some(Link::Unlimited),
            "default" => Some(Link::Default),
            _ => None,
        }
    }

    /// The link a recipe names (see the module's comment); `recipe_dir`
    /// anchors a relative path. The error says what is wrong, for the
    /// recipe's error at the key.
    pub fn parse(name: &str, recipe_dir: Option<&Path>) -> Result<Link, String> {
        let short = name.strip_prefix("topologies/").unwrap_or(name);
        let short = short.strip_suffix(".toml").unwrap_or(short);
        if let Some(link) = Link::profile(short) {
            return Ok(link);
        }
        if let Some((stem, text)) = TOPOLOGIES.iter().find(|(n, _)| *n == short) {
            return Link::file(stem, text.to_string())
                .map_err(|e| format!("link `{name}` (topologies/{stem}.toml): {e}"));
        }
        if !(name.ends_with(".toml") || name.contains('/')) {
            let files: Vec<&str> = TOPOLOGIES.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "link `{name}` is not one of: {}, {}; nor a topology file's path (ending in .toml)",
                Link::NAMES,
                files.join(", ")
            ));
        }
        let path = match recipe_dir {
            Some(dir) => dir.join(name),
            None => Path::new(name).to_path_buf(),
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("link `{name}`: cannot read {}: {e}", path.display()))?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| crate::experiment::recipe::file_name_safe(s))
            .unwrap_or("topology");
        Link::file(stem, text).map_err(|e| format!("link `{name}` ({}): {e}", path.display()))
    }

    fn file(name: &str, toml: String) -> Result<Link, String> {
        let topology = Topology::from_toml_str(&toml).map_err(|e| e.to_string())?;
        traffic::reference::hosts(&topology).map_err(|e| e.to_string())?;
        let rates: Option<Vec<u64>> = topology
            .wires()
            .iter()
            .map(|w| w.params.rate_bits_per_s)
            .collect();
        Ok(Link::File(Arc::new(TopologyFile {
            name: name.to_string(),
            toml,
            rate_bps: rates.and_then(|r| r.into_iter().min()),
        })))
    }

    pub fn name(&self) -> &str {
        match self {
            Link::Ethernet => "ethernet",
            Link::FastEthernet => "fast-ethernet",
            Link::FastEthernet6over4 => "fast-ethernet-6over4",
            Link::FastEthernetConfigured => "fast-ethernet-configured",
            Link::FastEthernetAutomatic => "fast-ethernet-automatic",
            Link::Unlimited => "unlimited",
            Link::Default => "default",
            Link::File(f) => &f.name,
        }
    }

    /// The topology file's text.
    pub fn topology_toml(&self) -> &str {
        match self {
            Link::Ethernet => include_str!("../../../../../topologies/ethernet.toml"),
            Link::FastEthernet => include_str!("../../../../../topologies/fast-ethernet.toml"),
            Link::FastEthernet6over4 => {
                include_str!("../../../../../topologies/fast-ethernet-6over4.toml")
            }
            Link::FastEthernetConfigured => {
                include_str!("../../../../../topologies/fast-ethernet-configured.toml")
            }
            Link::FastEthernetAutomatic => {
                include_str!("../../../../../topologies/fast-ethernet-automatic.toml")
            }
            Link::Unlimited => include_str!("../../../../../topologies/unlimited.toml"),
            Link::Default => include_str!("../../../../../topologies/default.toml"),
            Link::File(f) => &f.toml,
        }
    }

    /// The tunnel flavour the hosts' IPv6 takes on this link, if any
    /// (`configured`, `automatic`, `6-over-4`).
    pub fn tunnel(&self) -> Option<&'static str> {
        match self {
            Link::FastEthernet6over4 => Some("6-over-4"),
            Link::FastEthernetConfigured => Some("configured"),
            Link::FastEthernetAutomatic => Some("automatic"),
            _ => None,
        }
    }

    /// The wire's rate in bits per second, if it has one.
    pub fn rate_bps(&self) -> Option<u64> {
        match self {
            Link::Ethernet => Some(10_000_000),
            Link::FastEthernet
            | Link::FastEthernet6over4
            | Link::FastEthernetConfigured
            | Link::FastEthernetAutomatic => Some(100_000_000),
            Link::Unlimited => None,
            Link::Default => Some(1_000_000_000),
            Link::File(f) => f.rate_bps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Plan};
    use super::*;

    fn recipe(link: &str) -> String {
        format!(
            "name = \"t\"\ntitle = \"T\"\nsource = \"x.txt\"\n\n[[run]]\nid = \"r\"\nkind = \"messages\"\n\
             protocol = \"udp\"\nfamily = \"ipv4\"\nlink = \"{link}\"\nsizes = \"100\"\nreps = 1\n"
        )
    }

    fn scratch(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("stackscope-link-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn topologies_of_the_repository_by_name() {
        for (link, name, rate) in [
            ("two-routers.toml", "two-routers", None),
            ("topologies/two-routers.toml", "two-routers", None),
            ("impaired", "impaired", Some(10_000_000)),
            ("lan.toml", "lan", None),
            ("fast-ethernet.toml", "fast-ethernet", Some(100_000_000)),
        ] {
            let r = parse("exp.toml", &recipe(link)).unwrap_or_else(|e| panic!("{link}: {e}"));
            let run = &r.runs[0];
            assert_eq!(run.link.name(), name, "{link}");
            assert!(matches!(run.plan, Plan::Messages(_)));
            let topology = Topology::from_toml_str(run.link.topology_toml()).unwrap();
            assert!(topology.hosts().count() >= 2, "{link}");
            if name != "lan" {
                assert_eq!(run.link.rate_bps(), rate, "{link}");
            }
        }
        // The embedded text is the repository's file.
        let r = parse("exp.toml", &recipe("two-routers")).unwrap();
        let on_disk = include_str!("../../../../../topologies/two-routers.toml");
        assert_eq!(r.runs[0].link.topology_toml(), on_disk);
        assert_eq!(
            Topology::from_toml_str(on_disk).unwrap().routers().count(),
            2
        );
    }

    #[test]
    fn a_topology_file_by_path_relative_to_the_recipe() {
        let text = include_str!("../../../../../topologies/impaired.toml");
        let path = scratch("my-net.toml", text);
        let recipe_file = path.with_file_name("exp.toml");
        let r = parse(&recipe_file.display().to_string(), &recipe("my-net.toml")).unwrap();
        assert_eq!(r.runs[0].link.name(), "my-net");
        assert_eq!(r.runs[0].link.topology_toml(), text);
        // Absolute, from anywhere.
        let abs = path.display().to_string();
        let r = parse("exp.toml", &recipe(&abs)).unwrap();
        assert_eq!(r.runs[0].link.name(), "my-net");
    }

    #[test]
    fn missing_invalid_and_one_host_topologies_are_refused_at_the_key() {
        let e = parse("exp.toml", &recipe("no-such-net.toml")).unwrap_err();
        assert_eq!(e.line, 10, "{e}");
        assert!(
            e.message.contains("cannot read no-such-net.toml")
                && e.message.contains("No such file"),
            "{e}"
        );
        let e = parse("exp.toml", &recipe("no-such-net")).unwrap_err();
        assert!(
            e.message.contains("two-routers") && e.message.contains("fast-ethernet"),
            "{e}"
        );

        let bad = scratch("bad.toml", "[[host]]\nname = 3\n");
        let e = parse("exp.toml", &recipe(&bad.display().to_string())).unwrap_err();
        assert!(e.message.contains("bad.toml"), "{e}");
        assert_eq!(e.line, 10);

        let one = "[[host]]\nname = \"solo\"\n[[host.interface]]\nname = \"eth0\"\nipv4 = \"192.0.2.1/24\"\n";
        let one = scratch("one.toml", one);
        let e = parse("exp.toml", &recipe(&one.display().to_string())).unwrap_err();
        assert!(e.message.contains("one host (solo)"), "{e}");
    }
}
