use report::plot::*;

#[test]
#[ignore]
fn peek() {
    let c = XyChart {
        title: "Stop latency vs payload".into(),
        x_label: "payload (bytes)".into(),
        y_label: "latency (µs)".into(),
        series: vec![
            Series {
                name: "tcp".into(),
                points: (1..40)
                    .map(|i| (i as f64 * 400.0, 10.0 + i as f64 * 0.8 + (i % 5) as f64))
                    .collect(),
                style: Style::Points,
            },
            Series {
                name: "trend".into(),
                points: vec![(400.0, 10.0), (16000.0, 43.0)],
                style: Style::Dashed,
            },
        ],
        log_x: false,
        log_y: false,
    };
    println!("{}", xy_chart(&c));
}
