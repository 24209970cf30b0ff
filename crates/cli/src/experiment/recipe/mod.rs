//! Experiment recipes: TOML files under `experiments/` that name a study,
//! its runs, each run's link profile and sweep (DESIGN.md, "Traffic tools
//! and experiments"). Every key is checked: an unknown key, a bad value or
//! an impossible sweep is an error naming the file, line and key.

use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use analysis::messages::StopAt;
use traffic::congestion::Congestion;
use traffic::spec::{Family, Protocol};

pub use kernel::KernelPlan;
pub use link::Link;
pub use pipeline::PipelinePlan;
pub use sweep::{Prediction, SweepPlan, XAxis};

mod kernel;
mod link;
mod pipeline;
mod sweep;

/// A recipe as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecipe {
    name: Spanned<String>,
    title: String,
    /// The study it reproduces (a file of `../shared/seeds/`).
    source: String,
    /// The study as the report cites it: authors, year, title.
    citation: Option<Spanned<String>>,
    #[serde(default)]
    description: String,
    #[serde(rename = "run")]
    runs: Vec<RawRun>,
}

/// One `[[run]]` as written: the keys of every kind, each checked against
/// the run's kind after reading.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRun {
    id: Spanned<String>,
    /// `messages`, `throughput`, `delay` or `pipeline`.
    kind: Spanned<String>,
    title: Option<String>,
    /// A link profile (`fast-ethernet`, `fast-ethernet-6over4`,
    /// `fast-ethernet-configured`, `fast-ethernet-automatic`, `unlimited`,
    /// `default`), a topology of topologies/ by name (`two-routers`,
    /// `impaired.toml`) or a topology file's path (see link.rs).
    link: Spanned<String>,
    sizes: Spanned<String>,
    quick_sizes: Option<Spanned<String>>,
    reps: Option<Spanned<u32>>,
    quick_reps: Option<Spanned<u32>>,
    // messages
    protocol: Option<Spanned<String>>,
    family: Option<Spanned<String>>,
    warmup: Option<Spanned<u32>>,
    sockbuf: Option<Spanned<String>>,
    /// Where the send path's stop latency ends (`on_the_wire`,
    /// `handed_to_device`, `acknowledged`).
    pub(super) stop: Option<Spanned<String>>,
    /// Probe depth: `layers` (default) or `functions`.
    pub(super) probes: Option<Spanned<String>>,
    /// How the hosts fragment: `scatter-gather` (default) or `copy`.
    fragmentation: Option<Spanned<String>>,
    /// Passes over the sizes until the send stop latency's slope has a
    /// 95 % half-width within this share of it, e.g. 0.05.
    slope_ci_target: Option<Spanned<f64>>,
    quick_slope_ci_target: Option<Spanned<f64>>,
    /// Seconds the passes may take.
    slope_time_cap: Option<Spanned<f64>>,
    quick_slope_time_cap: Option<Spanned<f64>>,
    // throughput and delay (see sweep.rs)
    pub(super) stacks: Option<Spanned<String>>,
    pub(super) protocols: Option<Spanned<String>>,
    pub(super) mix: Option<Spanned<String>>,
    pub(super) families: Option<Spanned<String>>,
    pub(super) sockbufs: Option<Spanned<String>>,
    pub(super) quick_sockbufs: Option<Spanned<String>>,
    pub(super) rates: Option<Spanned<String>>,
    pub(super) quick_rates: Option<Spanned<String>>,
    pub(super) total: Option<Spanned<String>>,
    pub(super) quick_total: Option<Spanned<String>>,
    pub(super) count: Option<Spanned<u64>>,
    pub(super) quick_count: Option<Spanned<u64>>,
    pub(super) min_duration: Option<Spanned<f64>>,
    pub(super) quick_min_duration: Option<Spanned<f64>>,
    pub(super) circuits: Option<Spanned<u32>>,
    /// XTP association options, a list: `driver` (or `socket`),
    /// `nocheck`, `go-back-n`, `reservation` (see sweep.rs).
    pub(super) xtp: Option<Spanned<String>>,
    /// Delay runs: each exchange on a connection of its own.
    pub(super) connect_each: Option<Spanned<bool>>,
    /// TCP's congestion control on every stack (`sweep -C`): `cubic`,
    /// `reno`; each stack's default if absent.
    pub(super) congestion: Option<Spanned<String>>,
    pub(super) load: Option<Spanned<u32>>,
    pub(super) loads: Option<Spanned<String>>,
    pub(super) quick_loads: Option<Spanned<String>>,
    pub(super) load_on: Option<Spanned<String>>,
    /// The study's own words for the figure the run reproduces, printed
    /// beside the chart.
    pub(super) study: Option<Spanned<String>>,
    /// Repeat the points of each load level in rounds (see sweep.rs).
    pub(super) interleave: Option<Spanned<bool>>,
    pub(super) x: Option<Spanned<String>>,
    pub(super) predict: Option<Spanned<String>>,
    pub(super) ci_target: Option<Spanned<f64>>,
    pub(super) quick_ci_target: Option<Spanned<f64>>,
    pub(super) max_reps: Option<Spanned<u32>>,
    pub(super) quick_max_reps: Option<Spanned<u32>>,
    pub(super) max_time: Option<Spanned<f64>>,
    pub(super) quick_max_time: Option<Spanned<f64>>,
    // pipeline (see pipeline.rs)
    compute_us: Option<Spanned<u64>>,
    /// `messages` runs: `ref` (default) or `kernel` (see kernel.rs).
    stack: Option<Spanned<String>>,
}

