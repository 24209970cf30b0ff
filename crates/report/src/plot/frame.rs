//! What every chart shares: the SVG document around it, fonts and colours,
//! the chart frame with its grid, the "no data" frame, and the legend.

use std::error::Error;

use plotters::chart::ChartContext;
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{Axis, Coord};

/// The drawing surface of one chart.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
/// A chart whose both axes are [`Axis`]es.
pub(crate) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Coord, Coord>>;
pub(crate) type DrawResult = Result<(), Box<dyn Error>>;

/// The generic font family; the browser picks the face.
pub(crate) const FONT: &str = "sans-serif";
// plotters writes `font-size` as the given size / 1.24.
pub(crate) const TITLE_SIZE: f64 = 21.0; // ~17 px
pub(crate) const LABEL_SIZE: f64 = 16.0; // ~13 px
pub(crate) const TICK_SIZE: f64 = 15.0; // ~12 px
/// Rough width of one character of a ~13 px sans-serif label, in pixels.
pub(crate) const CHAR_W: f64 = 8.0;
/// Rough width of one character of a ~12 px tick label, in pixels.
pub(crate) const TICK_CHAR_W: f64 = 7.6;

pub(crate) const TEXT: RGBColor = RGBColor(0x33, 0x33, 0x33);
pub(crate) const AXIS: RGBColor = RGBColor(0x66, 0x66, 0x66);
pub(crate) const GRID: RGBColor = RGBColor(0xE4, 0xE4, 0xE4);
pub(crate) const MUTED: RGBColor = RGBColor(0x88, 0x88, 0x88);

/// Okabe-Ito, ordered so the first colours are the most distinct on white
/// (yellow, the faintest, comes last).
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0x00, 0x00, 0x00), // black
    RGBColor(0xF0, 0xE4, 0x42), // yellow
];

pub(crate) fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub(crate) fn font(size: f64) -> TextStyle<'static> {
    (FONT, size).into_font().color(&TEXT)
}

/// A text style anchored at the given position.
pub(crate) fn anchored(size: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    font(size).pos(Pos::new(h, v))
}

/// Estimated width of a label in pixels.
pub(crate) fn text_width(s: &str, char_w: f64) -> i32 {
    (s.chars().count() as f64 * char_w).ceil() as i32
}

/// Cuts a label to `max` characters, marking the cut with an ellipsis.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Escapes the XML special characters of text or an attribute value.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Runs `draw` on a white `size` canvas and returns the SVG document. If
/// plotters reports an error (it does not for an in-memory string), a
/// minimal hand-written document with the title and "no data" is returned.
pub(crate) fn render(
    size: (u32, u32),
    title: &str,
    draw: impl FnOnce(&Area<'_>) -> DrawResult,
) -> String {
    let mut buf = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE)
            .map_err(Box::<dyn Error>::from)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(Box::<dyn Error>::from))
    };
    match result {
        Ok(()) if buf.starts_with("<svg") => buf,
        _ => fallback(size, title),
    }
}

fn fallback((w, h): (u32, u32), title: &str) -> String {
    format!(
        concat!(
            r##"<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">"##,
            r##"<rect x="0" y="0" width="{w}" height="{h}" fill="#FFFFFF"/>"##,
            r##"<text x="{cx}" y="24" text-anchor="middle" font-family="sans-serif" font-size="17">{t}</text>"##,
            r##"<text x="{cx}" y="{cy}" text-anchor="middle" font-family="sans-serif" font-size="14" fill="#888888">no data</text>"##,
            "</svg>"
        ),
        w = w,
        h = h,
        cx = w / 2,
        cy = h / 2,
        t = escape(title),
    )
}

/// Room for the tick labels and the description of the y axis.
pub(crate) fn y_label_area(widest_tick_chars: usize, has_desc: bool) -> u32 {
    let ticks = (widest_tick_chars.min(16) as f64 * TICK_CHAR_W) as u32 + 12;
    ticks + if has_desc { 26 } else { 4 }
}

