#![no_main]
//! ARP parse must never panic, alone or inside an Ethernet frame; a parsed
//! packet re-emits to the same leading bytes.

use libfuzzer_sys::fuzz_target;
use wire::arp::{ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr};

fn check_arp(data: &[u8]) {
    let Ok(packet) = ArpPacket::new_checked(data) else {
        return;
    };
    // Every accessor is safe on a checked view, whatever its address lengths.
    let _ = (
        packet.operation(),
        packet.source_hardware_addr(),
        packet.source_protocol_addr(),
        packet.target_hardware_addr(),
        packet.target_protocol_addr(),
    );
    let Ok(repr) = ArpRepr::parse(&packet) else {
        return;
    };
    let mut out = vec![0; repr.buffer_len()];
    repr.emit(&mut ArpPacket::new_unchecked(&mut out[..]))
        .expect("a parsed repr re-emits");
    assert_eq!(out, data[..repr.buffer_len()]);
    let again = ArpPacket::new_checked(&out[..]).expect("emitted ARP is well formed");
    assert_eq!(ArpRepr::parse(&again), Ok(repr));
}

fuzz_target!(|data: &[u8]| {
    check_arp(data);
    if let Ok(frame) = EthernetFrame::new_checked(data) {
        if let Ok(EthernetRepr {
            ethertype: EtherType::Arp,
            ..
        }) = EthernetRepr::parse(&frame)
        {
            check_arp(frame.payload());
        }
    }
});
