#![no_main]
//! IPv6 and its extension headers must never panic: parse the fixed header,
//! walk the extension-header chain parsing every options, routing and
//! fragment header met and every option in it; whatever parses must re-emit
//! to the same bytes, and `walk_chain` must agree with the header-by-header
//! walk.

use libfuzzer_sys::fuzz_target;
use wire::ipv6::{Ipv6Packet, Ipv6Repr, HEADER_LEN};
use wire::ipv6_ext_header::{
    walk_chain, ChainEnd, Ipv6ExtHeader, Ipv6OptionsRepr, MAX_CHAIN_HEADERS,
};
use wire::ipv6_fragment::{Ipv6FragmentHeader, Ipv6FragmentRepr};
use wire::ipv6_option::{self, Ipv6Option};
use wire::ipv6_routing::{Ipv6RoutingHeader, Ipv6RoutingRepr};
use wire::IpProtocol;

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = Ipv6Packet::new_checked(data) else {
        return;
    };
    let repr = Ipv6Repr::parse(&packet).expect("a checked packet parses");
    let mut out = [0; HEADER_LEN];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut out[..]))
        .expect("a parsed repr re-emits");
    assert_eq!(&out[..], &data[..HEADER_LEN]);

    let payload = packet.payload();
    let walked = walk_chain(payload, repr.next_header);
    if let Some(end) = walk_headers(payload, repr.next_header) {
        assert_eq!(walked, Ok(end));
    }
});

/// Walks the chain header by header; returns where it ended if every header
/// parsed and the chain did not stop at an authentication header.
fn walk_headers(payload: &[u8], first: IpProtocol) -> Option<ChainEnd> {
    let mut protocol = first;
    let mut offset = 0;
    for index in 0..=MAX_CHAIN_HEADERS {
        let rest = &payload[offset..];
        let (next, len) = match protocol {
            IpProtocol::HopByHop if index > 0 => return None,
            IpProtocol::HopByHop | IpProtocol::Ipv6Opts => options_header(rest)?,
            IpProtocol::Ipv6Route => routing_header(rest)?,
            IpProtocol::Ipv6Frag => {
                let header = Ipv6FragmentHeader::new_checked(rest).ok()?;
                let fragment = Ipv6FragmentRepr::parse(&header).expect("a checked header parses");
                let mut out = [0; 8];
                fragment
                    .emit(&mut Ipv6FragmentHeader::new_unchecked(&mut out[..]))
                    .expect("a parsed repr re-emits");
                // Reserved fields are ignored on receipt and zeroed on emit.
                let mask = [0xff, 0x00, 0xff, 0xf9, 0xff, 0xff, 0xff, 0xff];
                for i in 0..8 {
                    assert_eq!(out[i], rest[i] & mask[i]);
                }
                if fragment.frag_offset != 0 {
                    break;
                }
                (fragment.next_header, fragment.buffer_len())
            }
            // Mobility, HIP and Shim6: stepped over by their length field.
            IpProtocol::Unknown(135 | 139 | 140) => {
                let header = Ipv6ExtHeader::new_checked(rest).ok()?;
                (header.next_header(), header.header_len())
            }
            IpProtocol::Unknown(51) => return None,
            _ => break,
        };
        if index == MAX_CHAIN_HEADERS {
            return None;
        }
        protocol = next;
        offset += len;
    }
    Some(ChainEnd { protocol, offset })
}

fn options_header(rest: &[u8]) -> Option<(IpProtocol, usize)> {
    let header = Ipv6ExtHeader::new_checked(rest).ok()?;
    let area = header.options();
    let mut iter = header.iter_options();
    loop {
        let start = iter.offset();
        let Some(Ok(option)) = iter.next() else { break };
        // Each option re-emits to its own bytes (PadN data must be zero).
        let mut out = vec![0; option.buffer_len()];
        assert_eq!(option.emit(&mut out), Ok(option.buffer_len()));
        assert_eq!(&out[..], &area[start..iter.offset()]);
    }
    let repr = Ipv6OptionsRepr::parse(&header).ok()?;
    let mut out = vec![0; repr.buffer_len()];
    repr.emit(&mut Ipv6ExtHeader::new_unchecked(&mut out[..]))
        .expect("a parsed repr re-emits");
    assert_eq!(&out[..], &rest[..repr.buffer_len()]);

    // The non-padding options rebuilt from scratch read back the same.
    let options: Vec<Ipv6Option> = repr
        .iter_options()
        .map(|o| o.unwrap())
        .filter(|o| !o.is_padding())
        .collect();
    let len = ipv6_option::options_area_len(&options).expect("parsed options re-emit");
    let mut area = vec![0; len];
    ipv6_option::emit_options(&options, &mut area).expect("parsed options re-emit");
    let again: Vec<Ipv6Option> = ipv6_option::iter_options(&area)
        .map(|o| o.unwrap())
        .filter(|o| !o.is_padding())
        .collect();
    assert_eq!(again, options);
    Some((repr.next_header, repr.buffer_len()))
}

fn routing_header(rest: &[u8]) -> Option<(IpProtocol, usize)> {
    let header = Ipv6RoutingHeader::new_checked(rest).ok()?;
    let repr = Ipv6RoutingRepr::parse(&header).ok()?;
    let mut out = vec![0; repr.buffer_len()];
    repr.emit(&mut Ipv6RoutingHeader::new_unchecked(&mut out[..]))
        .expect("a parsed repr re-emits");
    let mut expected = rest[..repr.buffer_len()].to_vec();
    if let Ipv6RoutingRepr::Type0 { addresses, .. } = repr {
        // Type 0 reserved bytes are zeroed on emit.
        expected[4..8].fill(0);
        assert_eq!(addresses.iter().count(), addresses.len());
    }
    assert_eq!(out, expected);
    Some((repr.next_header(), repr.buffer_len()))
}
