//! The common call path on hand-built traces: the tree by name path,
//! calls and times per message, the common-share cut, first-occurrence
//! order, the text rendering, message windows and deep nesting.

use analysis::callpath::{
    self, build, common, common_path, format_ns, message_roots, render_text, roots_between,
    top_level_in, CallTree, MessageSpans,
};
use analysis::{all_spans, TraceView};
use probe::{Category, Kind, Layer, Location, Record};

mod support;

const LOCATIONS: &[Location] = &[
    loc("app.message.send", Layer::App, Kind::Point, Category::None),
    loc(
        "socket.send.enter",
        Layer::Socket,
        Kind::SpanEnter,
        Category::Socket,
    ),
    loc(
        "socket.send.exit",
        Layer::Socket,
        Kind::SpanExit,
        Category::Socket,
    ),
    loc(
        "data.copy.enter",
        Layer::Host,
        Kind::SpanEnter,
        Category::DataMove,
    ),
    loc(
        "data.copy.exit",
        Layer::Host,
        Kind::SpanExit,
        Category::DataMove,
    ),
    loc(
        "tcp.output.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::ProtocolSend,
    ),
    loc(
        "tcp.output.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::ProtocolSend,
    ),
    loc(
        "checksum.enter",
        Layer::Transport,
        Kind::SpanEnter,
        Category::Checksum,
    ),
    loc(
        "checksum.exit",
        Layer::Transport,
        Kind::SpanExit,
        Category::Checksum,
    ),
    loc(
        "ipv6.output.enter",
        Layer::Network,
        Kind::SpanEnter,
        Category::ProtocolSend,
    ),
    loc(
        "ipv6.output.exit",
        Layer::Network,
        Kind::SpanExit,
        Category::ProtocolSend,
    ),
    loc(
        "neighbor.lookup.enter",
        Layer::Network,
        Kind::SpanEnter,
        Category::DataStructure,
    ),
    loc(
        "neighbor.lookup.exit",
        Layer::Network,
        Kind::SpanExit,
        Category::DataStructure,
    ),
    loc(
        "link.transmit.enter",
        Layer::Link,
        Kind::SpanEnter,
        Category::Link,
    ),
    loc(
        "link.transmit.exit",
        Layer::Link,
        Kind::SpanExit,
        Category::Link,
    ),
    loc(
        "ip.fragment.enter",
        Layer::Network,
        Kind::SpanEnter,
        Category::Fragmentation,
    ),
    loc(
        "ip.fragment.exit",
        Layer::Network,
        Kind::SpanExit,
        Category::Fragmentation,
    ),
];

const fn loc(name: &'static str, layer: Layer, kind: Kind, category: Category) -> Location {
    support::loc(name, layer, kind, category, None)
}

fn at(name: &str) -> probe::Loc {
    support::at(LOCATIONS, name)
}

/// Builds one thread's records from a nested description: `(name, ns)`
/// opens `name` and works `ns` before its first child; `")"` closes the
/// innermost span after 10 ns more. Each `"!k"` is a message mark `k`.
struct Builder {
    t: u64,
    open: Vec<&'static str>,
    records: Vec<Record>,
}

impl Builder {
    fn new() -> Self {
        Builder {
            t: 1_000,
            open: Vec::new(),
            records: Vec::new(),
        }
    }

    fn mark(&mut self, k: u64) -> &mut Self {
        self.records
            .push(Record::new(self.t, at("app.message.send"), 0, 1, k, 1));
        self.t += 5;
        self
    }

    fn enter(&mut self, name: &'static str, work: u64) -> &mut Self {
        self.records.push(Record::new(
            self.t,
            at(&format!("{name}.enter")),
            0,
            1,
            0,
            1,
        ));
        self.t += work;
        self.open.push(name);
        self
    }

    fn exit(&mut self) -> &mut Self {
        self.t += 10;
        let name = self.open.pop().unwrap();
        self.records
            .push(Record::new(self.t, at(&format!("{name}.exit")), 0, 1, 0, 1));
        self
    }

    /// A leaf span of `work` + 10 ns.
    fn leaf(&mut self, name: &'static str, work: u64) -> &mut Self {
        self.enter(name, work).exit()
    }

    /// One TCP segment: output (100) { checksum (40+10), ipv6.output (30)
    /// { neighbor.lookup (20+10) } }: inclusive 100+50+30+30+10+10 = 230.
    fn segment(&mut self) -> &mut Self {
        self.enter("tcp.output", 100)
            .leaf("checksum", 40)
            .enter("ipv6.output", 30)
            .leaf("neighbor.lookup", 20)
            .exit()
            .exit()
    }

