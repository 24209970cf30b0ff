//! Behaviour of the inline-SVG plots: well-formed standalone documents,
//! legends, escaping, "no data", log axes, caps, and no panics.

use report::plot::*;

// ---------------------------------------------------------------------------
// A tiny XML well-formedness checker (elements, attributes, entities).

fn check_entities(s: &str) -> Result<(), String> {
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        let after = &rest[i + 1..];
        let end = after
            .find(';')
            .ok_or_else(|| format!("unterminated entity in {s:?}"))?;
        let name = &after[..end];
        let ok = matches!(name, "lt" | "gt" | "amp" | "quot" | "apos")
            || name
                .strip_prefix("#x")
                .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
            || name
                .strip_prefix('#')
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
        if !ok {
            return Err(format!("bad entity &{name}; in {s:?}"));
        }
        rest = &after[end + 1..];
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-' | '.')
}

/// Checks that `doc` is one well-formed XML element (with optional
/// whitespace around it): tags balanced, attributes quoted and unique, no
/// raw `<` or stray `&` in text or attribute values.
fn check_xml(doc: &str) -> Result<(), String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut i = 0;
    while i < doc.len() {
        let rest = &doc[i..];
        if let Some(tag) = rest.strip_prefix("</") {
            let end = tag.find('>').ok_or("unterminated closing tag")?;
            let name = tag[..end].trim_end();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("closing </{name}> but open {other:?}")),
            }
            i += 2 + end + 1;
        } else if let Some(tag) = rest.strip_prefix('<') {
            if stack.is_empty() {
                roots += 1;
            }
            let name_len = tag.find(|c: char| !is_name_char(c)).unwrap_or(tag.len());
            if name_len == 0 {
                return Err(format!("bad tag at {i}"));
            }
            let name = &tag[..name_len];
            let mut j = name_len;
            let mut seen = Vec::new();
            loop {
                let t = &tag[j..];
                let ws = t.len() - t.trim_start().len();
                j += ws;
                let t = &tag[j..];
                if t.starts_with("/>") {
                    j += 2;
                    break;
                }
                if t.starts_with('>') {
                    stack.push(name);
                    j += 1;
                    break;
                }
                if ws == 0 {
                    return Err(format!("missing space before attribute in <{name}>"));
                }
                let an = t.find(|c: char| !is_name_char(c)).unwrap_or(t.len());
                if an == 0 {
                    return Err(format!(
                        "bad attribute in <{name}> at {:?}",
                        &t[..t.len().min(20)]
                    ));
                }
                let attr = &t[..an];
                if seen.contains(&attr) {
                    return Err(format!("duplicate attribute {attr} in <{name}>"));
                }
                seen.push(attr);
                let t = &t[an..];
                let q = t
                    .strip_prefix('=')
                    .and_then(|v| v.chars().next())
                    .filter(|q| *q == '"' || *q == '\'')
                    .ok_or_else(|| format!("unquoted attribute {attr} in <{name}>"))?;
                let value_start = an + 2;
                let vlen = t[2..]
                    .find(q)
                    .ok_or_else(|| format!("unterminated attribute {attr}"))?;
                let value = &tag[j + value_start..j + value_start + vlen];
                if value.contains('<') {
                    return Err(format!("raw < in attribute {attr}"));
                }
                check_entities(value)?;
                j += value_start + vlen + 1;
            }
            i += 1 + j;
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let text = &rest[..end];
            if stack.is_empty() && !text.trim().is_empty() {
                return Err(format!("text outside the root: {text:?}"));
            }
            check_entities(text)?;
            i += end;
        }
    }
    if !stack.is_empty() {
        return Err(format!("unclosed elements {stack:?}"));
    }
    if roots != 1 {
        return Err(format!("{roots} root elements"));
    }
    Ok(())
}

/// Asserts `svg` is a standalone, well-formed SVG document of the size.
fn assert_svg(svg: &str, width: u32, height: u32) {
    assert!(
        svg.starts_with("<svg"),
        "starts with {:?}",
        &svg[..svg.len().min(40)]
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    if let Err(e) = check_xml(svg) {
        panic!("not well-formed XML: {e}");
    }
    let head = &svg[..svg.find('>').unwrap()];
    assert!(head.contains(&format!("width=\"{width}\"")), "{head}");
    assert!(head.contains(&format!("height=\"{height}\"")), "{head}");
    assert!(
        head.contains(&format!("viewBox=\"0 0 {width} {height}\"")),
        "{head}"
    );
    assert!(
        head.contains("xmlns=\"http://www.w3.org/2000/svg\""),
        "{head}"
    );
}

fn svg_height(svg: &str) -> u32 {
    let head = &svg[..svg.find('>').unwrap()];
    let h = head.split("height=\"").nth(1).unwrap();
    h[..h.find('"').unwrap()].parse().unwrap()
}

/// The contents of every `<text>` element, trimmed, still escaped.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .map(|s| {
            let body = &s[s.find('>').unwrap() + 1..];
            body[..body.find("</text>").unwrap()].trim().to_string()
        })
        .collect()
}

/// `<text>` elements whose content is exactly `t`, with their attributes.
fn text_elements<'a>(svg: &'a str, t: &str) -> Vec<&'a str> {
    svg.split("<text")
        .skip(1)
        .filter(|s| {
            let body = &s[s.find('>').unwrap() + 1..];
            body[..body.find("</text>").unwrap()].trim() == t
        })
        .collect()
}

