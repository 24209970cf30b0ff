//! The page's opening: the summary of where each path's time goes, the
//! title naming the run, the contents and the machine table.

use std::collections::BTreeMap;

use analysis::messages::StopAt;
use analysis::sweep::{PathFigures, SizePoint, Stat};
use probe::Category;
use report::model::*;

fn figures(stop: &[f64], categories: &[(Category, f64)], other: f64) -> PathFigures {
    PathFigures {
        start_us: Stat::of(&[1.0, 1.2, 0.9]).unwrap(),
        stop_us: Stat::of(stop).unwrap(),
        stops_us: BTreeMap::new(),
        throughput_kbps: 1.0,
        frames: 1.0,
        categories_us: categories.iter().copied().collect(),
        other_us: other,
        ..PathFigures::default()
    }
}

/// A point whose category times add up to its mean stop latency (100 µs
/// at every size), with instrumentation beside them (already taken out).
fn point(size: u32) -> SizePoint {
    let send = figures(
        &[99.0, 100.0, 101.0],
        &[
            (Category::Wire, 60.0),
            (Category::Checksum, 25.0),
            (Category::DataMove, 10.0),
            (Category::Instrumentation, 7.0),
        ],
        5.0,
    );
    let receive = figures(
        &[49.0, 50.0, 51.0],
        &[(Category::Reassembly, 30.0), (Category::Link, 15.0)],
        5.0,
    );
    SizePoint {
        size,
        messages: 3,
        send: Some(send),
        receive: Some(receive),
        one_way_us: None,
    }
}

fn run(id: &str, protocol: &str, sizes: &[u32]) -> MessagesRun {
    let points: Vec<SizePoint> = sizes.iter().map(|&s| point(s)).collect();
    MessagesRun {
        id: id.into(),
        title: String::new(),
        protocol: protocol.into(),
        family: "IPv6".into(),
        link: "fast-ethernet".into(),
        link_bps: Some(100e6),
        reps: 3,
        warmup: 1,
        sent: 3 * sizes.len() as u64,
        delivered: 3 * sizes.len() as u64,
        segment_bytes: 1440.0,
        path_mtu: 1500,
        gauges: MachineGauges {
            core_trip_ns: Some(58.0),
            core_trip_min_ns: Some(55.0),
            core_trip_max_ns: Some(61.0),
            ..Default::default()
        },
        load: None,
        stop_at: StopAt::OnTheWire,
        send: analysis::sweep::trends(&points, None, false),
        receive: analysis::sweep::trends(&points, None, true),
        points,
        sender_profile: None,
        receiver_profile: None,
        cpu: RunCpu::default(),
        probes: ProbeHealth::default(),
        components: Table::default(),
        call_tree: None,
        protocol_delay: None,
        sender_layers: Vec::new(),
        receiver_layers: Vec::new(),
        queues: Vec::new(),
        queue_summary: Vec::new(),
        packet_trace: Vec::new(),
        acks: Vec::new(),
        sender_thread: None,
        receiver_thread: None,
        files: RunFiles::default(),
    }
}

fn experiments() -> Vec<Experiment> {
    vec![
        Experiment {
            name: "study1999".into(),
            title: "A study".into(),
            citation: "Author, A. (1999). A Study of Stacks.".into(),
            source: "000_hash.txt".into(),
            description: String::new(),
            // The one-size run must not stand for TCP: the sweep has more.
            runs: vec![
                run("single", "TCP", &[262_144]),
                run("tcp", "TCP", &[1000, 4096, 8000]),
                run("udp", "UDP", &[1000, 2000, 3000, 4000]),
            ],
            sweeps: Vec::new(),
            pipelines: Vec::new(),
            kernel_runs: Vec::new(),
            published: Vec::new(),
        },
        Experiment {
            name: "other1993".into(),
            title: "Another study".into(),
            citation: String::new(),
            source: "001_hash.txt".into(),
            description: String::new(),
            runs: Vec::new(),
            sweeps: Vec::new(),
            pipelines: Vec::new(),
            kernel_runs: Vec::new(),
            published: Vec::new(),
        },
    ]
}

fn report(quick: bool) -> Report {
    let experiments = experiments();
    let recipes: Vec<String> = experiments.iter().map(|e| e.name.clone()).collect();
    Report {
        title: run_title("stackscope lab", &recipes, 1_795_361_766, quick),
        generated_unix: 1_795_361_766,
        quick,
        command: "stackscope lab".into(),
        recipes,
        machine: Machine {
            cpu_model: Some("Test CPU".into()),
            cores: Some(2),
            memory_bytes: None,
            kernel: None,
            load_average: Some([0.5, 0.25, 0.125]),
            stackscope_version: None,
        },
        calibration: Calibration {
            counter_hz: 2.5e9,
            overhead_cycles: 100.0,
            overhead_ns: 40.0,
        },
        summary: report::summary::of(&experiments),
        experiments,
        capture: None,
    }
}

