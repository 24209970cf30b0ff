//! Per message size: the kernel's start and stop latency on each path
//! with n and 95 % intervals, the stop window's layers (each part's mean
//! with its interval, and its share of the mean stop latency), and the
//! trend lines through the sizes' medians as the reference runs have
//! (latency in µs against size in thousands of bytes).

use std::collections::BTreeMap;

use serde::Serialize;
use stats::Estimate;

use super::{KernelLayer, KernelMessage, PathWindows};
use crate::trend::{self, Fit};

/// One path's figures at one size, µs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelPathFigures {
    pub start_us: Estimate,
    pub stop_us: Estimate,
    /// Send only: the stop at `handed_to_device`.
    pub handed_stop_us: Option<Estimate>,
    /// Each layer's time per message (a message with none counts 0).
    pub layers_us: BTreeMap<KernelLayer, Estimate>,
    /// Each layer's mean as a share of the mean stop latency, %: they add
    /// up to 100 (every message's layers add up to its stop latency).
    pub shares_percent: BTreeMap<KernelLayer, f64>,
    /// The first measured message's stop-window events: location and µs
    /// from the window's start.
    pub example: Vec<(String, f64)>,
}

/// One size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelSizePoint {
    pub size: u32,
    /// Messages of this size measured (warm-up left out).
    pub messages: u32,
    pub send: Option<KernelPathFigures>,
    pub receive: Option<KernelPathFigures>,
    /// Messages of this size without that path's window.
    pub send_incomplete: u32,
    pub receive_incomplete: u32,
    pub packets_sent: Option<Estimate>,
    pub retransmits: u32,
    pub drops: u32,
}

/// Trend lines through the sizes' medians: µs against thousands of bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KernelTrends {
    pub send_start: Option<Fit>,
    pub send_stop: Option<Fit>,
    pub receive_start: Option<Fit>,
    pub receive_stop: Option<Fit>,
}

/// The figures of `messages` per size, in increasing size.
pub fn by_size(messages: &[KernelMessage]) -> Vec<KernelSizePoint> {
    let mut groups: BTreeMap<u32, Vec<&KernelMessage>> = BTreeMap::new();
    for m in messages {
        groups.entry(m.bytes).or_default().push(m);
    }
    groups
        .into_iter()
        .map(|(size, group)| {
            let path = |pick: &dyn Fn(&KernelMessage) -> Option<&PathWindows>| {
                let windows: Vec<&PathWindows> = group.iter().filter_map(|m| pick(m)).collect();
                figures(&windows)
            };
            let packets: Vec<f64> = group.iter().map(|m| f64::from(m.packets_sent)).collect();
            KernelSizePoint {
                size,
                messages: group.len() as u32,
                send: path(&|m| m.send.as_ref()),
                receive: path(&|m| m.receive.as_ref()),
                send_incomplete: group.iter().filter(|m| m.send.is_none()).count() as u32,
                receive_incomplete: group.iter().filter(|m| m.receive.is_none()).count() as u32,
                packets_sent: Estimate::of(&packets),
                retransmits: group.iter().map(|m| m.retransmits).sum(),
                drops: group.iter().map(|m| m.drops).sum(),
            }
        })
        .collect()
}

fn figures(windows: &[&PathWindows]) -> Option<KernelPathFigures> {
    let us = |pick: &dyn Fn(&PathWindows) -> f64| {
        let values: Vec<f64> = windows.iter().map(|w| pick(w) / 1e3).collect();
        Estimate::of(&values)
    };
    let start_us = us(&|w| w.start_ns)?;
    let stop_us = us(&|w| w.stop_ns)?;
    let handed: Vec<f64> = windows
        .iter()
        .filter_map(|w| w.handed_stop_ns.map(|ns| ns / 1e3))
        .collect();
    let mut layers_us = BTreeMap::new();
    for layer in KernelLayer::SEND.into_iter().chain(KernelLayer::RECEIVE) {
        if windows.iter().any(|w| w.layers_ns.contains_key(&layer)) {
            if let Some(e) = us(&|w| w.layers_ns.get(&layer).copied().unwrap_or(0.0)) {
                layers_us.insert(layer, e);
            }
        }
    }
    let shares_percent = layers_us
        .iter()
        .map(|(&layer, e)| {
            let share = if stop_us.mean > 0.0 {
                100.0 * e.mean / stop_us.mean
            } else {
                0.0
            };
            (layer, share)
        })
        .collect();
    Some(KernelPathFigures {
        start_us,
        stop_us,
        handed_stop_us: Estimate::of(&handed),
        layers_us,
        shares_percent,
        example: windows
            .first()
            .map(|w| {
                w.events
                    .iter()
                    .map(|(name, ns)| (name.clone(), ns / 1e3))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// The four trend lines (at least two sizes each).
pub fn trends(points: &[KernelSizePoint]) -> KernelTrends {
    let line = |pick: &dyn Fn(&KernelSizePoint) -> Option<f64>| {
        let xy: Vec<(f64, f64)> = points
            .iter()
            .filter_map(|p| Some((f64::from(p.size) / 1e3, pick(p)?)))
            .collect();
        trend::linear(&xy)
    };
    KernelTrends {
        send_start: line(&|p| p.send.as_ref().map(|f| f.start_us.median)),
        send_stop: line(&|p| p.send.as_ref().map(|f| f.stop_us.median)),
        receive_start: line(&|p| p.receive.as_ref().map(|f| f.start_us.median)),
        receive_stop: line(&|p| p.receive.as_ref().map(|f| f.stop_us.median)),
    }
}
