#![no_main]
//! ICMPv4 parse must never panic; a parsed message re-emits and re-parses
//! to the same repr. An error message's invoking datagram goes on to the
//! IPv4 parser, as a stack would read it.

use libfuzzer_sys::fuzz_target;
use wire::icmpv4::{Icmpv4Packet, Icmpv4Repr};
use wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wire::ChecksumMode;

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Icmpv4Packet::new_checked(data) else {
        return;
    };
    for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
        let Ok(repr) = Icmpv4Repr::parse(&packet, mode) else {
            continue;
        };
        assert_eq!(repr.buffer_len(), data.len());

        let mut out = vec![0; repr.buffer_len()];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut out[..]), mode)
            .expect("a parsed repr re-emits");
        let again = Icmpv4Packet::new_checked(&out[..]).expect("emitted ICMPv4 is well formed");
        assert_eq!(Icmpv4Repr::parse(&again, mode), Ok(repr));

        if repr.is_error() {
            // The invoking datagram is usually cut short; only its header
            // need be there, so view it without the total-length check.
            if let Ok(invoking) = Ipv4Packet::new_checked(repr.data()) {
                let _ = Ipv4Repr::parse(&invoking, ChecksumMode::Skip);
            }
        }
    }
});
