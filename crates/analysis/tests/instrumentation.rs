//! Instrumentation spans (the tool's own work inside a window, e.g. a
//! capture's copy of a frame in a send path) are reported but are
//! not the stack's time: every span around them loses their time, and a
//! window can ask how much of it it holds.

mod support;

use std::collections::BTreeMap;

use analysis::histogram::layer_histograms;
use analysis::profile::thread_profile;
use analysis::spans::rebuild;
use probe::{Category, Kind, Layer, Location};
use support::{loc, records, view};

static TABLE: &[Location] = &[
    loc(
        "ipv6.output.enter",
        Layer::Network,
        Kind::SpanEnter,
        Category::ProtocolSend,
        None,
    ),
    loc(
        "ipv6.output.exit",
        Layer::Network,
        Kind::SpanExit,
        Category::ProtocolSend,
        None,
    ),
    loc(
        "link.transmit.enter",
        Layer::Link,
        Kind::SpanEnter,
        Category::Link,
        None,
    ),
    loc(
        "link.transmit.exit",
        Layer::Link,
        Kind::SpanExit,
        Category::Link,
        None,
    ),
    loc(
        "checksum.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::Checksum,
        None,
    ),
    loc(
        "checksum.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::Checksum,
        None,
    ),
    loc(
        "capture.copy.enter",
        Layer::Link,
        Kind::SpanEnter,
        Category::Instrumentation,
        None,
    ),
    loc(
        "capture.copy.exit",
        Layer::Link,
        Kind::SpanExit,
        Category::Instrumentation,
        None,
    ),
];

/// 1 GHz, overhead 10 cycles a probe.
///
/// ```text
/// 0    ipv6.output ─────────────────────────────── 1000
/// 50     checksum ── 70
/// 100    link.transmit ───────────── 400
/// 150      capture.copy ── 250
/// 600  capture.copy ── 700            (outside any span: the receive side's)
/// ```
fn trace() -> analysis::TraceView {
    let events = [
        ("ipv6.output.enter", 0, 1500, 1, 0),
        ("checksum.enter", 50, 1500, 1, 0),
        ("checksum.exit", 70, 1500, 1, 0),
        ("link.transmit.enter", 100, 1514, 1, 0),
        ("capture.copy.enter", 150, 1514, 0, 2),
        ("capture.copy.exit", 250, 1514, 0, 2),
        ("link.transmit.exit", 400, 1514, 1, 0),
        ("ipv6.output.exit", 1000, 1500, 1, 0),
        ("capture.copy.enter", 1100, 60, 0, 1),
        ("capture.copy.exit", 1200, 60, 0, 1),
    ];
    view(TABLE, 10.0, records(TABLE, 1, &events))
}

#[test]
fn instrumentation_is_not_counted_in_the_spans_around_it() {
    let view = trace();
    let spans = rebuild(&view, &view.threads[&1]);
    let names: Vec<&str> = spans
        .spans
        .iter()
        .map(|s| view.site(s.enter).name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "ipv6.output.enter",
            "checksum.enter",
            "link.transmit.enter",
            "capture.copy.enter",
            "capture.copy.enter"
        ],
        "instrumentation spans are kept"
    );
    let [output, checksum, link, copy, lone] = &spans.spans[..] else {
        panic!("five spans");
    };
    // The copy: 100 - 1·10.
    assert_eq!(copy.inclusive, 90.0);
    assert_eq!(copy.exclusive, 90.0);
    assert!(copy.is_instrumentation());
    assert_eq!(copy.parent, Some(2));
    // link.transmit: 300 - 3·10 = 270, less the copy's 90.
    assert_eq!(link.inclusive, 180.0);
    assert_eq!(link.exclusive, 180.0);
    // ipv6.output: 1000 - 7·10 = 930, less the copy's 90 inside its
    // child; its children are the checksum (20 - 10 = 10) and the link.
    assert_eq!(checksum.inclusive, 10.0);
    assert_eq!(output.inclusive, 840.0);
    assert_eq!(output.exclusive, 840.0 - 10.0 - 180.0);
    // Outside every span it takes nothing from anyone.
    assert_eq!((lone.inclusive, lone.parent), (90.0, None));
}

#[test]
fn a_window_says_how_much_instrumentation_it_holds() {
    let view = trace();
    let spans = rebuild(&view, &view.threads[&1]);
    // Records 0..=7: ipv6.output whole, with one copy inside.
    assert_eq!(spans.instrumentation_between(0, 7), 90.0);
    assert_eq!(spans.instrumentation_between(0, 9), 180.0);
    // From the link's enter to its exit.
    assert_eq!(spans.instrumentation_between(3, 6), 90.0);
    // A copy only partly inside does not count.
    assert_eq!(spans.instrumentation_between(5, 9), 90.0);
    assert_eq!(spans.instrumentation_between(0, 4), 0.0);
    assert_eq!(spans.instrumentation_between(10, 20), 0.0);
}

#[test]
fn nested_instrumentation_is_subtracted_once() {
    let events = [
        ("link.transmit.enter", 0, 0, 1, 0),
        ("capture.copy.enter", 100, 0, 0, 2),
        ("capture.copy.enter", 120, 0, 0, 2),
        ("capture.copy.exit", 170, 0, 0, 2),
        ("capture.copy.exit", 300, 0, 0, 2),
        ("link.transmit.exit", 1000, 0, 1, 0),
    ];
    let view = view(TABLE, 0.0, records(TABLE, 1, &events));
    let spans = rebuild(&view, &view.threads[&1]);
    let [link, outer, inner] = &spans.spans[..] else {
        panic!("three spans");
    };
    assert_eq!(inner.inclusive, 50.0);
    assert_eq!(outer.inclusive, 150.0, "200 less the 50 nested in it");
    assert_eq!(link.inclusive, 800.0);
    assert_eq!(spans.instrumentation_between(0, 5), 200.0);
}

#[test]
fn profiles_and_layer_histograms_leave_instrumentation_out_of_the_stack() {
    let view = trace();
    let spans = rebuild(&view, &view.threads[&1]);
    let profile = thread_profile(&view, 1, &spans);
    // Exclusive times: output 650, checksum 10, link 180; copies 2 × 90.
    assert_eq!(profile.stack_ns, 840.0);
    assert_eq!(profile.instrumentation_ns, 180.0);
    let copy = profile
        .functions
        .iter()
        .find(|f| f.name == "capture.copy")
        .expect("the copies are listed");
    assert_eq!((copy.calls, copy.category), (2, Category::Instrumentation));
    assert_eq!(
        profile
            .categories
            .get(&Category::Instrumentation)
            .map(|c| c.0),
        Some(180.0)
    );
    let all = BTreeMap::from([(1u16, spans)]);
    let link = layer_histograms(&view, &all, 5)
        .into_iter()
        .find(|h| h.layer == Layer::Link)
        .expect("a link layer");
    assert_eq!(
        link.spans, 1,
        "only link.transmit: the copies are no layer's work"
    );
}