#[test]
fn every_path_has_shares_that_add_up_to_100_percent() {
    let summary = report::summary::of(&experiments());
    let names: Vec<&str> = summary.paths.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        names,
        ["TCP send", "TCP receive", "UDP send", "UDP receive"]
    );
    for p in &summary.paths {
        let total: f64 = p.shares.iter().map(|s| s.percent).sum();
        assert!((total - 100.0).abs() < 1e-6, "{}: {total}", p.path);
        assert!(p.shares.windows(2).all(|w| w[0].percent >= w[1].percent));
        assert!(!p.shares.iter().any(|s| s.category == "instrumentation"));
        assert!((2..=3).contains(&p.sentences.len()), "{:?}", p.sentences);
    }
    let tcp = &summary.paths[0];
    // The sweep's middle size, not the single 256 KiB message.
    assert_eq!((tcp.run.as_str(), tcp.size_bytes), ("tcp", 4096));
    assert_eq!(tcp.shares[0].category, "wire");
    assert!((tcp.shares[0].percent - 60.0).abs() < 1e-9);
    let text = tcp.sentences.join(" ");
    for want in [
        "4 KiB",
        "100 µs",
        "95 % CI",
        "n 3",
        "wire 60.0 %",
        "checksum 25.0 %",
    ] {
        assert!(text.contains(want), "{want} not in {text}");
    }
    let receive = &summary.paths[1];
    assert_eq!(receive.shares[0].category, "reassembly");
    assert!(receive.window.starts_with("receive stop"));
    assert_eq!(summary.paths[2].size_bytes, 3000);
}

#[test]
fn a_noisy_latency_is_not_given_bounds() {
    let mut exps = experiments();
    let r = &mut exps[0].runs[1];
    for p in &mut r.points {
        p.send.as_mut().unwrap().stop_us = Stat::of(&[1.0, 199.0]).unwrap();
    }
    let summary = report::summary::of(&exps);
    let text = summary.paths[0].sentences.join(" ");
    assert!(text.contains("too noisy to resolve"), "{text}");
}

#[test]
fn the_title_names_the_recipes_the_date_and_quick_or_full() {
    let quick = report(true);
    for want in ["study1999", "other1993", "quick", "2026-11-22 15:36 UTC"] {
        assert!(quick.title.contains(want), "{want} not in {}", quick.title);
    }
    assert!(!quick.title.contains("stackscope: stackscope"));
    assert!(report(false).title.contains("full"));
}

#[test]
fn the_page_opens_with_the_summary_then_the_contents_then_the_experiments() {
    let html = report::html::render(&report(true));
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle} not in the page"))
    };
    assert!(at("<h1>") < at("id=\"summary\""));
    assert!(at("id=\"summary\"") < at("<nav class=\"toc\""));
    assert!(at("<nav class=\"toc\"") < at("id=\"exp-study1999\""));
    // Every run and experiment is linked and its anchor exists.
    for anchor in [
        "exp-study1999",
        "exp-other1993",
        "run-study1999-tcp",
        "run-study1999-udp",
    ] {
        assert!(html.contains(&format!("href=\"#{anchor}\"")), "{anchor}");
        assert!(html.contains(&format!("id=\"{anchor}\"")), "{anchor}");
    }
    // The summary's stacked bars are an inline chart before the contents.
    let summary = &html[at("id=\"summary\"")..at("<nav class=\"toc\"")];
    assert!(summary.contains("<svg"));
    assert!(summary.contains("TCP receive"));
    // Cited by paper; the seed file only where there is no citation.
    assert!(html.contains("Author, A. (1999). A Study of Stacks."));
    assert!(!html.contains("000_hash.txt"));
    assert!(html.contains("001_hash.txt"));
    // The machine: known rows only, no raw JSON, no nulls.
    assert!(html.contains("Test CPU"));
    assert!(html.contains("0.50 (1 min)"));
    assert!(!html.contains("memory</th>"));
    assert!(!html.contains("null"));
}

#[test]
fn summary_json_holds_the_summary_without_nulls_in_the_machine() {
    let json = serde_json::to_value(report(false)).unwrap();
    let paths = json["summary"]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 4);
    let total: f64 = paths[0]["shares"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["percent"].as_f64().unwrap())
        .sum();
    assert!((total - 100.0).abs() < 1e-6);
    assert!(paths[0]["sentences"].as_array().unwrap().len() >= 2);
    assert_eq!(paths[0]["size_bytes"], 4096);
    assert!(json["machine"].get("memory_bytes").is_none());
    assert!(!json["machine"].to_string().contains("null"));
}

