//! Experiment recipes: TOML files under `experiments/` that name a study,
//! its runs, each run's link profile and sweep (DESIGN.md, "Traffic tools
//! and experiments"). Every key is checked: an unknown key, a bad value or
//! an impossible sweep is an error naming the file, line and key.

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use traffic::spec::{Family, Protocol};

/// A recipe as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecipe {
    name: Spanned<String>,
    title: String,
    /// The study it reproduces (a file of `../shared/seeds/`).
    source: String,
    #[serde(default)]
    description: String,
    #[serde(rename = "run")]
    runs: Vec<RawRun>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    id: Spanned<String>,
    /// `messages`: traced single messages (start/stop latency per size).
    kind: Spanned<String>,
    protocol: Spanned<String>,
    #[serde(default = "default_family")]
    family: Spanned<String>,
    /// A link profile (`fast-ethernet`, `unlimited`, `default`).
    link: Spanned<String>,
    sizes: Spanned<String>,
    quick_sizes: Option<Spanned<String>>,
    #[serde(default = "one")]
    reps: Spanned<u32>,
    quick_reps: Option<Spanned<u32>>,
    #[serde(default = "zero")]
    warmup: Spanned<u32>,
    sockbuf: Option<Spanned<String>>,
}

fn default_family() -> Spanned<String> {
    Spanned::new(0..0, "ipv6".to_string())
}

fn one() -> Spanned<u32> {
    Spanned::new(0..0, 1)
}

fn zero() -> Spanned<u32> {
    Spanned::new(0..0, 0)
}

/// A checked recipe.
#[derive(Debug, Clone)]
pub struct Recipe {
    pub name: String,
    pub title: String,
    pub source: String,
    pub description: String,
    pub runs: Vec<Run>,
}

/// What one run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Traced single messages over a sweep of sizes.
    Messages,
}

/// A link profile: the topology the run uses (embedded, so the lab needs
/// no files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Two hosts on a 100 Mbit/s wire, MTU 1500.
    FastEthernet,
    /// Two hosts on a wire with no rate limit, MTU 1500.
    Unlimited,
    /// host-a — router — host-b on 1 Gbit/s wires.
    Default,
}

impl Link {
    pub const NAMES: &'static str = "fast-ethernet, unlimited, default";

    fn parse(name: &str) -> Option<Link> {
        match name {
            "fast-ethernet" => Some(Link::FastEthernet),
            "unlimited" => Some(Link::Unlimited),
            "default" => Some(Link::Default),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Link::FastEthernet => "fast-ethernet",
            Link::Unlimited => "unlimited",
            Link::Default => "default",
        }
    }

    /// The topology file's text.
    pub fn topology_toml(self) -> &'static str {
        match self {
            Link::FastEthernet => include_str!("../../../../topologies/fast-ethernet.toml"),
            Link::Unlimited => include_str!("../../../../topologies/unlimited.toml"),
            Link::Default => include_str!("../../../../topologies/default.toml"),
        }
    }
}

/// One run of a recipe.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    pub kind: RunKind,
    pub protocol: Protocol,
    pub family: Family,
    pub link: Link,
    pub sizes: Vec<usize>,
    pub quick_sizes: Vec<usize>,
    pub reps: u32,
    pub quick_reps: u32,
    pub warmup: u32,
    pub sockbuf: Option<usize>,
}

/// A recipe that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct RecipeError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Largest size a run may ask for (a UDP datagram over IPv6).
const MAX_SIZE: u64 = traffic::reference::messages::MAX_MESSAGE as u64;
/// Most messages one run may send (sizes × repetitions).
const MAX_MESSAGES: u64 = 100_000;

/// Reads and checks the recipe at `path`.
pub fn load(path: &Path) -> Result<Recipe, RecipeError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| RecipeError {
        file: file.clone(),
        line: 0,
        column: 0,
        message: format!("cannot read: {e}"),
    })?;
    parse(&file, &text)
}

