//! The common call path of one message as a tree with times: the IPv6
//! study's Figures 4.6 and 4.7 (`000_…` §4.3.8), which were found by
//! printing every function's entry and exit, here found from the spans.
//!
//! Input is a set of *messages*, each a set of root spans of one thread
//! (e.g. every top-level span between a message's `app.message.send` mark
//! and the next one, see [`message_roots`], or every top-level span of a
//! thread in a time window, see [`roots_between`]). Under each root the
//! spans nested in it (by their enter and exit records) are walked, and
//! every span lands on the tree node of its *name path* from the root
//! (`tcp.output` → `ipv6.output` → `neighbor.lookup`), so the same
//! function called from two places is two nodes.
//!
//! For each node: how many messages pass through it, its calls, calls per
//! message, and the mean inclusive and exclusive time per message that
//! passes through it (the sum over its calls in that message, averaged
//! over those messages). The *common* path keeps the nodes that at least a
//! given share of the messages pass through (the study's "execution path
//! without any error or exception handling").
//!
//! Nodes are listed depth first, siblings in order of first occurrence
//! (the message and position where the node was first seen), so the list
//! reads like the study's figures from top to bottom. Trees deeper than
//! [`MAX_DEPTH`] are cut there (counted); nothing recurses, so no trace can
//! exhaust the stack.

use std::collections::BTreeMap;
use std::fmt::Write;

use probe::{Category, Layer};
use serde::Serialize;

use crate::spans::ThreadSpans;
use crate::view::TraceView;

/// Deepest node kept (roots are depth 0).
pub const MAX_DEPTH: usize = 64;

/// The location name marking the start of a message on the sender.
pub const MESSAGE_SEND: &str = crate::messages::sites::MESSAGE_SEND;

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallNode {
    /// The span's name (without `.enter`).
    pub name: String,
    pub layer: Layer,
    pub category: Category,
    /// Roots are 0.
    pub depth: u16,
    /// Index of the parent node in [`CallTree::nodes`].
    pub parent: Option<usize>,
    /// Messages that pass through this node.
    pub messages: u64,
    /// `messages` over the tree's messages.
    pub share: f64,
    /// Calls over all messages.
    pub calls: u64,
    /// `calls / messages`.
    pub calls_per_message: f64,
    /// Mean per message passing through, nanoseconds, probe overhead
    /// removed.
    pub inclusive_ns: f64,
    pub exclusive_ns: f64,
}

/// A call tree over a set of messages: nodes depth first, children in
/// order of first occurrence.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CallTree {
    pub messages: u64,
    pub nodes: Vec<CallNode>,
    /// Spans nested deeper than [`MAX_DEPTH`] (left out).
    pub too_deep: u64,
    /// Root indices that named no span (ignored).
    pub bad_roots: u64,
}

impl CallTree {
    /// Indices of the children of `node` (`None`: the roots), in order.
    pub fn children(&self, node: Option<usize>) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].parent == node)
            .collect()
    }

    /// The node at the end of `path` (span names from a root), if any.
    pub fn find(&self, path: &[&str]) -> Option<usize> {
        let mut at: Option<usize> = None;
        for name in path {
            at = Some(
                (0..self.nodes.len())
                    .find(|&i| self.nodes[i].parent == at && self.nodes[i].name == *name)?,
            );
        }
        at
    }

    /// The names from the root to `node`.
    pub fn path(&self, node: usize) -> Vec<&str> {
        let mut out = Vec::new();
        let mut at = Some(node);
        while let Some(i) = at {
            let Some(n) = self.nodes.get(i) else { break };
            out.push(n.name.as_str());
            at = n.parent;
            if out.len() > MAX_DEPTH + 1 {
                break;
            }
        }
        out.reverse();
        out
    }
}

/// The spans of one message: root span indices into one thread's spans.
#[derive(Debug, Clone, Copy)]
pub struct MessageSpans<'a> {
    pub spans: &'a ThreadSpans,
    pub roots: &'a [usize],
}

