//! IPv6 over each tunnel flavour beside native IPv6 and IPv4 on one wire
//! (issue 20; the MSR stack's tunnel module, `003_…` §3): throughput with
//! the header-cost prediction, and per-layer cost. The throughput rows
//! come from the sweeps whose IPv6 points carry an `ipv6_vs_ipv4` test
//! with the path MTUs (`path_mtu_ipv4`, `path_mtu_ipv6`, `ipv6_over`),
//! the cost rows from the traced TCP messages runs on a wire of the same
//! rate, split by layer with the tunnel's rows apart (as
//! `tunnel_html`).

use std::fmt::Write;

use analysis::sweep::{Split, Stat};
use serde_json::Value;
use stats::{Difference, Estimate};

use crate::html::escape;
use crate::layers_compared::cell;
use crate::model::{Experiment, MessagesRun};
use crate::tunnel_html;

/// The section's anchor for `experiment`.
pub fn anchor(experiment: &str) -> String {
    format!("{experiment}-tunnel-flavours")
}

/// TCP header and timestamp option bytes of a full segment (RFC 7323).
const TCP_AND_TIMESTAMPS: f64 = 32.0;
/// IPv6's header bytes.
const IPV6_HEADER: f64 = 40.0;

/// One IPv6 point's test against IPv4, as the sweep recorded it.
struct Tested {
    run: String,
    /// The tunnel IPv6 took, `None` for native IPv6.
    over: Option<String>,
    link_bps: Option<f64>,
    mtu4: f64,
    mtu6: f64,
    ipv4: Estimate,
    ipv6: Estimate,
    predicted: f64,
    verdict: String,
}

fn tested(experiment: &Experiment) -> Vec<Tested> {
    let mut out = Vec::new();
    for sweep in &experiment.sweeps {
        for point in &sweep.points {
            let Some(test) = point.get("ipv6_vs_ipv4").and_then(Value::as_object) else {
                continue;
            };
            let number = |key: &str| test.get(key).and_then(Value::as_f64);
            let estimate = |key: &str| {
                test.get(key)
                    .and_then(|v| serde_json::from_value::<Estimate>(v.clone()).ok())
            };
            let (Some(mtu4), Some(mtu6), Some(predicted), Some(ipv4), Some(ipv6)) = (
                number("path_mtu_ipv4"),
                number("path_mtu_ipv6"),
                number("predicted_relative"),
                estimate("ipv4"),
                estimate("ipv6"),
            ) else {
                continue;
            };
            out.push(Tested {
                run: sweep.id.clone(),
                over: test
                    .get("ipv6_over")
                    .and_then(Value::as_str)
                    .map(String::from),
                link_bps: sweep.link_bps,
                mtu4,
                mtu6,
                ipv4,
                ipv6,
                predicted,
                verdict: match test.get("verdict").and_then(Value::as_str) {
                    // Outside the interval by less than the arithmetic's
                    // 0.1-point precision (sweep_run::header_cost).
                    Some("close") => match test.get("apart").and_then(Value::as_f64) {
                        Some(apart) => format!(
                            "consistent to within 0.1 point ({:.3} points outside the 95 % CI)",
                            apart * 100.0
                        ),
                        None => "consistent to within 0.1 point".into(),
                    },
                    Some(v) => v.replace('_', " "),
                    None => "untested".into(),
                },
            });
        }
    }
    out
}

fn percent(share: f64) -> String {
    format!("{:+.2} %", share * 100.0)
}

/// `b` against `a` as a relative difference with its 95 % interval.
fn relative(a: &Estimate, b: &Estimate) -> String {
    Difference::welch(a, b).map_or("-".into(), |d| {
        let (rel, ci) = d.relative();
        format!(
            "{} ({} … {}){}",
            percent(rel),
            percent(ci.lo),
            percent(ci.hi),
            if d.significant { "" } else { " same" }
        )
    })
}