fn one_point_sweep() -> SweepRun {
    SweepRun {
        id: "tcp".into(),
        title: "TCP throughput".into(),
        mode: "throughput".into(),
        link: "reference stack on fast-ethernet".into(),
        link_bps: Some(100e6),
        reps: 3,
        loads: vec![0],
        load_on: vec!["both".into()],
        study: None,
        points: Vec::new(),
        x_label: "socket buffer (bytes)".into(),
        y_label: "received Mbit/s".into(),
        log_x: true,
        series: vec![Series {
            label: "ref tcp IPv6".into(),
            points: vec![SeriesPoint {
                x: 65_536.0,
                y: 90.0,
                stdev: Some(1.0),
                ci95: Some(stats::Interval { lo: 88.0, hi: 92.0 }),
            }],
        }],
        tables: Vec::new(),
        failure: None,
        notes: Vec::new(),
        csv: "tcp.csv".into(),
    }
}

#[test]
fn a_one_point_sweep_is_plotted_with_the_link_rate_and_binary_sizes() {
    let mut r = report(true);
    r.experiments[1].sweeps.push(one_point_sweep());
    let html = report::html::render(&r);
    let start = html.find("id=\"run-other1993-tcp\"").unwrap();
    let section = &html[start..];
    assert!(section.contains("<svg"), "no plot for one point");
    assert!(section.contains("link rate 100 Mbit/s"));
    let svg = &section[section.find("<svg").unwrap()..section.find("</svg>").unwrap()];
    assert!(svg.contains("64 KiB"), "the x axis is not in KiB");
    assert!(!svg.contains("65536") && !svg.contains("kB"));
}

#[test]
fn a_load_sweep_names_its_levels_and_sides_beside_the_studys_words() {
    let mut sweep = one_point_sweep();
    sweep.id = "background".into();
    sweep.loads = vec![0, 1, 2, 4];
    sweep.load_on = vec!["server".into(), "client".into()];
    sweep.study = Some("Throughput drops sharply as the load rises.".into());
    sweep.x_label = "background load (CPU-bound processes)".into();
    sweep.log_x = false;
    sweep.series = ["server", "client"]
        .iter()
        .map(|side| Series {
            label: format!("ref tcp IPv6, load on {side}"),
            points: [(0.0, 68.0), (1.0, 60.0), (2.0, 50.0), (4.0, 30.0)]
                .iter()
                .map(|&(x, y)| SeriesPoint {
                    x,
                    y,
                    stdev: Some(1.0),
                    ci95: Some(stats::Interval {
                        lo: y - 2.0,
                        hi: y + 2.0,
                    }),
                })
                .collect(),
        })
        .collect();
    let mut r = report(true);
    r.experiments[1].sweeps.push(sweep);
    let html = report::html::render(&r);
    let start = html.find("id=\"run-other1993-background\"").unwrap();
    let section = &html[start..];
    assert!(
        section.contains(
            "at background loads of 0, 1, 2 and 4 CPU-bound processes on the server&#39;s and \
             on the client&#39;s CPU"
        ) || section.contains(
            "at background loads of 0, 1, 2 and 4 CPU-bound processes on the server's and on \
             the client's CPU"
        ),
        "{}",
        &section[..600]
    );
    assert!(section.contains("<strong>The study:</strong> Throughput drops sharply"));
    let svg = &section[section.find("<svg").unwrap()..section.find("</svg>").unwrap()];
    assert!(svg.contains("load on server") && svg.contains("load on client"));
    assert!(svg.contains("link rate 100 Mbit/s"));
    // One series under one CPU-bound process is still said as before.
    let mut one = one_point_sweep();
    one.loads = vec![1];
    let mut r = report(true);
    r.experiments[1].sweeps.push(one);
    let html = report::html::render(&r);
    assert!(html.contains(", under 1 CPU-bound background process anywhere on the machine;"));
}

#[test]
fn messages_throughput_is_in_mbit_per_s_beside_the_link_rate() {
    let html = report::html::render(&report(false));
    let start = html.find("id=\"run-study1999-tcp\"").unwrap();
    let end = html.find("id=\"run-study1999-udp\"").unwrap();
    let section = &html[start..end];
    assert!(section.contains("throughput (Mbit/s)"));
    assert!(section.contains("link rate 100 Mbit/s"));
    assert!(!section.contains("KB/s)</text>"), "an axis still in KB/s");
    // Sizes as the recipe wrote them.
    assert!(section.contains("4 KiB"));
}

#[test]
fn the_machine_table_gives_the_core_round_trips_the_run_saw() {
    let html = report::html::render(&report(true));
    let row = html
        .split("<tr>")
        .find(|r| r.contains("core-to-core round trip"))
        .expect("a row for the machine's state");
    // Every messages run of the fixture measured 58 ns.
    assert!(row.contains("58–58 ns over the "), "{row}");
    assert!(row.contains("no verdict"), "{row}");
}

