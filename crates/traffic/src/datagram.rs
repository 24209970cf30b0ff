//! The test datagram: a 16-byte header and pattern bytes, for UDP and raw
//! link-level frames (the XTP study's sequence-numbered test messages,
//! `../shared/seeds/002_…` §5.3).
//!
//! ```text
//!  0      2      3         4             8                      16
//! +------+------+---------+-------------+----------------------+---------
//! | 'SS' | kind | circuit | length (BE) | sequence number (BE) | pattern …
//! +------+------+---------+-------------+----------------------+---------
//! ```
//!
//! `circuit` tells concurrent transfers apart where the link cannot (all
//! raw sockets of an Ethertype see every frame of it); a receiver counts
//! another circuit's datagrams as foreign. `length` is the whole datagram
//! as sent, so truncation shows. Data
//! datagrams number from 0; the start sentinel carries the number of data
//! datagrams planned and the end sentinel the number actually sent. The
//! pattern bytes of datagram `seq` start at pattern offset `8 * seq`, so a
//! datagram whose sequence number was altered fails its payload check.

use crate::pattern::Pattern;

/// Bytes of header before the pattern.
pub const HEADER_LEN: usize = 16;
const MAGIC: [u8; 2] = *b"SS";

/// What a test datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Sent before the data; `seq` is the number of data datagrams planned.
    Start,
    /// Payload; `seq` numbers it from 0.
    Data,
    /// Sent (several times) after the data; `seq` is the number sent.
    End,
    /// An echo request or reply of delay mode; `seq` numbers the exchange.
    Echo,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Start => 1,
            Kind::Data => 2,
            Kind::End => 3,
            Kind::Echo => 4,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            1 => Kind::Start,
            2 => Kind::Data,
            3 => Kind::End,
            4 => Kind::Echo,
            _ => return None,
        })
    }
}

/// A parsed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub circuit: u8,
    /// The datagram's length as the sender wrote it.
    pub length: u32,
    pub seq: u64,
}

/// Why a received datagram is not a good test datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DatagramError {
    #[error("shorter than the 16-byte header")]
    Short,
    #[error("not a stackscope test datagram (bad magic or kind)")]
    Foreign,
    #[error("length field {claimed} but {received} bytes received")]
    Length { claimed: u32, received: usize },
    #[error("payload does not match the pattern")]
    Payload,
}

/// Writes datagram `seq` of `kind` for `circuit` into `buf` (its whole
/// length).
///
/// # Panics
/// If `buf` is shorter than the header or longer than the pattern table
/// allows: callers size buffers once, from validated flags.
pub fn write(buf: &mut [u8], kind: Kind, seq: u64, circuit: u8, pattern: &Pattern) {
    let len = buf.len();
    buf[..2].copy_from_slice(&MAGIC);
    buf[2] = kind.code();
    buf[3] = circuit;
    buf[4..8].copy_from_slice(&(len as u32).to_be_bytes());
    buf[8..16].copy_from_slice(&seq.to_be_bytes());
    buf[HEADER_LEN..].copy_from_slice(pattern.at(seq.wrapping_mul(8), len - HEADER_LEN));
}

/// Parses and checks a received datagram: header, length and pattern.
pub fn check(data: &[u8], pattern: &Pattern) -> Result<Header, DatagramError> {
    let header = parse_header(data)?;
    if header.length as usize != data.len() {
        return Err(DatagramError::Length {
            claimed: header.length,
            received: data.len(),
        });
    }
    let payload = &data[HEADER_LEN..];
    if payload.len() > pattern.max_len()
        || payload != pattern.at(header.seq.wrapping_mul(8), payload.len())
    {
        return Err(DatagramError::Payload);
    }
    Ok(header)
}

/// Parses the header alone.
pub fn parse_header(data: &[u8]) -> Result<Header, DatagramError> {
    if data.len() < HEADER_LEN {
        return Err(DatagramError::Short);
    }
    let kind = Kind::from_code(data[2]).ok_or(DatagramError::Foreign)?;
    if data[..2] != MAGIC {
        return Err(DatagramError::Foreign);
    }
    Ok(Header {
        kind,
        circuit: data[3],
        length: u32::from_be_bytes(data[4..8].try_into().expect("4 bytes")),
        seq: u64::from_be_bytes(data[8..16].try_into().expect("8 bytes")),
    })
}

/// Ethernet's shortest payload (a 60-byte frame less its 14-byte header):
/// links pad shorter payloads with zeroes up to it.
pub const ETH_MIN_PAYLOAD: usize = 46;

