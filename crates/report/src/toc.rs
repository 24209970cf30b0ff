//! The table of contents and the anchors it links to: one per experiment
//! and one per run or sweep.

use std::fmt::Write;

use crate::html::escape;
use crate::model::Report;

/// An anchor made only of characters safe in an id and a URL fragment.
fn anchor(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// The id of an experiment's section.
pub(crate) fn experiment(name: &str) -> String {
    anchor(&["exp", name])
}

/// The id of a run's or sweep's section.
pub(crate) fn run(experiment: &str, id: &str) -> String {
    anchor(&["run", experiment, id])
}

/// A run's or sweep's section heading, `experiment / id: title`, with the
/// anchor the contents link to.
pub(crate) fn run_heading(h: &mut String, experiment: &str, id: &str, title: &str) {
    let _ = write!(
        h,
        "<h3 id=\"{}\">{experiment} / {}: {}</h3>",
        run(experiment, id),
        escape(id),
        escape(title)
    );
}

/// The contents: the summary, the run's facts, then every experiment with
/// its runs and sweeps.
pub(crate) fn render(h: &mut String, report: &Report) {
    h.push_str("<nav class=\"toc\"><h2>Contents</h2><ol>");
    if !report.summary.paths.is_empty() {
        h.push_str("<li><a href=\"#summary\">Where the time goes</a></li>");
    }
    h.push_str("<li><a href=\"#machine\">The run: machine, clock and files</a></li>");
    for exp in &report.experiments {
        let _ = write!(
            h,
            "<li><a href=\"#{}\">{}</a><ol>",
            experiment(&exp.name),
            escape(&exp.title)
        );
        for r in &exp.runs {
            let caption = if r.title.is_empty() {
                format!("{} over {} on {}", r.protocol, r.family, r.link)
            } else {
                r.title.clone()
            };
            let _ = write!(
                h,
                "<li><a href=\"#{}\">{}</a>: {}</li>",
                run(&exp.name, &r.id),
                escape(&r.id),
                escape(&caption)
            );
        }
        let sweeps = exp.sweeps.iter().map(|s| (&s.id, &s.title));
        let kernel = exp.kernel_runs.iter().map(|k| (&k.id, &k.title));
        for (id, title) in sweeps
            .chain(exp.pipelines.iter().map(|p| (&p.id, &p.title)))
            .chain(kernel)
        {
            let _ = write!(
                h,
                "<li><a href=\"#{}\">{}</a>: {}</li>",
                run(&exp.name, id),
                escape(id),
                escape(title)
            );
        }
        h.push_str("</ol></li>");
    }
    h.push_str("</ol></nav>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_safe_and_distinct() {
        assert_eq!(experiment("xie1999"), "exp-xie1999");
        assert_eq!(run("xie1999", "tcp"), "run-xie1999-tcp");
        assert_eq!(run("a b", "<x>"), "run-a-b--x-");
        assert_ne!(run("xie1999", "tcp"), run("xie1999", "udp"));
    }
}
