#![no_main]
//! ICMPv6 (with ND and MLD) parse must never panic; every ND option, MLD
//! source and record is walked; whatever parses must re-emit to a message
//! that parses back to the same repr, and echo messages re-emit byte for byte.

use core::net::Ipv6Addr;
use libfuzzer_sys::fuzz_target;
use wire::icmpv6::{Icmpv6Packet, Icmpv6Repr};
use wire::mld::MldRepr;
use wire::ndisc::NdiscOptions;
use wire::ChecksumMode;

const SRC: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
const DST: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

fn walk(repr: &Icmpv6Repr) {
    match repr {
        Icmpv6Repr::Ndisc(nd) => {
            // Every well-formed option re-emits to bytes that decode to it.
            for option in nd.options().into_iter().flatten() {
                let mut out = vec![0; option.buffer_len()];
                option.emit(&mut out).expect("a parsed option re-emits");
                let again = NdiscOptions::new(&out).iter().next();
                assert_eq!(again, Some(Ok(option)));
            }
        }
        Icmpv6Repr::Mld(MldRepr::QueryV2 { sources, .. }) => {
            assert_eq!(sources.iter().count(), sources.len());
        }
        Icmpv6Repr::Mld(MldRepr::ReportV2 { records }) => {
            let mut count = 0;
            for record in records.iter() {
                assert_eq!(record.sources.iter().count(), record.sources.len());
                assert_eq!(record.aux_data.len() % 4, 0);
                count += 1;
            }
            assert_eq!(count, records.len());
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    // Raw option bytes must iterate safely whatever they hold.
    let _ = NdiscOptions::new(data).iter().count();

    // The same bytes once as they are and once with a correct checksum, so
    // that full-mode parsing gets past the checksum too.
    let mut fixed = data.to_vec();
    if fixed.len() >= 4 {
        Icmpv6Packet::new_unchecked(&mut fixed[..]).fill_checksum(&SRC, &DST);
    }
    for input in [data, &fixed[..]] {
        let Ok(packet) = Icmpv6Packet::new_checked(input) else {
            continue;
        };
        for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
            let Ok(repr) = Icmpv6Repr::parse(&packet, &SRC, &DST, mode) else {
                continue;
            };
            walk(&repr);
            let mut out = vec![0; repr.buffer_len()];
            repr.emit(
                &mut Icmpv6Packet::new_unchecked(&mut out[..]),
                &SRC,
                &DST,
                mode,
            )
            .expect("a parsed repr re-emits");
            let again = Icmpv6Packet::new_checked(&out[..]).expect("re-emitted message fits");
            assert_eq!(Icmpv6Repr::parse(&again, &SRC, &DST, mode), Ok(repr));
            if matches!(
                repr,
                Icmpv6Repr::EchoRequest { .. } | Icmpv6Repr::EchoReply { .. }
            ) && mode == ChecksumMode::Full
            {
                // The checksum may differ: 0x0000 and 0xffff verify alike.
                assert_eq!(out.len(), input.len());
                assert_eq!(&out[..2], &input[..2]);
                assert_eq!(&out[4..], &input[4..]);
            }
        }
    }
});
