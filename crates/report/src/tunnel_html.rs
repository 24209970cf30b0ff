//! IPv6 over a tunnel beside native IPv6, per layer: the IPv6 study's
//! testbed carried its IPv6 over 6-over-4 (Xie 1999, `000_…` §5), so its
//! figures hold a layer a native run lacks — the encapsulation and the
//! host's IPv4 under it. For each traced run whose windows hold tunnel
//! time (`analysis::tunnel_part`) and the native run of its protocol and
//! family on a wire of the same rate, this section gives the path MTU and
//! payload per packet of each, the tunnel's share of the windows, the
//! windows split by layer with the tunnel's rows apart, and the study's
//! published shares beside ours.

use std::fmt::Write;

use analysis::sweep::{PathFigures, SizePoint, Split, Stat};
use probe::{Category, Layer};

use crate::html::escape;
use crate::layers_compared::{cell, row};
use crate::model::{Experiment, MessagesRun};

/// Most sizes a layer table shows (evenly over the common sizes).
const MAX_SIZES: usize = 4;

/// The section's anchor for `experiment`.
pub fn anchor(experiment: &str) -> String {
    format!("{experiment}-over-tunnel")
}

/// Whether a run's windows hold a tunnel's time.
pub fn is_tunnelled(run: &MessagesRun) -> bool {
    run.points.iter().any(|p| {
        p.send
            .as_ref()
            .is_some_and(|s| s.stop_split.tunnel_total.is_some())
    })
}

/// Each tunnelled run with the first native run of its protocol and
/// family on a wire of the same rate.
fn pairs(experiment: &Experiment) -> Vec<(&MessagesRun, &MessagesRun)> {
    experiment
        .runs
        .iter()
        .filter(|r| is_tunnelled(r))
        .filter_map(|tunnel| {
            let native = experiment.runs.iter().find(|r| {
                !is_tunnelled(r)
                    && r.protocol == tunnel.protocol
                    && r.family == tunnel.family
                    && r.link_bps == tunnel.link_bps
                    && r.points.len() >= 2
            })?;
            Some((tunnel, native))
        })
        .collect()
}

/// The section, or nothing when the experiment has no tunnelled run with
/// a native twin.
pub fn beside_native(h: &mut String, experiment: &Experiment) {
    let pairs = pairs(experiment);
    if pairs.is_empty() {
        return;
    }
    let _ = write!(
        h,
        "<h3 id=\"{}\">{}: IPv6 over a tunnel beside native IPv6, the tunnel's layer</h3>\
         <p class=\"note\">Each tunnelled run sends the same messages as its native twin over a wire of the same rate, its IPv6 carried in IPv4 on the same hosts (docs/tunnels.md). The windows are split by the layer of each span's probe site as elsewhere, with the tunnel's spans taken out of their layers into rows of their own: <b>tunnel: encapsulation</b> (<code>tunnel.transmit</code> / <code>tunnel.receive</code>, their own time), <b>tunnel: IPv4</b> (the encapsulating <code>ipv4.output</code> and the outer <code>ipv4.input</code>, with the IPv4 route and neighbour lookups inside them), and the buffers, copies and checksums inside the tunnel's spans. The link's own spans under the tunnel (<code>link.transmit</code>) stay in <b>link</b>, as over native IPv6. Per message the rows add up to the window; each cell is the mean µs per message with its 95 % half-width and n, and the last column the tunnel's difference from native (Welch, <b>same</b>: not significant at 95 %).</p>",
        escape(&anchor(&experiment.name)),
        escape(&experiment.name),
    );
    // The study's published shares are the IPv6 study's (Xie 1999, seed
    // `000_…`): beside its own runs only.
    let study = experiment.source.starts_with("000_");
    for (tunnel, native) in pairs {
        pair_section(h, tunnel, native, study);
    }
}

fn pair_section(h: &mut String, tunnel: &MessagesRun, native: &MessagesRun, study: bool) {
    let _ = write!(
        h,
        "<h4>{} over {}: <code>{}</code> ({}) beside <code>{}</code> ({})</h4>",
        escape(&tunnel.protocol),
        escape(&tunnel.family),
        escape(&tunnel.id),
        escape(&tunnel.link),
        escape(&native.id),
        escape(&native.link),
    );
    path_table(h, tunnel, native, study);
    shares_table(h, tunnel);
    let sizes = common_sizes(tunnel, native);
    for receive in [false, true] {
        layer_table(h, tunnel, native, &sizes, receive);
    }
    if study {
        study_table(h, tunnel);
    }
}

