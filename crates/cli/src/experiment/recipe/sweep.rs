//! `throughput` and `delay` runs: a grid of `stackscope sweep` points
//! (stack × protocol or mix × family × socket buffer × offered load ×
//! size), each repeated until the 95 % interval of its mean is within
//! `ci_target` or a cap (`max_reps`, `max_time`) stops it, `reps` being
//! the minimum. Lists use the sweep flags' syntax (`tcp,udp`,
//! `4K..64K:4K`); every point is built and validated here, so an
//! impossible one is an error at parse time, not after an hour of runs.

use std::time::Duration;

use toml::Spanned;

use traffic::kernel::KernelPath;
use traffic::spec::{Family, Protocol, StackKind, XtpOptions};
use traffic::sweep::load::LoadOn;
use traffic::sweep::{axis, Amount, Grid, Mode, Target, DELAY_EXCHANGES};
use traffic::units;

use super::{congestion_of, refuse, reps_of, Locator, RawRun, RecipeError};
use crate::sweep::{family, protocol, stack};

/// A sweep run, full and quick.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub full: Grid,
    pub quick: Grid,
    /// When a point has been repeated enough: `reps` (the minimum),
    /// `ci_target`, `max_reps`, `max_time`, and their `quick_` twins.
    pub target: Target,
    pub quick_target: Target,
    /// What the plot's x axis shows.
    pub x: XAxis,
    pub predict: Option<Prediction>,
    /// The study's own description of the figure (`study`).
    pub study: Option<String>,
    /// Repeat the points of each load level in rounds, one repetition of
    /// every unfinished point a round (`interleave = true`), so points
    /// compared with each other see the same machine states.
    pub interleave: bool,
}

impl SweepPlan {
    pub fn grid(&self, quick: bool) -> &Grid {
        if quick {
            &self.quick
        } else {
            &self.full
        }
    }

    pub fn target(&self, quick: bool) -> &Target {
        if quick {
            &self.quick_target
        } else {
            &self.target
        }
    }
}

/// The x axis of a sweep's plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    Size,
    Sockbuf,
    Rate,
    /// The background load level (CPU-bound processes).
    Load,
}

impl XAxis {
    pub fn label(self) -> &'static str {
        match self {
            XAxis::Size => "message size (bytes)",
            XAxis::Sockbuf => "socket buffer (bytes)",
            XAxis::Rate => "offered load (Mbit/s)",
            XAxis::Load => "background load (CPU-bound processes)",
        }
    }
}

/// A figure computed beside the measured ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prediction {
    /// TCP payload throughput on a rate-limited wire from the header
    /// bytes each full frame carries (the MSR study's 1.4 % for IPv6
    /// against IPv4, `003_…` §5).
    HeaderCost,
}

/// The port sweeps start at (messages runs use 5001).
const PORT: u16 = 5201;
/// Every wait of a point ends after this long.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Every throughput point lasts at least this long (`min_duration`)...
const MIN_DURATION: f64 = 1.0;
/// ...and in quick mode this long (`quick_min_duration`): long enough
/// for a rate over many packets, short enough for CI.
const QUICK_MIN_DURATION: f64 = 0.1;
/// Repeat until the mean's 95 % interval is within ±2 % (`ci_target`, in
/// percent; the quick run's default too)...
const CI_TARGET_PERCENT: f64 = 2.0;
/// ...the fewest repetitions (`reps`, `quick_reps`)...
const MIN_REPS: u32 = 3;
/// ...or until this many repetitions (`max_reps`)...
const MAX_REPS: u32 = 30;
const QUICK_MAX_REPS: u32 = 10;
/// ...or this long per point (`max_time`, seconds): a full lab of some 160
/// points stays within its half hour, a quick one within two minutes.
const MAX_TIME: f64 = 5.0;
const QUICK_MAX_TIME: f64 = 0.5;
/// The most background processes a recipe may start at one level.
const MAX_RECIPE_LOAD: u32 = 64;
/// Below this `ci_target` is most likely a fraction meant as a percentage
/// (0.02 for ±2 %).
const SMALLEST_CI_TARGET: f64 = 0.1;