/// A checked recipe.
#[derive(Debug, Clone)]
pub struct Recipe {
    pub name: String,
    pub title: String,
    pub source: String,
    /// Authors, year and title of the study (empty when the recipe gives
    /// none; the report then names the source file).
    pub citation: String,
    pub description: String,
    pub runs: Vec<Run>,
}

/// One run of a recipe.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    /// A caption for the report (default: from the kind and id).
    pub title: Option<String>,
    pub link: Link,
    pub plan: Plan,
}

/// What a run measures.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Traced single messages over a sweep of sizes.
    Messages(MessagesPlan),
    /// Throughput or delay points (`stackscope sweep`'s grid).
    Sweep(Box<SweepPlan>),
    /// One stage of a pipelined application on the kernel's loopback.
    Pipeline(PipelinePlan),
    /// Traced single messages on the Linux kernel's stack (eBPF probes).
    Kernel(KernelPlan),
}

/// Traced single messages: start and stop latency per size.
#[derive(Debug, Clone)]
pub struct MessagesPlan {
    pub protocol: Protocol,
    pub family: Family,
    pub sizes: Vec<usize>,
    pub quick_sizes: Vec<usize>,
    pub reps: u32,
    pub quick_reps: u32,
    pub warmup: u32,
    pub sockbuf: Option<usize>,
    /// Where the send path's stop latency ends (default: on the wire).
    pub stop: StopAt,
    /// Probe depth (default: layers).
    pub probes: probe::Level,
    /// How the hosts make fragments (default: scatter-gather).
    pub fragmentation: stack::iface::host::Fragmentation,
    /// CPU-bound background processes during the run, and on whose CPU
    /// (`both`: nothing pinned; `server` / `client`: the two hosts pinned
    /// apart and the processes on the receiver's / the sender's CPU).
    pub load: u32,
    pub load_on: traffic::sweep::load::LoadOn,
    /// Repeat passes over the sizes until the send stop latency's slope
    /// is known to this share (95 % half-width / slope); `None`: one pass.
    pub slope_ci_target: Option<f64>,
    pub quick_slope_ci_target: Option<f64>,
    /// How long the passes may take.
    pub slope_time_cap: Duration,
    pub quick_slope_time_cap: Duration,
}

/// The passes' time cap when the recipe names none: 2 minutes a run
/// (the full lab stays under 30), 10 s with `--quick` (under 2).
pub const DEFAULT_SLOPE_TIME_CAP: Duration = Duration::from_secs(120);
pub const DEFAULT_QUICK_SLOPE_TIME_CAP: Duration = Duration::from_secs(10);
/// The longest time cap a recipe may set.
const MAX_SLOPE_TIME_CAP: f64 = 3600.0;

/// A recipe that cannot be used, with where and why (line 0: the file as
/// a whole, e.g. unreadable).
#[derive(Debug)]
pub struct RecipeError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for RecipeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file, self.message),
            line => write!(f, "{}:{line}:{}: {}", self.file, self.column, self.message),
        }
    }
}

impl std::error::Error for RecipeError {}

