//! A client run as iperf3 shows it: its JSON (`-J`, iperf3 3.12's
//! schema: `start`, `intervals[]`, `end`, with stackscope's own figures
//! under `stackscope`) and its text lines (intervals, `- - -`, the
//! sender's and receiver's summaries, `[SUM]` with several streams).

use serde_json::{json, Map, Value};

use super::client::{ClientRun, Interval, StreamInterval, StreamTotals};
use super::params::Protocol;

/// What the run's JSON says about where it ran.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// `uname`'s system, release and version.
    pub system_info: String,
    /// Seconds since the epoch at the start.
    pub timesecs: u64,
    /// stackscope's own figures (stack, path, …): the `stackscope` key.
    pub stackscope: Value,
}

fn bps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// RFC 7231 §7.1.1.1's IMF-fixdate, as iperf3 writes `timestamp.time`.
pub fn http_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn host(addr: Option<std::net::SocketAddr>) -> (String, u16) {
    addr.map_or((String::new(), 0), |a| (a.ip().to_string(), a.port()))
}

fn interval_stream(run: &ClientRun, s: &StreamInterval) -> Value {
    let seconds = s.end - s.start;
    let mut v = json!({
        "socket": s.socket, "start": s.start, "end": s.end, "seconds": seconds,
        "bytes": s.bytes, "bits_per_second": bps(s.bytes, seconds),
    });
    let sender = run.local_sends();
    match run.options.protocol {
        Protocol::Tcp if sender => {
            let info = s.tcp.unwrap_or_default();
            v["retransmits"] = s.retransmits.into();
            v["snd_cwnd"] = info.snd_cwnd.into();
            v["snd_wnd"] = info.snd_wnd.into();
            v["rtt"] = info.rtt_us.into();
            v["rttvar"] = info.rttvar_us.into();
            v["pmtu"] = info.pmtu.into();
        }
        Protocol::Tcp => {}
        Protocol::Udp if sender => v["packets"] = s.packets.into(),
        Protocol::Udp => {
            v["jitter_ms"] = (s.jitter * 1000.0).into();
            v["lost_packets"] = s.lost.into();
            v["packets"] = s.packets.into();
            v["lost_percent"] = percent(s.lost, s.packets).into();
        }
    }
    v["omitted"] = false.into();
    v["sender"] = sender.into();
    v
}

fn interval_sum(run: &ClientRun, i: &Interval) -> Value {
    let start = i.streams.first().map_or(0.0, |s| s.start);
    let end = i.streams.first().map_or(0.0, |s| s.end);
    let bytes: u64 = i.streams.iter().map(|s| s.bytes).sum();
    let packets: u64 = i.streams.iter().map(|s| s.packets).sum();
    let lost: u64 = i.streams.iter().map(|s| s.lost).sum();
    let mut v = json!({
        "start": start, "end": end, "seconds": end - start, "bytes": bytes,
        "bits_per_second": bps(bytes, end - start),
    });
    let sender = run.local_sends();
    match run.options.protocol {
        Protocol::Tcp if sender => {
            v["retransmits"] = i.streams.iter().map(|s| s.retransmits).sum::<u64>().into();
        }
        Protocol::Tcp => {}
        Protocol::Udp if sender => v["packets"] = packets.into(),
        Protocol::Udp => {
            let n = i.streams.len().max(1) as f64;
            let jitter: f64 = i.streams.iter().map(|s| s.jitter).sum::<f64>() / n;
            v["jitter_ms"] = (jitter * 1000.0).into();
            v["lost_packets"] = lost.into();
            v["packets"] = packets.into();
            v["lost_percent"] = percent(lost, packets).into();
        }
    }
    v["omitted"] = false.into();
    v["sender"] = sender.into();
    v
}

/// One side's whole-test figures of one stream: this end's or the
/// server's, whichever sent or received.
struct Side {
    bytes: u64,
    seconds: f64,
    packets: u64,
    lost: u64,
    jitter: f64,
    retransmits: Option<u64>,
}

