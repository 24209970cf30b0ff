#![no_main]
//! IPv4 parse (header, checksum, options) must never panic; a parsed header
//! re-emits and re-parses to the same repr, byte-identical apart from the
//! reserved flag (which parse ignores and emit clears) and the checksum.

use libfuzzer_sys::fuzz_target;
use wire::icmpv4::{Icmpv4Packet, Icmpv4Repr};
use wire::ipv4::{Ipv4Options, Ipv4Packet, Ipv4Repr};
use wire::{ChecksumMode, IpProtocol};

fuzz_target!(|data: &[u8]| {
    // The option parser alone, on any area.
    if let Ok(options) = Ipv4Options::parse(data) {
        assert_eq!(options.as_bytes(), data);
        let _ = options.iter().count();
    }

    let Ok(packet) = Ipv4Packet::new_checked(data) else {
        return;
    };
    let _ = (packet.options(), packet.payload(), packet.verify_checksum());
    for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
        let Ok(repr) = Ipv4Repr::parse(&packet, mode) else {
            continue;
        };
        let _ = repr.options.iter().count();
        let _ = repr.options.trace();

        let mut out = vec![0; repr.buffer_len()];
        let mut view = Ipv4Packet::new_unchecked(&mut out[..]);
        repr.emit(&mut view, mode).expect("a parsed repr re-emits");
        view.payload_mut().copy_from_slice(packet.payload());
        let again = Ipv4Packet::new_checked(&out[..]).expect("emitted IPv4 is well formed");
        assert_eq!(Ipv4Repr::parse(&again, mode), Ok(repr));
        // Byte identity, except the checksum (0x0000 and 0xffff both verify
        // when the other words sum to 0xffff: ones' complement has two
        // zeros) and the reserved flag.
        let mut expected = data[..out.len()].to_vec();
        expected[6] &= 0x7f;
        expected[10..12].copy_from_slice(&out[10..12]);
        assert_eq!(out, expected);

        if repr.protocol == IpProtocol::Icmp {
            if let Ok(message) = Icmpv4Packet::new_checked(packet.payload()) {
                let _ = Icmpv4Repr::parse(&message, mode);
            }
        }
    }
});
