//! The studies beside us (issue 16, point 4): each study's own published
//! values, typed in from the study into `experiments/published/<study>.toml`
//! with their table or figure number and the lines of the source text,
//! set beside the lab's figure for the same quantity, with the ratio and
//! a line on every known difference of design or hardware.
//!
//! The files are compiled in. Each entry names where our figure is as a
//! path into the experiment as `summary.json` holds it (see [`path`]), so
//! an entry resolves against the experiment a run just built or against a
//! `summary.json` read back. An entry that no longer resolves (a renamed
//! run, a field that moved) is reported as `unresolved`, never dropped and
//! never a panic.

mod html;
mod path;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use stats::{Difference, Estimate, Interval};

use crate::model::Experiment;

/// The data files, compiled in: (name, text).
pub const FILES: &[(&str, &str)] = &[
    (
        "xie1999.toml",
        include_str!("../../../experiments/published/xie1999.toml"),
    ),
    (
        "papadopoulos1993.toml",
        include_str!("../../../experiments/published/papadopoulos1993.toml"),
    ),
    (
        "taler1992.toml",
        include_str!("../../../experiments/published/taler1992.toml"),
    ),
    (
        "draves1998.toml",
        include_str!("../../../experiments/published/draves1998.toml"),
    ),
];

/// One study's file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    /// Authors, year and title.
    pub study: String,
    /// The recipe whose figures stand beside these (`Experiment::name`).
    pub experiment: String,
    /// The study's text in `../shared/seeds/`.
    pub seed: String,
    #[serde(rename = "group")]
    pub groups: Vec<Group>,
}

/// The entries of one table or figure, with what they share.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// The study's number for it: `Table 5a`, `Figure 9`, `§5.1.2 text`.
    pub figure: String,
    /// Lines of the seed file the values are printed on.
    pub seed_lines: String,
    /// The study's conditions: hardware, link, OS, sizes.
    pub conditions: String,
    /// What differs between the study's measurement and ours.
    pub difference: String,
    #[serde(default)]
    pub unit: Option<String>,
    /// The most our figure can be, in the study's unit: the rate of the
    /// wire it was measured on. A mean above it is impossible and an
    /// interval reaching above it too noisy: neither is set beside the
    /// study.
    #[serde(default)]
    pub at_most: Option<f64>,
    /// Where our figure is; `{name}` in its path is filled from the
    /// variant's and the entry's `at`.
    #[serde(default)]
    pub ours: Option<Key>,
    /// One row per variant (e.g. our reference stack and the kernel).
    #[serde(default)]
    pub variants: Vec<Variant>,
    /// Why the lab has no counterpart (yet) for the whole group.
    #[serde(default)]
    pub not_reproduced: Option<String>,
    #[serde(rename = "entry")]
    pub entries: Vec<Entry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub label: String,
    #[serde(default)]
    pub at: BTreeMap<String, Scalar>,
    /// Added to the group's difference for this variant's rows.
    #[serde(default)]
    pub difference: Option<String>,
}

/// A value as printed by the study.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub quantity: String,
    pub value: f64,
    /// The printed spread (± standard deviation), if any.
    #[serde(default)]
    pub spread: Option<f64>,
    /// The study gives it as approximate ("about", "around") or it is read
    /// off a plot.
    #[serde(default)]
    pub approximate: bool,
    #[serde(default)]
    pub unit: Option<String>,
    #[serde(default)]
    pub seed_lines: Option<String>,
    #[serde(default)]
    pub conditions: Option<String>,
    /// Replaces the group's difference.
    #[serde(default)]
    pub difference: Option<String>,
    /// Replaces the group's bound.
    #[serde(default)]
    pub at_most: Option<f64>,
    #[serde(default)]
    pub at: BTreeMap<String, Scalar>,
    /// Replaces the group's key.
    #[serde(default)]
    pub ours: Option<Key>,
    /// Our figure exists only in the full lab (the quick grid skips it).
    #[serde(default)]
    pub full_only: bool,
    #[serde(default)]
    pub not_reproduced: Option<String>,
}