/// (sender, receiver) of stream `s`.
fn sides(run: &ClientRun, s: &StreamTotals) -> (Side, Side) {
    let remote = run.remote.streams.iter().find(|r| r.id == s.id);
    let ours = Side {
        bytes: s.bytes,
        seconds: run.duration,
        packets: s.packets,
        lost: s.lost,
        jitter: s.jitter,
        retransmits: s.retransmits,
    };
    let theirs = Side {
        bytes: remote.map_or(0, |r| r.bytes),
        seconds: remote.map_or(run.duration, |r| {
            if r.end_time > 0.0 {
                r.end_time - r.start_time
            } else {
                run.duration
            }
        }),
        packets: remote.map_or(0, |r| r.packets),
        lost: remote.map_or(0, |r| r.errors),
        jitter: remote.map_or(0.0, |r| r.jitter),
        retransmits: remote.and_then(|r| r.retransmits),
    };
    if run.local_sends() {
        (ours, theirs)
    } else {
        (theirs, ours)
    }
}

fn window(side: &Side) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("start".into(), 0.into());
    m.insert("end".into(), side.seconds.into());
    m.insert("seconds".into(), side.seconds.into());
    m.insert("bytes".into(), side.bytes.into());
    m.insert(
        "bits_per_second".into(),
        bps(side.bytes, side.seconds).into(),
    );
    m
}

/// UDP's end figures: the receiver's counts of the sender's datagrams.
fn udp_fields(m: &mut Map<String, Value>, jitter: f64, lost: u64, packets: u64) {
    m.insert("jitter_ms".into(), (jitter * 1000.0).into());
    m.insert("lost_packets".into(), lost.into());
    m.insert("packets".into(), packets.into());
    m.insert("lost_percent".into(), percent(lost, packets).into());
}

