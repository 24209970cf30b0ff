//! A pcapng capture on a traced run (issue 15): the same short traced TCP
//! transfer over IPv6 on the threaded runner, once with every interface
//! captured and once without. With the capture, the only capture work in
//! the sender's `link.transmit` spans is one `capture.copy` span
//! (category `instrumentation`) per frame, which the analysis takes out of
//! `link.transmit`; without it there is none. The capture files are
//! complete when the run returns. Behaviour only: no timing is asserted.

use std::path::{Path, PathBuf};

use analysis::spans::ThreadSpans;
use analysis::{all_spans, TraceView};
use probe::Category;
use stack::topology::Topology;
use traffic::reference::messages::{self, MessagesSpec};
use traffic::spec::Protocol;
use wire::pcapng::{Block, Direction, PcapngReader};

struct Run {
    view: TraceView,
    sender: ThreadSpans,
    sender_host: String,
}

fn run(pcap_dir: Option<&Path>) -> Run {
    let topology = Topology::from_toml_str(include_str!("../../../topologies/fast-ethernet.toml"))
        .expect("topology");
    let spec = MessagesSpec {
        pcap_dir: pcap_dir.map(Path::to_path_buf),
        ..MessagesSpec::new(Protocol::Tcp, vec![4_000, 9_000], 2, 1 << 18)
    };
    let result = messages::run(&topology, &spec).expect("the run");
    assert!(result.outcomes.iter().all(|o| o.delivered));
    // Overhead 0: a span's inclusive time is its raw time less what is
    // taken out of it.
    let trace = result.trace(1e9, 0.0, "capture");
    assert_eq!(trace.header.dropped, 0);
    let view = TraceView::new(&trace).expect("a valid trace");
    let found = analysis::messages::analyse(
        &view,
        &all_spans(&view),
        analysis::messages::StopAt::OnTheWire,
    )
    .expect("messages");
    let thread = found.sender_thread.expect("a sender");
    let sender = all_spans(&view).remove(&thread).expect("sender spans");
    Run {
        view,
        sender,
        sender_host: result.sender,
    }
}

fn name<'a>(view: &'a TraceView, span: &analysis::spans::Span) -> &'a str {
    view.site(span.enter).span.as_deref().unwrap_or("")
}

/// (outbound, inbound) packets of a pcapng file, read to its end.
fn packets(path: &Path) -> (usize, usize) {
    let file = std::fs::File::open(path).expect("capture file");
    let mut reader = PcapngReader::new(std::io::BufReader::new(file));
    let (mut out, mut inn) = (0, 0);
    while let Some(block) = reader.next_block().expect("a complete capture") {
        if let Block::EnhancedPacket(p) = block {
            match p.direction {
                Some(Direction::Outbound) => out += 1,
                Some(Direction::Inbound) => inn += 1,
                None => panic!("every packet has a direction"),
            }
        }
    }
    (out, inn)
}

fn scratch_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stackscope-capture-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("capture directory");
    dir
}

#[test]
fn capture_work_in_link_transmit_is_instrumentation_and_is_taken_out() {
    // One test: the probe gate is process-wide, so the runs take turns.
    let dir = scratch_dir();
    let on = run(Some(&dir));
    let off = run(None);

    // With the capture: every frame the sender's link took holds one copy,
    // and nothing else of the capture.
    let spans = &on.sender.spans;
    let links: Vec<usize> = (0..spans.len())
        .filter(|&i| name(&on.view, &spans[i]) == "link.transmit")
        .collect();
    assert!(links.len() >= 8, "{} frames sent", links.len());
    let mut instrumentation = 0.0;
    for &i in &links {
        let link = &spans[i];
        let children: Vec<&analysis::spans::Span> =
            spans.iter().filter(|s| s.parent == Some(i)).collect();
        assert_eq!(children.len(), 1, "one child, the copy");
        let copy = children[0];
        assert_eq!(name(&on.view, copy), "capture.copy");
        assert_eq!(copy.category, Category::Instrumentation);
        assert_eq!(copy.len, link.len, "the whole frame is copied");
        // The analysis takes the copy out of link.transmit.
        let raw = (link.end - link.start) as f64;
        assert_eq!(link.inclusive, (raw - copy.inclusive).max(0.0));
        assert_eq!(link.exclusive, link.inclusive);
        instrumentation += copy.inclusive;
    }
    let last = on.view.threads.values().map(Vec::len).max().unwrap_or(0);
    assert!(on.sender.instrumentation_between(0, last) >= instrumentation);
    assert!(instrumentation > 0.0);

    // Without it: no capture copy anywhere (the runner's wake-ups are
    // instrumentation too, outside the link), nothing under the link.
    let spans = &off.sender.spans;
    assert!(spans.iter().all(|s| name(&off.view, s) != "capture.copy"));
    assert!(spans.iter().any(|s| name(&off.view, s) == "link.transmit"));
    for (i, s) in spans.iter().enumerate() {
        if name(&off.view, s) == "link.transmit" {
            assert!(spans.iter().all(|c| c.parent != Some(i)));
            assert_eq!(s.inclusive, (s.end - s.start) as f64);
        }
    }
    let last = off.view.threads.values().map(Vec::len).max().unwrap_or(0);
    let wakes: f64 = spans
        .iter()
        .filter(|s| name(&off.view, s) == "runner.wake")
        .map(|s| s.inclusive)
        .sum();
    assert_eq!(off.sender.instrumentation_between(0, last), wakes);

    // The files were complete when the run returned (the writers had
    // finished): the sender's holds at least every frame of the trace
    // (frames before the trace began are captured too).
    let sender_file = std::fs::read_dir(&dir)
        .expect("capture directory")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{}-", on.sender_host)))
        })
        .expect("the sender's capture");
    let (outbound, inbound) = packets(&sender_file);
    assert!(outbound >= links.len(), "{outbound} < {}", links.len());
    assert!(inbound > 0, "the ACKs");
    let _ = std::fs::remove_dir_all(&dir);
}