/// The path each run took: MTU, payload per packet, frames per message.
fn path_table(h: &mut String, tunnel: &MessagesRun, native: &MessagesRun, study: bool) {
    let largest = |run: &MessagesRun| {
        run.points
            .iter()
            .rev()
            .find_map(|p| Some((p.size, p.send.as_ref()?.frames)))
    };
    let frames = |run: &MessagesRun| {
        largest(run).map_or("-".into(), |(size, frames)| {
            format!("{frames:.1} at {}", crate::units::size(u64::from(size)))
        })
    };
    let _ = write!(
        h,
        "<table><caption>The path: the IP MTU the run's family had, the payload one full packet carries (after the IP, transport, timestamp and trace-option headers; for UDP one fragment's share), and the frames of the largest message</caption>\
         <tr><th class=\"l\">figure</th><th>{} (tunnel)</th><th>{} (native)</th><th>{}</th></tr>\
         <tr><td class=\"l\">IPv6 path MTU, bytes</td><td>{}</td><td>{}</td><td>1480 (1500 − 20 of IPv4)</td></tr>\
         <tr><td class=\"l\">payload per full packet, bytes</td><td>{:.0}</td><td>{:.0}</td><td>TCP MSS 1420 (1500 − 20 − 40 − 20; no timestamps, no trace option)</td></tr>\
         <tr><td class=\"l\">frames per message (send, mean)</td><td>{}</td><td>{}</td><td>-</td></tr></table>",
        escape(&tunnel.id),
        escape(&native.id),
        if study {
            "the study"
        } else {
            "the IPv6 study's 6-over-4 testbed (Xie 1999)"
        },
        tunnel.path_mtu,
        native.path_mtu,
        tunnel.segment_bytes,
        native.segment_bytes,
        frames(tunnel),
        frames(native),
    );
}

/// The tunnel's share of each path's stop window, per size and over the
/// sweep.
fn shares_table(h: &mut String, tunnel: &MessagesRun) {
    let _ = write!(
        h,
        "<table><caption>{}: the tunnel's share of each message's stop window (send: {}; receive: to the last byte queued for the reader) and of the stack's own work in it (every layer's span time: no wire, no time in no span). Per size: the mean of the messages' shares, 95 % interval, n messages; over the sweep: the mean of the sizes' means, its 95 % interval over the sizes, n sizes.</caption>\
         <tr><th class=\"l\">path</th><th>of the stop window, %</th><th>of the stack's work, %</th><th>tunnel µs per message at the largest size</th></tr>",
        escape(&tunnel.id),
        escape(tunnel.stop_at.describe()),
    );
    for (name, receive) in [("send", false), ("receive", true)] {
        let splits: Vec<&Split> = tunnel
            .points
            .iter()
            .filter_map(|p| path(Some(p), receive))
            .map(|f| &f.stop_split)
            .collect();
        let over = |pick: fn(&Split) -> Option<&Stat>| {
            let means: Vec<f64> = splits
                .iter()
                .filter_map(|s| pick(s))
                .map(|s| 100.0 * s.mean)
                .collect();
            Stat::of(&means).map_or("-".into(), |s| percent_cell(&s, "sizes"))
        };
        let largest = splits
            .last()
            .and_then(|s| s.tunnel_total.as_ref())
            .map_or("-".into(), |s| cell(Some(s)));
        let _ = write!(
            h,
            "<tr><td class=\"l\">{name}</td><td>{}</td><td>{}</td><td>{largest}</td></tr>",
            over(|s| s.tunnel_share.as_ref()),
            over(|s| s.tunnel_share_of_stack.as_ref()),
        );
    }
    h.push_str("</table>");
}

fn percent_cell(s: &Stat, of: &str) -> String {
    match s.ci95 {
        Some(ci) => format!(
            "{:.2} ({:.2} … {:.2}), n {} {of}",
            s.mean, ci.lo, ci.hi, s.n
        ),
        None => format!("{:.2} (n {} {of}, no interval)", s.mean, s.n),
    }
}