fn attr(element: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let v = element.split(&key).nth(1).unwrap();
    v[..v.find('"').unwrap()].parse().unwrap()
}

fn count(svg: &str, needle: &str) -> usize {
    svg.matches(needle).count()
}

/// Number of vertices of the polylines drawn in `colour`.
fn polyline_points(svg: &str, colour: &str) -> Vec<usize> {
    svg.lines()
        .filter(|l| l.starts_with("<polyline") && l.contains(&format!("stroke=\"{colour}\"")))
        .map(|l| {
            let p = l.split("points=\"").nth(1).unwrap();
            p[..p.find('"').unwrap()].split_whitespace().count()
        })
        .collect()
}

const BLUE: &str = "#0072B2"; // first palette colour
const VERMILLION: &str = "#D55E00"; // second

fn has_no_data(svg: &str) -> bool {
    texts(svg).iter().any(|t| t == "no data")
}

fn series(name: &str, points: Vec<(f64, f64)>, style: Style) -> Series {
    Series::new(name, points, style)
}

fn xy(series: Vec<Series>, log_x: bool, log_y: bool) -> XyChart {
    XyChart {
        title: "Stop latency vs payload size".into(),
        x_label: "payload (bytes)".into(),
        y_label: "stop latency (µs)".into(),
        series,
        log_x,
        log_y,
    }
}

fn points(n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|i| {
            (
                i as f64 * 16.0,
                20.0 + (i % 7) as f64 * 1.5 + i as f64 * 0.01,
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Documents

#[test]
fn every_kind_is_a_standalone_well_formed_svg() {
    let x = xy(
        vec![
            series("tcp", points(50), Style::Points),
            series("udp", points(50), Style::Line),
            series("fit", vec![(0.0, 20.0), (800.0, 30.0)], Style::Dashed),
            series("queue", points(20), Style::Steps),
        ],
        false,
        false,
    );
    assert_svg(&xy_chart(&x), WIDTH, HEIGHT);

    let s = StackedChart {
        title: "Share of stop latency".into(),
        x_label: "payload (bytes)".into(),
        y_label: "share (%)".into(),
        x: (0..20).map(|i| 64.0 * i as f64).collect(),
        layers: vec![
            ("checksum".into(), vec![20.0; 20]),
            ("data_move".into(), vec![30.0; 20]),
        ],
        ..Default::default()
    };
    assert_svg(&stacked_chart(&s), WIDTH, HEIGHT);

    let b = BarChart {
        title: "CPU share per function".into(),
        value_label: "share (%)".into(),
        bars: vec![("tcp_output".into(), 31.5), ("in_cksum".into(), 12.0)],
        ..Default::default()
    };
    assert_svg(&bar_chart(&b), WIDTH, HEIGHT);

    let h = HistogramChart {
        title: "Processing delay".into(),
        x_label: "delay (µs)".into(),
        buckets: vec![(0.0, 1.0, 3), (1.0, 2.0, 10), (2.0, 4.0, 7)],
        log_x: false,
    };
    assert_svg(&histogram_chart(&h), WIDTH, HEIGHT);
}

#[test]
fn titles_and_axis_labels_are_drawn() {
    let svg = xy_chart(&xy(
        vec![series("tcp", points(5), Style::Line)],
        false,
        false,
    ));
    let t = texts(&svg);
    for want in [
        "Stop latency vs payload size",
        "payload (bytes)",
        "stop latency (µs)",
    ] {
        assert!(t.iter().any(|s| s == want), "{want} missing from {t:?}");
    }
}

// ---------------------------------------------------------------------------
// Legend

#[test]
fn legend_names_every_series_when_there_are_several() {
    let svg = xy_chart(&xy(
        vec![
            series("alpha", points(5), Style::Points),
            series("beta", points(5), Style::Line),
            series("gamma trend", points(5), Style::Dashed),
            series("delta", vec![], Style::Steps),
        ],
        false,
        false,
    ));
    let t = texts(&svg);
    for name in ["alpha", "beta", "gamma trend", "delta"] {
        assert_eq!(
            t.iter().filter(|s| *s == name).count(),
            1,
            "{name} in {t:?}"
        );
    }
}

#[test]
fn a_single_series_has_no_legend() {
    let svg = xy_chart(&xy(
        vec![series("solo", points(5), Style::Line)],
        false,
        false,
    ));
    assert!(!texts(&svg).iter().any(|s| s == "solo"));
}

#[test]
fn stacked_legend_names_every_layer() {
    let svg = stacked_chart(&StackedChart {
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        x: vec![1.0, 2.0, 3.0],
        layers: vec![
            ("checksum".into(), vec![0.1, 0.2, 0.3]),
            ("buffer".into(), vec![0.3, 0.2, 0.1]),
            ("socket".into(), vec![0.1, 0.1, 0.1]),
        ],
        ..Default::default()
    });
    let t = texts(&svg);
    for name in ["checksum", "buffer", "socket"] {
        assert!(t.iter().any(|s| s == name), "{name} in {t:?}");
    }
}

#[test]
fn a_crowded_legend_summarises_what_does_not_fit() {
    let many: Vec<Series> = (0..200)
        .map(|i| series(&format!("series number {i}"), points(3), Style::Line))
        .collect();
    let svg = xy_chart(&xy(many, false, false));
    // The chart grows to hold the legend's rows rather than cutting them.
    let height = svg_height(&svg);
    assert!(height > HEIGHT, "{height}");
    assert_svg(&svg, WIDTH, height);
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "series number 0"));
    assert!(t.iter().any(|s| s == "series number 40"));
    assert!(!t.iter().any(|s| s == "series number 199"));
    assert!(
        t.iter().any(|s| s.starts_with('+') && s.ends_with(" more")),
        "{t:?}"
    );
}

/// The fill colours of the rectangles of a chart, white left out.
fn fills(svg: &str) -> std::collections::HashSet<String> {
    svg.split("<rect")
        .skip(1)
        .filter_map(|r| {
            let f = r.split("fill=\"").nth(1)?.split('"').next()?;
            (!f.eq_ignore_ascii_case("#FFFFFF") && f != "none").then(|| f.to_uppercase())
        })
        .collect()
}

#[test]
fn the_palette_never_repeats_a_colour_within_a_chart() {
    for n in [9, 13, 20, 24] {
        let layers: Vec<(String, Vec<f64>)> = (0..n)
            .map(|i| (format!("layer {i}"), vec![100.0 / n as f64; 3]))
            .collect();
        let svg = stacked_chart(&StackedChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x: vec![1.0, 2.0, 3.0],
            layers,
            ..Default::default()
        });
        // One colour per layer: bars and legend swatches share them.
        assert_eq!(fills(&svg).len(), n, "{n} layers");
    }
    // Named slots keep a category's colour from chart to chart, distinct.
    let svg = stacked_chart(&StackedChart {
        title: "t".into(),
        x: vec![1.0],
        layers: vec![("a".into(), vec![50.0]), ("b".into(), vec![50.0])],
        colour_slots: vec![12, 0],
        ..Default::default()
    });
    assert_eq!(fills(&svg).len(), 2);
    assert_eq!(
        report::plot::layer_colours(2, &[12, 0]),
        [
            report::plot::layer_colours(13, &[])[12].clone(),
            report::plot::layer_colours(1, &[])[0].clone()
        ]
    );
    // A repeated slot falls back to distinct colours by position.
    let c = report::plot::layer_colours(3, &[1, 1, 2]);
    assert_eq!(c.iter().collect::<std::collections::HashSet<_>>().len(), 3);
}