    /// One message: a write with a copy, two segments, two frames.
    fn message(&mut self, k: u64, fragment: bool) -> &mut Self {
        self.mark(k)
            .enter("socket.send", 50)
            .leaf("data.copy", 200)
            .exit()
            .segment()
            .segment();
        if fragment {
            self.leaf("ip.fragment", 500);
        }
        self.leaf("link.transmit", 90).leaf("link.transmit", 90)
    }
}

fn view(records: Vec<Record>) -> TraceView {
    support::view(LOCATIONS, 0.0, records)
}

/// Three messages, the second with a rare extra span, and some work
/// before the first mark that belongs to no message.
fn three_messages() -> (TraceView, CallTree) {
    let mut b = Builder::new();
    b.leaf("link.transmit", 5)
        .message(0, false)
        .message(1, true)
        .message(2, false);
    let v = view(b.records.clone());
    let spans = all_spans(&v);
    let thread = &spans[&1];
    let roots = message_roots(&v, thread, 1, None);
    assert_eq!(
        roots.iter().map(|r| r.0).collect::<Vec<_>>(),
        [0, 1, 2],
        "one window per mark"
    );
    let messages: Vec<MessageSpans> = roots
        .iter()
        .map(|(_, roots)| MessageSpans {
            spans: thread,
            roots,
        })
        .collect();
    let tree = build(&v, &messages);
    (v, tree)
}

fn node<'a>(tree: &'a CallTree, path: &[&str]) -> &'a callpath::CallNode {
    let i = tree
        .find(path)
        .unwrap_or_else(|| panic!("no {path:?} in\n{}", render_text(tree)));
    &tree.nodes[i]
}

