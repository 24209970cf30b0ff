//! Every loss has a place: the drop counters of a run, by place, and the
//! attribution of a datagram run's lost datagrams to them.
//!
//! Counters count packets (an 8 KB datagram over Ethernet is six
//! fragments, and one lost datagram may have lost several) and see
//! control traffic too, so they are not lost datagrams yet:
//! [`attribute`] turns them into places that add up to the lost count.

use std::collections::BTreeMap;

/// The place for what no counter explains: zero when the accounting is
/// complete.
pub const UNATTRIBUTED: &str = "unattributed";

/// Shares `lost` datagrams among the places that dropped packets
/// (`drops`), so that the places add up to `lost` exactly:
///
/// * when the places dropped no more packets than datagrams were lost
///   (one packet per datagram: no fragmentation), each place gets its
///   count and the rest is [`UNATTRIBUTED`];
/// * when they dropped more (fragments of one datagram, or control
///   packets), the lost datagrams are shared in proportion to each
///   place's drops (largest remainder), nothing unattributed.
pub fn attribute(lost: u64, drops: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let counted: u64 = drops.values().sum();
    let mut places: BTreeMap<String, u64> = BTreeMap::new();
    if counted <= lost {
        for (place, &n) in drops.iter().filter(|(_, &n)| n > 0) {
            places.insert(place.clone(), n);
        }
        places.insert(UNATTRIBUTED.into(), lost - counted);
        return places;
    }
    // Proportional shares, floors first, then the remainders largest first
    // (ties by name, so the result is deterministic).
    let mut remainders = Vec::new();
    let mut given = 0u64;
    for (place, &n) in drops.iter().filter(|(_, &n)| n > 0) {
        let exact = u128::from(lost) * u128::from(n);
        let share = (exact / u128::from(counted)) as u64;
        remainders.push((exact % u128::from(counted), place.clone()));
        places.insert(place.clone(), share);
        given += share;
    }
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (_, place) in remainders.into_iter().take((lost - given) as usize) {
        *places.entry(place).or_default() += 1;
    }
    places.retain(|_, n| *n > 0);
    places.insert(UNATTRIBUTED.into(), 0);
    places
}

/// `after - before` per place (counters only grow; a reset reads as 0).
pub fn delta(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(k, &v)| (k.clone(), v.saturating_sub(*before.get(k).unwrap_or(&0))))
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// Adds `more` into `into`, place by place.
pub fn add(into: &mut BTreeMap<String, u64>, more: &BTreeMap<String, u64>) {
    for (k, v) in more {
        *into.entry(k.clone()).or_default() += v;
    }
}

/// The place of one of the reference stack's drop reasons
/// (`Host::drops()`), or `None` for reasons only control traffic meets
/// (neighbour discovery, MLD, ICMP, TCP, frames for other hosts).
pub fn stack_place(reason: &str) -> Option<String> {
    const CONTROL: [&str; 12] = [
        "ndisc_",
        "mld_",
        "dad_",
        "icmp",
        "redirect_",
        "manual_",
        "tcp_",
        "arp_malformed",
        "arp_rejected",
        "arp_no_ipv4",
        "ethernet_not_for_us",
        "link_multicast_refused",
    ];
    if CONTROL.iter().any(|c| reason.starts_with(c)) {
        return None;
    }
    Some(
        if reason == "ip_input_queue_full" {
            "ip_input_queue_full"
        } else if reason.contains("reassembly") {
            "reassembly"
        } else if reason.ends_with("_receive_queue_full") {
            "socket_receive_queue_full"
        } else if reason.ends_with("_no_buffer") {
            "buffer_pool_empty"
        } else if reason.ends_with("_bad_checksum") {
            "checksum"
        } else if reason.ends_with("_queue_overflow") || reason.ends_with("_unreachable") {
            "waiting_for_neighbour"
        } else {
            return Some(format!("stack:{reason}"));
        }
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn whole_datagrams_keep_their_counts_and_the_rest_is_unattributed() {
        let places = attribute(10, &map(&[("wire_loss", 3), ("interface_queue_full", 5)]));
        assert_eq!(
            places,
            map(&[
                ("wire_loss", 3),
                ("interface_queue_full", 5),
                (UNATTRIBUTED, 2)
            ])
        );
    }

    #[test]
    fn fragments_share_the_lost_datagrams_in_proportion_and_add_up() {
        // 7 datagrams lost, 6 fragments each at most: 30 fragments at the
        // interface queue, 12 on the wire.
        let places = attribute(7, &map(&[("interface_queue_full", 30), ("wire_loss", 12)]));
        assert_eq!(places.values().sum::<u64>(), 7);
        assert_eq!(places["interface_queue_full"], 5);
        assert_eq!(places["wire_loss"], 2);
        assert_eq!(places[UNATTRIBUTED], 0);
    }

    #[test]
    fn nothing_lost_is_nowhere() {
        let places = attribute(0, &map(&[("stack:ipv6_no_route", 2)]));
        assert_eq!(places, map(&[(UNATTRIBUTED, 0)]));
    }

    #[test]
    fn control_traffic_reasons_are_no_place_and_data_reasons_are_named() {
        assert_eq!(stack_place("ndisc_ns_invalid"), None);
        assert_eq!(stack_place("ethernet_not_for_us"), None);
        assert_eq!(
            stack_place("udp_receive_queue_full").as_deref(),
            Some("socket_receive_queue_full")
        );
        assert_eq!(
            stack_place("ipv4_reassembly_timeout").as_deref(),
            Some("reassembly")
        );
        assert_eq!(
            stack_place("ipv6_no_route").as_deref(),
            Some("stack:ipv6_no_route")
        );
    }

    #[test]
    fn delta_keeps_what_grew() {
        let d = delta(
            &map(&[("a", 2), ("b", 5)]),
            &map(&[("a", 2), ("b", 9), ("c", 1)]),
        );
        assert_eq!(d, map(&[("b", 4), ("c", 1)]));
    }
}
