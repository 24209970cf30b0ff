//! The run-time gate: whether a probe records.
//!
//! One global mode, read with a single relaxed load on every probe, and a
//! per-flow `traced` flag that travels with the flow (the socket's
//! `SO_LOG`-style option); the recorder looks nothing up.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// What the probes record.
///
/// The numeric values matter: the gate check relies on their order.
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Nothing is recorded.
    #[default]
    Off = 0,
    /// Only flows whose `traced` flag is set.
    TracedFlows = 1,
    /// Every flow.
    All = 2,
}

impl Mode {
    /// The snake_case name (`off`, `traced_flows`, `all`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::TracedFlows => "traced_flows",
            Mode::All => "all",
        }
    }

    const fn from_u8(v: u8) -> Mode {
        match v {
            0 => Mode::Off,
            1 => Mode::TracedFlows,
            _ => Mode::All,
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "off" => Ok(Mode::Off),
            "traced_flows" | "traced" => Ok(Mode::TracedFlows),
            "all" => Ok(Mode::All),
            other => Err(format!(
                "unknown probe mode {other:?} (expected off, traced_flows or all)"
            )),
        }
    }
}

/// The flow a probe hit belongs to, with its tracing flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Flow {
    /// Flow id (socket / connection), stored in the record.
    pub id: u32,
    /// Whether this flow asked to be traced.
    pub traced: bool,
}

impl Flow {
    /// An untraced flow with id 0, for probes outside any flow.
    pub const NONE: Flow = Flow::untraced(0);

    pub const fn new(id: u32, traced: bool) -> Flow {
        Flow { id, traced }
    }

    pub const fn traced(id: u32) -> Flow {
        Flow::new(id, true)
    }

    pub const fn untraced(id: u32) -> Flow {
        Flow::new(id, false)
    }
}

/// How deep the probes record (DESIGN.md, "Probe events": probe depth is
/// a level per run).
///
/// The numeric values matter: the gate check relies on their order.
#[repr(u8)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Layer boundaries and queues: every location but the cost centres
    /// inside the layers (checksum, copies, buffers, lookups,
    /// fragmentation, reassembly), whose spans can be finer than a probe,
    /// and the stages marked `detail` inside a layer's span of the same
    /// category (TCP's ACK processing), whose time is their parent's.
    Layers = 0,
    /// Every location: the layers and every cost centre.
    #[default]
    Functions = 1,
}

impl Level {
    /// The snake_case name (`layers`, `functions`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Layers => "layers",
            Level::Functions => "functions",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Level {
    type Err = String;

    fn from_str(s: &str) -> Result<Level, String> {
        match s {
            "layers" => Ok(Level::Layers),
            "functions" => Ok(Level::Functions),
            other => Err(format!(
                "unknown probe level {other:?} (expected layers or functions)"
            )),
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Functions as u8);

/// The mode cost centres see: the mode at the functions level, `Off` at
/// the layers level. Kept beside `MODE` so a cost centre's probe decides
/// with one load, as a layer's does, not one of the mode and one of the
/// level (issue 22: a cost centre fires several times per frame).
static DETAIL_MODE: AtomicU8 = AtomicU8::new(Mode::Off as u8);

fn update_detail_mode() {
    let detail = if LEVEL.load(Ordering::Relaxed) >= Level::Functions as u8 {
        MODE.load(Ordering::Relaxed)
    } else {
        Mode::Off as u8
    };
    DETAIL_MODE.store(detail, Ordering::Relaxed);
}

/// Sets the probe depth for every thread.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
    update_detail_mode();
}

/// The current probe depth.
pub fn level() -> Level {
    if LEVEL.load(Ordering::Relaxed) == Level::Layers as u8 {
        Level::Layers
    } else {
        Level::Functions
    }
}

// Relaxed is enough: the mode is a switch, not a synchronisation point; a
// thread that sees a change a little late records a few events more or
// less, which the mode change itself cannot order anyway.
static MODE: AtomicU8 = AtomicU8::new(Mode::Off as u8);

/// Sets the global mode for every thread.
pub fn set_mode(mode: Mode) {
    MODE.store(mode as u8, Ordering::Relaxed);
    update_detail_mode();
}

/// The current global mode.
pub fn mode() -> Mode {
    Mode::from_u8(MODE.load(Ordering::Relaxed))
}

/// Whether a probe for `flow` records now.
///
/// Off = 0, TracedFlows = 1, All = 2: a traced flow needs a mode of at
/// least 1 and an untraced one at least 2, so one add and one compare
/// decide, with no second branch on the flag.
#[cfg_attr(not(feature = "probes"), allow(dead_code))]
#[inline(always)]
pub(crate) fn is_open(flow: Flow) -> bool {
    opens(MODE.load(Ordering::Relaxed), flow)
}

/// Whether `mode` opens the gate to `flow`. `Off` is tested first, alone:
/// with every probe off a site is the mode's load and one branch, without
/// the flow's flag read and added (issue 22: 5 instructions per frame of
/// the TCP bench fewer, callgrind; more at sites whose flow is not in a
/// register).
#[inline(always)]
fn opens(mode: u8, flow: Flow) -> bool {
    mode != Mode::Off as u8 && mode + flow.traced as u8 >= Mode::All as u8
}

/// Whether the probe at `loc` records now for `flow`: the gate is open
/// and the location is within the level. `loc` is a constant at every
/// probe site, so for a location that is no cost centre the level test
/// compiles away.
#[cfg_attr(not(feature = "probes"), allow(dead_code))]
#[inline(always)]
pub(crate) fn is_open_at(flow: Flow, loc: crate::Loc) -> bool {
    if loc.is_detail() {
        opens(DETAIL_MODE.load(Ordering::Relaxed), flow)
    } else {
        is_open(flow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_truth_table() {
        let _guard = crate::test_lock();
        let traced = Flow::traced(1);
        let untraced = Flow::untraced(2);
        set_mode(Mode::Off);
        assert!(!is_open(traced) && !is_open(untraced));
        set_mode(Mode::TracedFlows);
        assert!(is_open(traced) && !is_open(untraced));
        set_mode(Mode::All);
        assert!(is_open(traced) && is_open(untraced));
        assert_eq!(mode(), Mode::All);
        set_mode(Mode::Off);
    }

    #[test]
    fn the_layers_level_closes_the_gate_to_cost_centres_only() {
        let _guard = crate::test_lock();
        let flow = Flow::traced(1);
        let layer = crate::Loc::declared(3, crate::Category::Link);
        let centre = crate::Loc::declared(4, crate::Category::Checksum);
        assert_eq!((layer.index(), centre.index()), (3, 4));
        set_mode(Mode::TracedFlows);
        set_level(Level::Layers);
        assert!(is_open_at(flow, layer) && !is_open_at(flow, centre));
        set_level(Level::Functions);
        assert!(is_open_at(flow, layer) && is_open_at(flow, centre));
        // With probes compiled out nothing records.
        assert_eq!(crate::would_record(centre, flow), crate::ENABLED);
        assert!(!crate::would_record(centre, Flow::untraced(2)));
        set_mode(Mode::Off);
        assert!(!is_open_at(flow, layer));
        assert!(!crate::would_record(layer, flow));
        for l in [Level::Layers, Level::Functions] {
            assert_eq!(l.as_str().parse::<Level>(), Ok(l));
        }
    }

    #[test]
    fn mode_names_parse() {
        for m in [Mode::Off, Mode::TracedFlows, Mode::All] {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(m));
        }
        assert!("sometimes".parse::<Mode>().is_err());
    }
}