#[test]
fn a_percentage_axis_ends_at_100() {
    // Layers adding up to 150 % (e.g. something stacked twice) do not
    // stretch the axis.
    let svg = stacked_chart(&StackedChart {
        title: "shares".into(),
        x_label: "payload (bytes)".into(),
        y_label: "% of stop latency".into(),
        x: vec![1.0, 2.0, 3.0],
        layers: vec![
            ("a".into(), vec![100.0, 80.0, 60.0]),
            ("b".into(), vec![50.0, 20.0, 40.0]),
        ],
        percent: true,
        ..Default::default()
    });
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "100"), "{t:?}");
    for above in ["120", "150", "140", "200"] {
        assert!(!t.iter().any(|s| s == above), "{above} in {t:?}");
    }
    // A bar chart of shares too: 30 % reads against the whole.
    let svg = bar_chart(&BarChart {
        title: "CPU share per function".into(),
        value_label: "% of the thread's time".into(),
        bars: vec![("tcp.output".into(), 30.0), ("tcp.input".into(), 96.0)],
        percent: true,
    });
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "100"), "{t:?}");
    assert!(t.iter().any(|s| s == "96"), "{t:?}");
}

#[test]
fn byte_sizes_are_labelled_in_the_recipes_binary_units() {
    let svg = stacked_chart(&StackedChart {
        title: "t".into(),
        x: vec![1024.0, 4096.0, 262_144.0, 1460.0],
        layers: vec![("a".into(), vec![100.0; 4])],
        percent: true,
        x_bytes: true,
        ..Default::default()
    });
    let t = texts(&svg);
    for want in ["1 KiB", "4 KiB", "256 KiB", "1460"] {
        assert!(t.iter().any(|s| s == want), "{want} in {t:?}");
    }
    assert!(!t.iter().any(|s| s.contains("kB")), "{t:?}");
}

#[test]
fn long_titles_and_legend_names_wrap_instead_of_being_cut() {
    let title = "A title that is much longer than the chart is wide, so that it has to be wrapped onto a second or even a third line, because cutting it with an ellipsis would hide what the chart shows from the reader";
    let legend = "a legend entry whose name alone is far longer than one row of the legend can hold, so it must wrap onto the next row";
    let svg = xy_chart(&XyChart {
        title: title.into(),
        x_label: "x".into(),
        y_label: "y".into(),
        series: vec![
            series(legend, points(5), Style::Line),
            series("short", points(5), Style::Points),
        ],
        log_x: false,
        log_y: false,
    });
    assert!(!svg.contains('…'), "something was cut");
    let t = texts(&svg).join(" ");
    for word in title.split_whitespace().chain(legend.split_whitespace()) {
        assert!(t.contains(word), "{word} missing from {t}");
    }
    let bars = share_bars(&ShareBars {
        title: title.into(),
        value_label: "%".into(),
        layers: vec![legend.into(), "b".into()],
        rows: vec![("TCP send".into(), vec![70.0, 30.0])],
        ..Default::default()
    });
    assert!(!bars.contains('…'));
}

