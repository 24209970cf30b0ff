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
        Ok(TraceView {
            sites,
            by_name,
            threads,
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
