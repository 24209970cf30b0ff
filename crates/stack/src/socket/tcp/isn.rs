//! Initial sequence numbers per RFC 6528 §3:
//!
//! ```text
//! ISN = M + F(localip, localport, remoteip, remoteport, secretkey)
//! ```
//!
//! M is a 4-microsecond clock (RFC 9293 §3.4.1) and F a keyed
//! pseudo-random function, here SipHash-2-4 with a 128-bit key drawn once
//! per host. Connections between the same endpoints get increasing ISNs
//! (so old duplicates stay below the new window), while an off-path
//! attacker cannot predict them. The same keyed function makes SYN
//! cookies.

use std::net::{IpAddr, SocketAddr};

use super::seq::Seq;
use crate::time::Instant;

/// SipHash-2-4 (Aumasson and Bernstein, 2012) over `data` with a 128-bit
/// key.
pub fn siphash24(key: [u64; 2], data: &[u8]) -> u64 {
    let mut v = [
        key[0] ^ 0x736f_6d65_7073_6575,
        key[1] ^ 0x646f_7261_6e64_6f6d,
        key[0] ^ 0x6c79_6765_6e65_7261,
        key[1] ^ 0x7465_6462_7974_6573,
    ];
    let round = |v: &mut [u64; 4]| {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    };
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let m = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    // The last block: the remaining bytes, and the length's low byte on
    // top.
    let mut last = [0u8; 8];
    let rest = chunks.remainder();
    last[..rest.len()].copy_from_slice(rest);
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    round(&mut v);
    round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// A host's secret for ISNs and SYN cookies.
#[derive(Clone, Copy)]
pub struct IsnGenerator {
    key: [u64; 2],
}

impl std::fmt::Debug for IsnGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays secret, even in debug output.
        f.write_str("IsnGenerator { .. }")
    }
}

impl IsnGenerator {
    pub fn new(key: [u64; 2]) -> Self {
        Self { key }
    }

    /// F of RFC 6528: the keyed hash of the connection's four-tuple and
    /// `extra` (0 for ISNs; SYN cookies mix in their time counter).
    pub fn hash(&self, local: SocketAddr, remote: SocketAddr, extra: u32) -> u32 {
        let mut data = [0u8; 16 + 2 + 16 + 2 + 4];
        let mut put_ip = |at: usize, ip: IpAddr| match ip {
            IpAddr::V4(v4) => data[at..at + 16].copy_from_slice(&v4.to_ipv6_mapped().octets()),
            IpAddr::V6(v6) => data[at..at + 16].copy_from_slice(&v6.octets()),
        };
        put_ip(0, local.ip());
        put_ip(18, remote.ip());
        data[16..18].copy_from_slice(&local.port().to_be_bytes());
        data[34..36].copy_from_slice(&remote.port().to_be_bytes());
        data[36..40].copy_from_slice(&extra.to_be_bytes());
        siphash24(self.key, &data) as u32
    }

    /// The ISN for a connection from `local` to `remote` at `now`: the
    /// 4-microsecond clock M (RFC 9293 §3.4.1) plus F.
    pub fn isn(&self, now: Instant, local: SocketAddr, remote: SocketAddr) -> Seq {
        let m = (now.as_nanos() / 4_000) as u32;
        Seq(m.wrapping_add(self.hash(local, remote, 0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference vectors of the SipHash paper (Appendix A) and its
    /// reference implementation: key 00..0f, messages 00.. of length n.
    #[test]
    fn siphash_matches_the_reference_vectors() {
        let key = [
            u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]),
            u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]),
        ];
        let message: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(key, &message), 0xa129_ca61_49be_45e5);
        assert_eq!(siphash24(key, &[]), 0x726f_db47_dd0e_0e31);
    }

    #[test]
    fn isns_differ_per_connection_and_grow_with_time() {
        let gen = IsnGenerator::new([1, 2]);
        let a: SocketAddr = "[2001:db8::1]:40000".parse().unwrap();
        let b: SocketAddr = "[2001:db8::2]:80".parse().unwrap();
        let c: SocketAddr = "[2001:db8::2]:81".parse().unwrap();
        let t0 = Instant::from_nanos(1_000_000);
        assert_ne!(gen.isn(t0, a, b), gen.isn(t0, a, c));
        // Same four-tuple a second later: 250 000 ticks of 4 us ahead.
        let t1 = Instant::from_nanos(1_001_000_000);
        assert_eq!(gen.isn(t1, a, b) - gen.isn(t0, a, b), 250_000);
        // Another key, another sequence space.
        assert_ne!(IsnGenerator::new([3, 4]).isn(t0, a, b), gen.isn(t0, a, b));
    }
}