/// Largest size a run may ask for (a TCP message; UDP's are smaller).
const MAX_SIZE: u64 = traffic::reference::messages::MAX_TCP_MESSAGE as u64;
/// Most messages one run may send (sizes × repetitions).
const MAX_MESSAGES: u64 = 100_000;

/// Reads and checks the recipe at `path`.
pub fn load(path: &Path) -> Result<Recipe, RecipeError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| RecipeError {
        file: file.clone(),
        line: 0,
        column: 0,
        message: format!("cannot read: {e}"),
    })?;
    parse(&file, &text)
}

/// Makes errors that point into one recipe's text.
pub(super) struct Locator<'a> {
    file: &'a str,
    text: &'a str,
}

impl Locator<'_> {
    pub(super) fn at(&self, span: Range<usize>, message: String) -> RecipeError {
        let (line, column) = line_column(self.text, span.start);
        RecipeError {
            file: self.file.to_string(),
            line,
            column,
            message,
        }
    }
}

/// A name that becomes part of file names.
fn file_name_safe(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Checks recipe `text`; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Recipe, RecipeError> {
    let loc = Locator { file, text };
    let raw: RawRecipe = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        loc.at(span, e.message().to_string())
    })?;
    if raw.runs.is_empty() {
        return Err(loc.at(0..0, "the recipe has no [[run]]".into()));
    }
    let name = raw.name.get_ref().clone();
    if !file_name_safe(&name) {
        return Err(loc.at(
            raw.name.span(),
            format!("name `{name}`: use letters, digits, `-` and `_` (it names files)"),
        ));
    }
    let citation = match &raw.citation {
        None => String::new(),
        Some(c) if c.get_ref().trim().is_empty() => {
            return Err(loc.at(
                c.span(),
                "citation is empty: give the study's authors, year and title".into(),
            ))
        }
        Some(c) if c.get_ref().chars().any(char::is_control) => {
            return Err(loc.at(
                c.span(),
                "citation: one line of text, without control characters".into(),
            ))
        }
        Some(c) => c.get_ref().trim().to_string(),
    };
    let mut runs: Vec<Run> = Vec::with_capacity(raw.runs.len());
    for run in &raw.runs {
        let id = run.id.get_ref().clone();
        if !file_name_safe(&id) {
            return Err(loc.at(
                run.id.span(),
                format!("id `{id}`: use letters, digits, `-` and `_` (it names files)"),
            ));
        }
        if runs.iter().any(|r| r.id == id) {
            return Err(loc.at(run.id.span(), format!("id `{id}` is used twice")));
        }
        if kernel::wants_kernel(run, &loc)? {
            // The kernel's paths are not link profiles: `veth` or
            // `loopback`, kept in the plan (`link` below is unused).
            runs.push(Run {
                id,
                title: run.title.clone(),
                link: Link::Default,
                plan: Plan::Kernel(kernel::plan(run, &loc)?),
            });
            continue;
        }
        // A path is relative to the recipe's own directory.
        let recipe_dir = Path::new(file).parent();
        let link =
            Link::parse(run.link.get_ref(), recipe_dir).map_err(|e| loc.at(run.link.span(), e))?;
        if run.kind.get_ref() != "pipeline" {
            refuse(&loc, run.kind.get_ref(), "compute_us", &run.compute_us)?;
        }
        let plan = match run.kind.get_ref().as_str() {
            "messages" => Plan::Messages(messages_plan(run, &loc)?),
            "pipeline" => Plan::Pipeline(pipeline::plan(run, &link, &loc)?),
            "throughput" => {
                refuse_slope_keys(run, "throughput", &loc)?;
                Plan::Sweep(Box::new(sweep::plan(
                    run,
                    traffic::sweep::Mode::Throughput,
                    &loc,
                )?))
            }
            "delay" => {
                refuse_slope_keys(run, "delay", &loc)?;
                Plan::Sweep(Box::new(sweep::plan(
                    run,
                    traffic::sweep::Mode::Delay,
                    &loc,
                )?))
            }
            other => {
                return Err(loc.at(
                    run.kind.span(),
                    format!("kind `{other}` is not one of: messages, throughput, delay, pipeline"),
                ))
            }
        };
        runs.push(Run {
            id,
            title: run.title.clone(),
            link,
            plan,
        });
    }
    Ok(Recipe {
        name,
        title: raw.title,
        source: raw.source,
        citation,
        description: raw.description,
        runs,
    })
}