/// The run as iperf3 3.12's `-J` writes it.
pub fn json(run: &ClientRun, info: &RunInfo) -> Value {
    let o = &run.options;
    let sender = run.local_sends();
    let udp = o.protocol == Protocol::Udp;
    let connected: Vec<Value> = run
        .streams
        .iter()
        .map(|s| {
            let (lh, lp) = host(s.local);
            let (rh, rp) = host(s.remote);
            json!({"socket": s.socket, "local_host": lh, "local_port": lp,
                   "remote_host": rh, "remote_port": rp})
        })
        .collect();
    let rate = o.rate.unwrap_or(if udp {
        super::params::DEFAULT_UDP_RATE
    } else {
        0
    });
    let mut start = json!({
        "connected": connected,
        "version": "iperf 3.12",
        "system_info": info.system_info,
        "timestamp": {"time": http_date(info.timesecs), "timesecs": info.timesecs},
        "cookie": run.cookie,
    });
    if run.server_side {
        let (host, port) = host(run.accepted);
        start["accepted_connection"] = json!({"host": host, "port": port});
    } else {
        start["connecting_to"] = json!({"host": o.host_name, "port": o.server.port()});
    }
    if !udp {
        start["tcp_mss_default"] = run.tcp_mss.unwrap_or(0).into();
    }
    start["target_bitrate"] = rate.into();
    start["sock_bufsize"] = o.window.unwrap_or(0).into();
    start["sndbuf_actual"] = run.sndbuf.unwrap_or(0).into();
    start["rcvbuf_actual"] = run.rcvbuf.unwrap_or(0).into();
    start["test_start"] = json!({
        "protocol": o.protocol.name(), "num_streams": o.parallel, "blksize": o.len,
        "omit": 0, "duration": if o.bytes.is_some() { 0 } else { o.time },
        "bytes": o.bytes.unwrap_or(0), "blocks": 0, "reverse": i32::from(o.reverse),
        "tos": 0, "target_bitrate": rate,
    });
    let intervals: Vec<Value> = run
        .intervals
        .iter()
        .map(|i| {
            json!({
                "streams": i.streams.iter().map(|s| interval_stream(run, s)).collect::<Vec<_>>(),
                "sum": interval_sum(run, i),
            })
        })
        .collect();
    let mut streams = Vec::new();
    let mut sum_sent = Side {
        bytes: 0,
        seconds: 0.0,
        packets: 0,
        lost: 0,
        jitter: 0.0,
        retransmits: Some(0),
    };
    let mut sum_recv = Side { ..sum_sent };
    for s in &run.streams {
        let (snd, rcv) = sides(run, s);
        sum_sent.bytes += snd.bytes;
        sum_sent.seconds = sum_sent.seconds.max(snd.seconds);
        sum_sent.packets += snd.packets;
        sum_sent.retransmits = match (sum_sent.retransmits, snd.retransmits) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
        sum_recv.bytes += rcv.bytes;
        sum_recv.seconds = sum_recv.seconds.max(rcv.seconds);
        sum_recv.lost += rcv.lost;
        sum_recv.jitter += rcv.jitter / run.streams.len() as f64;
        if udp {
            let mut m = Map::new();
            m.insert("socket".into(), s.socket.into());
            m.extend(window(&snd));
            udp_fields(&mut m, rcv.jitter, rcv.lost, snd.packets);
            m.insert("out_of_order".into(), s.out_of_order.into());
            m.insert("sender".into(), sender.into());
            streams.push(json!({ "udp": m }));
        } else {
            let mut a = window(&snd);
            // iperf3's server, receiving, leaves out the sender's state.
            if !run.server_side || sender {
                a.insert("retransmits".into(), snd.retransmits.unwrap_or(0).into());
                let own = |x: u64| if sender { x } else { 0 };
                a.insert("max_snd_cwnd".into(), own(s.max_cwnd).into());
                a.insert("max_snd_wnd".into(), own(s.max_snd_wnd).into());
                a.insert("max_rtt".into(), own(s.rtt_max).into());
                a.insert("min_rtt".into(), own(s.rtt_min).into());
                a.insert("mean_rtt".into(), own(s.rtt_mean).into());
            }
            a.insert("sender".into(), sender.into());
            let mut b = window(&rcv);
            b.insert("sender".into(), sender.into());
            a.insert("socket".into(), s.socket.into());
            b.insert("socket".into(), s.socket.into());
            streams.push(json!({ "sender": a, "receiver": b }));
        }
    }
    let mut end = Map::new();
    end.insert("streams".into(), streams.into());
    let mut sent = window(&sum_sent);
    let mut received = window(&sum_recv);
    if udp {
        let mut sum = window(&sum_sent);
        udp_fields(&mut sum, sum_recv.jitter, sum_recv.lost, sum_sent.packets);
        sum.insert("sender".into(), sender.into());
        end.insert("sum".into(), sum.into());
        udp_fields(&mut sent, 0.0, 0, sum_sent.packets);
        udp_fields(
            &mut received,
            sum_recv.jitter,
            sum_recv.lost,
            sum_sent.packets,
        );
    } else if !run.server_side || sender {
        sent.insert(
            "retransmits".into(),
            sum_sent.retransmits.unwrap_or(0).into(),
        );
    }
    // As iperf3: UDP's sums say which side they are, TCP's which end
    // this is.
    sent.insert("sender".into(), (udp || sender).into());
    received.insert("sender".into(), (!udp && sender).into());
    end.insert("sum_sent".into(), sent.into());
    end.insert("sum_received".into(), received.into());
    let (local, remote) = (run.cpu, run.remote.cpu);
    end.insert(
        "cpu_utilization_percent".into(),
        json!({
            "host_total": local.total, "host_user": local.user, "host_system": local.system,
            "remote_total": remote.total, "remote_user": remote.user,
            "remote_system": remote.system,
        }),
    );
    if !udp {
        let ours = run.congestion.clone().unwrap_or_default();
        let theirs = run.remote.congestion.clone().unwrap_or_default();
        let (snd, rcv) = if sender {
            (ours, theirs)
        } else {
            (theirs, ours)
        };
        // iperf3's server names only its own side's.
        if !run.server_side || sender {
            end.insert("sender_tcp_congestion".into(), snd.into());
        }
        if !run.server_side || !sender {
            end.insert("receiver_tcp_congestion".into(), rcv.into());
        }
    }
    json!({
        "start": start,
        "intervals": intervals,
        "end": end,
        "stackscope": info.stackscope,
    })
}