fn mbps(e: &Estimate) -> String {
    match e.half_width() {
        Some(h) => format!("{:.2} ± {:.2} (n {})", e.mean / 1e6, h / 1e6, e.n),
        None => format!("{:.2} (n {})", e.mean / 1e6, e.n),
    }
}

/// The section, or nothing when no sweep of the experiment ran IPv6 over
/// a tunnel.
pub fn section(h: &mut String, experiment: &Experiment) {
    let all = tested(experiment);
    let Some(rate) = all.iter().find(|t| t.over.is_some()).map(|t| t.link_bps) else {
        return;
    };
    let rows: Vec<&Tested> = all.iter().filter(|t| t.link_bps == rate).collect();
    let native = rows.iter().find(|t| t.over.is_none()).copied();
    let wire = rate.map_or("unlimited".into(), |r| format!("{} Mbit/s", r / 1e6));
    let _ = write!(
        h,
        "<h3 id=\"{}\">{}: IPv6 over each tunnel flavour beside native IPv6 and IPv4 ({wire} wire)</h3>\
         <p class=\"note\">The MSR stack's tunnel module carried IPv6 over the host's own IPv4 three ways — configured tunnels (RFC 4213), automatic tunnelling to IPv4-compatible addresses (RFC 1933, deprecated since RFC 4291 §2.5.5.1 and here only as the studied system's behaviour) and 6-over-4 (RFC 2529) — each an interface of its own (docs/tunnels.md). Each run moves bulk TCP over IPv4 and, in turn, over IPv6 on the same hosts and wire. Over a tunnel every IPv6 packet carries IPv6's 40 header bytes and IPv4's 20 within the tunnel's MTU of 1480, so a full segment holds 40 payload bytes fewer than IPv4's: the header-cost prediction at the same frame rate is (MTU₆ − 40 − 32) / (MTU₄ − 20 − 32) − 1, 32 bytes being TCP's header and timestamps. Each relative difference is Welch's, with its 95 % interval; <b>same</b>: not significant at 95 %.</p>",
        escape(&anchor(&experiment.name)),
        escape(&experiment.name),
    );
    let _ = write!(
        h,
        "<table><caption>TCP throughput over each path, IPv6 − IPv4 against the header-cost prediction, and IPv6 against native IPv6 (from the native run)</caption>\
         <tr><th class=\"l\">IPv6 path</th><th class=\"l\">run</th><th>IPv6 MTU</th><th>payload per segment, IPv4 / IPv6</th><th>IPv4 Mbit/s (95 % CI)</th><th>IPv6 Mbit/s (95 % CI)</th><th>IPv6 − IPv4, relative (95 % CI)</th><th>predicted</th><th class=\"l\">verdict</th><th>IPv6 against native IPv6 (95 % CI)</th><th>predicted</th></tr>"
    );
    for t in &rows {
        let payload = |mtu: f64, ip: f64| mtu - ip - TCP_AND_TIMESTAMPS;
        let (p4, p6) = (payload(t.mtu4, 20.0), payload(t.mtu6, IPV6_HEADER));
        let (against_native, predicted_native) = match (native, &t.over) {
            (Some(n), Some(_)) => (
                relative(&n.ipv6, &t.ipv6),
                percent(p6 / payload(n.mtu6, IPV6_HEADER) - 1.0),
            ),
            _ => ("-".into(), "-".into()),
        };
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td><td>{:.0}</td><td>{p4:.0} / {p6:.0}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{against_native}</td><td>{predicted_native}</td></tr>",
            escape(&t.over.as_ref().map_or("native IPv6".into(), |o| format!("over {o}"))),
            escape(&t.run),
            t.mtu6,
            mbps(&t.ipv4),
            mbps(&t.ipv6),
            relative(&t.ipv4, &t.ipv6),
            percent(t.predicted),
            escape(&t.verdict),
        );
    }
    h.push_str("</table>");
    cost_table(h, experiment, rate);
}

