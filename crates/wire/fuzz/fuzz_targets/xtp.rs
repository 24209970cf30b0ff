#![no_main]
//! XTP parse must never panic; whatever parses must re-emit to a packet that
//! parses back to the same repr.

use libfuzzer_sys::fuzz_target;
use wire::xtp::{XtpPacket, XtpRepr};
use wire::ChecksumMode;

fuzz_target!(|data: &[u8]| {
    let Ok(packet) = XtpPacket::new_checked(data) else {
        return;
    };
    let _ = (packet.verify_checksum(), packet.segment(), packet.options());
    for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
        if let Ok(repr) = XtpRepr::parse(&packet, mode) {
            let mut out = vec![0; repr.buffer_len()];
            repr.emit(
                &mut XtpPacket::new_unchecked(&mut out[..]),
                ChecksumMode::Full,
            )
            .expect("a parsed repr re-emits");
            let view = XtpPacket::new_checked(&out[..]).expect("re-emitted length");
            assert_eq!(XtpRepr::parse(&view, ChecksumMode::Full), Ok(repr));
            // Header fields other than the checksum come back byte for byte.
            assert_eq!(&out[..16], &packet.packet()[..16]);
        }
    }
});