/// Sizes both runs measured, at most [`MAX_SIZES`] spread evenly.
fn common_sizes(a: &MessagesRun, b: &MessagesRun) -> Vec<u32> {
    let both: Vec<u32> = a
        .points
        .iter()
        .map(|p| p.size)
        .filter(|s| b.points.iter().any(|q| q.size == *s))
        .collect();
    if both.len() <= MAX_SIZES {
        return both;
    }
    let last = both.len() - 1;
    let mut picked: Vec<u32> = (0..MAX_SIZES)
        .map(|i| both[i * last / (MAX_SIZES - 1)])
        .collect();
    picked.dedup();
    picked
}

fn path(point: Option<&SizePoint>, receive: bool) -> Option<&PathFigures> {
    let p = point?;
    if receive {
        p.receive.as_ref()
    } else {
        p.send.as_ref()
    }
}

/// One row of a layer table: its name and each run's part.
pub(crate) enum Part {
    /// A layer outside the tunnel (native: the whole layer).
    Layer(Layer),
    /// The tunnel's time in spans of this layer's sites.
    Tunnel(Layer),
    Wire,
    Other,
}

impl Part {
    pub(crate) fn name(&self) -> String {
        match self {
            Part::Layer(l) => l.to_string(),
            Part::Tunnel(Layer::Link) => "tunnel: encapsulation".into(),
            Part::Tunnel(Layer::Network) => "tunnel: IPv4".into(),
            Part::Tunnel(Layer::Host) => "tunnel: buffers and copies".into(),
            Part::Tunnel(Layer::Transport) => "tunnel: checksums".into(),
            Part::Tunnel(l) => format!("tunnel: {l}"),
            Part::Wire => "wire".into(),
            Part::Other => "other".into(),
        }
    }

    /// The part of `split`; `tunnelled` says whether its layers hold a
    /// tunnel (then the layer rows are the time outside it).
    pub(crate) fn of<'a>(&self, split: &'a Split) -> Option<&'a Stat> {
        let tunnelled = split.tunnel_total.is_some();
        match self {
            Part::Layer(l) if tunnelled => split.outside_tunnel.get(l),
            Part::Layer(l) => split.layers.get(l),
            Part::Tunnel(l) => split.tunnel.get(l),
            Part::Wire => split.categories.get(&Category::Wire),
            Part::Other => split.other.as_ref(),
        }
    }
}

/// The rows: the layers outside the tunnel (network is IPv6's alone),
/// the tunnel's parts, `wire`, `other`.
pub(crate) fn parts(splits: &[&Split]) -> Vec<Part> {
    let mut parts: Vec<Part> = Layer::ALL
        .iter()
        .filter(|l| splits.iter().any(|s| s.layers.contains_key(l)))
        .map(|&l| Part::Layer(l))
        .collect();
    parts.extend(
        [Layer::Link, Layer::Network, Layer::Transport, Layer::Host]
            .into_iter()
            .chain(Layer::ALL.iter().copied().filter(|l| {
                !matches!(
                    l,
                    Layer::Link | Layer::Network | Layer::Transport | Layer::Host
                )
            }))
            .filter(|l| splits.iter().any(|s| s.tunnel.contains_key(l)))
            .map(Part::Tunnel),
    );
    if splits.iter().any(|s| s.wire().is_some()) {
        parts.push(Part::Wire);
    }
    parts.push(Part::Other);
    parts
}

fn layer_table(
    h: &mut String,
    tunnel: &MessagesRun,
    native: &MessagesRun,
    sizes: &[u32],
    receive: bool,
) {
    let window = if receive {
        "receive stop (to the last byte queued for the reader)".to_string()
    } else {
        format!("send stop ({})", tunnel.stop_at)
    };
    let _ = write!(
        h,
        "<table><caption>{} path, window <b>{}</b>, split by layer with the tunnel's rows apart: µs per message</caption><tr><th class=\"l\">size</th><th class=\"l\">part</th><th>tunnel ({})</th><th>native ({})</th><th>tunnel − native</th></tr>",
        if receive { "receive" } else { "send" },
        escape(&window),
        escape(&tunnel.id),
        escape(&native.id),
    );
    for &size in sizes {
        let at =
            |run: &MessagesRun| path(run.points.iter().find(|p| p.size == size), receive).cloned();
        let label = crate::units::size(u64::from(size));
        let (Some(t), Some(n)) = (at(tunnel), at(native)) else {
            let _ = write!(
                h,
                "<tr><td class=\"l\">{label}</td><td class=\"l\" colspan=\"4\">not measured on this path in both runs</td></tr>"
            );
            continue;
        };
        let (ts, ns) = (&t.stop_split, &n.stop_split);
        let parts = parts(&[ts, ns]);
        for part in &parts {
            row(h, &label, &part.name(), part.of(ts), part.of(ns));
        }
        row(h, &label, "window", Some(&t.stop_us), Some(&n.stop_us));
        let sums = [(ts, &t.stop_us), (ns, &n.stop_us)].map(|(s, w)| closes(s, w, &parts));
        let _ = write!(
            h,
            "<tr><td class=\"l\">{label}</td><td class=\"l\">sum of the parts' means</td><td>{}</td><td>{}</td><td></td></tr>",
            sums[0], sums[1]
        );
    }
    h.push_str("</table>");
}