pub(super) fn plan(run: &RawRun, mode: Mode, loc: &Locator) -> Result<SweepPlan, RecipeError> {
    let kind = match mode {
        Mode::Throughput => "throughput",
        Mode::Delay => "delay",
    };
    refuse(loc, kind, "protocol (use protocols)", &run.protocol)?;
    refuse(loc, kind, "family (use families)", &run.family)?;
    refuse(loc, kind, "sockbuf (use sockbufs)", &run.sockbuf)?;
    refuse(loc, kind, "warmup", &run.warmup)?;
    refuse(loc, kind, "stop", &run.stop)?;
    refuse(loc, kind, "probes", &run.probes)?;
    let stacks: Vec<StackKind> = names_of(loc, "stacks", &run.stacks, "ref", stack, "kernel, ref")?;
    let protocols: Vec<Protocol> = names_of(
        loc,
        "protocols",
        &run.protocols,
        "tcp",
        protocol,
        "tcp, udp, raw, xtp",
    )?;
    let mix = match &run.mix {
        Some(m) => {
            if run.protocols.is_some() {
                return Err(loc.at(
                    m.span(),
                    "give `mix` (flows at once) or `protocols` (a point each), not both".into(),
                ));
            }
            Some(
                axis::names("mix", m.get_ref(), protocol, "tcp, udp, raw, xtp")
                    .map_err(|e| loc.at(m.span(), e))?,
            )
        }
        None => None,
    };
    let families: Vec<Family> =
        names_of(loc, "families", &run.families, "ipv6", family, "ipv4, ipv6")?;
    let numbers =
        |key: &str, value: &Spanned<String>, parse_one: fn(&str) -> Result<u64, String>| {
            axis::numbers(key, value.get_ref(), parse_one).map_err(|e| loc.at(value.span(), e))
        };
    let optional =
        |key: &str, value: &Option<Spanned<String>>, parse_one: fn(&str) -> Result<u64, String>| {
            value
                .as_ref()
                .map(|v| numbers(key, v, parse_one))
                .transpose()
                .map(Option::unwrap_or_default)
        };
    let sizes = numbers("sizes", &run.sizes, units::parse_size)?;
    let quick_sizes = match &run.quick_sizes {
        Some(q) => numbers("quick_sizes", q, units::parse_size)?,
        None => sizes.clone(),
    };
    let sockbufs = optional("sockbufs", &run.sockbufs, units::parse_size)?;
    let quick_sockbufs = match &run.quick_sockbufs {
        Some(q) => numbers("quick_sockbufs", q, units::parse_size)?,
        None => sockbufs.clone(),
    };
    let rates = optional("rates", &run.rates, units::parse_rate)?;
    let quick_rates = match &run.quick_rates {
        Some(q) => numbers("quick_rates", q, units::parse_rate)?,
        None => rates.clone(),
    };
    let amount =
        |total: &Option<Spanned<String>>, count: &Option<Spanned<u64>>| match (count, total) {
            (Some(c), Some(_)) => Err(loc.at(
                c.span(),
                "give `count` (writes per point) or `total` (bytes per point), not both".into(),
            )),
            (Some(c), None) if *c.get_ref() == 0 => Err(loc.at(
                c.span(),
                "count = 0: a point makes at least one write".into(),
            )),
            (Some(c), None) => Ok(Some(Amount::Count(*c.get_ref()))),
            (None, Some(t)) => match units::parse_size(t.get_ref()) {
                Ok(0) => Err(loc.at(t.span(), "total must be at least 1 byte".into())),
                Ok(bytes) => Ok(Some(match mode {
                    Mode::Throughput => Amount::Total(bytes),
                    Mode::Delay => Amount::TotalUpTo {
                        total: bytes,
                        max: DELAY_EXCHANGES,
                    },
                })),
                Err(e) => Err(loc.at(t.span(), format!("total: {e}"))),
            },
            (None, None) => Ok(None),
        };
    let default_amount = match mode {
        Mode::Throughput => Amount::Total(2 << 20),
        Mode::Delay => Amount::TotalUpTo {
            total: 2 << 20,
            max: DELAY_EXCHANGES,
        },
    };
    let full_amount = amount(&run.total, &run.count)?.unwrap_or(default_amount);
    let quick_amount = amount(&run.quick_total, &run.quick_count)?.unwrap_or(full_amount);
    let xtp = xtp_options(run, &protocols, mix.as_deref(), loc)?;
    let connect_each = match &run.connect_each {
        Some(c) if *c.get_ref() && mode != Mode::Delay => {
            return Err(loc.at(
                c.span(),
                "connect_each times exchanges: a `delay` run's key".into(),
            ))
        }
        Some(c) => *c.get_ref(),
        None => false,
    };
    let congestion = congestion_of(run, mix.as_deref().unwrap_or(&protocols), loc)?;
    let circuits = match &run.circuits {
        Some(c) if *c.get_ref() == 0 => {
            return Err(loc.at(c.span(), "circuits = 0: give at least 1".into()))
        }
        Some(c) => *c.get_ref(),
        None => 1,
    };
    let levels = |key: &str, value: &Spanned<String>| {
        let loads = crate::sweep::loads(key, value.get_ref())
            .map_err(|e| loc.at(value.span(), e.to_string()))?;
        match loads.iter().find(|&&l| l > MAX_RECIPE_LOAD) {
            Some(l) => Err(loc.at(
                value.span(),
                format!("{key}: {l} is too many, at most {MAX_RECIPE_LOAD} background processes"),
            )),
            None => Ok(loads),
        }
    };
    let loads = match (&run.load, &run.loads) {
        (Some(l), Some(_)) => {
            return Err(loc.at(
                l.span(),
                "give `load` (one level) or `loads` (a list), not both".into(),
            ))
        }
        (Some(l), None) => vec![one_load(l, loc)?],
        (None, Some(list)) => levels("loads", list)?,
        (None, None) => Vec::new(),
    };
    let quick_loads = match &run.quick_loads {
        Some(q) => levels("quick_loads", q)?,
        None => loads.clone(),
    };
    let load_on = load_sides(run, loc)?;
    let seconds = |key: &str, value: &Option<Spanned<f64>>, default: f64| match value {
        Some(v) if !(0.0..=3600.0).contains(v.get_ref()) => Err(loc.at(
            v.span(),
            format!("{key} = {}: give 0 to 3600 seconds", v.get_ref()),
        )),
        Some(v) => Ok(*v.get_ref()),
        None => Ok(default),
    };
    let as_min = |s: f64| (s > 0.0).then(|| Duration::from_secs_f64(s));
    let min_duration = as_min(seconds("min_duration", &run.min_duration, MIN_DURATION)?);
    let quick_min_duration = as_min(seconds(
        "quick_min_duration",
        &run.quick_min_duration,
        QUICK_MIN_DURATION,
    )?);
    let grid = |sizes: Vec<u64>,
                sockbufs: Vec<u64>,
                rates: Vec<u64>,
                loads: Vec<u32>,
                amount: Amount,
                min_duration: Option<Duration>| Grid {
        mode,
        stacks: stacks.clone(),
        protocols: protocols.clone(),
        mix: mix.clone(),
        families: families.clone(),
        sockbufs,
        rates,
        sizes,
        amount,
        circuits,
        port: PORT,
        timeout: TIMEOUT,
        min_duration,
        loads,
        load_on: load_on.clone(),
        xtp,
        congestion,
        connect_each,
    };
    let full = grid(sizes, sockbufs, rates, loads, full_amount, min_duration);
    let quick = grid(
        quick_sizes,
        quick_sockbufs,
        quick_rates,
        quick_loads,
        quick_amount,
        quick_min_duration,
    );
    for (grid, span) in [
        (&full, run.sizes.span()),
        (
            &quick,
            run.quick_sizes
                .as_ref()
                .map_or(run.sizes.span(), |q| q.span()),
        ),
    ] {
        grid.points(KernelPath::Loopback)
            .map_err(|e| loc.at(span, e.to_string()))?;
    }
    let x = match &run.x {
        Some(x) => match x.get_ref().as_str() {
            "size" => XAxis::Size,
            "sockbuf" => XAxis::Sockbuf,
            "rate" => XAxis::Rate,
            "load" => XAxis::Load,
            other => {
                return Err(loc.at(
                    x.span(),
                    format!("x `{other}` is not one of: size, sockbuf, rate, load"),
                ))
            }
        },
        None if full.loads.len() > 1 => XAxis::Load,
        None if full.rates.len() > 1 => XAxis::Rate,
        None if full.sockbufs.len() > 1 => XAxis::Sockbuf,
        None => XAxis::Size,
    };
    let predict = match &run.predict {
        Some(p) => match p.get_ref().as_str() {
            "header-cost" => Some(Prediction::HeaderCost),
            other => {
                return Err(loc.at(
                    p.span(),
                    format!("predict `{other}` is not one of: header-cost"),
                ))
            }
        },
        None => None,
    };
    let targets = |prefix: &str,
                   reps: &Option<Spanned<u32>>,
                   ci: &Option<Spanned<f64>>,
                   max_reps: &Option<Spanned<u32>>,
                   max_time: &Option<Spanned<f64>>,
                   defaults: (f64, u32, f64)| {
        target_of(loc, prefix, reps, ci, max_reps, max_time, defaults)
    };
    let target = targets(
        "",
        &run.reps,
        &run.ci_target,
        &run.max_reps,
        &run.max_time,
        (CI_TARGET_PERCENT, MAX_REPS, MAX_TIME),
    )?;
    let quick_target = targets(
        "quick_",
        &run.quick_reps,
        &run.quick_ci_target,
        &run.quick_max_reps,
        &run.quick_max_time,
        (target.relative * 100.0, QUICK_MAX_REPS, QUICK_MAX_TIME),
    )?;
    Ok(SweepPlan {
        full,
        quick,
        target,
        quick_target,
        x,
        predict,
        study: run.study.as_ref().map(|s| s.get_ref().clone()),
        interleave: run.interleave.as_ref().is_some_and(|i| *i.get_ref()),
    })
}