/// Refuses a key that `kind` runs do not read (a silently ignored key is
/// a wrong experiment).
pub(super) fn refuse<T>(
    loc: &Locator,
    kind: &str,
    key: &str,
    value: &Option<Spanned<T>>,
) -> Result<(), RecipeError> {
    match value {
        Some(v) => Err(loc.at(
            v.span(),
            format!("`{key}` does not apply to a `{kind}` run"),
        )),
        None => Ok(()),
    }
}

/// The slope-target keys are for `messages` runs (a sweep's points have
/// no trend line to know).
fn refuse_slope_keys(run: &RawRun, kind: &str, loc: &Locator) -> Result<(), RecipeError> {
    // The fragmentation mode too: a sweep's hosts are the stacks' own.
    refuse(loc, kind, "fragmentation", &run.fragmentation)?;
    refuse(loc, kind, "slope_ci_target", &run.slope_ci_target)?;
    refuse(
        loc,
        kind,
        "quick_slope_ci_target",
        &run.quick_slope_ci_target,
    )?;
    refuse(loc, kind, "slope_time_cap", &run.slope_time_cap)?;
    refuse(loc, kind, "quick_slope_time_cap", &run.quick_slope_time_cap)
}

/// `slope_ci_target` or its quick twin: a share in (0, 1), for a list of
/// at least three sizes (two points leave no interval to judge).
fn slope_target_of(
    loc: &Locator,
    key: &str,
    value: &Option<Spanned<f64>>,
    sizes: &[usize],
) -> Result<Option<f64>, RecipeError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let target = *value.get_ref();
    if !(target > 0.0 && target < 1.0) {
        return Err(loc.at(
            value.span(),
            format!("{key} = {target}: give the slope's 95 % half-width as a share of it, above 0 and below 1 (0.05 is ±5 %)"),
        ));
    }
    let mut distinct = sizes.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 3 {
        return Err(loc.at(
            value.span(),
            format!(
                "{key}: a slope's interval needs at least three sizes; this run has {}",
                distinct.len()
            ),
        ));
    }
    Ok(Some(target))
}