#[test]
fn the_tree_follows_name_paths_with_calls_and_times_per_message() {
    let (_, tree) = three_messages();
    assert_eq!(tree.messages, 3);
    let output = node(&tree, &["tcp.output"]);
    assert_eq!((output.messages, output.calls), (3, 6));
    assert_eq!(output.calls_per_message, 2.0);
    assert_eq!(output.share, 1.0);
    // Two segments per message of 230 ns inclusive, 100 + 10 exclusive.
    assert_eq!(output.inclusive_ns, 460.0);
    assert_eq!(output.exclusive_ns, 2.0 * 110.0);
    assert_eq!(
        (output.layer, output.category, output.depth),
        (Layer::Transport, Category::ProtocolSend, 0)
    );
    let ipv6 = node(&tree, &["tcp.output", "ipv6.output"]);
    assert_eq!((ipv6.depth, ipv6.calls_per_message), (1, 2.0));
    // 30 + 30 + 10 per call.
    assert_eq!(ipv6.inclusive_ns, 2.0 * 70.0);
    assert_eq!(ipv6.exclusive_ns, 2.0 * 40.0);
    let lookup = node(&tree, &["tcp.output", "ipv6.output", "neighbor.lookup"]);
    assert_eq!((lookup.depth, lookup.inclusive_ns), (2, 60.0));
    let copy = node(&tree, &["socket.send", "data.copy"]);
    assert_eq!((copy.calls_per_message, copy.inclusive_ns), (1.0, 210.0));
    let tx = node(&tree, &["link.transmit"]);
    assert_eq!((tx.calls, tx.messages), (6, 3));
    // The span before the first mark is in no message.
    assert_eq!(tx.inclusive_ns, 200.0);
    // The rare span: one message of three; its mean is over that one.
    let frag = node(&tree, &["ip.fragment"]);
    assert_eq!((frag.messages, frag.calls), (1, 1));
    assert!((frag.share - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(frag.inclusive_ns, 510.0);
    // A function called from two places is two nodes.
    assert!(tree.find(&["neighbor.lookup"]).is_none());
}

#[test]
fn nodes_are_depth_first_in_order_of_first_occurrence() {
    let (_, tree) = three_messages();
    let paths: Vec<String> = (0..tree.nodes.len())
        .map(|i| tree.path(i).join("/"))
        .collect();
    assert_eq!(
        paths,
        [
            "socket.send",
            "socket.send/data.copy",
            "tcp.output",
            "tcp.output/checksum",
            "tcp.output/ipv6.output",
            "tcp.output/ipv6.output/neighbor.lookup",
            "link.transmit",
            // First seen in the second message, after link.transmit.
            "ip.fragment",
        ]
    );
    for (i, n) in tree.nodes.iter().enumerate() {
        match n.parent {
            Some(p) => {
                assert!(p < i);
                assert_eq!(tree.nodes[p].depth + 1, n.depth);
            }
            None => assert_eq!(n.depth, 0),
        }
    }
    assert_eq!(tree.children(None).len(), 4);
}

#[test]
fn the_common_path_drops_what_few_messages_pass_through() {
    let (v, tree) = three_messages();
    let c = common(&tree, 0.5);
    assert_eq!(c.messages, 3);
    assert!(c.find(&["ip.fragment"]).is_none());
    assert_eq!(c.nodes.len(), tree.nodes.len() - 1);
    // Re-indexed parents still point at the right nodes.
    assert_eq!(
        c.path(
            c.find(&["tcp.output", "ipv6.output", "neighbor.lookup"])
                .unwrap()
        )
        .len(),
        3
    );
    // One third passes a threshold of a third.
    assert!(common(&tree, 1.0 / 3.0).find(&["ip.fragment"]).is_some());
    assert!(common(&tree, 1.01).nodes.is_empty());
    // common_path is build + common.
    let spans = all_spans(&v);
    let roots = message_roots(&v, &spans[&1], 1, Some(1));
    let messages: Vec<MessageSpans> = roots
        .iter()
        .map(|(_, r)| MessageSpans {
            spans: &spans[&1],
            roots: r,
        })
        .collect();
    assert_eq!(common_path(&v, &messages, 0.5), c);
    // Marks of another flow make no windows.
    assert!(message_roots(&v, &spans[&1], 1, Some(99)).is_empty());
}

#[test]
fn the_text_rendering_indents_by_depth() {
    let (_, tree) = three_messages();
    let text = render_text(&common(&tree, 0.5));
    let expected = "\
socket.send  270 ns (excl 60 ns)
  data.copy  210 ns (excl 210 ns)
tcp.output  460 ns (excl 220 ns)  ×2.00
  checksum  100 ns (excl 100 ns)  ×2.00
  ipv6.output  140 ns (excl 80 ns)  ×2.00
    neighbor.lookup  60 ns (excl 60 ns)  ×2.00
link.transmit  200 ns (excl 200 ns)  ×2.00
";
    assert_eq!(text, expected);
    let full = render_text(&tree);
    assert!(
        full.ends_with("ip.fragment  510 ns (excl 510 ns)  [33 % of messages]\n"),
        "{full}"
    );
    assert_eq!(format_ns(12_345.0), "12.3 µs");
    assert_eq!(format_ns(4_560_000.0), "4.56 ms");
    assert_eq!(format_ns(2.5e9), "2.50 s");
}

#[test]
fn windows_take_top_level_spans_wholly_inside() {
    let mut b = Builder::new();
    b.message(0, false);
    let v = view(b.records.clone());
    let spans = &all_spans(&v)[&1];
    let names = |roots: &[usize]| -> Vec<String> {
        roots
            .iter()
            .map(|&i| v.site(spans.spans[i].enter).span.clone().unwrap())
            .collect()
    };
    let all = top_level_in(spans, 0, b.records.len());
    assert_eq!(
        names(&all),
        [
            "socket.send",
            "tcp.output",
            "tcp.output",
            "link.transmit",
            "link.transmit"
        ]
    );
    // A window starting inside the first segment: its inner spans are
    // roots, the segment itself is not wholly inside.
    let segment = spans.spans[all[1]];
    let inner = top_level_in(spans, segment.enter_index + 1, b.records.len());
    assert_eq!(
        names(&inner)[..3],
        ["checksum", "ipv6.output", "tcp.output"]
    );
    // By counter value.
    let by_time = roots_between(spans, segment.start, segment.end);
    assert_eq!(names(&by_time), ["tcp.output"]);
    assert!(roots_between(spans, segment.start + 1, segment.end).len() == 2);
}

#[test]
fn deep_nesting_is_cut_not_recursed() {
    let depth = 20_000;
    let mut records = Vec::new();
    for i in 0..depth {
        records.push(Record::new(i, at("tcp.output.enter"), 0, 1, 0, 1));
    }
    for i in 0..depth {
        records.push(Record::new(depth + i, at("tcp.output.exit"), 0, 1, 0, 1));
    }
    let v = view(records);
    let spans = &all_spans(&v)[&1];
    let roots = top_level_in(spans, 0, 2 * depth as usize);
    assert_eq!(roots.len(), 1);
    let tree = build(
        &v,
        &[MessageSpans {
            spans,
            roots: &roots,
        }],
    );
    assert_eq!(tree.nodes.len(), callpath::MAX_DEPTH + 1);
    assert_eq!(tree.too_deep, depth - callpath::MAX_DEPTH as u64 - 1);
    assert!(render_text(&tree).lines().count() == callpath::MAX_DEPTH + 1);
    // Bad root indices are counted.
    let tree = build(
        &v,
        &[MessageSpans {
            spans,
            roots: &[usize::MAX],
        }],
    );
    assert_eq!((tree.bad_roots, tree.nodes.len()), (1, 0));
}