/// The test datagram in a received frame's payload. A frame no longer
/// than Ethernet's minimum payload, whose header names a shorter length
/// and whose bytes past that length are all zero, was padded by the link
/// and is cut to the header's length. Anything else is returned whole: a
/// length field that claims more than arrived, or less with non-zero bytes
/// after it, then fails the verifier's length check and counts as
/// corrupted instead of being trusted.
pub fn strip_padding(frame: &[u8]) -> &[u8] {
    if frame.len() > ETH_MIN_PAYLOAD {
        return frame;
    }
    let Ok(header) = parse_header(frame) else {
        return frame;
    };
    let Ok(claimed) = usize::try_from(header.length) else {
        return frame;
    };
    if (HEADER_LEN..frame.len()).contains(&claimed) && frame[claimed..].iter().all(|&b| b == 0) {
        &frame[..claimed]
    } else {
        frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_datagrams_check_and_any_flipped_bit_is_caught() {
        let pattern = Pattern::new(2048);
        let mut buf = vec![0u8; 100];
        write(&mut buf, Kind::Data, 7, 3, &pattern);
        assert_eq!(
            check(&buf, &pattern),
            Ok(Header {
                kind: Kind::Data,
                circuit: 3,
                length: 100,
                seq: 7
            })
        );
        // Every bit but the circuit's is checked.
        for byte in (0..buf.len()).filter(|&b| b != 3) {
            let mut bad = buf.clone();
            bad[byte] ^= 0x10;
            assert!(check(&bad, &pattern).is_err(), "flip in byte {byte} passed");
        }
    }

    #[test]
    fn truncation_and_foreign_data_are_told_apart() {
        let pattern = Pattern::new(2048);
        let mut buf = vec![0u8; 64];
        write(&mut buf, Kind::End, 3, 0, &pattern);
        assert_eq!(
            check(&buf[..40], &pattern),
            Err(DatagramError::Length {
                claimed: 64,
                received: 40
            })
        );
        assert_eq!(check(&buf[..5], &pattern), Err(DatagramError::Short));
        assert_eq!(check(&[0u8; 32], &pattern), Err(DatagramError::Foreign));
    }

    #[test]
    fn the_header_alone_fits_and_checks() {
        let pattern = Pattern::new(0);
        let mut buf = [0u8; HEADER_LEN];
        write(&mut buf, Kind::Start, 20_000, 0, &pattern);
        assert_eq!(check(&buf, &pattern).unwrap().seq, 20_000);
    }
}

#[cfg(test)]
mod padding_tests {
    use super::*;

    fn datagram(len: usize, seq: u64, pattern: &Pattern) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        write(&mut buf, Kind::Data, seq, 0, pattern);
        buf
    }

    #[test]
    fn zero_padding_of_a_short_frame_is_cut_to_the_header_length() {
        let pattern = Pattern::new(2048);
        for len in [HEADER_LEN, 17, 30, ETH_MIN_PAYLOAD - 1] {
            let sent = datagram(len, 9, &pattern);
            let mut frame = sent.clone();
            frame.resize(ETH_MIN_PAYLOAD, 0);
            assert_eq!(strip_padding(&frame), &sent[..], "len {len}");
            assert!(check(strip_padding(&frame), &pattern).is_ok());
        }
    }

    #[test]
    fn unpadded_frames_pass_through_whole() {
        let pattern = Pattern::new(2048);
        for len in [HEADER_LEN, ETH_MIN_PAYLOAD, ETH_MIN_PAYLOAD + 1, 1500] {
            let frame = datagram(len, 3, &pattern);
            assert_eq!(strip_padding(&frame).len(), len);
        }
    }

    #[test]
    fn a_length_claiming_more_than_arrived_is_never_trusted() {
        let pattern = Pattern::new(2048);
        let mut frame = datagram(40, 1, &pattern);
        frame.truncate(30);
        assert_eq!(strip_padding(&frame).len(), 30);
        assert_eq!(
            check(strip_padding(&frame), &pattern),
            Err(DatagramError::Length {
                claimed: 40,
                received: 30
            })
        );
        // A huge claimed length is not trusted either.
        frame[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(strip_padding(&frame).len(), 30);
    }

    #[test]
    fn non_zero_bytes_past_the_length_are_not_padding() {
        let pattern = Pattern::new(2048);
        let mut frame = datagram(20, 5, &pattern);
        frame.resize(ETH_MIN_PAYLOAD, 0);
        frame[ETH_MIN_PAYLOAD - 1] = 1;
        assert_eq!(strip_padding(&frame).len(), ETH_MIN_PAYLOAD);
        assert!(check(strip_padding(&frame), &pattern).is_err());
    }

    #[test]
    fn zero_bytes_past_the_length_of_a_long_frame_are_not_padding() {
        // Ethernet pads only up to its minimum; longer frames with zeroes
        // after the datagram were altered on the way.
        let pattern = Pattern::new(2048);
        let mut frame = datagram(60, 5, &pattern);
        frame.resize(100, 0);
        assert_eq!(strip_padding(&frame).len(), 100);
    }

    #[test]
    fn garbage_and_impossible_lengths_are_returned_whole() {
        assert_eq!(strip_padding(&[]).len(), 0);
        assert_eq!(strip_padding(&[0u8; 10]).len(), 10);
        assert_eq!(
            strip_padding(&[0u8; ETH_MIN_PAYLOAD]).len(),
            ETH_MIN_PAYLOAD
        );
        // A header whose length is shorter than a header.
        let pattern = Pattern::new(2048);
        let mut frame = datagram(HEADER_LEN, 0, &pattern);
        frame.resize(ETH_MIN_PAYLOAD, 0);
        frame[4..8].copy_from_slice(&8u32.to_be_bytes());
        assert_eq!(strip_padding(&frame).len(), ETH_MIN_PAYLOAD);
    }
}