/// Checks recipe `text`; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Recipe, RecipeError> {
    let at = |span: Range<usize>, message: String| {
        let (line, column) = line_column(text, span.start);
        RecipeError {
            file: file.to_string(),
            line,
            column,
            message,
        }
    };
    let raw: RawRecipe = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        at(span, e.message().to_string())
    })?;
    if raw.runs.is_empty() {
        return Err(at(0..0, "the recipe has no [[run]]".into()));
    }
    let name = raw.name.get_ref().clone();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(at(
            raw.name.span(),
            format!("name `{name}`: use letters, digits, `-` and `_` (it names files)"),
        ));
    }
    let mut runs = Vec::with_capacity(raw.runs.len());
    for run in &raw.runs {
        let id = run.id.get_ref().clone();
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(at(
                run.id.span(),
                format!("id `{id}`: use letters, digits, `-` and `_` (it names files)"),
            ));
        }
        if runs.iter().any(|r: &Run| r.id == id) {
            return Err(at(run.id.span(), format!("id `{id}` is used twice")));
        }
        let kind = match run.kind.get_ref().as_str() {
            "messages" => RunKind::Messages,
            other => {
                return Err(at(
                    run.kind.span(),
                    format!("kind `{other}` is not one of: messages"),
                ))
            }
        };
        let protocol = match run.protocol.get_ref().as_str() {
            "tcp" => Protocol::Tcp,
            "udp" => Protocol::Udp,
            other => {
                return Err(at(
                    run.protocol.span(),
                    format!("protocol `{other}` is not one of: tcp, udp"),
                ))
            }
        };
        let family = match run.family.get_ref().as_str() {
            "ipv6" => Family::V6,
            "ipv4" => Family::V4,
            other => {
                return Err(at(
                    run.family.span(),
                    format!("family `{other}` is not one of: ipv6, ipv4"),
                ))
            }
        };
        let link = Link::parse(run.link.get_ref()).ok_or_else(|| {
            at(
                run.link.span(),
                format!(
                    "link `{}` is not one of: {}",
                    run.link.get_ref(),
                    Link::NAMES
                ),
            )
        })?;
        let sizes_of = |key: &str, value: &Spanned<String>| {
            sizes(key, value.get_ref()).map_err(|e| at(value.span(), e))
        };
        let sizes = sizes_of("sizes", &run.sizes)?;
        let quick_sizes = match &run.quick_sizes {
            Some(q) => sizes_of("quick_sizes", q)?,
            None => sizes.clone(),
        };
        let reps_of = |key: &str, value: &Spanned<u32>| {
            let reps = *value.get_ref();
            if reps == 0 {
                return Err(at(
                    value.span(),
                    format!("{key} = 0: run each size at least once"),
                ));
            }
            Ok(reps)
        };
        let reps = reps_of("reps", &run.reps)?;
        let quick_reps = match &run.quick_reps {
            Some(q) => reps_of("quick_reps", q)?,
            None => 1,
        };
        let total = sizes.len() as u64 * u64::from(reps);
        if total > MAX_MESSAGES {
            return Err(at(
                run.sizes.span(),
                format!("sizes × reps = {total} messages: a run sends at most {MAX_MESSAGES}"),
            ));
        }
        let sockbuf = match &run.sockbuf {
            Some(s) => Some(
                traffic::units::parse_size(s.get_ref())
                    .ok()
                    .filter(|&b| (1..=(64 << 20)).contains(&b))
                    .ok_or_else(|| {
                        at(
                            s.span(),
                            format!("sockbuf `{}`: give 1..64M bytes, e.g. 64K", s.get_ref()),
                        )
                    })? as usize,
            ),
            None => None,
        };
        let max = if protocol == Protocol::Udp && family == Family::V4 {
            65_507
        } else {
            MAX_SIZE as usize
        };
        for (key, list, span) in [
            ("sizes", &sizes, run.sizes.span()),
            (
                "quick_sizes",
                &quick_sizes,
                run.quick_sizes
                    .as_ref()
                    .map_or(run.sizes.span(), |q| q.span()),
            ),
        ] {
            if let Some(bad) = list.iter().find(|&&s| s > max) {
                return Err(at(
                    span,
                    format!("{key}: {bad} bytes is more than {max}, the largest {protocol:?} message over {family}"),
                ));
            }
        }
        runs.push(Run {
            id,
            kind,
            protocol,
            family,
            link,
            sizes,
            quick_sizes,
            reps,
            quick_reps,
            warmup: *run.warmup.get_ref(),
            sockbuf,
        });
    }
    Ok(Recipe {
        name,
        title: raw.title,
        source: raw.source,
        description: raw.description,
        runs,
    })
}