/// Whether the parts' means add up to the window's mean (they must).
fn closes(split: &Split, window: &Stat, parts: &[Part]) -> String {
    let sum: f64 = parts
        .iter()
        .filter_map(|p| p.of(split))
        .map(|s| s.mean)
        .sum();
    if (sum - window.mean).abs() <= 1e-6 * window.mean.abs().max(1.0) {
        format!("{sum:.2} = window")
    } else {
        format!("<b>{sum:.2}: does not add up to {:.2}</b>", window.mean)
    }
}

/// The study's published shares (§5.4, Tables 5c, 5d; seed lines 1217,
/// 1224-1264, 1238, 1280-1285, 1314) beside ours.
struct Published {
    /// tcpip.sys (IPv4) and tcpip6.sys shares of the machine's CPU.
    ipv4_cpu: f64,
    ipv6_cpu: f64,
    /// TunnelTransmit + TunnelTransmitPacket + TunnelTransmitComplete,
    /// and TunnelReceivePacket, of tcpip6.sys's CPU.
    transmit: f64,
    receive: Option<f64>,
    /// The study says "about" of `ipv4_cpu`.
    approximate: bool,
    lines: &'static str,
}

const TCP: Published = Published {
    ipv4_cpu: 9.22,
    ipv6_cpu: 12.57,
    transmit: 1.27 + 3.61 + 1.95,
    receive: Some(1.86),
    approximate: false,
    lines: "1217, 1224, 1251-1264, 1314",
};

const UDP: Published = Published {
    ipv4_cpu: 11.0,
    ipv6_cpu: 25.29,
    transmit: 1.00 + 2.74 + 1.62,
    receive: None,
    approximate: true,
    lines: "1228, 1238, 1280-1285, 1314",
};

/// The sender thread's share of its stack time in functions named `names`
/// over the whole run (a single number: the profile has no interval).
fn profile_share(run: &MessagesRun, names: &[&str]) -> Option<(f64, u64)> {
    let profile = run.sender_profile.as_ref()?;
    let picked: Vec<_> = profile
        .functions
        .iter()
        .filter(|f| names.contains(&f.name.as_str()))
        .collect();
    (!picked.is_empty()).then(|| {
        (
            100.0 * picked.iter().map(|f| f.share_of_stack).sum::<f64>(),
            picked.iter().map(|f| f.calls).sum(),
        )
    })
}