#[test]
fn share_bars_draw_one_bar_per_row_with_its_shares() {
    let svg = share_bars(&ShareBars {
        title: "where the time goes".into(),
        value_label: "% of stop latency".into(),
        layers: vec!["wire".into(), "checksum".into(), "other".into()],
        rows: vec![
            ("TCP send".into(), vec![80.0, 15.0, 5.0]),
            ("UDP send".into(), vec![60.0, 1.0, 39.0]),
        ],
        colour_slots: vec![10, 0, 12],
        width: 1000,
    });
    assert_svg(&svg, 1000, svg_height(&svg));
    let t = texts(&svg);
    for want in ["TCP send", "UDP send", "80", "15", "5", "60", "39", "100"] {
        assert!(t.iter().any(|s| s == want), "{want} in {t:?}");
    }
    // 1 % is too narrow to carry its number.
    assert!(!t.iter().any(|s| s == "1"), "{t:?}");
    assert_eq!(fills(&svg).len(), 3);
}

#[test]
fn a_reference_line_spans_the_chart_on_any_axis() {
    for (log_x, log_y) in [(false, false), (true, false), (true, true)] {
        let svg = xy_chart(&xy(
            vec![
                series(
                    "measured",
                    vec![(4096.0, 60.0), (65_536.0, 90.0)],
                    Style::Line,
                ),
                series("link rate", vec![(0.0, 100.0)], Style::Reference),
            ],
            log_x,
            log_y,
        ));
        // The dashes of the line at 100, in the second colour.
        let dashes = polyline_points(&svg, VERMILLION).len();
        assert!(dashes >= 10, "log {log_x}/{log_y}: {dashes} dashes");
        assert!(
            texts(&svg).iter().any(|t| t == "100"),
            "the axis reaches it"
        );
    }
}

// ---------------------------------------------------------------------------
// Escaping

const NASTY: &str = "<script>&\"'";
const NASTY_ESCAPED: &str = "&lt;script&gt;&amp;&quot;&apos;";

fn assert_escaped(svg: &str, width: u32, height: u32, occurrences: usize) {
    assert_svg(svg, width, height);
    assert!(!svg.contains("<script"), "raw markup leaked");
    assert!(!svg.contains("&\""), "raw ampersand leaked");
    assert_eq!(
        count(svg, NASTY_ESCAPED),
        occurrences,
        "escaped text count in {svg}"
    );
}

#[test]
fn xy_text_is_escaped() {
    let c = XyChart {
        title: format!("title {NASTY}"),
        x_label: format!("x {NASTY}"),
        y_label: format!("y {NASTY}"),
        series: vec![
            series(&format!("a {NASTY}"), points(4), Style::Line),
            series(&format!("b {NASTY}"), points(4), Style::Points),
        ],
        log_x: false,
        log_y: false,
    };
    assert_escaped(&xy_chart(&c), WIDTH, HEIGHT, 5);
    // The "no data" frame escapes too.
    let empty = XyChart {
        series: vec![],
        ..c
    };
    assert_escaped(&xy_chart(&empty), WIDTH, HEIGHT, 3);
}

#[test]
fn stacked_bar_and_histogram_text_is_escaped() {
    let s = StackedChart {
        title: NASTY.into(),
        x_label: NASTY.into(),
        y_label: NASTY.into(),
        x: vec![1.0, 2.0],
        layers: vec![
            (NASTY.into(), vec![1.0, 2.0]),
            ("ok".into(), vec![1.0, 1.0]),
        ],
        ..Default::default()
    };
    assert_escaped(&stacked_chart(&s), WIDTH, HEIGHT, 4);
    let b = BarChart {
        title: NASTY.into(),
        value_label: NASTY.into(),
        bars: vec![(NASTY.into(), 3.0), ("fine".into(), 1.0)],
        ..Default::default()
    };
    assert_escaped(&bar_chart(&b), WIDTH, HEIGHT, 3);
    let h = HistogramChart {
        title: NASTY.into(),
        x_label: NASTY.into(),
        buckets: vec![(0.0, 1.0, 4)],
        log_x: false,
    };
    assert_escaped(&histogram_chart(&h), WIDTH, HEIGHT, 2);
}

// ---------------------------------------------------------------------------
// No data

#[test]
fn xy_without_drawable_points_says_no_data() {
    let cases = [
        vec![],
        vec![series("empty", vec![], Style::Line)],
        vec![
            series("nan", vec![(f64::NAN, 1.0), (1.0, f64::NAN)], Style::Points),
            series(
                "inf",
                vec![(f64::INFINITY, 1.0), (2.0, f64::NEG_INFINITY)],
                Style::Line,
            ),
        ],
    ];
    for s in cases {
        let svg = xy_chart(&xy(s, false, false));
        assert_svg(&svg, WIDTH, HEIGHT);
        assert!(has_no_data(&svg), "{svg}");
        assert_eq!(count(&svg, "<circle"), 0);
        // The frame is still there: title and axis descriptions.
        assert!(texts(&svg).iter().any(|t| t == "payload (bytes)"));
    }
}

#[test]
fn drawable_xy_does_not_say_no_data() {
    let svg = xy_chart(&xy(
        vec![series("a", points(3), Style::Points)],
        false,
        false,
    ));
    assert!(!has_no_data(&svg));
    assert_eq!(count(&svg, "<circle"), 3);
}