/// A number or a name filling a `{placeholder}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Text(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Text(s) => f.write_str(s),
        }
    }
}

/// Where our figure is and how it becomes the study's unit.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Key {
    /// Path into the experiment (see [`path`]).
    pub path: String,
    /// Our value times `scale` is in the study's unit.
    #[serde(default = "one")]
    pub scale: f64,
    /// The path reaches a table: the cell whose row's first cell starts
    /// with `row`, in the column headed `column`.
    #[serde(default)]
    pub cell: Option<Cell>,
    /// The path keeps several elements: take the largest or smallest.
    #[serde(default)]
    pub reduce: Option<Reduce>,
    /// Siblings of the value: its 95 % interval (`{lo, hi}`), or its
    /// standard deviation and count (the interval is then the t interval
    /// of the mean), and its count.
    #[serde(default)]
    pub ci: Option<String>,
    #[serde(default)]
    pub stdev: Option<String>,
    #[serde(default)]
    pub n: Option<String>,
    /// Path to the figure ours is set against: the value becomes
    /// `100·(ours/versus − 1)` %, its interval from Welch's test on the
    /// two (with `stdev` and `n` siblings on both).
    #[serde(default)]
    pub versus: Option<String>,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    pub row: String,
    pub column: String,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    Max,
    Min,
}

/// The study's value as printed.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StudyValue {
    pub value: f64,
    pub spread: Option<f64>,
    pub approximate: bool,
}

/// Our side of a row.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Ours {
    /// Our figure in the study's unit; the interval when the figure has one.
    Measured {
        value: f64,
        ci95: Option<Interval>,
        n: Option<u64>,
        path: String,
    },
    /// The figure is measured by the full lab only (a quick grid skips it).
    NotInThisRun { path: String, why: String },
    /// The run has the point but no figure for it: flagged (too short,
    /// impossible) or not computable, so nothing is set beside the study.
    NoFigure { path: String, why: String },
    /// The lab has no counterpart.
    NotReproduced { why: String },
    /// The key does not resolve: a comparison lost, to be fixed.
    Unresolved { path: String, error: String },
}

/// One published value beside ours.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub figure: String,
    pub quantity: String,
    /// Which of our variants (stack) the row is for, if the group has several.
    pub variant: Option<String>,
    pub unit: String,
    /// `None` only when the study's file itself could not be read.
    pub study: Option<StudyValue>,
    pub conditions: String,
    /// The seed file and the lines the value is printed on.
    pub source: String,
    pub ours: Ours,
    /// Ours / study, and the same for our interval's ends.
    pub ratio: Option<f64>,
    pub ratio_ci95: Option<Interval>,
    pub difference: String,
}

/// A data file that does not parse or is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub file: String,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "experiments/published/{}: {}", self.file, self.message)
    }
}

/// Parses one file and checks what serde cannot: every entry has either a
/// key or a reason it has none, every path parses, scales are finite,
/// bounds positive.
pub fn parse(file: &str, text: &str) -> Result<Study, LoadError> {
    let err = |message: String| LoadError {
        file: file.to_string(),
        message,
    };
    let study: Study = toml::from_str(text).map_err(|e| err(e.to_string()))?;
    for g in &study.groups {
        if g.entries.is_empty() {
            return Err(err(format!("{}: no entry", g.figure)));
        }
        for e in &g.entries {
            let label = format!("{} / {}", g.figure, e.quantity);
            if !e.value.is_finite() || e.spread.is_some_and(|s| !(s.is_finite() && s >= 0.0)) {
                return Err(err(format!("{label}: value or spread not a finite number")));
            }
            if let Some(bound) = e
                .at_most
                .or(g.at_most)
                .filter(|b| !(b.is_finite() && *b > 0.0))
            {
                return Err(err(format!(
                    "{label}: at_most {bound} is not a positive number"
                )));
            }
            // An entry's own reason overrides the group's key; its own key
            // and a reason at once contradict each other.
            let reason = e.not_reproduced.as_ref().or(g.not_reproduced.as_ref());
            if e.ours.is_some() && reason.is_some() {
                return Err(err(format!("{label}: both a key and not_reproduced")));
            }
            match (e.ours.as_ref().or(g.ours.as_ref()), reason) {
                (_, Some(_)) => {}
                (None, None) => {
                    return Err(err(format!("{label}: neither a key nor not_reproduced")))
                }
                (Some(key), None) => {
                    if !key.scale.is_finite() || key.scale == 0.0 {
                        return Err(err(format!("{label}: scale {}", key.scale)));
                    }
                    for p in [Some(&key.path), key.versus.as_ref()].into_iter().flatten() {
                        path::parse(p).map_err(|e| err(format!("{label}: {e}")))?;
                    }
                }
            }
        }
    }
    Ok(study)
}

