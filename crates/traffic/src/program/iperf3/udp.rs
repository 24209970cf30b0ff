//! iperf3's UDP streams: the connect handshake, the datagram header (send
//! time as seconds and microseconds, then a packet count, all big-endian)
//! and what a receiver derives from it — losses from gaps in the count,
//! out-of-order arrivals, and RFC 3550 interarrival jitter.

use std::time::Duration;

use stack::time::Instant;

/// What an iperf3 client sends to open a UDP stream (`UDP_CONNECT_MSG`),
/// written in the client's byte order.
const CONNECT: u32 = 0x3637_3839;

/// Whether `data` is a UDP stream's connect message, in either byte order.
pub fn is_connect(data: &[u8]) -> bool {
    data.len() == 4
        && (data == CONNECT.to_be_bytes().as_slice() || data == CONNECT.to_le_bytes().as_slice())
}

/// The server's answer (`UDP_CONNECT_REPLY`, 0x39383736) in the client's
/// byte order: the connect message's bytes reversed, whichever order the
/// client wrote it in.
pub fn connect_reply(message: &[u8]) -> [u8; 4] {
    let mut reply = [0; 4];
    for (i, b) in message.iter().rev().take(4).enumerate() {
        reply[i] = *b;
    }
    reply
}

/// The header's length: 32-bit seconds and microseconds, then a 32-bit
/// or (`--udp-counters-64bit`) 64-bit count.
pub fn header_len(counters_64bit: bool) -> usize {
    if counters_64bit {
        16
    } else {
        12
    }
}

/// Writes the header of datagram `count` sent at `at` into `datagram`
/// (at least [`header_len`] bytes).
pub fn write_header(datagram: &mut [u8], at: Instant, count: u64, counters_64bit: bool) {
    let since = Duration::from_nanos(at.as_nanos());
    // iperf3's fields are 32 bits: the seconds wrap after 136 years.
    let secs = since.as_secs() as u32;
    datagram[0..4].copy_from_slice(&secs.to_be_bytes());
    datagram[4..8].copy_from_slice(&since.subsec_micros().to_be_bytes());
    if counters_64bit {
        datagram[8..16].copy_from_slice(&count.to_be_bytes());
    } else {
        datagram[8..12].copy_from_slice(&(count as u32).to_be_bytes());
    }
}

/// A datagram's send time (seconds) and count, if it is long enough.
pub fn read_header(datagram: &[u8], counters_64bit: bool) -> Option<(f64, u64)> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(
            datagram.get(at..at + 4)?.try_into().ok()?,
        ))
    };
    let sent = f64::from(word(0)?) + f64::from(word(4)?) / 1e6;
    let count = if counters_64bit {
        u64::from_be_bytes(datagram.get(8..16)?.try_into().ok()?)
    } else {
        u64::from(word(8)?)
    };
    Some((sent, count))
}

/// What a UDP receiver counted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reception {
    pub bytes: u64,
    /// Datagrams that arrived (with a header).
    pub datagrams: u64,
    /// The highest count seen: what iperf3 reports as packets.
    pub highest: u64,
    /// Counts skipped and not (yet) filled by a late arrival.
    pub lost: u64,
    pub out_of_order: u64,
    /// RFC 3550 §6.4.1 interarrival jitter, seconds.
    pub jitter: f64,
    /// The previous datagram's transit time (arrival − send), seconds.
    transit: Option<f64>,
}

impl Reception {
    /// Counts one datagram of `len` bytes, sent at `sent` with `count`,
    /// arriving at `arrival` (seconds on this end's clock: only
    /// differences of transit times matter, so the two clocks need not
    /// agree).
    pub fn record(&mut self, len: usize, sent: f64, count: u64, arrival: f64) {
        self.bytes += len as u64;
        self.datagrams += 1;
        if count > self.highest {
            // A gap: the counts between were lost, unless they come late.
            self.lost += count - self.highest - 1;
            self.highest = count;
        } else {
            self.out_of_order += 1;
            // A late one fills a gap counted as lost.
            self.lost = self.lost.saturating_sub(1);
        }
        let transit = arrival - sent;
        if let Some(previous) = self.transit {
            let d = (transit - previous).abs();
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.transit = Some(transit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handshake_answers_in_the_clients_byte_order() {
        let little = 0x3637_3839u32.to_le_bytes();
        assert!(is_connect(&little));
        assert_eq!(connect_reply(&little), 0x3938_3736u32.to_le_bytes());
        let big = 0x3637_3839u32.to_be_bytes();
        assert!(is_connect(&big));
        assert_eq!(connect_reply(&big), 0x3938_3736u32.to_be_bytes());
        assert!(!is_connect(b"6788"));
        assert!(!is_connect(&[0x39, 0x38, 0x37, 0x36, 0]));
    }

    #[test]
    fn headers_round_trip_in_both_widths() {
        let at = Instant::from_nanos(3_000_250_000); // 3 s 250 µs
        for wide in [false, true] {
            let mut d = vec![0; 40];
            write_header(&mut d, at, 70_000, wide);
            let (sent, count) = read_header(&d, wide).unwrap();
            assert!((sent - 3.000_25).abs() < 1e-9);
            assert_eq!(count, 70_000);
            assert!(read_header(&d[..header_len(wide) - 1], wide).is_none());
        }
    }

    #[test]
    fn gaps_are_losses_until_late_datagrams_fill_them() {
        let mut r = Reception::default();
        for (count, arrival) in [(1, 0.0), (2, 0.001), (5, 0.004), (3, 0.005)] {
            r.record(100, 0.0 + (count as f64) * 0.001 - 0.001, count, arrival);
        }
        assert_eq!((r.datagrams, r.highest, r.bytes), (4, 5, 400));
        assert_eq!((r.lost, r.out_of_order), (1, 1), "4 lost, 3 late");
    }

    #[test]
    fn jitter_follows_rfc_3550() {
        let mut r = Reception::default();
        // Constant transit: no jitter.
        for i in 0..10 {
            r.record(10, i as f64, i + 1, i as f64 + 0.5);
        }
        assert_eq!(r.jitter, 0.0);
        // One transit 16 ms longer: J moves 1/16 of the way, to 1 ms.
        r.record(10, 10.0, 11, 10.516);
        assert!((r.jitter - 0.001).abs() < 1e-9, "{}", r.jitter);
    }
}
