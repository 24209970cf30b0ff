//! A pcapng capture on a traced run (issue 15): the same short traced TCP
//! transfer over IPv6 on the threaded runner, once with every interface
//! captured and once without. With the capture, each frame the sender
//! transmits is copied in one `capture.copy` span (category
//! `instrumentation`) right after its `link.transmit` span, never inside
//! it; without it there is none. The capture files are
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
fn capture_work_is_instrumentation_outside_link_transmit() {
    // One test: the probe gate is process-wide, so the runs take turns.
    let dir = scratch_dir();
    let on = run(Some(&dir));
    let off = run(None);

    // With the capture: no link window holds any of it. Every frame the
    // sender's link took is copied just after its `link.transmit` span,
    // beside it (same parent), whole; nothing is taken out of the link.
    let spans = &on.sender.spans;
    let links: Vec<usize> = (0..spans.len())
        .filter(|&i| name(&on.view, &spans[i]) == "link.transmit")
        .collect();
    assert!(links.len() >= 8, "{} frames sent", links.len());
    let mut instrumentation = 0.0;
    for &i in &links {
        let link = &spans[i];
        assert!(
            spans.iter().all(|s| s.parent != Some(i)),
            "nothing inside link.transmit"
        );
        assert_eq!(link.inclusive, (link.end - link.start) as f64);
        let copy = &spans[i + 1];
        assert_eq!(name(&on.view, copy), "capture.copy");
        assert_eq!(copy.category, Category::Instrumentation);
        assert!(
            copy.enter_index > link.exit_index,
            "after the link, not in it"
        );
        assert_eq!(copy.parent, link.parent);
        assert_eq!(copy.len, link.len, "the whole frame is copied");
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