/// Every compiled-in study file, parsed.
pub fn studies() -> Vec<Result<Study, LoadError>> {
    FILES.iter().map(|(name, text)| parse(name, text)).collect()
}

/// The published rows for `experiment` (none for a recipe no study file
/// names).
pub fn rows(experiment: &Experiment) -> Vec<Row> {
    match serde_json::to_value(experiment) {
        Ok(value) => rows_for(&experiment.name, &value),
        Err(e) => vec![problem_row(
            &experiment.name,
            format!("cannot read the experiment: {e}"),
        )],
    }
}

/// The rows for the experiment `name` held as `summary.json` holds it.
pub fn rows_for(name: &str, experiment: &Value) -> Vec<Row> {
    let mut out = Vec::new();
    for study in studies() {
        match study {
            Ok(study) if study.experiment == name => out.extend(study_rows(&study, experiment)),
            Ok(_) => {}
            // A broken file says so beside every experiment rather than
            // silently dropping its comparisons.
            Err(e) => out.push(problem_row(&e.file, e.to_string())),
        }
    }
    out
}

fn problem_row(figure: &str, error: String) -> Row {
    Row {
        figure: figure.to_string(),
        quantity: "(the published values could not be read)".into(),
        variant: None,
        unit: String::new(),
        study: None,
        conditions: String::new(),
        source: String::new(),
        ours: Ours::Unresolved {
            path: String::new(),
            error,
        },
        ratio: None,
        ratio_ci95: None,
        difference: String::new(),
    }
}

/// The rows of one study against an experiment held as `summary.json`
/// holds it.
pub fn study_rows(study: &Study, experiment: &Value) -> Vec<Row> {
    let mut rows = Vec::new();
    for g in &study.groups {
        let plain = [Variant {
            label: String::new(),
            at: BTreeMap::new(),
            difference: None,
        }];
        let variants: &[Variant] = if g.variants.is_empty() {
            &plain
        } else {
            &g.variants
        };
        for e in &g.entries {
            for v in variants {
                let ours = match (
                    e.not_reproduced.as_ref().or(g.not_reproduced.as_ref()),
                    e.ours.as_ref().or(g.ours.as_ref()),
                ) {
                    (Some(why), _) => Ours::NotReproduced { why: why.clone() },
                    (None, Some(key)) => resolve(key, &v.at, &e.at, e.full_only, experiment),
                    (None, None) => Ours::Unresolved {
                        path: String::new(),
                        error: "no key".into(),
                    },
                };
                let unit = e
                    .unit
                    .clone()
                    .or_else(|| g.unit.clone())
                    .unwrap_or_default();
                // A difference (`versus`) may straddle zero.
                let difference_figure = e
                    .ours
                    .as_ref()
                    .or(g.ours.as_ref())
                    .is_some_and(|key| key.versus.is_some());
                let ours = if difference_figure {
                    ours
                } else {
                    beyond_bound(too_noisy(ours, &unit), e.at_most.or(g.at_most), &unit)
                };
                let study_value = StudyValue {
                    value: e.value,
                    spread: e.spread,
                    approximate: e.approximate,
                };
                let (ratio, ratio_ci95) = ratio(&ours, e.value);
                let mut difference = e.difference.clone().unwrap_or_else(|| g.difference.clone());
                if let Some(extra) = &v.difference {
                    difference = format!("{difference} {extra}");
                }
                rows.push(Row {
                    figure: g.figure.clone(),
                    quantity: e.quantity.clone(),
                    variant: (!v.label.is_empty()).then(|| v.label.clone()),
                    unit,
                    study: Some(study_value),
                    conditions: e.conditions.clone().unwrap_or_else(|| g.conditions.clone()),
                    source: source(&study.seed, e.seed_lines.as_ref().unwrap_or(&g.seed_lines)),
                    ours,
                    ratio,
                    ratio_ci95,
                    difference,
                });
            }
        }
    }
    rows
}

