//! An association traced from its start, as the traffic tools trace
//! theirs (`xtp_set_traced` right after `xtp_connect`, before the peer's
//! TCNTL): its packets carry the 8-byte trace option, so its `maxdata`
//! must stay 8 bytes below the untraced one for the rest of the
//! association, or every full packet is fragmented.
//!
//! The traced messages runs (`taler1992` `xtp-messages`) found the
//! TCNTL's traffic specifier resetting `maxdata` to the smaller of both
//! ends' untraced values (`Association::adopt_traffic`), undoing the
//! trace option's clamp made at the first output: the association now
//! keeps the host's last word on the path (`path_limit`).

use crate::xtp_support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use stack::socket::xtp::XtpConfig;
use xtp_support::*;

#[test]
fn an_association_traced_from_its_start_sends_no_fragments() {
    for v6 in [false, true] {
        let mut sim = default_network();
        let any: IpAddr = if v6 { "::" } else { "0.0.0.0" }.parse().unwrap();
        let listener = host_mut(&mut sim, "host-b")
            .xtp_listen(SocketAddr::new(any, PORT), XtpConfig::default())
            .unwrap();
        let remote = SocketAddr::new(address_of(&sim, "host-b", v6), PORT);
        let a = host_mut(&mut sim, "host-a")
            .xtp_connect(remote, XtpConfig::default())
            .unwrap();
        // Traced before anything was sent, as `tcp_set_traced` is used.
        host_mut(&mut sim, "host-a")
            .xtp_set_traced(a, true)
            .unwrap();
        let mut b = None;
        let up = sim.run_until_with(Duration::from_secs(10), |sim| {
            if b.is_none() {
                b = host_mut(sim, "host-b").xtp_accept(listener).ok();
            }
            b.is_some()
                && sim
                    .host("host-a")
                    .unwrap()
                    .xtp_readiness(a)
                    .unwrap()
                    .established
        });
        assert!(up, "the association was not set up");
        let data = pattern(100_000, 3);
        let (at_b, _) = exchange(
            &mut sim,
            (a, b.unwrap()),
            &data,
            &[],
            Duration::from_secs(10),
        );
        assert_same(&at_b, &data, "traced transfer");
        let h = sim.host("host-a").unwrap();
        let (ip, option) = if v6 { (40, 8) } else { (20, 8) };
        assert_eq!(
            h.xtp_association(a).unwrap().maxdata(),
            1500 - ip - 32 - option,
            "v6 {v6}"
        );
        let c = h.counters();
        assert_eq!(
            (c.ipv4_fragments_sent, c.ipv6_fragments_sent),
            (0, 0),
            "v6 {v6}: full packets were fragmented"
        );
    }
}