#[test]
fn a_summary_bar_on_another_link_names_its_link() {
    let mut r = report(true);
    let mut local = run("local", "TCP", &[1_048_576]);
    local.link = "unlimited".into();
    r.experiments[1].runs.push(local);
    r.summary = report::summary::of(&r.experiments);
    let html = report::html::render(&r);
    let summary =
        &html[html.find("id=\"summary\"").unwrap()..html.find("<nav class=\"toc\"").unwrap()];
    assert!(
        summary.contains("TCP send · IPv6 · 1 MiB · unlimited"),
        "the local run's bar"
    );
    assert!(
        !summary.contains("· fast-ethernet"),
        "the first link is not repeated"
    );
}

#[test]
fn a_latency_interval_below_zero_is_left_out_of_the_sizes_table_and_marked() {
    let mut r = run("tcp", "TCP", &[8000, 16000]);
    // n = 2: 10.4 µs with t(1) gives [−43.1, 63.8], which a latency cannot be.
    r.points[0].send.as_mut().unwrap().start_us = Stat::of(&[2.0, 18.8]).unwrap();
    let mut csv = Vec::new();
    report::tables::write_sizes(&r, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let (lo, hi, reading) = (
        column("send_start_us_ci95_lo"),
        column("send_start_us_ci95_hi"),
        column("send_start_us_reading"),
    );
    assert_eq!(
        (rows[0][lo], rows[0][hi], rows[0][reading]),
        ("", "", "too_noisy")
    );
    assert_eq!(rows[0][column("send_start_us_mean")], "10.400");
    // The other size keeps its interval, which is above zero.
    assert_eq!(rows[1][reading], "mean");
    assert!(rows[1][lo].parse::<f64>().unwrap() > 0.0, "{:?}", rows[1]);
    // No number in the table is a negative latency.
    for row in &rows {
        for (h, cell) in header.iter().zip(row) {
            if h.ends_with("_us_ci95_lo") && !cell.is_empty() {
                assert!(cell.parse::<f64>().unwrap() >= 0.0, "{h} = {cell}");
            }
        }
    }
    // The page's per-size table marks the point instead of printing ±.
    let mut page = report(false);
    page.experiments[0].runs[0] = r;
    let html = report::html::render(&page);
    assert!(
        html.contains("too noisy (mean 10.4, n 2)"),
        "no mark in the page"
    );
    assert!(
        !html.contains("10.4 ± 53"),
        "an interval below zero was printed"
    );
}

#[test]
fn a_line_with_its_intercept_below_zero_is_marked_and_not_drawn() {
    // Two sizes whose receive stop latencies give 82.7 µs/KB · x − 74.9 µs:
    // a zero-byte message would take negative time.
    let mut r = run("neg", "UDP", &[1000, 2000]);
    for (p, us) in r.points.iter_mut().zip([7.8, 90.5]) {
        p.receive.as_mut().unwrap().stop_us = Stat::of(&[us, us, us]).unwrap();
    }
    r.receive = analysis::sweep::trends(&r.points, None, true);
    let fit = r.receive.stop.unwrap();
    assert!(fit.b < -74.0 && fit.intercept_below_zero && !fit.weak);
    let mut page = report(false);
    page.experiments[0].runs[0] = r;
    let html = report::html::render(&page);
    let row = html
        .split("<tr>")
        .find(|row| row.starts_with("<td class=\"l\">receive stop latency</td>"))
        .expect("the trend table's receive stop row");
    assert!(
        row.contains("<b>not linear near zero</b>: intercept below 0 (−74.9 µs"),
        "{row}"
    );
    // The send line (100 µs at every size) is not marked.
    let send = html
        .split("<tr>")
        .find(|row| row.starts_with("<td class=\"l\">send stop latency ("))
        .expect("the send stop row");
    assert!(!send.contains("not linear near zero"), "{send}");
    // The caption says what the mark means.
    assert!(html.contains("It is marked <b>not linear near zero</b> and not drawn"));
    // Not drawn: the chart's legend says so, and no stop trend is drawn
    // with that formula.
    assert!(
        html.contains("receive stop latency (trend not drawn: intercept below 0"),
        "no legend entry"
    );
    assert!(!html.contains("stop trend: y = 82.7x - 74.9"));
    assert!(!html.contains("stop trend (≥ 0 drawn): y = 82.7x - 74.9"));
    // summary.json names the mark beside the intercept.
    let json = serde_json::to_value(&page).unwrap();
    let stop = &json["experiments"][0]["runs"][0]["receive"]["stop"];
    assert_eq!(stop["intercept_below_zero"], true, "{stop}");
    assert_eq!(
        json["experiments"][0]["runs"][0]["send"]["stop"]["intercept_below_zero"],
        false
    );
}
