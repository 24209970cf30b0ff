#![no_main]
//! TCP parse and option iteration must never panic; whatever parses must
//! re-emit to a segment that parses back to the same repr and payload.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use libfuzzer_sys::fuzz_target;
use wire::tcp::{TcpOption, TcpOptionIter, TcpPacket, TcpRepr, MAX_HEADER_LEN};
use wire::ChecksumMode;

fuzz_target!(|data: &[u8]| {
    // The option parser on its own, over the raw bytes.
    for option in TcpOptionIter::new(data) {
        let _ = option;
    }
    let _ = TcpOption::parse(data);

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
    let Ok(packet) = TcpPacket::new_checked(data) else {
        return;
    };
    for option in packet.option_iter() {
        let _ = option;
    }
    for (src, dst) in addrs {
        for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
            let Ok(repr) = TcpRepr::parse(&packet, &src, &dst, mode) else {
                continue;
            };
            assert!(
                repr.header_len() <= MAX_HEADER_LEN,
                "a parsed repr's options fit"
            );
            let payload = packet.payload();
            let mut out = vec![0; repr.buffer_len(payload.len())];
            let mut view = TcpPacket::new_unchecked(&mut out[..]);
            repr.emit(
                &mut view,
                &src,
                &dst,
                payload.len(),
                |p| p.copy_from_slice(payload),
                mode,
            )
            .expect("a parsed repr re-emits");
            // Ports, sequence number, window and urgent pointer are kept as is.
            assert_eq!(&out[..8], &data[..8]);
            assert_eq!(&out[14..16], &data[14..16]);
            assert_eq!(&out[18..20], &data[18..20]);
            let reparsed = TcpPacket::new_checked(&out[..]).expect("emitted header fits");
            assert_eq!(reparsed.payload(), payload);
            assert_eq!(TcpRepr::parse(&reparsed, &src, &dst, mode), Ok(repr));
        }
    }
});
