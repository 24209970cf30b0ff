//! What the two ends agree on in the SYN exchange: maximum segment size
//! (RFC 9293 §3.7.1), window scaling and timestamps (RFC 7323), SACK
//! (RFC 2018); and the PAWS test (RFC 7323 §5) on every later segment.

use std::time::Duration;

use wire::tcp::TcpRepr;

/// Bytes of the fixed TCP header.
pub const TCP_HEADER: usize = 20;
/// Bytes the timestamps option takes in every segment (10, padded to 12).
pub const TIMESTAMPS_OPTION: usize = 12;
/// The largest window shift (RFC 7323 §2.3): the window field times 2^14
/// stays below 2^30, half the sequence space.
pub const MAX_WINDOW_SHIFT: u8 = 14;
/// The send MSS assumed without an MSS option (RFC 9293 §3.7.1: 536 for
/// IPv4; RFC 8200 §5 makes 1280 - 40 - 20 = 1220 the IPv6 equivalent).
pub const DEFAULT_MSS_V4: usize = 536;
pub const DEFAULT_MSS_V6: usize = 1220;

/// The smallest MSS taken from a peer: a smaller MSS option is raised to
/// it (and the host counts the clamp).
///
/// A peer announcing MSS 0 or 1 would make us send its data one byte per
/// segment — 300 bytes as 300 segments, each with 40 or more bytes of
/// headers — which is the amplification behind Linux's CVE-2019-11479
/// (SACK-driven fragmentation of the send queue into tiny segments). Linux
/// answered with `tcp_min_snd_mss`, 48 by default: 40 bytes of options
/// plus 8 of data. We follow FreeBSD's `net.inet.tcp.minmss` instead, 216:
/// the MSS of a 256-byte IPv4 datagram (216 + 20 + 20), below any link a
/// real path has (IPv6 cannot go under 1280, RFC 8200 §5, and the smallest
/// IPv4 links in use, SLIP's 296, are above it), yet small enough that a
/// 300-byte write costs two segments rather than 300. It raises only what
/// the peer announces: our own MSS and the path MTU (RFC 1191) are
/// untouched.
pub const MIN_PEER_MSS: usize = 216;

/// The peer's MSS option raised to [`MIN_PEER_MSS`]: `Some(floor)` when it
/// was below, `None` when it stands (or there is none).
pub fn clamped_peer_mss(peer: &TcpRepr) -> Option<u16> {
    peer.max_seg_size
        .filter(|&mss| usize::from(mss) < MIN_PEER_MSS)
        .map(|_| MIN_PEER_MSS as u16)
}

/// What this end offers in its SYN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalOptions {
    /// The MSS option value: the interface MTU minus IP and TCP headers.
    pub mss: u16,
    /// The shift applied to windows we advertise, chosen from the receive
    /// buffer size ([`window_shift_for`]).
    pub window_shift: u8,
    pub sack: bool,
    pub timestamps: bool,
}

/// What both ends use after the SYN exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// The largest payload we send in one segment, options excluded.
    pub send_mss: usize,
    /// Shift of the windows the peer advertises to us.
    pub send_window_shift: u8,
    /// Shift of the windows we advertise.
    pub recv_window_shift: u8,
    pub sack: bool,
    pub timestamps: bool,
}

/// The MSS option for an interface MTU (RFC 9293 §3.7.1: the largest
/// segment the interface can receive minus the fixed IP and TCP headers).
pub fn mss_for_mtu(mtu: usize, ipv6: bool) -> u16 {
    let ip = if ipv6 { 40 } else { 20 };
    mtu.saturating_sub(ip + TCP_HEADER)
        .min(usize::from(u16::MAX)) as u16
}

/// The smallest shift that lets a `buffer`-byte window fit the 16-bit
/// field (RFC 7323 §2.2), at most [`MAX_WINDOW_SHIFT`].
pub fn window_shift_for(buffer: usize) -> u8 {
    let mut shift = 0u8;
    while shift < MAX_WINDOW_SHIFT && (buffer >> shift) > usize::from(u16::MAX) {
        shift += 1;
    }
    shift
}

/// Combines our offer with the peer's SYN (or SYN-ACK).
///
/// * Window scaling and timestamps hold only if both SYNs carried the
///   option (RFC 7323 §2.2, §3.2); a peer shift above 14 counts as 14
///   (§2.3).
/// * SACK likewise (RFC 2018 §2).
/// * The send MSS is the peer's option (raised to [`MIN_PEER_MSS`]), or
///   the default of the family, no larger than our own path allows
///   (`path_mss`), less the timestamps option when it will ride in every
///   segment (RFC 9293 §3.7.1: the effective send MSS leaves room for
///   options).
pub fn negotiate(local: &LocalOptions, peer: &TcpRepr, ipv6: bool, path_mss: usize) -> Negotiated {
    // We always offer window scaling (shift 0 included, so the peer may
    // scale even when our windows fit 16 bits): the peer decides.
    let scaling = peer.window_scale.is_some();
    let timestamps = local.timestamps && peer.timestamps.is_some();
    let default = if ipv6 { DEFAULT_MSS_V6 } else { DEFAULT_MSS_V4 };
    let peer_mss = peer
        .max_seg_size
        .map_or(default, |mss| usize::from(mss).max(MIN_PEER_MSS));
    let options = if timestamps { TIMESTAMPS_OPTION } else { 0 };
    // A path narrower than the options still moves a byte per segment.
    let send_mss = peer_mss.min(path_mss).saturating_sub(options).max(1);
    Negotiated {
        send_mss,
        send_window_shift: if scaling {
            peer.window_scale.unwrap_or(0).min(MAX_WINDOW_SHIFT)
        } else {
            0
        },
        recv_window_shift: if scaling { local.window_shift } else { 0 },
        sack: local.sack && peer.sack_permitted,
        timestamps,
    }
}

