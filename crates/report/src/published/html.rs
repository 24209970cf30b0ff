//! The section that sets a study's published values beside ours: one
//! small table per table or figure of the study, its conditions in the
//! caption and the known differences below it.

use std::collections::BTreeMap;
use std::fmt::Write;

use stats::Interval;

use super::{studies, Ours, Row, StudyValue};
use crate::html::escape;
use crate::model::Table;
use crate::plot::fmt_sig;
use crate::sweep_html::table_html;

/// The section for rows already resolved (`Experiment::published`); empty
/// for no rows.
pub fn render(name: &str, rows: &[Row]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let study = studies()
        .into_iter()
        .flatten()
        .find(|s| s.experiment == name);
    let mut h = String::new();
    let _ = write!(
        h,
        "<h3>{}: the study&#39;s published values beside ours</h3>",
        escape(name)
    );
    let _ = write!(
        h,
        "<p class=\"note\">Typed in from {} (<code>{}</code>, on the lines given; <code>experiments/published/{}.toml</code>). Ours is converted to the study&#39;s unit, with its 95 % interval [low, high] and n where the figure has them; the ratio is ours / study. ≈ marks a value the study gives as approximate. The studies ran on 1990s hardware: read the ratios for the shape of the results, and the notes under each table for why they differ.</p>",
        study.as_ref().map_or_else(|| escape(name), |s| escape(&s.study)),
        study.as_ref().map_or_else(String::new, |s| escape(&s.seed)),
        escape(name),
    );
    let compared: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            matches!(
                r.ours,
                Ours::Measured { .. } | Ours::NoFigure { .. } | Ours::Unresolved { .. }
            )
        })
        .collect();
    for group in by_figure(&compared) {
        let notes = Footnotes::of(group.iter().map(|r| r.difference.as_str()));
        let mut table = Table {
            caption: format!("{}: {}", group[0].figure, group[0].conditions),
            columns: ["quantity", "unit", "study", "ours", "ours / study", "lines"]
                .map(String::from)
                .to_vec(),
            rows: Vec::new(),
        };
        for r in &group {
            let (ours, ratio) = match &r.ours {
                Ours::Measured { value, ci95, n, .. } => (
                    with_interval(*value, *ci95, *n),
                    r.ratio
                        .map_or("-".into(), |x| with_interval(x, r.ratio_ci95, None)),
                ),
                Ours::NoFigure { why, .. } => ("-".into(), format!("no figure: {why}")),
                Ours::Unresolved { path, error } => {
                    ("-".into(), format!("unresolved: {path}: {error}"))
                }
                _ => continue,
            };
            table.rows.push(vec![
                format!("{}{}", quantity(r), notes.marker(&r.difference)),
                r.unit.clone(),
                r.study.map_or("-".into(), study_text),
                ours,
                ratio,
                lines(&r.source),
            ]);
        }
        table_html(&mut h, &table);
        notes.write(&mut h, "Known differences");
    }
    let skipped: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.ours, Ours::NotInThisRun { .. }))
        .collect();
    if !skipped.is_empty() {
        let mut figures: Vec<&str> = skipped.iter().map(|r| r.figure.as_str()).collect();
        figures.dedup();
        let _ = write!(
            h,
            "<p class=\"note\">{} more published value{} ({}) stand beside points the full lab measures and this run&#39;s grid skipped.</p>",
            skipped.len(),
            if skipped.len() == 1 { "" } else { "s" },
            escape(&figures.join("; ")),
        );
    }
    let missing: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.ours, Ours::NotReproduced { .. }))
        .collect();
    for group in by_figure(&missing) {
        let why = |r: &Row| match &r.ours {
            Ours::NotReproduced { why } => why.clone(),
            _ => String::new(),
        };
        let reasons: Vec<String> = group.iter().map(|r| why(r)).collect();
        let notes = Footnotes::of(reasons.iter().map(String::as_str));
        let mut table = Table {
            caption: format!(
                "{} (not reproduced by the lab): {}",
                group[0].figure, group[0].conditions
            ),
            columns: ["quantity", "unit", "study", "lines"]
                .map(String::from)
                .to_vec(),
            rows: Vec::new(),
        };
        for r in &group {
            table.rows.push(vec![
                format!("{}{}", quantity(r), notes.marker(&why(r))),
                r.unit.clone(),
                r.study.map_or("-".into(), study_text),
                lines(&r.source),
            ]);
        }
        table_html(&mut h, &table);
        notes.write(&mut h, "Why not");
    }
    h
}