/// Per message of `thread` (numbered by the `aux` of its mark): the
/// top-level spans from its `app.message.send` mark (of `flow`, or of any
/// flow) to the next mark, or the end of the thread's records.
pub fn message_roots(
    view: &TraceView,
    spans: &ThreadSpans,
    thread: u16,
    flow: Option<u32>,
) -> Vec<(u64, Vec<usize>)> {
    let (Some(mark), Some(records)) = (view.loc(MESSAGE_SEND), view.threads.get(&thread)) else {
        return Vec::new();
    };
    let marks: Vec<(usize, u64)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.loc == mark && flow.is_none_or(|f| r.flow == f))
        .map(|(i, r)| (i, r.aux))
        .collect();
    marks
        .iter()
        .enumerate()
        .map(|(k, &(from, index))| {
            let to = marks.get(k + 1).map_or(records.len(), |m| m.0);
            (index, top_level_in(spans, from, to))
        })
        .collect()
}

/// Top-level spans wholly inside records `from..to` of their thread: the
/// spans inside whose enclosing span is not.
pub fn top_level_in(spans: &ThreadSpans, from: usize, to: usize) -> Vec<usize> {
    let inside = |i: usize| {
        spans
            .spans
            .get(i)
            .is_some_and(|s| s.enter_index >= from && s.exit_index < to)
    };
    let first = spans.spans.partition_point(|s| s.enter_index < from);
    let last = spans.spans.partition_point(|s| s.enter_index < to);
    (first..last.max(first))
        .filter(|&i| inside(i) && !spans.spans[i].parent.is_some_and(inside))
        .collect()
}

/// Top-level spans of a thread that begin and end between the counter
/// values `from` and `to` (inclusive): the spans inside whose enclosing
/// span is not.
pub fn roots_between(spans: &ThreadSpans, from: u64, to: u64) -> Vec<usize> {
    let inside = |i: usize| {
        spans
            .spans
            .get(i)
            .is_some_and(|s| s.start >= from && s.end <= to)
    };
    (0..spans.spans.len())
        .filter(|&i| inside(i) && !spans.spans[i].parent.is_some_and(inside))
        .collect()
}

struct Building {
    loc: u16,
    depth: u16,
    parent: Option<usize>,
    first_seen: u64,
    messages: u64,
    last_message: Option<usize>,
    calls: u64,
    inclusive: f64,
    exclusive: f64,
}

