//! Reads a result directory's summary.json and checks that it is one
//! (`stackscope lab` or `stackscope run` wrote it) before anything is
//! compared.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use report::compare_html::Side;
use serde_json::Value;

/// One side of the comparison.
pub struct Loaded {
    /// The directory holding summary.json.
    pub dir: PathBuf,
    pub summary: Value,
    pub side: Side,
    /// How the lab may have spelled the directory inside summary.json
    /// (as given and canonical), to read recorded paths relative to it.
    pub spellings: Vec<String>,
}

/// Loads `path`: a result directory, or its summary.json itself.
pub fn load(path: &Path) -> Result<Loaded> {
    let (dir, file) = if path.is_dir() {
        (path.to_path_buf(), path.join("summary.json"))
    } else if path.is_file() {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        (dir, path.to_path_buf())
    } else {
        bail!(
            "{}: no such result directory (give the directory `stackscope lab` or `stackscope run` wrote)",
            path.display()
        );
    };
    let text = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "reading {} (is {} a result directory of `stackscope lab` or `run`?)",
            file.display(),
            dir.display()
        )
    })?;
    let summary: Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", file.display()))?;
    let side = side(&summary, &dir)
        .with_context(|| format!("{}: not a stackscope lab or run summary", file.display()))?;
    let mut spellings = vec![dir.display().to_string()];
    if let Ok(canonical) = dir.canonicalize() {
        spellings.push(canonical.display().to_string());
    }
    Ok(Loaded {
        dir,
        summary,
        side,
        spellings,
    })
}

/// The header of a summary: what ran, when and how.
fn side(summary: &Value, dir: &Path) -> Result<Side> {
    let Some(map) = summary.as_object() else {
        bail!("the top level is not an object");
    };
    let Some(experiments) = map.get("experiments").and_then(Value::as_array) else {
        bail!("it has no \"experiments\" list");
    };
    let mut names = Vec::with_capacity(experiments.len());
    for (i, e) in experiments.iter().enumerate() {
        match e.get("name").and_then(Value::as_str) {
            Some(name) => names.push(name.to_string()),
            None => bail!("experiment {i} has no name"),
        }
    }
    let text = |key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    Ok(Side {
        dir: dir.display().to_string(),
        title: text("title"),
        command: text("command"),
        date: map
            .get("generated_unix")
            .and_then(Value::as_u64)
            .map(crate::experiment::timestamp),
        quick: map.get("quick").and_then(Value::as_bool),
        experiments: names,
    })
}

/// Refuses two runs with no recipe in common (nothing to compare) and
/// lists the set-up differences the reader should know about.
pub fn check_match(a: &Side, b: &Side) -> Result<Vec<String>> {
    let shared: Vec<&String> = a
        .experiments
        .iter()
        .filter(|e| b.experiments.contains(e))
        .collect();
    if shared.is_empty() {
        bail!(
            "the runs share no recipe: A ran [{}], B ran [{}]",
            a.experiments.join(", "),
            b.experiments.join(", ")
        );
    }
    let mut warnings = Vec::new();
    if let (Some(qa), Some(qb)) = (a.quick, b.quick) {
        if qa != qb {
            let mode = |q: bool| if q { "quick" } else { "full" };
            warnings.push(format!(
                "A is a {} run, B a {} one: their sweeps differ, so many figures exist on one side only and the rest were measured with different repetitions",
                mode(qa),
                mode(qb)
            ));
        }
    }
    for (name, side, other) in [("A", a, b), ("B", b, a)] {
        let own: Vec<&str> = side
            .experiments
            .iter()
            .filter(|e| !other.experiments.contains(e))
            .map(String::as_str)
            .collect();
        if !own.is_empty() {
            warnings.push(format!("only {name} ran {}", own.join(", ")));
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_without_experiments_are_refused() {
        let dir = Path::new("/x");
        assert!(side(&json!([1, 2]), dir).is_err());
        assert!(side(&json!({"title": "t"}), dir).is_err());
        assert!(side(&json!({"experiments": [{"title": "no name"}]}), dir).is_err());
        let s = side(
            &json!({"title": "t", "generated_unix": 0, "quick": true, "experiments": [{"name": "e"}]}),
            dir,
        )
        .unwrap();
        assert_eq!(s.date.as_deref(), Some("19700101-000000"));
        assert_eq!(
            (s.quick, s.experiments),
            (Some(true), vec!["e".to_string()])
        );
        assert_eq!(s.command, "?");
    }

    #[test]
    fn runs_without_a_shared_recipe_are_refused_and_partial_ones_warned() {
        let side = |names: &[&str], quick: bool| Side {
            dir: "d".into(),
            title: "t".into(),
            command: "c".into(),
            date: None,
            quick: Some(quick),
            experiments: names.iter().map(|s| s.to_string()).collect(),
        };
        let err = check_match(&side(&["x"], true), &side(&["y"], true)).unwrap_err();
        assert!(err.to_string().contains("share no recipe"), "{err}");
        let w = check_match(&side(&["x", "y"], true), &side(&["x"], false)).unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("quick") && w[1] == "only A ran y");
        assert!(check_match(&side(&["x"], true), &side(&["x"], true))
            .unwrap()
            .is_empty());
    }
}
