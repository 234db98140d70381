//! Directories of file pairs (`infra/bench/fetch-diff-pairs.py`, `make-edit-pairs.py`): one
//! subdirectory per pair holding `before.<ext>` and `after.<ext>`.

use std::path::{Path, PathBuf};

use agentrl_diff::Lang;

/// One pair: its directory name, language and both sources.
pub struct Pair {
    pub name: String,
    pub lang: Lang,
    pub before: String,
    pub after: String,
}

/// The pairs under `dir`, sorted by name; subdirectories without both sides in a known
/// language are skipped.
pub fn read_pairs(dir: &Path) -> Vec<Pair> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    entries
        .into_iter()
        .filter_map(|entry| {
            let files: Vec<PathBuf> = std::fs::read_dir(entry.path())
                .ok()?
                .flatten()
                .map(|f| f.path())
                .collect();
            let find = |prefix: &str| {
                files
                    .iter()
                    .find(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with(prefix))
                    })
                    .cloned()
            };
            let (before, after) = (find("before.")?, find("after.")?);
            Some(Pair {
                name: entry.file_name().to_string_lossy().into_owned(),
                lang: Lang::from_path(&after.to_string_lossy())?,
                before: std::fs::read_to_string(before).ok()?,
                after: std::fs::read_to_string(after).ok()?,
            })
        })
        .collect()
}

/// The directories given on the command line (flags and their values skipped).
pub fn dirs_from_args() -> Vec<PathBuf> {
    std::env::args()
        .skip(1)
        .map(PathBuf::from)
        .filter(|a| a.is_dir())
        .collect()
}