/// The run's JSON as text, its top-level keys in iperf3's order (`start`,
/// `intervals`, `end`, then `stackscope`); keys within them come in
/// serde_json's (alphabetical) order.
pub fn json_text(v: &Value) -> String {
    let mut out = String::from("{\n");
    let keys = ["start", "intervals", "end", "stackscope"];
    let present: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|k| v.get(k).is_some())
        .collect();
    for (i, key) in present.iter().enumerate() {
        let inner = serde_json::to_string_pretty(&v[*key]).unwrap_or_else(|_| "null".into());
        out.push_str(&format!("  \"{key}\": "));
        out.push_str(&inner.replace('\n', "\n  "));
        out.push_str(if i + 1 < present.len() { ",\n" } else { "\n" });
    }
    out.push('}');
    out
}

/// iperf3's units: bytes in binary prefixes, rates in decimal ones, three
/// significant digits.
fn scaled(value: f64, base: f64, units: [&str; 4]) -> String {
    let mut v = value;
    let mut i = 0;
    while v >= base && i < 3 {
        v /= base;
        i += 1;
    }
    let text = if v < 9.995 {
        format!("{v:.2}")
    } else if v < 99.95 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    };
    format!("{text} {}", units[i])
}

#[cfg(test)]
pub(crate) fn percent_for_test(p: f64) -> String {
    percent_text(p)
}

pub fn bytes_text(bytes: u64) -> String {
    scaled(
        bytes as f64,
        1024.0,
        ["Bytes", "KBytes", "MBytes", "GBytes"],
    )
}

pub fn rate_text(bps: f64) -> String {
    scaled(
        bps,
        1000.0,
        ["bits/sec", "Kbits/sec", "Mbits/sec", "Gbits/sec"],
    )
}