#[test]
fn other_kinds_without_data_say_no_data() {
    let stacked = [
        (vec![], vec![("a".to_string(), vec![1.0])]),
        (vec![1.0, 2.0], vec![]),
        (
            vec![f64::NAN, f64::INFINITY],
            vec![("a".to_string(), vec![1.0, 2.0])],
        ),
    ];
    for (x, layers) in stacked {
        let svg = stacked_chart(&StackedChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x,
            layers,
            ..Default::default()
        });
        assert_svg(&svg, WIDTH, HEIGHT);
        assert!(has_no_data(&svg));
    }
    for bars in [
        vec![],
        vec![
            ("nan".to_string(), f64::NAN),
            ("inf".to_string(), f64::INFINITY),
        ],
    ] {
        let svg = bar_chart(&BarChart {
            title: "t".into(),
            value_label: "v".into(),
            bars,
            ..Default::default()
        });
        assert_svg(&svg, WIDTH, HEIGHT);
        assert!(has_no_data(&svg));
    }
    let histograms = [
        vec![],
        vec![(0.0, 1.0, 0), (1.0, 2.0, 0)],
        vec![
            (f64::NAN, 1.0, 5),
            (2.0, f64::INFINITY, 5),
            (3.0, 3.0, 5),
            (5.0, 4.0, 5),
        ],
    ];
    for buckets in histograms {
        let svg = histogram_chart(&HistogramChart {
            title: "t".into(),
            x_label: "x".into(),
            buckets,
            log_x: false,
        });
        assert_svg(&svg, WIDTH, HEIGHT);
        assert!(has_no_data(&svg));
    }
}

// ---------------------------------------------------------------------------
// Log axes

#[test]
fn log_axes_skip_non_positive_values() {
    let pts = vec![
        (-1.0, 1.0),
        (0.0, 1.0),
        (1.0, 1.0),
        (10.0, 2.0),
        (100.0, 3.0),
    ];
    let svg = xy_chart(&xy(vec![series("a", pts, Style::Points)], true, false));
    assert_svg(&svg, WIDTH, HEIGHT);
    assert_eq!(count(&svg, "<circle"), 3);

    let pts = vec![(1.0, -5.0), (2.0, 0.0), (3.0, 10.0), (4.0, 1000.0)];
    let svg = xy_chart(&xy(vec![series("a", pts, Style::Points)], false, true));
    assert_eq!(count(&svg, "<circle"), 2);

    // Lines skip them too rather than drawing to -infinity.
    let pts = vec![(0.0, 1.0), (1.0, 2.0), (10.0, 3.0), (100.0, 4.0)];
    let svg = xy_chart(&xy(vec![series("a", pts, Style::Line)], true, false));
    assert_eq!(polyline_points(&svg, BLUE), [3]);

    let only_bad = vec![(0.0, 1.0), (-3.0, 2.0)];
    let svg = xy_chart(&xy(vec![series("a", only_bad, Style::Line)], true, true));
    assert!(has_no_data(&svg));
}

#[test]
fn log_axis_ticks_are_decades() {
    let pts: Vec<(f64, f64)> = (0..=5).map(|e| (10f64.powi(e), 1.0 + e as f64)).collect();
    let svg = xy_chart(&xy(vec![series("a", pts, Style::Line)], true, false));
    let t = texts(&svg);
    for want in ["1", "10", "100", "1000", "10000", "100000"] {
        assert!(t.iter().any(|s| s == want), "{want} in {t:?}");
    }
}

#[test]
fn log_histogram_skips_non_positive_buckets() {
    let svg = histogram_chart(&HistogramChart {
        title: "t".into(),
        x_label: "x".into(),
        buckets: vec![
            (-1.0, 0.0, 9),
            (0.0, 1.0, 9),
            (1.0, 10.0, 3),
            (10.0, 100.0, 4),
        ],
        log_x: true,
    });
    assert_svg(&svg, WIDTH, HEIGHT);
    let filled = svg
        .lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&format!("fill=\"{BLUE}\"")))
        .count();
    assert_eq!(filled, 2);
    // The y axis reaches the tallest drawn bucket (4), not the skipped 9.
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "4"), "{t:?}");
    assert!(!t.iter().any(|s| s == "9" || s == "8"), "{t:?}");
}

// ---------------------------------------------------------------------------
// Caps

#[test]
fn line_points_are_capped_and_peaks_kept() {
    let n = 1_000_000;
    let mut pts: Vec<(f64, f64)> = (0..n).map(|i| (i as f64, (i % 100) as f64)).collect();
    pts[777_777].1 = 1e4; // a spike that must survive thinning
    let svg = xy_chart(&xy(vec![series("big", pts, Style::Line)], false, false));
    assert_svg(&svg, WIDTH, HEIGHT);
    let drawn = polyline_points(&svg, BLUE);
    assert_eq!(drawn.len(), 1);
    assert!(drawn[0] <= MAX_POINTS_PER_SERIES && drawn[0] > MAX_POINTS_PER_SERIES / 2);
    // The y axis reaches the spike.
    assert!(texts(&svg).iter().any(|s| s == "10000"));
    assert!(svg.len() < 1_000_000, "{} bytes", svg.len());
}

#[test]
fn scatter_points_are_capped() {
    // A pseudo-random cloud: far more distinct pixels than the cap.
    let mut state = 12345u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let pts: Vec<(f64, f64)> = (0..300_000).map(|_| (next(), next())).collect();
    let svg = xy_chart(&xy(vec![series("cloud", pts, Style::Points)], false, false));
    assert_svg(&svg, WIDTH, HEIGHT);
    let circles = count(&svg, "<circle");
    assert!(circles <= MAX_POINTS_PER_SERIES, "{circles}");
    assert!(circles > MAX_POINTS_PER_SERIES / 2, "{circles}");
}

#[test]
fn distinct_scatter_points_below_the_cap_are_all_drawn() {
    let pts: Vec<(f64, f64)> = (0..10_000)
        .map(|i| ((i % 100) as f64, (i / 100) as f64))
        .collect();
    let svg = xy_chart(&xy(vec![series("grid", pts, Style::Points)], false, false));
    assert_eq!(count(&svg, "<circle"), 10_000);
}