/// The whole tree of `messages`.
pub fn build(view: &TraceView, messages: &[MessageSpans<'_>]) -> CallTree {
    let mut nodes: Vec<Building> = Vec::new();
    let mut index: BTreeMap<(Option<usize>, u16), usize> = BTreeMap::new();
    let mut seen = 0u64;
    let mut too_deep = 0u64;
    let mut bad_roots = 0u64;
    for (m, message) in messages.iter().enumerate() {
        let spans = &message.spans.spans;
        for &root in message.roots {
            let Some(r) = spans.get(root) else {
                bad_roots += 1;
                continue;
            };
            // Open spans: (span index, node). Spans are ordered by enter
            // record, so the spans nested in the root follow it.
            let mut open: Vec<(usize, usize)> = Vec::new();
            let mut j = root;
            while j < spans.len() {
                let s = &spans[j];
                if j > root && s.enter_index >= r.exit_index {
                    break;
                }
                while open
                    .last()
                    .is_some_and(|&(o, _)| spans[o].exit_index < s.enter_index)
                {
                    open.pop();
                }
                if open.len() > MAX_DEPTH {
                    too_deep += 1;
                    j += 1;
                    continue;
                }
                let parent = open.last().map(|&(_, node)| node);
                let node = *index.entry((parent, s.enter)).or_insert_with(|| {
                    seen += 1;
                    nodes.push(Building {
                        loc: s.enter,
                        depth: open.len() as u16,
                        parent,
                        first_seen: seen,
                        messages: 0,
                        last_message: None,
                        calls: 0,
                        inclusive: 0.0,
                        exclusive: 0.0,
                    });
                    nodes.len() - 1
                });
                let b = &mut nodes[node];
                if b.last_message != Some(m) {
                    b.last_message = Some(m);
                    b.messages += 1;
                }
                b.calls += 1;
                b.inclusive += view.ns(s.inclusive);
                b.exclusive += view.ns(s.exclusive);
                open.push((j, node));
                j += 1;
            }
        }
    }
    let total = messages.len() as u64;
    // Depth-first order, siblings by first occurrence, without recursion.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut roots: Vec<usize> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        match n.parent {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let by_first = |list: &mut Vec<usize>| list.sort_by_key(|&i| nodes[i].first_seen);
    by_first(&mut roots);
    for list in &mut children {
        by_first(list);
    }
    let mut order: Vec<usize> = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(children[i].iter().rev());
    }
    let mut position = vec![0usize; nodes.len()];
    for (at, &i) in order.iter().enumerate() {
        position[i] = at;
    }
    let out = order
        .iter()
        .map(|&i| {
            let b = &nodes[i];
            let site = view.site(b.loc);
            let per = |v: f64| {
                if b.messages > 0 {
                    v / b.messages as f64
                } else {
                    0.0
                }
            };
            CallNode {
                name: site.span.clone().unwrap_or_else(|| site.name.clone()),
                layer: site.layer,
                category: site.category,
                depth: b.depth,
                parent: b.parent.map(|p| position[p]),
                messages: b.messages,
                share: if total > 0 {
                    b.messages as f64 / total as f64
                } else {
                    0.0
                },
                calls: b.calls,
                calls_per_message: per(b.calls as f64),
                inclusive_ns: per(b.inclusive),
                exclusive_ns: per(b.exclusive),
            }
        })
        .collect();
    CallTree {
        messages: total,
        nodes: out,
        too_deep,
        bad_roots,
    }
}

/// The nodes of `tree` that at least `min_share` of its messages pass
/// through (a node's share never exceeds its parent's, so the result is a
/// tree).
pub fn common(tree: &CallTree, min_share: f64) -> CallTree {
    let mut position: Vec<Option<usize>> = vec![None; tree.nodes.len()];
    let mut nodes = Vec::new();
    for (i, n) in tree.nodes.iter().enumerate() {
        let parent_kept = n.parent.map(|p| position.get(p).copied().flatten());
        // A NaN threshold keeps nothing.
        let enough = n.share >= min_share;
        if matches!(parent_kept, Some(None)) || !enough {
            continue;
        }
        position[i] = Some(nodes.len());
        nodes.push(CallNode {
            parent: parent_kept.flatten(),
            ..n.clone()
        });
    }
    CallTree {
        messages: tree.messages,
        nodes,
        too_deep: tree.too_deep,
        bad_roots: tree.bad_roots,
    }
}

/// [`build`] then [`common`].
pub fn common_path(view: &TraceView, messages: &[MessageSpans<'_>], min_share: f64) -> CallTree {
    common(&build(view, messages), min_share)
}

/// Nanoseconds in words: `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`.
pub fn format_ns(ns: f64) -> String {
    let a = ns.abs();
    if !ns.is_finite() {
        format!("{ns} ns")
    } else if a < 1e3 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// One line per node, indented two spaces per level:
/// `ipv6.output  12.3 µs (excl 1.1 µs)`, followed by `×N` when the node
/// is called other than once per message that passes through it, and by
/// the share of messages when it is below 100 %.
pub fn render_text(tree: &CallTree) -> String {
    let mut out = String::new();
    for n in &tree.nodes {
        let _ = write!(
            out,
            "{:indent$}{}  {} (excl {})",
            "",
            n.name,
            format_ns(n.inclusive_ns),
            format_ns(n.exclusive_ns),
            indent = 2 * usize::from(n.depth)
        );
        if (n.calls_per_message - 1.0).abs() > 0.005 {
            let _ = write!(out, "  ×{:.2}", n.calls_per_message);
        }
        if n.share < 1.0 {
            let _ = write!(out, "  [{:.0} % of messages]", n.share * 100.0);
        }
        out.push('\n');
    }
    out
}