/// A size list (`100..20000:100`, `16,64,1K`); sizes are at least 1 byte.
fn sizes(key: &str, text: &str) -> Result<Vec<usize>, String> {
    let values = traffic::sweep::axis::numbers(key, text, traffic::units::parse_size)?;
    if let Some(zero) = values.iter().position(|&v| v == 0) {
        return Err(format!(
            "{key}: value {} is 0 bytes; sizes start at 1",
            zero + 1
        ));
    }
    if let Some(&big) = values.iter().find(|&&v| v > MAX_SIZE) {
        return Err(format!(
            "{key}: {big} bytes is more than the largest message, {MAX_SIZE}"
        ));
    }
    Ok(values.into_iter().map(|v| v as usize).collect())
}

/// 1-based line and column of byte `offset`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |n| before.len() - n - 1)
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
title = "T"
source = "000_x.txt"

[[run]]
id = "tcp"
kind = "messages"
protocol = "tcp"
link = "fast-ethernet"
sizes = "100..1000:100"
reps = 2
"#;

    fn error(text: &str) -> RecipeError {
        parse("exp.toml", text).unwrap_err()
    }

    #[test]
    fn a_good_recipe_expands_its_sweep() {
        let r = parse("exp.toml", GOOD).unwrap();
        let run = &r.runs[0];
        assert_eq!(run.sizes, (1..=10).map(|i| i * 100).collect::<Vec<_>>());
        assert_eq!(run.quick_sizes, run.sizes);
        assert_eq!((run.reps, run.quick_reps, run.warmup), (2, 1, 0));
        assert_eq!(run.family, Family::V6);
        assert_eq!(run.link, Link::FastEthernet);
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let e = error(&GOOD.replace("reps = 2", "reps = 2\nrepz = 3"));
        assert_eq!((e.file.as_str(), e.line), ("exp.toml", 13));
        assert!(e.message.contains("repz"), "{e}");
        assert!(e.to_string().starts_with("exp.toml:13:"), "{e}");
    }

    #[test]
    fn an_impossible_sweep_is_refused_at_its_key() {
        let e = error(&GOOD.replace("100..1000:100", "1000..100:100"));
        assert_eq!(e.line, 11);
        assert!(e.message.contains("backwards"), "{e}");
        let e = error(&GOOD.replace("100..1000:100", "0..1000:100"));
        assert!(e.message.contains("0 bytes"), "{e}");
        let e = error(&GOOD.replace("100..1000:100", "1..100000"));
        assert!(e.message.contains("largest"), "{e}");
        let e = error(&GOOD.replace("reps = 2", "reps = 0"));
        assert_eq!(e.line, 12);
        let e = error(
            &GOOD
                .replace("100..1000:100", "1..60000")
                .replace("reps = 2", "reps = 2000"),
        );
        assert!(e.message.contains("at most"), "{e}");
    }

    #[test]
    fn bad_names_and_values_say_what_is_allowed() {
        let e = error(&GOOD.replace("\"fast-ethernet\"", "\"token-ring\""));
        assert!(e.message.contains("fast-ethernet, unlimited"), "{e}");
        assert_eq!(e.line, 10);
        let e = error(&GOOD.replace("\"tcp\"\nlink", "\"xtp\"\nlink"));
        assert!(e.message.contains("tcp, udp"), "{e}");
        let e = error(&GOOD.replace("name = \"t\"", "name = \"../x\""));
        assert!(e.message.contains("names files"), "{e}");
        let e = error(&format!("{GOOD}\n[[run]]\nid = \"tcp\"\nkind = \"messages\"\nprotocol = \"udp\"\nlink = \"unlimited\"\nsizes = \"100\"\n"));
        assert!(e.message.contains("used twice"), "{e}");
    }

    #[test]
    fn udp_over_ipv4_stops_at_its_largest_datagram() {
        let e = error(
            &GOOD
                .replace("\"tcp\"\nlink", "\"udp\"\nfamily = \"ipv4\"\nlink")
                .replace("100..1000:100", "65520"),
        );
        assert!(e.message.contains("65507"), "{e}");
    }

    #[test]
    fn the_lab_recipes_parse() {
        for (file, text) in super::super::LAB_RECIPES {
            parse(file, text).unwrap();
        }
    }

    proptest::proptest! {
        #[test]
        fn no_text_makes_the_parser_panic(text in "\\PC{0,400}") {
            let _ = parse("fuzz.toml", &text);
        }

        #[test]
        fn no_line_of_a_good_recipe_breaks_it_into_a_panic(cut in 0usize..GOOD.len(), junk in "[ -~]{0,12}") {
            let mut text = GOOD.to_string();
            if text.is_char_boundary(cut) {
                text.insert_str(cut, &junk);
            }
            let _ = parse("fuzz.toml", &text);
        }
    }
}