/// How long TS.Recent stays valid for PAWS: RFC 7323 §5.5 invalidates it
/// after 24 days of idleness, before the peer's timestamp clock could
/// wrap past it.
pub const PAWS_IDLE: Duration = Duration::from_secs(24 * 24 * 3600);

/// The PAWS test (RFC 7323 §5.3 R1): a segment whose TSval is older than
/// TS.Recent is an old duplicate and is dropped (after sending an ACK),
/// unless TS.Recent has been idle for [`PAWS_IDLE`].
pub fn paws_rejects(ts_recent: u32, idle: Duration, seg_tsval: u32) -> bool {
    idle < PAWS_IDLE && (seg_tsval.wrapping_sub(ts_recent) as i32) < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syn(mss: Option<u16>, scale: Option<u8>, sack: bool, ts: bool) -> TcpRepr {
        TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq_number: 0,
            ack_number: None,
            flags: wire::tcp::TcpFlags::SYN,
            window_len: 65535,
            urgent_pointer: 0,
            max_seg_size: mss,
            window_scale: scale,
            sack_permitted: sack,
            sack_ranges: [None; 4],
            timestamps: ts.then_some((1, 0)),
            unknown_options: Default::default(),
            payload_len: 0,
        }
    }

    const LOCAL: LocalOptions = LocalOptions {
        mss: 1460,
        window_shift: 7,
        sack: true,
        timestamps: true,
    };

    #[test]
    fn mss_and_shift_follow_the_mtu_and_the_buffer() {
        assert_eq!(mss_for_mtu(1500, false), 1460);
        assert_eq!(mss_for_mtu(1500, true), 1440);
        assert_eq!(mss_for_mtu(100, true), 40);
        assert_eq!(mss_for_mtu(30, true), 0);
        assert_eq!(window_shift_for(65_535), 0);
        assert_eq!(window_shift_for(65_536), 1);
        assert_eq!(window_shift_for(4 << 20), 7);
        assert_eq!(window_shift_for(usize::MAX), MAX_WINDOW_SHIFT);
    }

    #[test]
    fn options_hold_only_when_both_ends_offer_them() {
        let both = negotiate(&LOCAL, &syn(Some(1440), Some(9), true, true), true, 1440);
        assert_eq!(
            both,
            Negotiated {
                send_mss: 1428,
                send_window_shift: 9,
                recv_window_shift: 7,
                sack: true,
                timestamps: true,
            }
        );
        let bare = negotiate(&LOCAL, &syn(None, None, false, false), false, 1460);
        assert_eq!(
            bare,
            Negotiated {
                send_mss: DEFAULT_MSS_V4,
                send_window_shift: 0,
                recv_window_shift: 0,
                sack: false,
                timestamps: false,
            }
        );
        // A shift above 14 is taken as 14; our path MTU caps the MSS.
        let odd = negotiate(&LOCAL, &syn(Some(9000), Some(30), false, false), true, 1440);
        assert_eq!((odd.send_window_shift, odd.send_mss), (14, 1440));
        // An MSS option of 0 or 1 is raised to the floor (less the
        // timestamps option); one at the floor or above stands.
        assert_eq!(
            negotiate(&LOCAL, &syn(Some(0), None, false, true), true, 1440).send_mss,
            MIN_PEER_MSS - TIMESTAMPS_OPTION
        );
        assert_eq!(
            negotiate(&LOCAL, &syn(Some(1), None, false, false), false, 1460).send_mss,
            MIN_PEER_MSS
        );
        assert_eq!(
            negotiate(&LOCAL, &syn(Some(300), None, false, false), false, 1460).send_mss,
            300
        );
        assert_eq!(
            clamped_peer_mss(&syn(Some(1), None, false, false)),
            Some(MIN_PEER_MSS as u16)
        );
        assert_eq!(clamped_peer_mss(&syn(Some(216), None, false, false)), None);
        assert_eq!(clamped_peer_mss(&syn(None, None, false, false)), None);
    }

    #[test]
    fn paws_drops_older_timestamps_across_the_wrap() {
        let fresh = Duration::from_secs(1);
        assert!(paws_rejects(1000, fresh, 999));
        assert!(!paws_rejects(1000, fresh, 1000));
        assert!(!paws_rejects(u32::MAX - 5, fresh, 3));
        assert!(paws_rejects(3, fresh, u32::MAX - 5));
        assert!(!paws_rejects(1000, PAWS_IDLE, 999));
    }
}
