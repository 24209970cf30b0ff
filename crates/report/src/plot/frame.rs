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

/// Okabe-Ito (colour-blind safe), ordered so the first colours are the
/// most distinct on white (yellow, the faintest, comes last), then six
/// more from Krzywinski's colour-blind palettes that differ from those in
/// lightness or hue: fourteen colours before [`colours`] has to invent any.
pub(crate) const PALETTE: [RGBColor; 14] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0x00, 0x00, 0x00), // black
    RGBColor(0xF0, 0xE4, 0x42), // yellow
    RGBColor(0x9F, 0x01, 0x62), // jazzberry
    RGBColor(0x84, 0x00, 0xCD), // violet
    RGBColor(0x00, 0x57, 0x45), // deep teal
    RGBColor(0x99, 0x99, 0x99), // grey
    RGBColor(0xA4, 0x01, 0x22), // crimson
    RGBColor(0xFF, 0xB2, 0xFD), // pale pink
];

/// The first colour (a chart with one series).
pub(crate) fn colour(i: usize) -> RGBColor {
    colours(i + 1)[i]
}

/// `n` colours, no two alike: the palette, then colours spread around the
/// hue circle at three lightnesses, each checked against those already
/// given (a chart with more layers than the palette never repeats one).
pub(crate) fn colours(n: usize) -> Vec<RGBColor> {
    let mut out: Vec<RGBColor> = PALETTE.iter().copied().take(n).collect();
    let mut seen: std::collections::HashSet<(u8, u8, u8)> =
        out.iter().map(|c| (c.0, c.1, c.2)).collect();
    let mut k: u32 = 0;
    while out.len() < n {
        let c = invented(k);
        k = k.saturating_add(1);
        if seen.insert((c.0, c.1, c.2)) {
            out.push(c);
        }
    }
    out
}

/// Colours of `n` layers: palette entry `slots[j]` for layer `j` when
/// `slots` names one distinct entry per layer, else by position. Never a
/// repeat either way.
pub(crate) fn layer_colours(n: usize, slots: &[usize]) -> Vec<RGBColor> {
    let distinct = slots.len() == n
        && slots.iter().collect::<std::collections::HashSet<_>>().len() == n
        && slots.iter().all(|&i| i < 1_000);
    if !distinct {
        return colours(n);
    }
    let all = colours(slots.iter().copied().max().map_or(0, |m| m + 1));
    slots.iter().map(|&i| all[i]).collect()
}

/// The `k`th invented colour: golden-angle hues at three lightnesses; past
/// ten thousand, `k`'s own bits (distinct for every k below 2^24).
fn invented(k: u32) -> RGBColor {
    if k >= 10_000 {
        return RGBColor((k >> 16) as u8, (k >> 8) as u8, k as u8);
    }
    let hue = (f64::from(k) * 137.507_764) % 360.0;
    let lightness = [0.42, 0.28, 0.58][(k % 3) as usize];
    hsl(hue, 0.75, lightness)
}