#[test]
fn many_buckets_are_merged() {
    let buckets: Vec<(f64, f64, u64)> = (0..100_000)
        .map(|i| (i as f64, i as f64 + 1.0, 1 + i % 3))
        .collect();
    let svg = histogram_chart(&HistogramChart {
        title: "t".into(),
        x_label: "x".into(),
        buckets,
        log_x: false,
    });
    assert_svg(&svg, WIDTH, HEIGHT);
    let filled = svg
        .lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&format!("fill=\"{BLUE}\"")))
        .count();
    assert!(filled <= MAX_BUCKETS, "{filled}");
}

// ---------------------------------------------------------------------------
// Edge cases that must not panic and must still draw

#[test]
fn single_point_and_all_equal_values() {
    let svg = xy_chart(&xy(
        vec![series("one", vec![(3.0, 7.0)], Style::Line)],
        false,
        false,
    ));
    assert_svg(&svg, WIDTH, HEIGHT);
    assert!(!has_no_data(&svg));
    assert_eq!(count(&svg, "<circle"), 1, "a lone point is marked");

    let flat: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 5.0)).collect();
    let svg = xy_chart(&xy(vec![series("flat", flat, Style::Line)], false, false));
    assert_svg(&svg, WIDTH, HEIGHT);
    assert!(
        texts(&svg).iter().any(|s| s == "5.0" || s == "5"),
        "{:?}",
        texts(&svg)
    );

    let same = vec![(10.0, 0.0); 5];
    let svg = xy_chart(&xy(vec![series("same", same, Style::Points)], true, false));
    assert_svg(&svg, WIDTH, HEIGHT);
    assert_eq!(count(&svg, "<circle"), 1, "identical points draw once");
}

#[test]
fn steps_draw_a_staircase() {
    let pts = vec![(0.0, 1.0), (1.0, 2.0), (2.0, 1.5), (3.0, 3.0)];
    let svg = xy_chart(&xy(vec![series("q", pts, Style::Steps)], false, false));
    assert_eq!(polyline_points(&svg, BLUE), [7]);
}

#[test]
fn dashed_lines_are_drawn_in_pieces() {
    let svg = xy_chart(&xy(
        vec![
            series("data", points(10), Style::Points),
            series("fit", vec![(0.0, 20.0), (144.0, 31.0)], Style::Dashed),
        ],
        false,
        false,
    ));
    // Legend swatch (3 dashes) plus many dashes across the chart.
    assert!(polyline_points(&svg, VERMILLION).len() > 20);
}

#[test]
fn stacked_chart_with_mismatched_lengths_does_not_panic() {
    for n in [3usize, 12] {
        let x: Vec<f64> = (0..n).map(|i| 100.0 * (i + 1) as f64).collect();
        let svg = stacked_chart(&StackedChart {
            title: "Share of stop latency".into(),
            x_label: "payload (bytes)".into(),
            y_label: "share".into(),
            x,
            layers: vec![
                ("short".into(), vec![0.2]),
                ("exact".into(), vec![0.3; n]),
                ("long".into(), vec![0.1; n + 40]),
                ("empty".into(), vec![]),
                ("weird".into(), vec![f64::NAN, -1.0, f64::INFINITY, 0.5]),
            ],
            ..Default::default()
        });
        assert_svg(&svg, WIDTH, HEIGHT);
        assert!(!has_no_data(&svg));
        for name in ["short", "exact", "long", "empty", "weird"] {
            assert!(texts(&svg).iter().any(|s| s == name), "{name}");
        }
    }
}

#[test]
fn few_x_values_stack_as_bars_one_per_x() {
    let svg = stacked_chart(&StackedChart {
        title: "t".into(),
        x_label: "payload (bytes)".into(),
        y_label: "share (%)".into(),
        x: vec![1460.0, 16.0, 512.0],
        layers: vec![
            ("checksum".into(), vec![30.0, 10.0, 20.0]),
            ("copy".into(), vec![40.0, 0.0, 50.0]),
        ],
        ..Default::default()
    });
    assert_svg(&svg, WIDTH, HEIGHT);
    let rects = |colour: &str| {
        svg.lines()
            .filter(|l| l.starts_with("<rect") && l.contains(&format!("fill=\"{colour}\"")))
            .count()
    };
    // One legend swatch each, plus a segment per positive value.
    assert_eq!(rects(BLUE), 1 + 3);
    assert_eq!(rects(VERMILLION), 1 + 2);
    // x categories are labelled with the x values, sorted.
    let pos = |label: &str| attr(text_elements(&svg, label)[0], "x");
    assert!(pos("16") < pos("512") && pos("512") < pos("1460"));
    // Stacks reach 70 %: the axis ends at a tick at or above it.
    assert!(texts(&svg).iter().any(|s| s == "80"), "{:?}", texts(&svg));
}

#[test]
fn many_x_values_stack_as_areas() {
    let n = 50;
    let svg = stacked_chart(&StackedChart {
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        x: (0..n).map(|i| i as f64).collect(),
        layers: vec![("a".into(), vec![0.5; n]), ("b".into(), vec![0.5; n])],
        ..Default::default()
    });
    assert_svg(&svg, WIDTH, HEIGHT);
    assert_eq!(count(&svg, "<polygon"), 2);
}