/// A latency, rate or size whose interval reaches below zero, which it
/// cannot: its mean is too noisy to set beside the study's (a quick
/// lab's XTP driver point at 16 B under a helper's build read 19.5
/// [−0.5, 39.5] Mbit/s from three repetitions). Percent figures are
/// differences, which may straddle zero, and are kept.
fn too_noisy(ours: Ours, unit: &str) -> Ours {
    match ours {
        Ours::Measured {
            value,
            ci95: Some(ci),
            path,
            ..
        } if !unit.starts_with('%') && stats::reaches_below_zero(value, ci) => Ours::NoFigure {
            why: format!(
                "too noisy to be a result: {} {unit} with a 95 % interval of [{}, {}], which reaches below zero",
                sig3(value),
                sig3(ci.lo),
                sig3(ci.hi)
            ),
            path,
        },
        other => other,
    }
}

/// A figure above `at_most`, the most it can physically be (the wire's
/// rate), is impossible: a measurement bug, not a result. One whose
/// interval reaches above it is too noisy to set beside the study: a
/// mean a few repetitions on a busy machine left that uncertain says
/// nothing about the stack.
fn beyond_bound(ours: Ours, at_most: Option<f64>, unit: &str) -> Ours {
    let Some(bound) = at_most else {
        return ours;
    };
    match ours {
        Ours::Measured { value, path, .. } if value > bound => Ours::NoFigure {
            why: format!(
                "impossible: {} {unit} is above the most the wire carries, {} {unit}",
                sig3(value),
                sig3(bound)
            ),
            path,
        },
        Ours::Measured {
            value,
            ci95: Some(ci),
            path,
            ..
        } if ci.hi > bound => Ours::NoFigure {
            why: format!(
                "too noisy to be a result: {} {unit} with a 95 % interval of [{}, {}], which reaches above the most the wire carries, {} {unit}",
                sig3(value),
                sig3(ci.lo),
                sig3(ci.hi),
                sig3(bound)
            ),
            path,
        },
        other => other,
    }
}

