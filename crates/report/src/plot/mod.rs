//! Plots for the HTML report, as standalone inline SVG.
//!
//! Every function returns a complete `<svg …>…</svg>` document with
//! `width`, `height` and a `viewBox`, ready to paste into HTML: the report
//! needs no network and no fonts (text is laid out by estimate and rendered
//! by the browser). Drawing is done by `plotters`' SVG backend.
//!
//! No input makes these functions panic. Values that cannot be drawn — NaN,
//! infinities, magnitudes above 1e300, non-positive values on a log axis —
//! are skipped; when nothing is left, the chart is its frame with a centred
//! "no data". All text (titles, axis labels, names) is XML-escaped.
//!
//! Common look: [`WIDTH`] x [`HEIGHT`] pixels, the Okabe-Ito palette
//! (colour-blind safe), a light grid at "nice" ticks (1, 2, 5 times a power
//! of ten; decades on log axes), and a legend below the chart when there is
//! more than one series or layer.

mod axis;
mod bars;
mod frame;
mod histogram;
mod share_bars;
mod stacked;
mod xy;

pub(crate) use axis::fmt_sig;

/// Width of every chart, in pixels.
pub const WIDTH: u32 = 720;
/// Height of every chart but the bar chart, in pixels.
pub const HEIGHT: u32 = 420;
/// Most points drawn per series (after dropping duplicate pixels in a
/// scatter); longer series are thinned keeping each stretch's extremes.
pub const MAX_POINTS_PER_SERIES: usize = 20_000;
/// Most bars a bar chart draws; the rest are counted in a note.
pub const MAX_BARS: usize = 60;
/// Most buckets a histogram draws; more are merged with their neighbours.
pub const MAX_BUCKETS: usize = 2_000;
/// Largest bar chart height, in pixels.
pub const MAX_BAR_CHART_HEIGHT: u32 = 1_500;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// One dot per point (a scatter plot).
    Points,
    /// Points joined by straight lines, in the given order.
    Line,
    /// A dashed line, for trend lines (at most 1 000 points drawn).
    Dashed,
    /// A staircase: each value holds until the next point's x.
    Steps,
    /// A horizontal line across the whole chart at the first point's y
    /// (its x is ignored), e.g. a link's rate.
    Reference,
}

/// A named series of (x, y) points.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// Confidence intervals drawn as vertical bars: (x, low, high), e.g.
    /// the 95 % interval of the mean each point is. Empty for none.
    pub errors: Vec<(f64, f64, f64)>,
}

impl Series {
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>, style: Style) -> Self {
        Self {
            name: name.into(),
            points,
            style,
            errors: Vec::new(),
        }
    }

    /// With the intervals `errors` drawn as bars.
    pub fn with_errors(mut self, errors: Vec<(f64, f64, f64)>) -> Self {
        self.errors = errors;
        self
    }
}

/// Series against two numeric axes, each linear or logarithmic.
#[derive(Debug, Clone)]
pub struct XyChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub log_x: bool,
    pub log_y: bool,
}

/// Draws series of points, lines, dashed trend lines or steps.
pub fn xy_chart(chart: &XyChart) -> String {
    xy::draw(chart, false)
}

/// [`xy_chart`] whose logarithmic x axis counts bytes: ticks at powers of
/// two, labelled "4 KiB", "64 KiB" (as recipes write sizes).
pub fn xy_chart_bytes(chart: &XyChart) -> String {
    xy::draw(chart, true)
}

/// Shares stacked to (at most) 100 % per x: e.g. the share of stop latency
/// per cost category vs payload size. Values are stacked as given (not
/// normalised); negative and non-finite values count as 0. A layer longer
/// or shorter than `x` is truncated to the shorter of the two (a missing
/// value counts as 0). Fewer than 8 distinct x values are drawn as stacked
/// bars, one per x; more as stacked areas over a linear x axis.
#[derive(Debug, Clone, Default)]
pub struct StackedChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x: Vec<f64>,
    pub layers: Vec<(String, Vec<f64>)>,
    /// Percentages: the y axis is 0–100 whatever the data (a stack above
    /// 100 is cut at the top).
    pub percent: bool,
    /// Layer `j`'s colour is palette entry `colour_slots[j]`, so a
    /// category keeps its colour from chart to chart; empty (or with a
    /// repeat) means by position.
    pub colour_slots: Vec<usize>,
    /// The x values are byte counts: labelled in the binary units a
    /// recipe uses (4096 is "4 KiB").
    pub x_bytes: bool,
}

/// One stacked horizontal bar per row (e.g. per path: where its time goes),
/// every row a whole of 100 %: layers in order left to right, each share
/// printed on it when there is room. Colours as [`StackedChart`]'s.
#[derive(Debug, Clone, Default)]
pub struct ShareBars {
    pub title: String,
    pub value_label: String,
    /// Layer names, in stacking order.
    pub layers: Vec<String>,
    /// Each row's label and its share (%) of every layer.
    pub rows: Vec<(String, Vec<f64>)>,
    pub colour_slots: Vec<usize>,
    /// Width of the chart in pixels (at least [`WIDTH`]).
    pub width: u32,
}

/// Draws stacked horizontal share bars.
pub fn share_bars(chart: &ShareBars) -> String {
    share_bars::draw(chart)
}

/// Colours for `n` layers placed at `slots` (see
/// [`StackedChart::colour_slots`]), as `#RRGGBB`; no two alike.
pub fn layer_colours(n: usize, slots: &[usize]) -> Vec<String> {
    frame::layer_colours(n, slots)
        .into_iter()
        .map(|c| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2))
        .collect()
}

/// Draws a stacked area (or stacked bar) chart.
pub fn stacked_chart(chart: &StackedChart) -> String {
    stacked::draw(chart)
}

/// Horizontal bars, e.g. CPU share per function (label, value), drawn top
/// to bottom in the given order (give them longest first). The height grows
/// with the number of bars up to [`MAX_BAR_CHART_HEIGHT`]; at most
/// [`MAX_BARS`] are drawn. Bars with a non-finite value are skipped.
#[derive(Debug, Clone, Default)]
pub struct BarChart {
    pub title: String,
    pub value_label: String,
    pub bars: Vec<(String, f64)>,
    /// Percentages of a whole: the value axis is 0–100.
    pub percent: bool,
}

/// Draws a horizontal bar chart.
pub fn bar_chart(chart: &BarChart) -> String {
    bars::draw(chart)
}

/// Bucketed counts: (lower edge, upper edge, count). Buckets with
/// non-finite or reversed edges (or, on a log axis, a non-positive lower
/// edge) are skipped.
#[derive(Debug, Clone)]
pub struct HistogramChart {
    pub title: String,
    pub x_label: String,
    pub buckets: Vec<(f64, f64, u64)>,
    pub log_x: bool,
}

/// Draws a histogram, count against the bucket edges.
pub fn histogram_chart(chart: &HistogramChart) -> String {
    histogram::draw(chart)
}
