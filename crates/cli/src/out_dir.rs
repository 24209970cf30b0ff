//! `--out DIR`: made before anything is measured, and never written into
//! when it already holds files unless the user says so (`--force`): a
//! second run into the same directory would leave the first run's files
//! beside its own, and a reader could not tell them apart.

use std::path::Path;

use anyhow::{bail, Context, Result};

/// Makes `dir` (and its parents), refusing one that holds files unless
/// `force`.
pub fn prepare(dir: &Path, force: bool) -> Result<()> {
    if !force {
        if let Ok(mut entries) = std::fs::read_dir(dir) {
            if entries.next().is_some() {
                bail!(
                    "--out {}: the directory already holds files; choose a new one, or add \
                     --force to write over the files of the same names (others stay)",
                    dir.display()
                );
            }
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create --out {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_with_files_needs_force() {
        let dir = std::env::temp_dir().join(format!("ss-out-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        prepare(&dir.join("new"), false).unwrap();
        // Empty: fine.
        prepare(&dir.join("new"), false).unwrap();
        std::fs::write(dir.join("new/summary.json"), "{}").unwrap();
        let refusal = prepare(&dir.join("new"), false).unwrap_err().to_string();
        assert!(refusal.contains("--force"), "{refusal}");
        prepare(&dir.join("new"), true).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