/// One of the full or quick targets from its keys (`prefix` is `quick_`
/// or empty), absent keys taking `defaults` (ci percent, max reps, max
/// seconds).
fn target_of(
    loc: &Locator,
    prefix: &str,
    reps: &Option<Spanned<u32>>,
    ci: &Option<Spanned<f64>>,
    max_reps: &Option<Spanned<u32>>,
    max_time: &Option<Spanned<f64>>,
    (ci_default, max_reps_default, max_time_default): (f64, u32, f64),
) -> Result<Target, RecipeError> {
    let min_reps = reps_of(loc, &format!("{prefix}reps"), reps, MIN_REPS)?;
    let ci_percent = match ci {
        Some(c) if !(SMALLEST_CI_TARGET..=100.0).contains(c.get_ref()) => {
            return Err(loc.at(
                c.span(),
                format!(
                    "{prefix}ci_target = {}: give the half-width of the 95 % interval in \
                     percent of the mean, {SMALLEST_CI_TARGET} to 100 (2 is ±2 %, not 0.02)",
                    c.get_ref()
                ),
            ))
        }
        Some(c) => *c.get_ref(),
        None => ci_default,
    };
    let max_reps = match max_reps {
        Some(m)
            if *m.get_ref() < min_reps
                || *m.get_ref() as usize > traffic::sweep::repeat::MAX_REPS =>
        {
            return Err(loc.at(
                m.span(),
                format!(
                    "{prefix}max_reps = {}: give at least {prefix}reps ({min_reps}) and at most {}",
                    m.get_ref(),
                    traffic::sweep::repeat::MAX_REPS
                ),
            ))
        }
        Some(m) => *m.get_ref(),
        // A minimum above the default cap raises the cap with it.
        None => max_reps_default.max(min_reps),
    };
    let max_time = match max_time {
        Some(t) if !(t.get_ref().is_finite() && *t.get_ref() > 0.0 && *t.get_ref() <= 3600.0) => {
            return Err(loc.at(
                t.span(),
                format!(
                    "{prefix}max_time = {}: give seconds per point, above 0 and at most 3600",
                    t.get_ref()
                ),
            ))
        }
        Some(t) => *t.get_ref(),
        None => max_time_default,
    };
    Ok(Target {
        relative: ci_percent / 100.0,
        min_reps: min_reps as usize,
        max_reps: max_reps as usize,
        max_time: Duration::from_secs_f64(max_time),
    })
}