fn study_table(h: &mut String, tunnel: &MessagesRun) {
    let study = if tunnel.protocol.eq_ignore_ascii_case("udp") {
        UDP
    } else {
        TCP
    };
    let send_shares: Vec<f64> = tunnel
        .points
        .iter()
        .filter_map(|p| p.send.as_ref()?.stop_split.tunnel_share_of_stack.as_ref())
        .map(|s| 100.0 * s.mean)
        .collect();
    let ours_window = Stat::of(&send_shares).map_or("-".into(), |s| percent_cell(&s, "sizes"));
    let single = |names: &[&str]| {
        profile_share(tunnel, names).map_or("-".into(), |(share, calls)| {
            format!("{share:.2} (over the whole run, {calls} calls; no interval)")
        })
    };
    let both = study.ipv4_cpu / (study.ipv4_cpu + study.ipv6_cpu) * 100.0;
    let _ = write!(
        h,
        "<table><caption>The study beside us ({}, seed lines {}): the IPv6 study sampled the sending machine's CPU with VTune while ttcp6 sent 20 KB buffers for 5 s over its 6-over-4 testbed</caption>\
         <tr><th class=\"l\">figure</th><th>the study, %</th><th>ours, %</th></tr>\
         <tr><td class=\"l\">IPv4 under the tunnel: tcpip.sys's share of the machine's CPU (ours: none — no machine-wide sampling)</td><td>{:.2}{}</td><td>-</td></tr>\
         <tr><td class=\"l\">the same as a share of the two stacks' CPU, tcpip.sys / (tcpip.sys + tcpip6.sys {:.2} %) ↔ the tunnel's share of the stack's work in the send stop window (encapsulation and its IPv4)</td><td>{both:.1}</td><td>{ours_window}</td></tr>\
         <tr><td class=\"l\">the send tunnel functions (TunnelTransmit, …Packet, …Complete) of tcpip6.sys's CPU ↔ <code>tunnel.transmit</code> and <code>ipv4.output</code> of the sender's stack time</td><td>{:.2}</td><td>{}</td></tr>\
         <tr><td class=\"l\">TunnelReceivePacket (acknowledgements) ↔ <code>tunnel.receive</code> and <code>ipv4.input</code> on the sender</td><td>{}</td><td>{}</td></tr></table>\
         <p class=\"note\">How and why we differ: the study's 9.22 % is of every sample on the machine (idle 40 %, the NT kernel 16 %), tcpip.sys being Windows NT's whole IPv4 driver, entered through TDI and NDIS with its own packet descriptors and send completion, a module boundary each way; its tunnel functions are tcpip6.sys's side of that hand-over. Ours is span time inside each message's window in one process: the encapsulation prepends 20 bytes and calls the same host's IPv4 output, with no second driver, descriptor or completion, so the tunnel costs a smaller share of the stack's work than the study's IPv4 module did. Beside the stop window itself, a 100 Mbit/s wire holds most of it here (the study's slower stack held the CPU longer), so the tunnel's share of the window is smaller still; the 20-byte header shows on the wire instead, as 20 bytes less payload per full packet.</p>",
        escape(&tunnel.protocol),
        study.lines,
        study.ipv4_cpu,
        if study.approximate { " (≈: \"about\")" } else { "" },
        study.ipv6_cpu,
        study.transmit,
        single(&["tunnel.transmit", "ipv4.output"]),
        study.receive.map_or("-".into(), |r| format!("{r:.2}")),
        single(&["tunnel.receive", "ipv4.input"]),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::messages::CategoryTimes;

    fn window(network: f64, ipv4: f64, encapsulation: f64, wire: f64) -> CategoryTimes {
        let mut t = CategoryTimes::default();
        t.by_layer.insert(Layer::Network, network + ipv4);
        t.by_layer.insert(Layer::Link, encapsulation);
        t.by_category.insert(Category::ProtocolSend, network + ipv4);
        t.by_category.insert(Category::Link, encapsulation);
        t.by_category.insert(Category::Wire, wire);
        if ipv4 + encapsulation > 0.0 {
            t.tunnel.insert(Layer::Network, ipv4);
            t.tunnel.insert(Layer::Link, encapsulation);
        }
        t
    }

    #[test]
    fn the_tunnels_rows_come_out_of_their_layers_and_the_parts_add_up() {
        let tunnel = [
            window(2_000.0, 1_000.0, 500.0, 10_000.0),
            window(2_200.0, 900.0, 700.0, 10_100.0),
        ];
        let native = [
            window(2_000.0, 0.0, 0.0, 9_800.0),
            window(2_100.0, 0.0, 0.0, 9_900.0),
        ];
        let split = |w: &[CategoryTimes]| Split::of(&w.iter().collect::<Vec<_>>());
        let (ts, ns) = (split(&tunnel), split(&native));
        let parts = parts(&[&ts, &ns]);
        let names: Vec<String> = parts.iter().map(Part::name).collect();
        assert_eq!(
            names,
            [
                "network",
                "link",
                "tunnel: encapsulation",
                "tunnel: IPv4",
                "wire",
                "other"
            ]
        );
        // IPv6's network time alone, outside the tunnel: 2.0 and 2.2 µs.
        assert!((Part::Layer(Layer::Network).of(&ts).unwrap().mean - 2.1).abs() < 1e-9);
        assert!((Part::Tunnel(Layer::Network).of(&ts).unwrap().mean - 0.95).abs() < 1e-9);
        assert!(Part::Tunnel(Layer::Network).of(&ns).is_none());
        let stop = Stat::of(&[13.5, 13.9]).unwrap();
        assert!(
            closes(&ts, &stop, &parts).ends_with("= window"),
            "{}",
            closes(&ts, &stop, &parts)
        );
        let native_stop = Stat::of(&[11.8, 12.0]).unwrap();
        assert!(closes(&ns, &native_stop, &parts).ends_with("= window"));
    }
}