fn hsl(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(byte(r), byte(g), byte(b))
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

/// Splits text into lines of at most `max` characters at spaces; a word
/// longer than a line is split there. Nothing is left out.
pub(crate) fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > max {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(word.drain(..max).collect());
        }
        let word: String = word.into_iter().collect();
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > max {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Font size (plotters units) at which `text` fits `avail` pixels: `size`
/// if it does, smaller down to `min` if it does not (then it may overflow
/// a little, but is never cut).
pub(crate) fn fitting_size(text: &str, avail: f64, size: f64, min: f64) -> f64 {
    // CHAR_W is the width of a character at LABEL_SIZE.
    let width = text.chars().count() as f64 * CHAR_W * size / LABEL_SIZE;
    if width <= avail || width <= 0.0 {
        size
    } else {
        (size * avail / width).max(min)
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

/// Draws the title centred at the top of `area`, wrapped onto as many
/// lines as it needs (smaller from the third line on) so none of it is
/// cut; returns the height it took.
pub(crate) fn draw_title(area: &Area<'_>, title: &str) -> Result<u32, Box<dyn Error>> {
    if title.trim().is_empty() {
        return Ok(0);
    }
    let (w, _) = area.dim_in_pixel();
    let avail = f64::from(w) - 24.0;
    // A title character is about 1.2 label characters wide.
    let lines_at = |size: f64| wrap(title, (avail / (CHAR_W * size / LABEL_SIZE)) as usize);
    let mut size = TITLE_SIZE;
    let mut lines = lines_at(size);
    if lines.len() > 2 {
        size = LABEL_SIZE;
        lines = lines_at(size);
    }
    let line_h = (size / 1.24 * 1.3).ceil() as u32;
    let style = anchored(size, HPos::Center, VPos::Top);
    for (i, line) in lines.iter().enumerate() {
        area.draw(&Text::new(
            line.clone(),
            ((w / 2) as i32, 8 + (i as u32 * line_h) as i32),
            style.clone(),
        ))?;
    }
    Ok(lines.len() as u32 * line_h + 4)
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
    let (w, h) = area.dim_in_pixel();
    let title_h = draw_title(area, title)?;
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(10)
        .margin_top(10 + title_h)
        .margin_right(24)
        .x_label_area_size(if x_desc.is_empty() { 28 } else { 50 })
        .y_label_area_size(y_area);
    // Axis descriptions shrink to fit their axis rather than being cut.
    let x_avail = f64::from(w) - f64::from(y_area) - 40.0;
    let y_avail = f64::from(h) - f64::from(title_h) - 80.0;
    let desc_size = fitting_size(x_desc, x_avail, LABEL_SIZE, 11.0)
        .min(fitting_size(y_desc, y_avail, LABEL_SIZE, 11.0));
    let mut chart = builder.build_cartesian_2d(x.coord(), y.coord())?;
    let xf = |t: &f64| x.label(*t);
    let yf = |t: &f64| y.label(*t);
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS)
        .label_style(font(TICK_SIZE))
        .axis_desc_style(font(desc_size))
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

/// A legend laid out in rows below the chart. A name wider than a row is
/// wrapped onto several (never cut); past [`MAX_LEGEND_ROWS`] rows the
/// rest is summarised as "+N more".
#[derive(Debug, Clone)]
pub(crate) struct Legend {
    /// Entries placed: swatch, label lines, first row, x offset.
    placed: Vec<(Swatch, Vec<String>, u32, i32)>,
    rows: u32,
}

const LEGEND_ROW: u32 = 20;
const LEGEND_PAD: u32 = 6;
const SWATCH_W: i32 = 22;
/// Rows a legend may take before the rest is counted instead.
pub(crate) const MAX_LEGEND_ROWS: u32 = 16;
/// Legend rows that fit inside the chart's standard height; more make the
/// chart taller.
const ROWS_INSIDE: u32 = 2;

impl Legend {
    /// Flows the entries into rows `width` pixels wide.
    pub(crate) fn new(entries: Vec<(Swatch, &str)>, width: u32) -> Self {
        let width = width as i32 - 2 * 16;
        let total = entries.len();
        let sw = SWATCH_W + 6;
        let name_chars = (((width - sw - 18) as f64) / CHAR_W).max(8.0) as usize;
        let entry_w = |name: &str, swatch: bool| {
            (if swatch { sw } else { 0 }) + text_width(name, CHAR_W) + 18
        };
        let more_w = entry_w("+0000 more", false);
        let mut placed = Vec::with_capacity(total);
        let last = MAX_LEGEND_ROWS - 1;
        let (mut row, mut x) = (0u32, 0i32);
        for (i, (swatch, name)) in entries.into_iter().enumerate() {
            let lines = wrap(name, name_chars);
            let tall = lines.len() as u32;
            let w = lines.iter().map(|l| entry_w(l, true)).max().unwrap_or(sw);
            if x > 0 && x + w > width {
                row += 1;
                x = 0;
            }
            // Past the last row, or no room left on it for the "+N more"
            // that would follow: count the rest instead.
            let ends = row + tall - 1;
            if ends > last || (ends == last && i + 1 < total && x + w + more_w > width) {
                if x > 0 && x + more_w > width {
                    row += 1;
                    x = 0;
                }
                let more = vec![format!("+{} more", total - i)];
                placed.push((Swatch::None, more, row, x));
                break;
            }
            placed.push((swatch, lines, row, x));
            if tall > 1 {
                row += tall;
                x = 0;
            } else {
                x += w;
            }
        }
        let rows = placed
            .iter()
            .map(|(_, lines, r, _)| r + lines.len() as u32)
            .max()
            .unwrap_or(1);
        Legend { placed, rows }
    }

    /// Height the legend needs below the chart.
    pub(crate) fn height(&self) -> u32 {
        self.rows * LEGEND_ROW + 2 * LEGEND_PAD
    }

    /// How much taller than the standard height the chart must be for
    /// this legend.
    pub(crate) fn extra_height(&self) -> u32 {
        self.rows.saturating_sub(ROWS_INSIDE) * LEGEND_ROW
    }

    pub(crate) fn draw(&self, area: &Area<'_>) -> DrawResult {
        let style = anchored(LABEL_SIZE, HPos::Left, VPos::Center);
        for (swatch, lines, row, x) in &self.placed {
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
            for (k, line) in lines.iter().enumerate() {
                let y = y + (k as u32 * LEGEND_ROW) as i32;
                area.draw(&Text::new(line.clone(), (text_x, y), style.clone()))?;
            }
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
    fn wrapping_keeps_every_character() {
        assert_eq!(wrap("abc def", 10), ["abc def"]);
        assert_eq!(wrap("abc def ghi", 7), ["abc def", "ghi"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 4), [""]);
        let long = "a title far longer than any line of the chart could ever hold in one go";
        let lines = wrap(long, 20);
        assert!(lines.iter().all(|l| l.chars().count() <= 20));
        assert_eq!(lines.join(" "), long);
    }

    #[test]
    fn colours_never_repeat_within_a_chart() {
        for n in [1, 8, 9, 13, 14, 15, 40, 500] {
            let c = colours(n);
            assert_eq!(c.len(), n);
            let distinct: std::collections::HashSet<(u8, u8, u8)> =
                c.iter().map(|c| (c.0, c.1, c.2)).collect();
            assert_eq!(distinct.len(), n, "{n} colours with a repeat");
            // The first ones are the palette, whatever n.
            assert_eq!(c[0], PALETTE[0]);
        }
        // The ninth differs from the first (checksum and other once shared it).
        assert_ne!(colour(8), colour(0));
    }

    #[test]
    fn legend_wraps_and_summarises() {
        let names: Vec<String> = (0..100).map(|i| format!("entry {i}")).collect();
        let entries = names.iter().map(|n| (Swatch::None, n.as_str())).collect();
        let legend = Legend::new(entries, 720);
        assert!(
            (MAX_LEGEND_ROWS..=MAX_LEGEND_ROWS + 1).contains(&legend.rows),
            "{}",
            legend.rows
        );
        let last = legend.placed.last().unwrap();
        assert!(
            last.1[0].starts_with('+') && last.1[0].ends_with(" more"),
            "{:?}",
            last.1
        );
        assert!(legend.placed.iter().all(|p| p.3 >= 0 && p.3 < 720 - 32));
        let one = Legend::new(vec![(Swatch::None, "x")], 720);
        assert_eq!(one.rows, 1);
        assert_eq!(one.placed.len(), 1);
    }
}
