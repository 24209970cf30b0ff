//! Issue 23's SYN flood mix as frames from the kernel's side of the TAP,
//! and the resident memory of the host process.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::frames::{checksum, ethernet, ipv4, ipv6, pseudo_header6, ETHERTYPE_IPV4};
use super::frames::{ETHERTYPE_IPV6, TCP, TCP_SYN};
use super::malformed::Forge;

/// `VmRSS` of `/proc/PID/status` in KiB (0 once the process is gone).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A SYN from `src`:`port` to the host's `dst`:`dst_port`, offering MSS
/// 1460, window scaling and SACK, in a frame from `src_mac`.
fn syn(f: &Forge, src_mac: [u8; 6], src: IpAddr, port: u16, dst_port: u16, isn: u32) -> Vec<u8> {
    let options = [2, 4, 5, 0xb4, 1, 3, 3, 7, 4, 2, 0, 0];
    let mut segment = Vec::new();
    segment.extend_from_slice(&port.to_be_bytes());
    segment.extend_from_slice(&dst_port.to_be_bytes());
    segment.extend_from_slice(&isn.to_be_bytes());
    segment.extend_from_slice(&0u32.to_be_bytes());
    segment.extend_from_slice(&[((20 + options.len()) / 4) as u8 * 16, TCP_SYN]);
    segment.extend_from_slice(&65_535u16.to_be_bytes());
    segment.extend_from_slice(&[0, 0, 0, 0]);
    segment.extend_from_slice(&options);
    match src {
        IpAddr::V6(s) => {
            let sum = checksum(&[&pseudo_header6(s, f.h6, TCP, segment.len()), &segment]);
            segment[16..18].copy_from_slice(&sum.to_be_bytes());
            ethernet(
                f.host_mac,
                src_mac,
                ETHERTYPE_IPV6,
                &ipv6(s, f.h6, TCP, 64, &segment),
            )
        }
        IpAddr::V4(s) => {
            let mut pseudo = s.octets().to_vec();
            pseudo.extend_from_slice(&f.h4.octets());
            pseudo.extend_from_slice(&[0, TCP]);
            pseudo.extend_from_slice(&(segment.len() as u16).to_be_bytes());
            let sum = checksum(&[&pseudo, &segment]);
            segment[16..18].copy_from_slice(&sum.to_be_bytes());
            ethernet(
                f.host_mac,
                src_mac,
                ETHERTYPE_IPV4,
                &ipv4(s, f.h4, TCP, 1, 0, &segment),
            )
        }
    }
}

/// The flood of issue 23, item 5, to the host's `port`: 6000 SYNs from
/// random on-link sources (half IPv4 in the /24, half IPv6 in the /64,
/// each from a random MAC), 4000 from the kernel's IPv6 address and 4000
/// from its IPv4 one (random ports; the kernel resets the SYN-ACKs),
/// interleaved, in a repeatable order.
pub fn syn_flood_mix(f: &Forge, port: u16, seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut on_link, mut from6, mut from4) = (6000u32, 4000u32, 4000u32);
    let mut frames = Vec::with_capacity(14_000);
    while on_link + from6 + from4 > 0 {
        let r = next();
        let pick = (r % u64::from(on_link + from6 + from4)) as u32;
        let src_port = 1024 + ((r >> 16) % 60_000) as u16;
        let (mac, src) = if pick < on_link {
            on_link -= 1;
            let b = next().to_be_bytes();
            let mac = [(b[0] & 0xfe) | 0x02, b[1], b[2], b[3], b[4], b[5]];
            if on_link.is_multiple_of(2) {
                let o = f.h4.octets();
                let host = 10 + (b[6] % 240);
                (mac, IpAddr::V4(Ipv4Addr::new(o[0], o[1], o[2], host)))
            } else {
                let s = f.h6.segments();
                let w = |i: usize| u16::from_be_bytes([b[i % 8], b[(i + 1) % 8]]);
                let src = Ipv6Addr::new(s[0], s[1], s[2], s[3], w(0) | 0x100, w(2), w(4), w(6));
                (mac, IpAddr::V6(src))
            }
        } else if pick < on_link + from6 {
            from6 -= 1;
            (f.kernel_mac, IpAddr::V6(f.k6))
        } else {
            from4 -= 1;
            (f.kernel_mac, IpAddr::V4(f.k4))
        };
        frames.push(syn(f, mac, src, src_port, port, (r >> 8) as u32));
    }
    frames
}
