//! `stackscope compare A B`: two result directories side by side, every
//! shared figure with both values, the ratio B/A with its interval, and
//! whether the difference is beyond the noise — how a user checks that a
//! change to a stack made it faster.

mod identity;
mod load;
mod test;
mod text;
mod walk;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use report::compare_html::{self, Comparison};

use test::Correction;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first result directory (the baseline), or its summary.json.
    #[arg(value_name = "A")]
    a: PathBuf,
    /// The second (the changed run), or its summary.json.
    #[arg(value_name = "B")]
    b: PathBuf,
    /// Directory for compare.html (default: B's directory, beside B's
    /// report.html; made if missing).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// List every figure (tested, single numbers, one side only), not just
    /// the significant ones.
    #[arg(long)]
    all: bool,
    /// Print the comparison as JSON (the shape compare.html is drawn from)
    /// instead of text.
    #[arg(long)]
    json: bool,
    /// Correction of the p-values for testing many figures at once.
    #[arg(long, value_enum, default_value = "holm")]
    correction: Correction,
    /// Noise threshold in per cent: a difference is significant only if
    /// the 95 % interval of B/A also lies wholly outside 1 ± this (a busy
    /// machine moves figures by a few per cent between runs of the same
    /// code).
    #[arg(long, value_name = "PCT", default_value_t = 2.0, value_parser = percent)]
    threshold: f64,
}

fn percent(text: &str) -> Result<f64, String> {
    let x: f64 = text
        .trim_end_matches('%')
        .parse()
        .map_err(|e| format!("{e}"))?;
    if (0.0..100.0).contains(&x) {
        Ok(x)
    } else {
        Err("a percentage from 0 to below 100".to_string())
    }
}

pub fn run(args: &CompareArgs) -> Result<()> {
    let a = load::load(&args.a).context("A")?;
    let b = load::load(&args.b).context("B")?;
    let warnings = load::check_match(&a.side, &b.side)?;
    let paired = walk::pair(&a.summary, &b.summary, &a.spellings, &b.spellings);
    let rule = test::Rule {
        correction: args.correction,
        alpha: 1.0 - stats::CONFIDENCE,
        threshold: args.threshold / 100.0,
    };
    let (tested, untested) = test::test_all(&paired.pairs, &rule);
    let comparison = Comparison {
        a: a.side,
        b: b.side,
        alpha: rule.alpha,
        threshold: rule.threshold,
        correction: args.correction.describe().to_string(),
        warnings,
        tested,
        untested,
        only_a: paired.only_a,
        only_b: paired.only_b,
        intercept_marks: paired.intercept_marks,
    };
    let out = args.out.clone().unwrap_or_else(|| b.dir.clone());
    std::fs::create_dir_all(&out).with_context(|| format!("making {}", out.display()))?;
    let html = out.join("compare.html");
    std::fs::write(&html, compare_html::render(&comparison))
        .with_context(|| format!("writing {}", html.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&comparison)?);
        eprintln!("compare: {}", html.display());
    } else {
        print!("{}", text::render(&comparison, args.all));
        println!("compare: {}", html.display());
    }
    Ok(())
}
