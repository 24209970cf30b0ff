//! Exclusive time per function and per cost category over a whole run:
//! the IPv6 study's CPU share tables (`000_…` Tables 5c and 5d), from
//! spans instead of a sampling profiler.

use std::collections::BTreeMap;

use probe::Category;
use serde::Serialize;

use crate::spans::ThreadSpans;
use crate::view::TraceView;

/// One function (span) of one thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionShare {
    pub name: String,
    pub category: Category,
    pub calls: u64,
    pub exclusive_ns: f64,
    /// Share of the thread's time in any span (the stack's busy time).
    pub share_of_stack: f64,
    /// Share of the thread's traced wall time (first to last record).
    pub share_of_wall: f64,
}

/// One thread's profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadProfile {
    pub thread: u16,
    /// First to last record, nanoseconds.
    pub wall_ns: f64,
    /// Time inside any span (the sum of every span's exclusive time),
    /// instrumentation left out: the stack's busy time.
    pub stack_ns: f64,
    /// Time in instrumentation spans (the tool's own work, e.g. a
    /// capture's copies): listed among the functions and categories with
    /// its share of `stack_ns`, but not part of it.
    pub instrumentation_ns: f64,
    /// Functions, most time first.
    pub functions: Vec<FunctionShare>,
    /// Exclusive time per category and its share of `stack_ns`.
    pub categories: BTreeMap<Category, (f64, f64)>,
    pub unmatched_exits: u64,
    pub unclosed: u64,
}

/// The profile of `thread`.
pub fn thread_profile(view: &TraceView, thread: u16, spans: &ThreadSpans) -> ThreadProfile {
    let records = view.threads.get(&thread).map(Vec::as_slice).unwrap_or(&[]);
    let wall = match (records.first(), records.last()) {
        (Some(a), Some(b)) => view.ns(b.tsc.saturating_sub(a.tsc) as f64),
        _ => 0.0,
    };
    let mut by_loc: BTreeMap<u16, (u64, f64)> = BTreeMap::new();
    for span in &spans.spans {
        let entry = by_loc.entry(span.enter).or_default();
        entry.0 += 1;
        entry.1 += view.ns(span.exclusive);
    }
    let is_instrumentation = |loc: &u16| view.site(*loc).category == Category::Instrumentation;
    let stack: f64 = by_loc
        .iter()
        .filter(|(loc, _)| !is_instrumentation(loc))
        .map(|(_, v)| v.1)
        .sum();
    let instrumentation: f64 = by_loc
        .iter()
        .filter(|(loc, _)| is_instrumentation(loc))
        .map(|(_, v)| v.1)
        .sum();
    let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
    let mut functions: Vec<FunctionShare> = by_loc
        .into_iter()
        .map(|(loc, (calls, ns))| {
            let site = view.site(loc);
            FunctionShare {
                name: site.span.clone().unwrap_or_else(|| site.name.clone()),
                category: site.category,
                calls,
                exclusive_ns: ns,
                share_of_stack: share(ns, stack),
                share_of_wall: share(ns, wall),
            }
        })
        .collect();
    functions.sort_by(|a, b| b.exclusive_ns.total_cmp(&a.exclusive_ns));
    let mut categories: BTreeMap<Category, (f64, f64)> = BTreeMap::new();
    for f in &functions {
        categories.entry(f.category).or_default().0 += f.exclusive_ns;
    }
    for value in categories.values_mut() {
        value.1 = share(value.0, stack);
    }
    ThreadProfile {
        thread,
        wall_ns: wall,
        stack_ns: stack,
        instrumentation_ns: instrumentation,
        functions,
        categories,
        unmatched_exits: spans.unmatched_exits,
        unclosed: spans.unclosed,
    }
}
