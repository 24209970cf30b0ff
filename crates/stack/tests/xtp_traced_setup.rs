//! An association traced from its start, as the traffic tools trace
//! theirs (`xtp_set_traced` right after `xtp_connect`, before the peer's
//! TCNTL): its packets carry the 8-byte trace option, so its `maxdata`
//! must stay 8 bytes below the untraced one for the rest of the
//! association, or every full packet is fragmented.
//!
//! Known bug (found by the traced messages runs, `taler1992`
//! `xtp-messages`): the TCNTL's traffic specifier resets `maxdata` to the
//! smaller of both ends' untraced values (`Association::adopt_traffic`,
//! socket/xtp/input.rs), undoing the trace option's clamp made at the
//! first output; the host clamps again only when the path MTU changes or
//! the association is traced anew. Ignored until fixed there:
//! `cargo test -p stackscope-stack --test xtp_traced_setup -- --ignored`.

mod xtp_support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use stack::socket::xtp::XtpConfig;
use xtp_support::*;

#[test]
#[ignore = "known bug: the peer's traffic specifier undoes the trace option's clamp"]
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
        let b = set_up(&mut sim, listener, a);
        let data = pattern(100_000, 3);
        let (at_b, _) = exchange(&mut sim, (a, b), &data, &[], Duration::from_secs(10));
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
