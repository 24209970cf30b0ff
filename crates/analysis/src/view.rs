//! A trace indexed for analysis: locations looked up by name from the
//! trace's own table (never by number), records split per thread in file
//! order, counter units converted to nanoseconds.

use std::collections::BTreeMap;

use probe::{Category, Kind, Layer, LocationEntry, Record, Trace};

use crate::AnalysisError;

/// What analysis needs to know of one location.
#[derive(Debug, Clone)]
pub struct Site {
    pub name: String,
    pub layer: Layer,
    pub kind: Kind,
    pub category: Category,
    pub queue: Option<String>,
    /// For a span enter: the location of its exit (`NAME.enter` pairs
    /// with `NAME.exit`), and the other way round.
    pub partner: Option<u16>,
    /// The span's name without `.enter` / `.exit`.
    pub span: Option<String>,
}

/// A trace ready for analysis.
#[derive(Debug, Clone)]
pub struct TraceView {
    pub sites: Vec<Site>,
    by_name: BTreeMap<String, u16>,
    /// Records per thread number, in file order.
    pub threads: BTreeMap<u16, Vec<Record>>,
    pub counter_hz: f64,
    /// Per-probe overhead in counter units (subtracted once per probe).
    pub overhead_cycles: f64,
    pub dropped: u64,
    pub description: String,
    /// Per thread, for each record, the counter reads among that thread's
    /// records up to it ([`TraceView::probe_steps`]).
    reads: BTreeMap<u16, Vec<u32>>,
}

impl TraceView {
    /// Indexes `trace`; refuses a trace whose counter frequency or
    /// overhead could not have been measured.
    pub fn new(trace: &Trace) -> Result<TraceView, AnalysisError> {
        trace
            .validate()
            .map_err(|e| AnalysisError::Trace(e.to_string()))?;
        let by_name: BTreeMap<String, u16> = trace
            .locations
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), i as u16))
            .collect();
        let sites = trace.locations.iter().map(|l| site(l, &by_name)).collect();
        let mut threads: BTreeMap<u16, Vec<Record>> = BTreeMap::new();
        for record in &trace.records {
            threads.entry(record.thread).or_default().push(*record);
        }
        let reads = threads
            .iter()
            .map(|(&thread, records)| (thread, read_counts(records)))
            .collect();
        Ok(TraceView {
            sites,
            by_name,
            threads,
            reads,
            counter_hz: trace.header.counter_hz,
            overhead_cycles: trace.header.overhead_cycles,
            dropped: trace.header.dropped,
            description: trace.header.description.clone(),
        })
    }

    /// The location called `name`, if the trace's table has it.
    pub fn loc(&self, name: &str) -> Option<u16> {
        self.by_name.get(name).copied()
    }

    pub fn site(&self, loc: u16) -> &Site {
        &self.sites[loc as usize]
    }

    /// The probe steps between records `from` and `to` (`from <= to`) of
    /// `records`, one thread's in file order: the counter reads after
    /// `from` up to and including `to`, each of which put one probe's
    /// overhead between two timestamps. Records made at one read
    /// (`probe::Stamp`: a queue's dequeue and the next stage's start, a
    /// batch of completions) carry the same counter value and add none.
    pub fn probe_steps(&self, records: &[Record], from: usize, to: usize) -> usize {
        let (from, to) = (from.min(to), to.max(from));
        let whole_thread = records.get(to).and_then(|r| self.threads.get(&r.thread));
        match whole_thread {
            // The thread's own records: the counts made once.
            Some(thread) if std::ptr::eq(thread.as_slice(), records) => {
                let reads = &self.reads[&records[to].thread];
                (reads[to] - reads[from]) as usize
            }
            _ => match records.get(from..=to) {
                Some(window) => window.windows(2).filter(|w| w[0].tsc != w[1].tsc).count(),
                None => to - from,
            },
        }
    }

    /// The earliest counter value of the trace: time zero of its series.
    pub fn first_tsc(&self) -> u64 {
        self.threads
            .values()
            .flat_map(|r| r.iter().map(|r| r.tsc))
            .min()
            .unwrap_or(0)
    }

    /// Counter units to nanoseconds.
    pub fn ns(&self, cycles: f64) -> f64 {
        cycles * 1e9 / self.counter_hz
    }

    /// The thread whose records include `loc`, first by file order.
    pub fn thread_with(&self, loc: u16, flow: Option<u32>) -> Option<u16> {
        self.threads
            .iter()
            .find(|(_, records)| {
                records
                    .iter()
                    .any(|r| r.loc == loc && flow.is_none_or(|f| r.flow == f))
            })
            .map(|(&t, _)| t)
    }
}

fn site(l: &LocationEntry, by_name: &BTreeMap<String, u16>) -> Site {
    let (span, partner) = match l.kind {
        Kind::SpanEnter => {
            let base = l.name.strip_suffix(".enter");
            (
                base.map(str::to_string),
                base.and_then(|b| by_name.get(&format!("{b}.exit")).copied()),
            )
        }
        Kind::SpanExit => {
            let base = l.name.strip_suffix(".exit");
            (
                base.map(str::to_string),
                base.and_then(|b| by_name.get(&format!("{b}.enter")).copied()),
            )
        }
        _ => (None, None),
    };
    Site {
        name: l.name.clone(),
        layer: l.layer,
        kind: l.kind,
        category: l.category,
        queue: l.queue.clone(),
        partner,
        span,
    }
}

/// For each record, the counter reads among `records` up to it: a record
/// whose counter value equals the one before it shared that one's read.
fn read_counts(records: &[Record]) -> Vec<u32> {
    let mut reads = 0u32;
    let mut previous = None;
    records
        .iter()
        .map(|r| {
            if previous != Some(r.tsc) {
                reads = reads.saturating_add(1);
            }
            previous = Some(r.tsc);
            reads
        })
        .collect()
}