#[test]
fn bar_chart_keeps_order_and_grows_with_bars() {
    let bars = |n: usize| BarChart {
        title: "CPU share per function".into(),
        value_label: "share (%)".into(),
        bars: (0..n)
            .map(|i| (format!("fn_{i}"), (n - i) as f64))
            .collect(),
        ..Default::default()
    };
    let few = bar_chart(&bars(3));
    assert_svg(&few, WIDTH, HEIGHT);
    let y = |svg: &str, label: &str| attr(text_elements(svg, label)[0], "y");
    assert!(y(&few, "fn_0") < y(&few, "fn_1") && y(&few, "fn_1") < y(&few, "fn_2"));

    let forty = bar_chart(&bars(40));
    let h40 = svg_height(&forty);
    assert!(h40 > HEIGHT, "{h40}");
    assert_svg(&forty, WIDTH, h40);

    let huge = bar_chart(&bars(10_000));
    let h = svg_height(&huge);
    assert!(h >= h40 && h <= MAX_BAR_CHART_HEIGHT, "{h}");
    assert_svg(&huge, WIDTH, h);
    let t = texts(&huge);
    assert!(t
        .iter()
        .any(|s| s.contains(&format!("{} more not shown", 10_000 - MAX_BARS))));
    assert!(t.iter().any(|s| s == &format!("fn_{}", MAX_BARS - 1)));
    assert!(!t.iter().any(|s| s == &format!("fn_{MAX_BARS}")));
}

#[test]
fn bar_values_are_printed_and_negative_bars_drawn() {
    let svg = bar_chart(&BarChart {
        title: "t".into(),
        value_label: "v".into(),
        bars: vec![
            ("up".into(), 12.345),
            ("down".into(), -4.0),
            ("nan".into(), f64::NAN),
        ],
        ..Default::default()
    });
    assert_svg(&svg, WIDTH, HEIGHT);
    let t = texts(&svg);
    assert!(t.iter().any(|s| s == "12.3"), "{t:?}");
    assert!(t.iter().any(|s| s == "-4"), "{t:?}");
    assert!(!t.iter().any(|s| s == "nan"), "skipped bar has no label");
}

#[test]
fn tick_labels_are_short_numbers() {
    let pts: Vec<(f64, f64)> = (0..30)
        .map(|i| (0.1 + 0.1 * i as f64, 1e-7 * (1.0 + i as f64 / 3.0)))
        .collect();
    let wide: Vec<(f64, f64)> = vec![(1.0, 123_456_789.0), (2.0, 987_654_321.0)];
    for s in [pts, wide] {
        let svg = xy_chart(&xy(vec![series("a", s, Style::Line)], false, false));
        let numeric: Vec<String> = texts(&svg)
            .into_iter()
            .filter(|t| t.parse::<f64>().is_ok())
            .collect();
        assert!(numeric.len() >= 6, "{numeric:?}");
        for t in numeric {
            let digits = t.chars().filter(|c| c.is_ascii_digit()).count();
            assert!(digits <= 6, "unreadable tick label {t}");
        }
    }
}

/// Extreme and odd values through every chart: no panic, always a
/// well-formed document.
#[test]
fn hostile_values_never_panic() {
    let odd = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        1e300,
        -1e300,
        1e-300,
        123.456,
        1e15,
        1e15 + 1.0,
    ];
    let mut state = 7u64;
    let mut pick = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
        odd[(state >> 33) as usize % odd.len()]
    };
    for round in 0..60 {
        let n = round % 9;
        let pts: Vec<(f64, f64)> = (0..n).map(|_| (pick(), pick())).collect();
        let style = [Style::Points, Style::Line, Style::Dashed, Style::Steps][round % 4];
        let svg = xy_chart(&xy(
            vec![
                series("a", pts.clone(), style),
                series("b", pts, Style::Dashed),
            ],
            round % 2 == 0,
            round % 3 == 0,
        ));
        assert_svg(&svg, WIDTH, HEIGHT);

        let x: Vec<f64> = (0..n).map(|_| pick()).collect();
        let layer: Vec<f64> = (0..(round % 5)).map(|_| pick()).collect();
        let svg = stacked_chart(&StackedChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x,
            layers: vec![("a".into(), layer.clone()), ("b".into(), layer)],
            ..Default::default()
        });
        assert_svg(&svg, WIDTH, HEIGHT);

        let bars: Vec<(String, f64)> = (0..n).map(|i| (format!("b{i}"), pick())).collect();
        let svg = bar_chart(&BarChart {
            title: "t".into(),
            value_label: "v".into(),
            bars,
            ..Default::default()
        });
        assert_svg(&svg, WIDTH, svg_height(&svg));

        let buckets: Vec<(f64, f64, u64)> = (0..n)
            .map(|i| (pick(), pick(), [0, 1, u64::MAX][i % 3]))
            .collect();
        let svg = histogram_chart(&HistogramChart {
            title: "t".into(),
            x_label: "x".into(),
            buckets,
            log_x: round % 2 == 1,
        });
        assert_svg(&svg, WIDTH, HEIGHT);
    }
}

#[test]
fn the_checker_rejects_malformed_documents() {
    assert!(check_xml("<svg><text>a</text></svg>").is_ok());
    assert!(check_xml("<svg><text>a</svg>").is_err());
    assert!(check_xml("<svg><text>a & b</text></svg>").is_err());
    assert!(check_xml("<svg><text>a <b</text></svg>").is_err());
    assert!(check_xml("<svg a=\"<\"/>").is_err());
    assert!(check_xml("<svg a=\"1\" a=\"2\"/>").is_err());
    assert!(check_xml("<svg/><svg/>").is_err());
}

