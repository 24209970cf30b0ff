#![no_main]
//! UDP parse must never panic; whatever parses must re-emit to the same header.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use libfuzzer_sys::fuzz_target;
use wire::udp::{UdpPacket, UdpRepr};
use wire::ChecksumMode;

fuzz_target!(|data: &[u8]| {
    let addrs = [
        (
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
        ),
        (
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ),
    ];
    for (src, dst) in addrs {
        let Ok(packet) = UdpPacket::new_checked(data) else {
            continue;
        };
        for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
            if let Ok(repr) = UdpRepr::parse(&packet, &src, &dst, mode) {
                let payload = packet.payload();
                let mut out = vec![0; repr.buffer_len(payload.len())];
                let mut view = UdpPacket::new_unchecked(&mut out[..]);
                repr.emit(
                    &mut view,
                    &src,
                    &dst,
                    payload.len(),
                    |p| p.copy_from_slice(payload),
                    mode,
                )
                .expect("a parsed repr re-emits");
                assert_eq!(&out[..4], &data[..4]);
            }
        }
    }
});
