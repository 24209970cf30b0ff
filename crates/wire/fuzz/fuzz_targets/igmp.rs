#![no_main]
//! IGMP parse must never panic; a parsed message re-emits to its first
//! eight octets, which re-parse to the same repr (a longer message's
//! trailing octets are ignored, RFC 2236 §2.5).

use libfuzzer_sys::fuzz_target;
use wire::igmp::{IgmpPacket, IgmpRepr, HEADER_LEN};
use wire::ChecksumMode;

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = IgmpPacket::new_checked(data) else {
        return;
    };
    for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
        let Ok(repr) = IgmpRepr::parse(&packet, mode) else {
            continue;
        };
        assert_eq!(repr.buffer_len(), HEADER_LEN);
        let mut out = vec![0; repr.buffer_len()];
        repr.emit(&mut IgmpPacket::new_unchecked(&mut out[..]), mode)
            .expect("a parsed repr re-emits");
        let again = IgmpPacket::new_checked(&out[..]).expect("emitted IGMP is well formed");
        assert_eq!(IgmpRepr::parse(&again, mode), Ok(repr));
        assert!(repr.destination().is_multicast());
    }
});