/// Builds the chart on `area` with both axes and draws the frame: title,
/// light grid at the ticks, axes, tick labels and axis descriptions.
pub(crate) fn chart<'a, 'b>(
    area: &'a Area<'b>,
    title: &str,
    x: &Axis,
    y: &Axis,
    x_desc: &str,
    y_desc: &str,
    y_area: u32,
) -> Result<Chart<'a, 'b>, Box<dyn Error>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(10)
        .margin_right(24)
        .x_label_area_size(if x_desc.is_empty() { 28 } else { 50 })
        .y_label_area_size(y_area);
    if !title.is_empty() {
        builder.caption(
            truncate(title, 80),
            (FONT, TITLE_SIZE).into_font().color(&TEXT),
        );
    }
    let mut chart = builder.build_cartesian_2d(x.coord(), y.coord())?;
    let xf = |t: &f64| x.label(*t);
    let yf = |t: &f64| y.label(*t);
    chart
        .configure_mesh()
        .x_desc(truncate(x_desc, 90))
        .y_desc(truncate(y_desc, 60))
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS)
        .label_style(font(TICK_SIZE))
        .axis_desc_style(font(LABEL_SIZE))
        .draw()?;
    Ok(chart)
}

/// The frame of an empty chart: title, axes with their descriptions, and a
/// centred "no data".
pub(crate) fn no_data(area: &Area<'_>, title: &str, x_desc: &str, y_desc: &str) -> DrawResult {
    let (mut x, mut y) = (
        Axis::exact(false, 0.0, 1.0, 2),
        Axis::exact(false, 0.0, 1.0, 2),
    );
    x.ticks.clear();
    y.ticks.clear();
    let mut chart = chart(
        area,
        title,
        &x,
        &y,
        x_desc,
        y_desc,
        y_label_area(0, !y_desc.is_empty()),
    )?;
    chart.draw_series(std::iter::once(Text::new(
        "no data",
        (0.5, 0.5),
        anchored(LABEL_SIZE, HPos::Center, VPos::Center).color(&MUTED),
    )))?;
    Ok(())
}

/// What a legend entry shows next to its name.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Swatch {
    Line(RGBColor),
    Dashed(RGBColor),
    Point(RGBColor),
    Fill(RGBColor),
    /// No swatch (the "+N more" entry).
    None,
}

/// A legend laid out in rows below the chart.
#[derive(Debug, Clone)]
pub(crate) struct Legend {
    /// Entries placed: swatch, label, row, x offset.
    placed: Vec<(Swatch, String, u32, i32)>,
    rows: u32,
}

const LEGEND_ROW: u32 = 20;
const LEGEND_PAD: u32 = 6;
const SWATCH_W: i32 = 22;
const MAX_LEGEND_ROWS: u32 = 5;
const MAX_LEGEND_NAME: usize = 48;

impl Legend {
    /// Flows the entries into rows `width` pixels wide; what does not fit in
    /// the rows allowed is summarised as "+N more".
    pub(crate) fn new(entries: Vec<(Swatch, &str)>, width: u32) -> Self {
        let width = width as i32 - 2 * 16;
        let total = entries.len();
        let entry_w = |name: &str, swatch: bool| {
            let sw = if swatch { SWATCH_W + 6 } else { 0 };
            sw + text_width(name, CHAR_W) + 18
        };
        let more_w = entry_w("+0000 more", false);
        let mut placed = Vec::with_capacity(total);
        let last = MAX_LEGEND_ROWS - 1;
        let (mut row, mut x) = (0u32, 0i32);
        for (i, (swatch, name)) in entries.into_iter().enumerate() {
            let name = truncate(name, MAX_LEGEND_NAME);
            let w = entry_w(&name, true);
            let more = || (Swatch::None, format!("+{} more", total - i));
            if x > 0 && x + w > width {
                if row == last {
                    let (s, t) = more();
                    placed.push((s, t, row, x));
                    break;
                }
                row += 1;
                x = 0;
            }
            // On the last row, keep room for the "+N more" that would follow.
            if row == last && i + 1 < total && x + w + more_w > width {
                let (s, t) = more();
                placed.push((s, t, row, x));
                break;
            }
            placed.push((swatch, name, row, x));
            x += w;
        }
        Legend {
            placed,
            rows: row + 1,
        }
    }

