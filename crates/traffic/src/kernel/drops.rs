//! The kernel's own drop counters, read in the namespace a side runs in
//! (`/proc/net/snmp`, `/proc/net/snmp6`, `/proc/net/dev`), by place (see
//! [`crate::losses`]). They count the whole namespace: on loopback any
//! other UDP traffic of the machine at the same time counts too.

use std::collections::BTreeMap;

/// The counters of the calling thread's network namespace, by place.
/// `/proc/net` is the process's (its first thread's) namespace; a side
/// that entered another with `setns` reads `/proc/thread-self/net`.
pub fn snapshot() -> BTreeMap<String, u64> {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/thread-self/net/{name}"))
            .or_else(|_| std::fs::read_to_string(format!("/proc/net/{name}")))
            .unwrap_or_default()
    };
    let mut places = places(&read("snmp"), &read("snmp6"), &read("dev"));
    // Packets queued for a neighbour still being resolved, dropped when
    // its small queue overflowed.
    let unresolved = unresolved_discards(&read("stat/ndisc_cache"))
        + unresolved_discards(&read("stat/arp_cache"));
    places.insert("waiting_for_neighbour".into(), unresolved);
    places
}

/// `/proc/net/stat/{ndisc,arp}_cache`: a header of names, then a row of
/// hexadecimal counters per CPU; the `unresolved_discards` column summed.
fn unresolved_discards(text: &str) -> u64 {
    let mut lines = text.lines();
    let Some(column) = lines.next().and_then(|h| {
        h.split_whitespace()
            .position(|n| n == "unresolved_discards")
    }) else {
        return 0;
    };
    lines
        .filter_map(|l| l.split_whitespace().nth(column))
        .filter_map(|v| u64::from_str_radix(v, 16).ok())
        .sum()
}

/// The places from the three files' text.
pub fn places(snmp: &str, snmp6: &str, dev: &str) -> BTreeMap<String, u64> {
    let v4 = table(snmp);
    let v6 = flat(snmp6);
    let get = |proto: &str, name: &str| {
        v4.get(&(proto.to_string(), name.to_string()))
            .copied()
            .unwrap_or(0)
            + v6.get(&format!("{proto}6{name}")).copied().unwrap_or(0)
    };
    let in_errors = get("Udp", "InErrors");
    let rcvbuf = get("Udp", "RcvbufErrors");
    let csum = get("Udp", "InCsumErrors");
    let mut places = BTreeMap::new();
    places.insert("socket_receive_queue_full".into(), rcvbuf);
    places.insert("checksum".into(), csum);
    // InErrors counts the two above as well (and memory errors).
    places.insert(
        "udp_input_other".into(),
        in_errors.saturating_sub(rcvbuf + csum),
    );
    places.insert("send_buffer_full".into(), get("Udp", "SndbufErrors"));
    places.insert("reassembly".into(), get("Ip", "ReasmFails"));
    places.insert("ip_input_discards".into(), get("Ip", "InDiscards"));
    places.insert("device_drops".into(), device_drops(dev));
    places
}

/// `/proc/net/snmp`: pairs of lines, names then values, keyed by
/// (protocol, name).
fn table(text: &str) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        let [names, values] = pair else { continue };
        let (Some((proto, names)), Some((_, values))) =
            (names.split_once(':'), values.split_once(':'))
        else {
            continue;
        };
        for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
            if let Ok(v) = value.parse() {
                out.insert((proto.to_string(), name.to_string()), v);
            }
        }
    }
    out
}

/// `/proc/net/snmp6`: one `Name value` per line.
fn flat(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some((words.next()?.to_string(), words.next()?.parse().ok()?))
        })
        .collect()
}

/// Received and transmitted drops of every interface (`/proc/net/dev`:
/// the 4th and 12th numbers after the name).
fn device_drops(text: &str) -> u64 {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(_, numbers)| {
            let n: Vec<u64> = numbers
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            n.get(3).unwrap_or(&0) + n.get(11).unwrap_or(&0)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_read_into_places() {
        let snmp = "Ip: Forwarding InDiscards ReasmFails\nIp: 1 2 3\n\
                    Udp: InDatagrams InErrors RcvbufErrors SndbufErrors InCsumErrors\n\
                    Udp: 100 10 7 1 2\n";
        let snmp6 = "Udp6InErrors 5\nUdp6RcvbufErrors 5\nIp6ReasmFails 1\n";
        let dev = "Inter-| Receive | Transmit\n face |bytes packets errs drop|...\n\
                   lo: 1 2 0 4 0 0 0 0 1 2 0 6 0 0 0 0\n";
        let p = places(snmp, snmp6, dev);
        assert_eq!(p["socket_receive_queue_full"], 12);
        assert_eq!(p["checksum"], 2);
        assert_eq!(p["udp_input_other"], 1);
        assert_eq!(p["send_buffer_full"], 1);
        assert_eq!(p["reassembly"], 4);
        assert_eq!(p["ip_input_discards"], 2);
        assert_eq!(p["device_drops"], 10);
    }

    #[test]
    fn unresolved_discards_are_summed_over_the_cpus() {
        let text = "entries lookups unresolved_discards table_fulls\n\
                    00000005 000000a3 00000010 00000000\n\
                    00000005 00000097 0000000a 00000000\n";
        assert_eq!(unresolved_discards(text), 26);
        assert_eq!(unresolved_discards(""), 0);
    }
}
