//! A host on a link that carries bare IP packets (Medium::Ip: loopback,
//! tunnels) sends only IP on it: no ARP announcement or other Ethernet-
//! framed message, which such a link could not carry (a tunnel refuses it,
//! loopback hands it back as garbage).

use std::sync::{Arc, Mutex};

use stack::iface::host::{Host, HostConfig, InterfaceConfig};
use stack::phy::{Link, LinkError, LinkStats, Loopback, Medium};
use stack::time::Instant;
use stack::topology::{Ipv4Cidr, Ipv6Cidr};
use wire::ethernet::EthernetAddress;

/// A loopback that keeps a copy of every frame it carries.
struct Recording {
    inner: Loopback,
    sent: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Link for Recording {
    fn medium(&self) -> Medium {
        self.inner.medium()
    }
    fn mtu(&self) -> usize {
        self.inner.mtu()
    }
    fn transmit(&mut self, now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
        self.sent.lock().unwrap().push(parts.concat());
        self.inner.transmit(now, parts)
    }
    fn receive(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        self.inner.receive(now, buf)
    }
    fn transmit_ring(&self) -> Option<usize> {
        self.inner.transmit_ring()
    }

    fn transmit_complete_at(&self) -> Option<Instant> {
        self.inner.transmit_complete_at()
    }

    fn next_arrival(&self) -> Option<Instant> {
        self.inner.next_arrival()
    }
    fn received_at(&self) -> Option<Instant> {
        self.inner.received_at()
    }
    fn stats(&self) -> LinkStats {
        self.inner.stats()
    }
}

#[test]
fn a_host_on_an_ip_link_sends_only_ip_packets() {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let link = Recording {
        inner: Loopback::new(),
        sent: sent.clone(),
    };
    let interface = InterfaceConfig {
        name: "lo".into(),
        link: Box::new(link),
        mac: EthernetAddress([0x02, 0, 0, 0, 0, 1]),
        ipv4: Some(Ipv4Cidr {
            address: "192.0.2.1".parse().unwrap(),
            prefix_len: 24,
        }),
        ipv6: vec![Ipv6Cidr {
            address: "2001:db8::1".parse().unwrap(),
            prefix_len: 64,
        }],
        advertise: Vec::new(),
        dad_transmits: Some(1),
    };
    let mut host = Host::new(HostConfig::new("h", false), vec![interface], &[]).unwrap();
    // Three seconds of address configuration (DAD, MLD reports).
    for ms in 0..3000u64 {
        host.poll(Instant::from_nanos(ms * 1_000_000));
    }
    let sent = sent.lock().unwrap();
    assert!(!sent.is_empty(), "the host sent nothing (no DAD, no MLD?)");
    for frame in sent.iter() {
        let version = frame.first().map(|b| b >> 4);
        assert!(
            matches!(version, Some(4 | 6)),
            "a frame that is not IP on an IP link: {frame:02x?}"
        );
    }
    assert_eq!(
        host.drops().get("ip_bad_version"),
        None,
        "{:?}",
        host.drops()
    );
}