/// Consecutive rows of the same figure.
fn by_figure<'a>(rows: &[&'a Row]) -> Vec<Vec<&'a Row>> {
    let mut groups: Vec<Vec<&Row>> = Vec::new();
    for r in rows {
        match groups.last_mut() {
            Some(g) if g[0].figure == r.figure => g.push(r),
            _ => groups.push(vec![r]),
        }
    }
    groups
}

/// The distinct texts of a table's rows: one is said once under the
/// table; several are numbered and each row carries its number.
struct Footnotes {
    texts: Vec<String>,
    number: BTreeMap<String, usize>,
}

impl Footnotes {
    fn of<'a>(texts: impl Iterator<Item = &'a str>) -> Self {
        let mut notes = Footnotes {
            texts: Vec::new(),
            number: BTreeMap::new(),
        };
        for t in texts {
            if !t.is_empty() && !notes.number.contains_key(t) {
                notes.texts.push(t.to_string());
                notes.number.insert(t.to_string(), notes.texts.len());
            }
        }
        notes
    }

    fn marker(&self, text: &str) -> String {
        match self.number.get(text) {
            Some(k) if self.texts.len() > 1 => format!(" [{k}]"),
            _ => String::new(),
        }
    }

    fn write(&self, h: &mut String, title: &str) {
        match self.texts.as_slice() {
            [] => {}
            [one] => {
                let _ = write!(h, "<p class=\"note\">{title}: {}</p>", escape(one));
            }
            many => {
                // What every text says (whole sentences) is said once.
                let common = common_sentences(many);
                let _ = write!(
                    h,
                    "<p class=\"note\">{title}: {}</p><ol class=\"note\">",
                    escape(common.trim_end())
                );
                for t in many {
                    let _ = write!(h, "<li>{}</li>", escape(t[common.len()..].trim_start()));
                }
                h.push_str("</ol>");
            }
        }
    }
}

/// The longest run of whole sentences (ending `. `) that starts every text.
fn common_sentences(texts: &[String]) -> &str {
    let first = texts[0].as_str();
    let mut end = 0;
    for (i, _) in first.match_indices(". ") {
        let prefix = &first[..i + 2];
        if texts.iter().all(|t| t.starts_with(prefix)) {
            end = i + 2;
        } else {
            break;
        }
    }
    &first[..end]
}

/// `lines 1033-1039` from `000_….txt lines 1033-1039` (the section names
/// the file once).
fn lines(source: &str) -> String {
    source
        .find(" line")
        .map_or(source.to_string(), |i| source[i + 1..].to_string())
}

fn quantity(r: &Row) -> String {
    match &r.variant {
        Some(v) => format!("{} ({v})", r.quantity),
        None => r.quantity.clone(),
    }
}

fn study_text(s: StudyValue) -> String {
    let mut t = String::new();
    if s.approximate {
        t.push('≈');
    }
    t.push_str(&fmt_sig(s.value, 5));
    if let Some(spread) = s.spread {
        let _ = write!(t, " ± {}", fmt_sig(spread, 3));
    }
    t
}

/// `12.3 [11.9, 12.8] (n 6)`.
fn with_interval(value: f64, ci: Option<Interval>, n: Option<u64>) -> String {
    let mut t = fmt_sig(value, 4);
    if let Some(c) = ci {
        let _ = write!(t, " [{}, {}]", fmt_sig(c.lo, 3), fmt_sig(c.hi, 3));
    }
    if let Some(n) = n {
        let _ = write!(t, " (n {n})");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_sentences_are_said_once() {
        let texts = [
            "A b. C d. Ours: ref.".to_string(),
            "A b. C d. Ours: kernel.".to_string(),
        ];
        assert_eq!(common_sentences(&texts), "A b. C d. ");
        let texts = ["A b. X".to_string(), "A c. X".to_string()];
        assert_eq!(common_sentences(&texts), "");
        let notes = Footnotes::of(texts.iter().map(String::as_str));
        assert_eq!(notes.marker("A c. X"), " [2]");
        let mut h = String::new();
        Footnotes::of(["one <b>"].into_iter()).write(&mut h, "Why");
        assert_eq!(h, "<p class=\"note\">Why: one &lt;b&gt;</p>");
    }
}