/// A list of names (`tcp,udp`), or `default` when the key is absent.
fn names_of<T>(
    loc: &Locator,
    key: &str,
    value: &Option<Spanned<String>>,
    default: &str,
    parse_one: fn(&str) -> Option<T>,
    expected: &str,
) -> Result<Vec<T>, RecipeError> {
    match value {
        Some(v) => {
            axis::names(key, v.get_ref(), parse_one, expected).map_err(|e| loc.at(v.span(), e))
        }
        None => axis::names(key, default, parse_one, expected).map_err(|e| loc.at(0..0, e)),
    }
}

/// A messages run's background load: `load` (one level, default 0) and
/// `load_on` (one side: `both`, the default, `server` or `client`).
pub(super) fn messages_load(run: &RawRun, loc: &Locator) -> Result<(u32, LoadOn), RecipeError> {
    let load = run.load.as_ref().map_or(Ok(0), |l| one_load(l, loc))?;
    match load_sides(run, loc)?.as_slice() {
        [side] => Ok((load, *side)),
        _ => Err(loc.at(
            run.load_on.as_ref().map_or(0..0, |l| l.span()),
            "load_on: a messages run has one side (both, server or client)".into(),
        )),
    }
}

/// `load`: one level of background processes, at most [`MAX_RECIPE_LOAD`].
fn one_load(load: &Spanned<u32>, loc: &Locator) -> Result<u32, RecipeError> {
    match *load.get_ref() {
        n if n > MAX_RECIPE_LOAD => Err(loc.at(
            load.span(),
            format!("load: at most {MAX_RECIPE_LOAD} background processes"),
        )),
        n => Ok(n),
    }
}