/// A loss percentage with two significant digits, as iperf3's `%.2g`
/// (without C's exponent for 100).
fn percent_text(p: f64) -> String {
    if p <= 0.0 || !p.is_finite() {
        return "0".into();
    }
    if p >= 99.5 {
        return "100".into();
    }
    let digits = (1 - p.log10().floor() as i32).max(0) as usize;
    let text = format!("{p:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

fn label(socket: Option<u32>) -> String {
    socket.map_or("[SUM]".into(), |s| format!("[{s:3}]"))
}

/// The header line above the interval lines.
pub fn interval_header(run_protocol: Protocol, sender: bool) -> &'static str {
    match (run_protocol, sender) {
        (Protocol::Tcp, true) => "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd",
        (Protocol::Tcp, false) => "[ ID] Interval           Transfer     Bitrate",
        (Protocol::Udp, true) => {
            "[ ID] Interval           Transfer     Bitrate         Total Datagrams"
        }
        (Protocol::Udp, false) => {
            "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
        }
    }
}

fn line(socket: Option<u32>, start: f64, end: f64, bytes: u64) -> String {
    format!(
        "{:<5} {:6.2}-{:<6.2} sec  {:>10}  {:>14}",
        label(socket),
        start,
        end,
        bytes_text(bytes),
        rate_text(bps(bytes, end - start))
    )
}

/// One interval's lines: a line per stream, `[SUM]` with several, and a
/// separator with several.
pub fn interval_lines(protocol: Protocol, sender: bool, i: &Interval) -> Vec<String> {
    let row = |socket: Option<u32>, s: &StreamInterval, cwnd: Option<u64>| {
        let mut text = line(socket, s.start, s.end, s.bytes);
        match (protocol, sender) {
            (Protocol::Tcp, true) => {
                text.push_str(&format!(" {:4}", s.retransmits));
                if let Some(c) = cwnd {
                    text.push_str(&format!("   {}", bytes_text(c)));
                }
            }
            (Protocol::Tcp, false) => {}
            (Protocol::Udp, true) => text.push_str(&format!("  {}", s.packets)),
            (Protocol::Udp, false) => text.push_str(&format!(
                "  {:.3} ms  {}/{} ({}%)",
                s.jitter * 1000.0,
                s.lost,
                s.packets,
                percent_text(percent(s.lost, s.packets))
            )),
        }
        text
    };
    let mut lines: Vec<String> = i
        .streams
        .iter()
        .map(|s| row(Some(s.socket), s, s.tcp.map(|t| t.snd_cwnd)))
        .collect();
    if i.streams.len() > 1 {
        let first = &i.streams[0];
        let n = i.streams.len() as f64;
        let sum = StreamInterval {
            socket: 0,
            start: first.start,
            end: first.end,
            bytes: i.streams.iter().map(|s| s.bytes).sum(),
            packets: i.streams.iter().map(|s| s.packets).sum(),
            lost: i.streams.iter().map(|s| s.lost).sum(),
            jitter: i.streams.iter().map(|s| s.jitter).sum::<f64>() / n,
            retransmits: i.streams.iter().map(|s| s.retransmits).sum(),
            tcp: None,
        };
        lines.push(row(None, &sum, None));
        lines.push(SEPARATOR.into());
    }
    lines
}

pub const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

/// The closing lines: separator, header, sender and receiver per stream
/// (and `[SUM]`s with several).
pub fn summary_lines(run: &ClientRun) -> Vec<String> {
    let udp = run.options.protocol == Protocol::Udp;
    let mut lines = Vec::new();
    if run.streams.len() == 1 || run.intervals.is_empty() {
        lines.push(SEPARATOR.into());
    }
    lines.push(if udp {
        "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
            .into()
    } else {
        "[ ID] Interval           Transfer     Bitrate         Retr".into()
    });
    let pair = |socket: Option<u32>, snd: &Side, rcv: &Side| -> [String; 2] {
        let mut a = line(socket, 0.0, snd.seconds, snd.bytes);
        let mut b = line(socket, 0.0, rcv.seconds, rcv.bytes);
        if udp {
            a.push_str(&format!("  {:.3} ms  0/{} (0%)  sender", 0.0, snd.packets));
            b.push_str(&format!(
                "  {:.3} ms  {}/{} ({}%)  receiver",
                rcv.jitter * 1000.0,
                rcv.lost,
                snd.packets,
                percent_text(percent(rcv.lost, snd.packets))
            ));
        } else {
            a.push_str(&format!(
                " {:4}             sender",
                snd.retransmits.unwrap_or(0)
            ));
            b.push_str("                  receiver");
        }
        [a, b]
    };
    let mut total = (
        Side {
            bytes: 0,
            seconds: 0.0,
            packets: 0,
            lost: 0,
            jitter: 0.0,
            retransmits: Some(0),
        },
        Side {
            bytes: 0,
            seconds: 0.0,
            packets: 0,
            lost: 0,
            jitter: 0.0,
            retransmits: None,
        },
    );
    for s in &run.streams {
        let (snd, rcv) = sides(run, s);
        lines.extend(pair(Some(s.socket), &snd, &rcv));
        total.0.bytes += snd.bytes;
        total.0.seconds = total.0.seconds.max(snd.seconds);
        total.0.packets += snd.packets;
        total.0.retransmits = Some(
            total
                .0
                .retransmits
                .unwrap_or(0)
                .saturating_add(snd.retransmits.unwrap_or(0)),
        );
        total.1.bytes += rcv.bytes;
        total.1.seconds = total.1.seconds.max(rcv.seconds);
        total.1.lost += rcv.lost;
        total.1.jitter += rcv.jitter / run.streams.len() as f64;
    }
    if run.streams.len() > 1 {
        lines.extend(pair(None, &total.0, &total.1));
    }
    lines
}