/// Writes one sample of each kind to `$PLOT_SAMPLES` (default
/// `/tmp/plot-samples`) for a look in a browser:
/// `cargo test -p stackscope-report --test plot -- --ignored write_samples`.
#[test]
#[ignore]
fn write_samples() {
    let dir = std::env::var("PLOT_SAMPLES").unwrap_or_else(|_| "/tmp/plot-samples".into());
    std::fs::create_dir_all(&dir).unwrap();
    let sizes = [
        16.0, 64.0, 256.0, 512.0, 1024.0, 1460.0, 2048.0, 4096.0, 8192.0, 16384.0,
    ];
    let tcp: Vec<(f64, f64)> = sizes
        .iter()
        .flat_map(|&s| (0..5).map(move |r| (s, 18.0 + 0.012 * s + r as f64 * 0.7)))
        .collect();
    let udp: Vec<(f64, f64)> = sizes.iter().map(|&s| (s, 9.0 + 0.009 * s)).collect();
    let xy_svg = xy_chart(&XyChart {
        title: "Stop latency vs payload size".into(),
        x_label: "payload (bytes)".into(),
        y_label: "stop latency (µs)".into(),
        series: vec![
            series("TCP over IPv6", tcp, Style::Points),
            series("UDP over IPv6", udp, Style::Line),
            series(
                "TCP fit: 18.0 + 0.012·x (R² 0.99)",
                vec![(16.0, 18.2), (16384.0, 214.6)],
                Style::Dashed,
            ),
            series(
                "queue length",
                sizes
                    .iter()
                    .map(|&s| (s, 5.0 + (s.log2() * 9.0) % 40.0))
                    .collect(),
                Style::Steps,
            ),
        ],
        log_x: true,
        log_y: false,
    });
    let x: Vec<f64> = (1..=24).map(|i| 256.0 * i as f64).collect();
    let share = |a: f64, b: f64| x.iter().map(|&s| a + b * (s / 6144.0)).collect::<Vec<_>>();
    let stacked_svg = stacked_chart(&StackedChart {
        title: "Share of stop latency by category".into(),
        x_label: "payload (bytes)".into(),
        y_label: "share of stop latency (%)".into(),
        layers: vec![
            ("checksum".into(), share(8.0, 20.0)),
            ("data_move".into(), share(10.0, 15.0)),
            ("buffer".into(), share(12.0, -8.0)),
            ("protocol_send".into(), share(30.0, -20.0)),
            ("socket".into(), share(15.0, -5.0)),
        ],
        x,
        ..Default::default()
    });
    let bars_svg = bar_chart(&BarChart {
        title: "CPU share per function".into(),
        value_label: "share of CPU time (%)".into(),
        bars: vec![
            ("in_cksum".into(), 23.4),
            ("tcp_output".into(), 15.1),
            ("memcpy (data_move)".into(), 12.7),
            ("ip6_output".into(), 8.2),
            ("pool_alloc".into(), 6.0),
            ("nd_lookup".into(), 2.3),
            ("ether_output".into(), 1.1),
        ],
        ..Default::default()
    });
    let hist_svg = histogram_chart(&HistogramChart {
        title: "IP input processing delay".into(),
        x_label: "delay (µs)".into(),
        buckets: (0..30)
            .map(|i| {
                let lo = 2f64.powf(i as f64 / 4.0);
                let hi = 2f64.powf((i + 1) as f64 / 4.0);
                let d = i as f64 - 12.0;
                (lo, hi, (400.0 * (-d * d / 30.0).exp()) as u64 + (i % 3))
            })
            .collect(),
        log_x: true,
    });
    let empty_svg = xy_chart(&xy(vec![], false, false));
    for (name, svg) in [
        ("xy", xy_svg),
        ("stacked", stacked_svg),
        ("bars", bars_svg),
        ("histogram", hist_svg),
        ("empty", empty_svg),
    ] {
        std::fs::write(format!("{dir}/{name}.svg"), svg).unwrap();
    }
}

#[test]
fn interval_bars_are_drawn_and_widen_the_axis() {
    let pts = vec![(1.0, 10.0), (2.0, 11.0), (3.0, 12.0)];
    let plain = xy(vec![series("rtt", pts.clone(), Style::Line)], false, false);
    let with_bars = xy(
        vec![series("rtt", pts, Style::Line).with_errors(vec![
            (1.0, 9.0, 11.0),
            (2.0, 10.0, 12.0),
            // A bar far above the points: the y axis must reach it.
            (3.0, 11.0, 40.0),
        ])],
        false,
        false,
    );
    let (plain, bars) = (xy_chart(&plain), xy_chart(&with_bars));
    assert_svg(&bars, WIDTH, HEIGHT);
    // One vertical bar and two caps per interval, in the series' colour.
    let two_point_lines = |svg: &str| {
        polyline_points(svg, BLUE)
            .into_iter()
            .filter(|&n| n == 2)
            .count()
    };
    assert_eq!(two_point_lines(&bars) - two_point_lines(&plain), 9);
    let top = |svg: &str| {
        texts(svg)
            .iter()
            .filter_map(|t| t.parse::<f64>().ok())
            .fold(f64::MIN, f64::max)
    };
    assert!(
        top(&bars) >= 40.0 && top(&plain) < 40.0,
        "{} {}",
        top(&bars),
        top(&plain)
    );
}
