//! Any records over the reference stack's location table — a corrupt or
//! hostile trace that still parses — go through every analysis without a
//! panic and with bounded output.

use analysis::callpath::{self, MessageSpans};
use analysis::queues::{self, QueueOptions};
use analysis::{all_spans, histogram, messages, profile, site_trace, sweep, TraceView};
use probe::{Record, Trace, TraceHeader};
use proptest::prelude::*;

fn any_record() -> impl Strategy<Value = Record> {
    let locations = stack::probes::LOCATIONS.len() as u16;
    (
        0u64..5_000,
        0..locations,
        0u32..70_000,
        0u32..4,
        0u64..8,
        1u16..4,
    )
        .prop_map(|(tsc, loc, len, flow, aux, thread)| {
            Record::new(tsc, probe::Loc(loc), len, flow, aux, thread)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_analysis_takes_any_records(mut records in prop::collection::vec(any_record(), 0..300), overhead in 0.0f64..50.0) {
        // Each thread's records in counter order, as a recorder writes
        // them (the analysis must cope with the rest too: shuffle half).
        let half = records.len() / 2;
        records[..half].sort_by_key(|r| r.tsc);
        let trace = Trace::new(
            TraceHeader::new(1e9, overhead, 0, "arbitrary"),
            stack::probes::LOCATIONS,
            records.clone(),
        );
        let view = TraceView::new(&trace).unwrap();
        let spans = all_spans(&view);
        for s in spans.values() {
            prop_assert!(s.spans.len() <= records.len());
            for span in &s.spans {
                prop_assert!(span.inclusive >= 0.0 && span.exclusive >= 0.0);
            }
        }
        if let Ok(found) = messages::analyse(&view, &spans, messages::StopAt::HandedToDevice) {
            prop_assert!(found.messages.len() <= records.len());
            let points = sweep::by_size(&found);
            let _ = sweep::trends(&points, Some(1420.0), false);
            let _ = sweep::trends(&points, Some(1420.0), true);
        }
        let queues = queues::analyse(&view, &QueueOptions::default());
        prop_assert!(queues.iter().all(|q| q.delays.len() <= records.len()));
        let _ = histogram::layer_histograms(&view, &spans, histogram::DEFAULT_BINS_PER_DECADE);
        for (&thread, s) in &spans {
            let _ = profile::thread_profile(&view, thread, s);
            let roots = callpath::message_roots(&view, s, thread, None);
            let msgs: Vec<MessageSpans> = roots
                .iter()
                .map(|(_, r)| MessageSpans { spans: s, roots: r })
                .collect();
            let tree = callpath::common_path(&view, &msgs, 0.5);
            prop_assert!(tree.nodes.len() <= records.len());
            let trace = site_trace::site_trace(&view, "link.transmit.enter", thread, |_| true, 50);
            if let Some(t) = trace {
                prop_assert!(t.points.len() <= 51);
            }
        }
    }
}