/// `slope_time_cap` or its quick twin: seconds above 0, at most an hour.
fn time_cap_of(
    loc: &Locator,
    key: &str,
    value: &Option<Spanned<f64>>,
    default: Duration,
) -> Result<Duration, RecipeError> {
    let Some(value) = value else {
        return Ok(default);
    };
    let seconds = *value.get_ref();
    if !(seconds > 0.0 && seconds <= MAX_SLOPE_TIME_CAP) {
        return Err(loc.at(
            value.span(),
            format!("{key} = {seconds}: give seconds above 0, at most {MAX_SLOPE_TIME_CAP}"),
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `reps` or `quick_reps`: at least 1.
pub(super) fn reps_of(
    loc: &Locator,
    key: &str,
    value: &Option<Spanned<u32>>,
    default: u32,
) -> Result<u32, RecipeError> {
    let Some(value) = value else {
        return Ok(default);
    };
    match *value.get_ref() {
        0 => Err(loc.at(
            value.span(),
            format!("{key} = 0: run each point at least once"),
        )),
        reps => Ok(reps),
    }
}

/// The `congestion` key of a sweep or kernel run: the congestion control
/// its TCP flows run on every stack (as `sweep -C`), so that a comparison
/// of the kernel with the reference stack compares one algorithm whatever
/// the machine's default; refused for a run whose `flows` have no TCP.
pub(super) fn congestion_of(
    run: &RawRun,
    flows: &[Protocol],
    loc: &Locator,
) -> Result<Option<Congestion>, RecipeError> {
    let Some(name) = &run.congestion else {
        return Ok(None);
    };
    if !flows.contains(&Protocol::Tcp) {
        return Err(loc.at(
            name.span(),
            format!(
                "`congestion` is TCP's: run `{}` has no TCP flows",
                run.id.get_ref()
            ),
        ));
    }
    Congestion::parse(name.get_ref())
        .map(Some)
        .map_err(|e| loc.at(name.span(), e.to_string()))
}

fn messages_plan(run: &RawRun, loc: &Locator) -> Result<MessagesPlan, RecipeError> {
    let kind = "messages";
    refuse(loc, kind, "stacks", &run.stacks)?;
    refuse(loc, kind, "protocols (use protocol)", &run.protocols)?;
    refuse(loc, kind, "mix", &run.mix)?;
    refuse(loc, kind, "families (use family)", &run.families)?;
    refuse(loc, kind, "sockbufs (use sockbuf)", &run.sockbufs)?;
    refuse(loc, kind, "quick_sockbufs", &run.quick_sockbufs)?;
    refuse(loc, kind, "rates", &run.rates)?;
    refuse(loc, kind, "quick_rates", &run.quick_rates)?;
    refuse(loc, kind, "total", &run.total)?;
    refuse(loc, kind, "quick_total", &run.quick_total)?;
    refuse(loc, kind, "count", &run.count)?;
    refuse(loc, kind, "quick_count", &run.quick_count)?;
    refuse(loc, kind, "min_duration", &run.min_duration)?;
    refuse(loc, kind, "quick_min_duration", &run.quick_min_duration)?;
    refuse(loc, kind, "circuits", &run.circuits)?;
    refuse(loc, kind, "xtp", &run.xtp)?;
    refuse(loc, kind, "connect_each", &run.connect_each)?;
    refuse(loc, kind, "congestion", &run.congestion)?;
    refuse(loc, kind, "loads (use load)", &run.loads)?;
    refuse(loc, kind, "quick_loads", &run.quick_loads)?;
    refuse(loc, kind, "study", &run.study)?;
    refuse(loc, kind, "interleave", &run.interleave)?;
    refuse(loc, kind, "x", &run.x)?;
    refuse(loc, kind, "predict", &run.predict)?;
    refuse(loc, kind, "ci_target", &run.ci_target)?;
    refuse(loc, kind, "quick_ci_target", &run.quick_ci_target)?;
    refuse(loc, kind, "max_reps", &run.max_reps)?;
    refuse(loc, kind, "quick_max_reps", &run.quick_max_reps)?;
    refuse(loc, kind, "max_time", &run.max_time)?;
    refuse(loc, kind, "quick_max_time", &run.quick_max_time)?;
    let Some(protocol_key) = &run.protocol else {
        return Err(loc.at(
            run.kind.span(),
            "a `messages` run needs `protocol` (tcp, udp or xtp)".into(),
        ));
    };
    let protocol = match protocol_key.get_ref().as_str() {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        // An association through XTP's socket interface, on the reference
        // stack (the only stack `messages` runs use).
        "xtp" => Protocol::Xtp,
        other => {
            return Err(loc.at(
                protocol_key.span(),
                format!("protocol `{other}` is not one of: tcp, udp, xtp"),
            ))
        }
    };
    let family = match &run.family {
        None => Family::V6,
        Some(f) => match f.get_ref().as_str() {
            "ipv6" => Family::V6,
            "ipv4" => Family::V4,
            other => {
                return Err(loc.at(
                    f.span(),
                    format!("family `{other}` is not one of: ipv6, ipv4"),
                ))
            }
        },
    };
    let sizes_of = |key: &str, value: &Spanned<String>| {
        sizes(key, value.get_ref()).map_err(|e| loc.at(value.span(), e))
    };
    let sizes = sizes_of("sizes", &run.sizes)?;
    let quick_sizes = match &run.quick_sizes {
        Some(q) => sizes_of("quick_sizes", q)?,
        None => sizes.clone(),
    };
    let reps = reps_of(loc, "reps", &run.reps, 1)?;
    let quick_reps = reps_of(loc, "quick_reps", &run.quick_reps, 1)?;
    let total = sizes.len() as u64 * u64::from(reps);
    if total > MAX_MESSAGES {
        return Err(loc.at(
            run.sizes.span(),
            format!("sizes × reps = {total} messages: a run sends at most {MAX_MESSAGES}"),
        ));
    }
    let sockbuf = match &run.sockbuf {
        Some(s) => Some(
            traffic::units::parse_size(s.get_ref())
                .ok()
                .filter(|&b| (1..=(64 << 20)).contains(&b))
                .ok_or_else(|| {
                    loc.at(
                        s.span(),
                        format!("sockbuf `{}`: give 1..64M bytes, e.g. 64K", s.get_ref()),
                    )
                })? as usize,
        ),
        None => None,
    };
    let stop = match &run.stop {
        None => StopAt::default(),
        Some(s) => match StopAt::from_name(s.get_ref()) {
            Some(StopAt::Acknowledged) if !protocol.is_stream() => return Err(loc.at(
                s.span(),
                "stop `acknowledged` needs protocol tcp or xtp: nothing acknowledges a datagram"
                    .into(),
            )),
            Some(stop) => stop,
            None => {
                return Err(loc.at(
                    s.span(),
                    format!(
                        "stop `{}` is not one of: on_the_wire, handed_to_device, acknowledged",
                        s.get_ref()
                    ),
                ))
            }
        },
    };
    let probes = match &run.probes {
        None => probe::Level::Layers,
        Some(p) => p
            .get_ref()
            .parse()
            .map_err(|e: String| loc.at(p.span(), e))?,
    };
    let max = match (protocol, family) {
        (Protocol::Udp, Family::V4) => 65_507,
        (Protocol::Udp, Family::V6) => traffic::reference::messages::MAX_MESSAGE,
        _ => MAX_SIZE as usize,
    };
    for (key, list, span) in [
        ("sizes", &sizes, run.sizes.span()),
        (
            "quick_sizes",
            &quick_sizes,
            run.quick_sizes
                .as_ref()
                .map_or(run.sizes.span(), |q| q.span()),
        ),
    ] {
        if let Some(bad) = list.iter().find(|&&s| s > max) {
            return Err(loc.at(
                span,
                format!("{key}: {bad} bytes is more than {max}, the largest {protocol:?} message over {family}"),
            ));
        }
    }
    let slope_ci_target = slope_target_of(loc, "slope_ci_target", &run.slope_ci_target, &sizes)?;
    // The quick twin defaults to the full target, judged on the quick sizes.
    let quick_slope_ci_target = match &run.quick_slope_ci_target {
        Some(_) => slope_target_of(
            loc,
            "quick_slope_ci_target",
            &run.quick_slope_ci_target,
            &quick_sizes,
        )?,
        None => slope_target_of(loc, "slope_ci_target", &run.slope_ci_target, &quick_sizes)?,
    };
    let slope_time_cap = time_cap_of(
        loc,
        "slope_time_cap",
        &run.slope_time_cap,
        DEFAULT_SLOPE_TIME_CAP,
    )?;
    let quick_slope_time_cap = time_cap_of(
        loc,
        "quick_slope_time_cap",
        &run.quick_slope_time_cap,
        DEFAULT_QUICK_SLOPE_TIME_CAP,
    )?;
    let (load, load_on) = sweep::messages_load(run, loc)?;
    Ok(MessagesPlan {
        slope_ci_target,
        quick_slope_ci_target,
        slope_time_cap,
        quick_slope_time_cap,
        protocol,
        family,
        sizes,
        quick_sizes,
        reps,
        quick_reps,
        warmup: run.warmup.as_ref().map_or(0, |w| *w.get_ref()),
        sockbuf,
        stop,
        probes,
        fragmentation: fragmentation_of(loc, &run.fragmentation)?,
        load,
        load_on,
    })
}

/// `fragmentation = "copy"` or `"scatter-gather"` (the default).
fn fragmentation_of(
    loc: &Locator,
    key: &Option<Spanned<String>>,
) -> Result<stack::iface::host::Fragmentation, RecipeError> {
    use stack::iface::host::Fragmentation;
    let Some(key) = key else {
        return Ok(Fragmentation::default());
    };
    match key.get_ref().as_str() {
        "scatter-gather" => Ok(Fragmentation::ScatterGather),
        "copy" => Ok(Fragmentation::Copy),
        other => Err(loc.at(
            key.span(),
            format!("fragmentation `{other}` is not one of: scatter-gather, copy"),
        )),
    }
}

/// A size list (`100..20000:100`, `16,64,1K`); sizes are at least 1 byte.
fn sizes(key: &str, text: &str) -> Result<Vec<usize>, String> {
    let values = traffic::sweep::axis::numbers(key, text, traffic::units::parse_size)?;
    if let Some(zero) = values.iter().position(|&v| v == 0) {
        return Err(format!(
            "{key}: value {} is 0 bytes; sizes start at 1",
            zero + 1
        ));
    }
    if let Some(&big) = values.iter().find(|&&v| v > MAX_SIZE) {
        return Err(format!(
            "{key}: {big} bytes is more than the largest message, {MAX_SIZE}"
        ));
    }
    Ok(values.into_iter().map(|v| v as usize).collect())
}

/// 1-based line and column of byte `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |n| before.len() - n - 1)
        + 1;
    (line, column)
}

#[cfg(test)]
mod slope_tests;
#[cfg(test)]
mod tests;