/// Three significant digits, for a reason's text.
fn sig3(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (2 - x.abs().log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

/// `file line 91` or `file lines 87-90`.
fn source(seed: &str, lines: &str) -> String {
    let plural = lines.contains(['-', ',']);
    format!("{seed} line{} {lines}", if plural { "s" } else { "" })
}

/// Ours / study, and our interval's ends over the study's value (the
/// study's own spread is printed beside, not folded in).
fn ratio(ours: &Ours, study: f64) -> (Option<f64>, Option<Interval>) {
    let Ours::Measured { value, ci95, .. } = ours else {
        return (None, None);
    };
    if study == 0.0 {
        return (None, None);
    }
    let ci = ci95.map(|c| ordered(c.lo / study, c.hi / study));
    (Some(value / study), ci)
}

fn ordered(a: f64, b: f64) -> Interval {
    Interval {
        lo: a.min(b),
        hi: a.max(b),
    }
}

/// Fills `{name}` placeholders from the variant's and the entry's `at`.
fn fill(
    template: &str,
    variant: &BTreeMap<String, Scalar>,
    entry: &BTreeMap<String, Scalar>,
) -> Result<String, String> {
    let mut out = template.to_string();
    for (name, value) in variant.iter().chain(entry) {
        out = out.replace(&format!("{{{name}}}"), &value.to_string());
    }
    match out.find('{') {
        Some(i) => Err(format!("placeholder left unfilled at {:?}", &out[i..])),
        None => Ok(out),
    }
}

/// A value with its interval and count, before scaling.
struct Figure {
    value: f64,
    ci95: Option<Interval>,
    n: Option<u64>,
    stdev: Option<f64>,
}

fn resolve(
    key: &Key,
    variant: &BTreeMap<String, Scalar>,
    at: &BTreeMap<String, Scalar>,
    full_only: bool,
    experiment: &Value,
) -> Ours {
    let path = match fill(&key.path, variant, at) {
        Ok(p) => p,
        Err(error) => {
            return Ours::Unresolved {
                path: key.path.clone(),
                error,
            }
        }
    };
    let unresolved = |error: String| Ours::Unresolved {
        path: path.clone(),
        error,
    };
    // The cell's row and column may hold placeholders too.
    let mut key = key.clone();
    if let Some(cell) = &mut key.cell {
        for text in [&mut cell.row, &mut cell.column] {
            match fill(text, variant, at) {
                Ok(filled) => *text = filled,
                Err(error) => return unresolved(error),
            }
        }
    }
    let key = &key;
    let no_figure = |why: String| Ours::NoFigure {
        path: path.clone(),
        why,
    };
    let figure = match figure_at(key, &path, experiment) {
        Ok(Got::Figure(f)) => f,
        Ok(Got::Nothing) if full_only => {
            return Ours::NotInThisRun {
                path: path.clone(),
                why: "measured by the full lab only (the quick grid skips this point)".into(),
            }
        }
        Ok(Got::Nothing) => return unresolved("the path selects nothing".into()),
        Ok(Got::NoFigure(why)) => return no_figure(why),
        Err(e) => return unresolved(e),
    };
    let figure = match &key.versus {
        None => figure,
        Some(versus) => {
            let versus = match fill(versus, variant, at) {
                Ok(p) => p,
                Err(e) => return unresolved(e),
            };
            match figure_at(key, &versus, experiment) {
                Ok(Got::Figure(base)) if base.value != 0.0 => relative(&figure, &base),
                Ok(Got::Figure(_)) => return no_figure(format!("versus {versus}: zero")),
                Ok(Got::NoFigure(why)) => return no_figure(format!("versus {versus}: {why}")),
                Ok(Got::Nothing) => return unresolved(format!("versus {versus}: selects nothing")),
                Err(e) => return unresolved(format!("versus {versus}: {e}")),
            }
        }
    };
    let k = key.scale;
    Ours::Measured {
        value: figure.value * k,
        ci95: figure.ci95.map(|c| ordered(c.lo * k, c.hi * k)),
        n: figure.n,
        path,
    }
}

/// `100·(b/a − 1)` % (`a` not zero), with Welch's interval when both
/// have a spread.
fn relative(b: &Figure, a: &Figure) -> Figure {
    let estimate = |f: &Figure| Estimate {
        n: f.n.unwrap_or(1) as usize,
        mean: f.value,
        median: f.value,
        stdev: f.stdev,
        ci95: None,
        median_ci95: None,
        min: f.value,
        max: f.value,
    };
    let diff = Difference::welch(&estimate(a), &estimate(b));
    Figure {
        value: 100.0 * (b.value / a.value - 1.0),
        ci95: diff.map(|d| d.relative().1.scaled(100.0)),
        n: b.n,
        stdev: None,
    }
}

/// What a path reached.
enum Got {
    Figure(Figure),
    /// The selectors kept no element.
    Nothing,
    /// Elements, but no figure in any: why.
    NoFigure(String),
}

/// The figure `path` reaches, with the key's cell, reduction and siblings.
fn figure_at(key: &Key, path: &str, experiment: &Value) -> Result<Got, String> {
    let segments = path::parse(path)?;
    let found = path::walk(experiment, &segments)?;
    if found.is_empty() {
        return Ok(Got::Nothing);
    }
    if key.reduce.is_none() && found.len() > 1 {
        return Err(format!(
            "selects {} values; add a reduce or narrow the selector",
            found.len()
        ));
    }
    let mut figures = Vec::new();
    let mut no_figure = None;
    for f in &found {
        let got = match &key.cell {
            Some(cell) => table_cell(f.value, cell)?,
            None => leaf(key, *f)?,
        };
        match got {
            Got::Figure(figure) => figures.push(figure),
            Got::NoFigure(why) => no_figure = no_figure.or(Some(why)),
            Got::Nothing => {}
        }
    }
    let one = match (key.reduce, figures.len()) {
        (_, 0) => {
            return Ok(Got::NoFigure(
                no_figure.unwrap_or_else(|| "no figure".to_string()),
            ))
        }
        (None, _) => figures.pop(),
        (Some(reduce), _) => figures.into_iter().reduce(|a, b| {
            let better = match reduce {
                Reduce::Max => b.value > a.value,
                Reduce::Min => b.value < a.value,
            };
            if better {
                b
            } else {
                a
            }
        }),
    };
    Ok(one.map_or(Got::Nothing, Got::Figure))
}

/// A number at the end of a path with the siblings the key names. A null
/// (a figure the run could not compute) or a point the run flagged (too
/// short, impossible: the report gives no figure for it) is no figure.
fn leaf(key: &Key, f: path::Found<'_>) -> Result<Got, String> {
    if let Some(parent) = f.parent {
        if parent.get("too_short") == Some(&Value::Bool(true)) {
            return Ok(Got::NoFigure(
                "the point is too short to be a result".into(),
            ));
        }
        if let Some(problems) = parent.get("problems").and_then(Value::as_str) {
            if !problems.is_empty() {
                return Ok(Got::NoFigure(format!("the point is flagged: {problems}")));
            }
        }
        // The intercept of a linear trend line whose intercept is below
        // zero beyond doubt (`analysis::trend::Fit::intercept_below_zero`)
        // is no latency at size 0: no message takes negative time.
        let intercept = parent.get("kind").and_then(Value::as_str) == Some("linear")
            && parent.get("b").is_some_and(|b| std::ptr::eq(b, f.value));
        if intercept && parent.get("intercept_below_zero") == Some(&Value::Bool(true)) {
            return Ok(Got::NoFigure(
                "the trend line's intercept is below zero (not linear near zero)".into(),
            ));
        }
    }
    let value = match f.value {
        Value::Null => return Ok(Got::NoFigure("the run has no figure here".into())),
        v => v
            .as_f64()
            .ok_or_else(|| format!("not a number: {}", short(v)))?,
    };
    let sibling = |name: &Option<String>| -> Result<Option<&Value>, String> {
        let Some(name) = name else { return Ok(None) };
        let parent = f.parent.ok_or("a sibling of the top")?;
        let v = parent
            .get(name)
            .ok_or_else(|| format!("no sibling {name:?} beside the value"))?;
        Ok((!v.is_null()).then_some(v))
    };
    let n = sibling(&key.n)?.and_then(Value::as_u64);
    let stdev = sibling(&key.stdev)?.and_then(Value::as_f64);
    let mut ci95 = match sibling(&key.ci)? {
        Some(v) => Some(
            serde_json::from_value::<Interval>(v.clone())
                .map_err(|e| format!("interval {}: {e}", short(v)))?,
        ),
        None => None,
    };
    if ci95.is_none() {
        if let (Some(s), Some(n)) = (stdev, n.filter(|&n| n >= 2)) {
            ci95 = stats::t95((n - 1) as f64).map(|t| {
                let half = t * s / (n as f64).sqrt();
                Interval {
                    lo: value - half,
                    hi: value + half,
                }
            });
        }
    }
    Ok(Got::Figure(Figure {
        value,
        ci95,
        n,
        stdev,
    }))
}

/// A number from a formatted table (`model::Table` as serialised):
/// `"+0.40 %"` is 0.4, `"-"` is no figure.
fn table_cell(value: &Value, cell: &Cell) -> Result<Got, String> {
    let texts = |v: Option<&Value>| -> Option<Vec<String>> {
        v?.as_array()?
            .iter()
            .map(|c| c.as_str().map(str::to_string))
            .collect()
    };
    let caption = value.get("caption").and_then(Value::as_str).unwrap_or("");
    let columns =
        texts(value.get("columns")).ok_or_else(|| format!("not a table: {}", short(value)))?;
    let rows: Vec<Vec<String>> = value
        .get("rows")
        .and_then(Value::as_array)
        .and_then(|rows| rows.iter().map(|r| texts(Some(r))).collect())
        .ok_or_else(|| format!("not a table: {}", short(value)))?;
    let column = columns
        .iter()
        .position(|c| c == &cell.column)
        .ok_or_else(|| format!("table {caption:?} has no column {:?}", cell.column))?;
    let matching: Vec<&Vec<String>> = rows
        .iter()
        .filter(|r| r.first().is_some_and(|c| c.starts_with(&cell.row)))
        .collect();
    let row = match matching.as_slice() {
        [row] => row,
        [] => return Err(format!("table {caption:?} has no row {:?}", cell.row)),
        _ => {
            return Err(format!(
                "table {caption:?}: {} rows start {:?}",
                matching.len(),
                cell.row
            ))
        }
    };
    let text = row.get(column).map(String::as_str).unwrap_or("");
    let number = text.split_whitespace().next().unwrap_or("");
    if number == "-" || number.is_empty() {
        return Ok(Got::NoFigure(format!("the table's cell is {text:?}")));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| format!("cell {text:?} is not a number"))?;
    Ok(Got::Figure(Figure {
        value,
        ci95: None,
        n: None,
        stdev: None,
    }))
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

/// The study's values beside ours, as an HTML section ending an
/// experiment's part of the report (empty when no study file names it).
pub fn beside_html(experiment: &Experiment) -> String {
    html::render(&experiment.name, &experiment.published)
}

pub use html::render;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(path: &str) -> Key {
        Key {
            path: path.into(),
            scale: 1.0,
            cell: None,
            reduce: None,
            ci: None,
            stdev: None,
            n: None,
            versus: None,
        }
    }

    #[test]
    fn a_positive_figure_whose_interval_reaches_below_zero_is_too_noisy() {
        let measured = |value: f64, lo: f64, hi: f64| Ours::Measured {
            value,
            ci95: Some(Interval { lo, hi }),
            n: Some(3),
            path: "p".into(),
        };
        match too_noisy(measured(19.5, -0.46, 39.5), "Mbit/s") {
            Ours::NoFigure { why, path } => {
                assert_eq!(path, "p");
                assert!(
                    why.contains("19.5 Mbit/s") && why.contains("[-0.460, 39.5]"),
                    "{why}"
                );
            }
            other => panic!("kept: {other:?}"),
        }
        // Within zero, or a percent difference: kept.
        assert!(matches!(
            too_noisy(measured(19.5, 0.5, 38.5), "Mbit/s"),
            Ours::Measured { .. }
        ));
        assert!(matches!(
            too_noisy(measured(1.4, -0.2, 3.0), "%"),
            Ours::Measured { .. }
        ));
    }

    #[test]
    fn a_figure_above_the_wire_or_reaching_above_it_is_no_result() {
        let measured = |value: f64, lo: f64, hi: f64| Ours::Measured {
            value,
            ci95: Some(Interval { lo, hi }),
            n: Some(3),
            path: "p".into(),
        };
        let why = |ours: Ours| match ours {
            Ours::NoFigure { why, path } => {
                assert_eq!(path, "p");
                why
            }
            other => panic!("kept: {other:?}"),
        };
        let noisy = why(beyond_bound(
            measured(10030.0, 7580.0, 12480.0),
            Some(12207.0),
            "KB/s",
        ));
        assert!(
            noisy.starts_with("too noisy")
                && noisy.contains("[7580, 12480]")
                && noisy.contains("12207 KB/s"),
            "{noisy}"
        );
        let impossible = why(beyond_bound(
            measured(12300.0, 12290.0, 12310.0),
            Some(12207.0),
            "KB/s",
        ));
        assert!(
            impossible.starts_with("impossible: 12300 KB/s"),
            "{impossible}"
        );
        // Within the bound, or no bound: kept.
        assert!(matches!(
            beyond_bound(measured(11900.0, 11850.0, 11950.0), Some(12207.0), "KB/s"),
            Ours::Measured { .. }
        ));
        assert!(matches!(
            beyond_bound(measured(10030.0, 7580.0, 12480.0), None, "KB/s"),
            Ours::Measured { .. }
        ));
    }

    #[test]
    fn a_bound_that_is_not_a_positive_number_is_refused() {
        let file = |at_most: &str| {
            format!(
                "study = \"s\"\nexperiment = \"e\"\nseed = \"f\"\n[[group]]\nfigure = \"T\"\n\
                 seed_lines = \"1\"\nconditions = \"c\"\ndifference = \"d\"\nat_most = {at_most}\n\
                 [[group.entry]]\nquantity = \"q\"\nvalue = 1\nours = {{ path = \"a/b\" }}\n"
            )
        };
        assert!(parse("s.toml", &file("12207.03125")).is_ok());
        for bad in ["0", "-5", "nan", "inf"] {
            let error = parse("s.toml", &file(bad)).unwrap_err();
            assert!(error.message.contains("at_most"), "{bad}: {error}");
        }
    }

    #[test]
    fn an_intercept_below_zero_is_no_figure() {
        let line = |b: f64, marked: bool| {
            json!({"kind": "linear", "a": 82.7, "b": b, "r2": 1.0, "n": 2,
                   "slope_ci95": null, "intercept_ci95": null, "weak": false,
                   "intercept_below_zero": marked})
        };
        let exp =
            json!({"runs": [{"id": "u", "stop": line(-74.9, true), "start": line(3.0, false)}]});
        let at = |path: &str| resolve(&key(path), &BTreeMap::new(), &BTreeMap::new(), false, &exp);
        match at("runs[id=u]/stop/b") {
            Ours::NoFigure { why, .. } => assert!(why.contains("intercept is below zero"), "{why}"),
            other => panic!("kept: {other:?}"),
        }
        // The marked line's slope, and an unmarked line's intercept, stand.
        assert!(matches!(at("runs[id=u]/stop/a"), Ours::Measured { value, .. } if value == 82.7));
        assert!(matches!(at("runs[id=u]/start/b"), Ours::Measured { value, .. } if value == 3.0));
    }

    #[test]
    fn placeholders_fill_from_variant_then_entry() {
        let v = BTreeMap::from([("stack".to_string(), Scalar::Text("ref".into()))]);
        let e = BTreeMap::from([("size".to_string(), Scalar::Int(16))]);
        assert_eq!(
            fill("points[stack={stack},size={size}]/x", &v, &e).unwrap(),
            "points[stack=ref,size=16]/x"
        );
        assert!(fill("points[size={size}]/{col}", &v, &e).is_err());
    }

    #[test]
    fn stdev_and_n_give_the_t_interval_and_scale_carries_it() {
        let exp = json!({"p": [{"m": 10.0, "s": 2.0, "n": 4}]});
        let mut k = key("p[m=10]/m");
        k.stdev = Some("s".into());
        k.n = Some("n".into());
        k.scale = 0.5;
        let Ours::Measured { value, ci95, n, .. } =
            resolve(&k, &BTreeMap::new(), &BTreeMap::new(), false, &exp)
        else {
            panic!("not measured")
        };
        assert_eq!(value, 5.0);
        assert_eq!(n, Some(4));
        // t(3) = 3.182; half = 3.182 * 2 / 2 = 3.182, halved by the scale.
        let ci = ci95.unwrap();
        assert!((ci.hi - 5.0 - 1.591).abs() < 1e-3, "{ci:?}");
        assert!((5.0 - ci.lo - 1.591).abs() < 1e-3, "{ci:?}");
    }
}