/// The TCP messages runs on a wire of `rate`, each path's send and
/// receive stop windows split by layer at the largest size all measured.
fn cost_table(h: &mut String, experiment: &Experiment, rate: Option<f64>) {
    let runs: Vec<&MessagesRun> = experiment
        .runs
        .iter()
        .filter(|r| r.link_bps == rate && r.protocol.eq_ignore_ascii_case("tcp"))
        .collect();
    if runs.is_empty() {
        return;
    }
    let Some(size) = runs
        .first()
        .into_iter()
        .flat_map(|r| r.points.iter().map(|p| p.size))
        .filter(|s| runs.iter().all(|r| r.points.iter().any(|p| p.size == *s)))
        .max()
    else {
        return;
    };
    for receive in [false, true] {
        let splits: Vec<(&MessagesRun, &Split, &Stat)> = runs
            .iter()
            .filter_map(|r| {
                let p = r.points.iter().find(|p| p.size == size)?;
                let f = if receive {
                    p.receive.as_ref()
                } else {
                    p.send.as_ref()
                }?;
                Some((*r, &f.stop_split, &f.stop_us))
            })
            .collect();
        let all: Vec<&Split> = splits.iter().map(|(_, s, _)| *s).collect();
        let parts = tunnel_html::parts(&all);
        let _ = write!(
            h,
            "<table><caption>Per-layer cost of each path, {} stop window of a {} message: µs per message (mean ± 95 % half-width, n messages), the layers outside the tunnel, the tunnel's own rows (its encapsulation, its IPv4), the wire and time in no span; the parts add up to the window</caption><tr><th class=\"l\">path</th><th class=\"l\">run</th>",
            if receive { "receive" } else { "send" },
            crate::units::size(u64::from(size)),
        );
        for part in &parts {
            let _ = write!(h, "<th>{}</th>", escape(&part.name()));
        }
        h.push_str("<th>window</th><th>tunnel, % of the stack's work</th></tr>");
        for (run, split, window) in &splits {
            let path = if split.tunnel_total.is_some() {
                format!("IPv6 over {}", tunnel_name(&run.link))
            } else {
                format!("native {}", run.family)
            };
            let _ = write!(
                h,
                "<tr><td class=\"l\">{}</td><td class=\"l\"><code>{}</code></td>",
                escape(&path),
                escape(&run.id)
            );
            for part in &parts {
                let _ = write!(h, "<td>{}</td>", cell(part.of(split)));
            }
            let share = split
                .tunnel_share_of_stack
                .as_ref()
                .map_or("-".into(), |s| format!("{:.1}", 100.0 * s.mean));
            let _ = write!(h, "<td>{}</td><td>{share}</td></tr>", cell(Some(window)));
        }
        h.push_str("</table>");
    }
}

/// The tunnel flavour a link profile's name gives (`fast-ethernet-6over4`
/// → `6-over-4`).
fn tunnel_name(link: &str) -> String {
    match link.rsplit('-').next() {
        Some("6over4") => "6-over-4".into(),
        Some(flavour @ ("configured" | "automatic")) => format!("{flavour} tunnel"),
        _ => format!("a tunnel ({link})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_links_name_gives_its_flavour() {
        assert_eq!(tunnel_name("fast-ethernet-6over4"), "6-over-4");
        assert_eq!(tunnel_name("fast-ethernet-configured"), "configured tunnel");
        assert_eq!(tunnel_name("fast-ethernet-automatic"), "automatic tunnel");
    }

    #[test]
    fn relative_differences_say_when_they_are_not_significant() {
        let e = |m: f64| Estimate::of(&[m * 0.999, m, m * 1.001]).unwrap();
        assert!(relative(&e(100.0), &e(97.24)).starts_with("-2.76 % ("));
        assert!(relative(&e(100.0), &e(100.0)).ends_with(" same"));
    }
}