/// `load_on`: the sides a load runs on (default `both`).
fn load_sides(run: &RawRun, loc: &Locator) -> Result<Vec<LoadOn>, RecipeError> {
    names_of(
        loc,
        "load_on",
        &run.load_on,
        "both",
        LoadOn::parse,
        LoadOn::NAMES,
    )
}

/// The `xtp` key: the XTP study's per-run association options (its
/// "socket" and "char" interfaces, "checksum disabled", §5.1), which only
/// a run with XTP may give.
fn xtp_options(
    run: &RawRun,
    protocols: &[Protocol],
    mix: Option<&[Protocol]>,
    loc: &Locator,
) -> Result<XtpOptions, RecipeError> {
    let Some(value) = &run.xtp else {
        return Ok(XtpOptions::default());
    };
    let has_xtp = match mix {
        Some(mix) => mix.contains(&Protocol::Xtp),
        None => run.protocols.is_some() && protocols.contains(&Protocol::Xtp),
    };
    if !has_xtp {
        return Err(loc.at(
            value.span(),
            "xtp options apply to runs with XTP: add xtp to `protocols` or `mix`".into(),
        ));
    }
    let mut options = XtpOptions::default();
    for word in value.get_ref().split(',').map(str::trim) {
        match word {
            "socket" => options.driver = false,
            "driver" => options.driver = true,
            "nocheck" => options.nocheck = true,
            "go-back-n" => options.go_back_n = true,
            "reservation" => options.reservation = true,
            other => {
                return Err(loc.at(
                    value.span(),
                    format!(
                        "xtp option `{other}` is not one of: socket, driver, nocheck, go-back-n, reservation"
                    ),
                ))
            }
        }
    }
    Ok(options)
}