    /// Height the legend needs below the chart.
    pub(crate) fn height(&self) -> u32 {
        self.rows * LEGEND_ROW + 2 * LEGEND_PAD
    }

    pub(crate) fn draw(&self, area: &Area<'_>) -> DrawResult {
        let style = anchored(LABEL_SIZE, HPos::Left, VPos::Center);
        for (swatch, name, row, x) in &self.placed {
            let x = x + 16;
            let y = (LEGEND_PAD + row * LEGEND_ROW + LEGEND_ROW / 2) as i32;
            let text_x = match swatch {
                Swatch::Line(c) => {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + SWATCH_W, y)],
                        c.stroke_width(2),
                    ))?;
                    x + SWATCH_W + 6
                }
                Swatch::Dashed(c) => {
                    for (a, b) in [(0, 6), (9, 14), (17, 22)] {
                        area.draw(&PathElement::new(
                            vec![(x + a, y), (x + b, y)],
                            c.stroke_width(2),
                        ))?;
                    }
                    x + SWATCH_W + 6
                }
                Swatch::Point(c) => {
                    area.draw(&Circle::new((x + SWATCH_W / 2, y), 4, c.filled()))?;
                    x + SWATCH_W + 6
                }
                Swatch::Fill(c) => {
                    area.draw(&Rectangle::new(
                        [(x + 4, y - 7), (x + SWATCH_W - 4, y + 7)],
                        c.filled(),
                    ))?;
                    x + SWATCH_W + 6
                }
                Swatch::None => x,
            };
            let style = if matches!(swatch, Swatch::None) {
                style.color(&MUTED)
            } else {
                style.clone()
            };
            area.draw(&Text::new(name.clone(), (text_x, y), style))?;
        }
        Ok(())
    }
}

/// Splits the canvas into the chart and, when there is one, the legend
/// below it; draws the legend and returns the chart's area.
pub(crate) fn with_legend<'b>(
    root: &Area<'b>,
    legend: Option<&Legend>,
) -> Result<Area<'b>, Box<dyn Error>> {
    match legend {
        None => Ok(root.clone()),
        Some(legend) => {
            let (_, h) = root.dim_in_pixel();
            let (upper, lower) = root.split_vertically(h.saturating_sub(legend.height()));
            legend.draw(&lower)?;
            Ok(upper)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_is_escaped_svg() {
        let svg = fallback((720, 420), "a <b> & \"c\"");
        assert!(svg.starts_with("<svg width=\"720\" height=\"420\" viewBox=\"0 0 720 420\""));
        assert!(svg.contains("a &lt;b&gt; &amp; &quot;c&quot;"));
        assert!(svg.contains(">no data</text>"));
        assert!(svg.ends_with("</svg>"));
    }

    #[test]
    fn truncation_marks_the_cut() {
        assert_eq!(truncate("abcdef", 6), "abcdef");
        assert_eq!(truncate("abcdefg", 6), "abcde…");
        assert_eq!(truncate("ééééééé", 3), "éé…");
    }

    #[test]
    fn legend_wraps_and_summarises() {
        let names: Vec<String> = (0..100).map(|i| format!("entry {i}")).collect();
        let entries = names.iter().map(|n| (Swatch::None, n.as_str())).collect();
        let legend = Legend::new(entries, 720);
        assert_eq!(legend.rows, MAX_LEGEND_ROWS);
        let last = legend.placed.last().unwrap();
        assert!(
            last.1.starts_with('+') && last.1.ends_with(" more"),
            "{}",
            last.1
        );
        assert!(legend.placed.iter().all(|p| p.3 >= 0 && p.3 < 720 - 32));
        let one = Legend::new(vec![(Swatch::None, "x")], 720);
        assert_eq!(one.rows, 1);
        assert_eq!(one.placed.len(), 1);
    }
}
