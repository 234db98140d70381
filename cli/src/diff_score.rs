//! `agentrl diff-score`: score a change from files on disk, or every file pair of a directory.

use std::{
    collections::BTreeMap,
    io::Write,
    path::{Path, PathBuf},
    time::Instant,
};

use agentrl_diff::{Lang, Limits, Request, Scorer, Snapshot, detect::Flag};
use anyhow::{Context, bail};
use serde::Serialize;

/// Arguments of `agentrl diff-score`.
#[derive(clap::Args)]
pub struct DiffScoreArgs {
    /// The snapshot before the change: a file or a directory.
    #[arg(long, requires = "after", required_unless_present = "pairs")]
    before: Option<PathBuf>,
    /// The snapshot after the change: a file or a directory.
    #[arg(long, requires = "before")]
    after: Option<PathBuf>,
    /// Parse every file as this language (typescript, tsx, javascript, python, rust, go, java).
    #[arg(long)]
    lang: Option<String>,
    /// The solution passed its tests (without it the reward multiplier is the floor).
    #[arg(long)]
    tests_passed: bool,
    /// A directory whose subdirectories each hold one `before.<ext>` and one `after.<ext>`:
    /// prints one JSON line per pair.
    #[arg(long, conflicts_with_all = ["before", "after", "tests_passed"])]
    pairs: Option<PathBuf>,
    /// With --pairs: add the normalised trees in bracket notation.
    #[arg(long, requires = "pairs")]
    emit_trees: bool,
}

/// Runs the command, printing JSON on stdout.
///
/// # Errors
/// Unreadable or non-UTF-8 files, an unknown language, more files than allowed.
pub fn run(args: &DiffScoreArgs) -> anyhow::Result<()> {
    let lang = args
        .lang
        .as_deref()
        .map(|name| Lang::from_name(name).with_context(|| format!("unknown language {name:?}")))
        .transpose()?;
    let scorer = Scorer::new(Limits::default());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match (&args.pairs, &args.before, &args.after) {
        (Some(dir), _, _) => {
            for pair in pairs(dir)? {
                let line = score_pair(&scorer, &pair, lang, args.emit_trees)?;
                serde_json::to_writer(&mut out, &line)?;
                writeln!(out)?;
            }
        }
        (None, Some(before), Some(after)) => {
            let (before, after) = snapshots(before, after)?;
            let request = Request {
                lang,
                tests_passed: args.tests_passed,
                ..Request::default()
            };
            let report = scorer.score(&before, &after, &request)?;
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        }
        _ => bail!("give --before and --after, or --pairs"),
    }
    Ok(())
}

/// Both snapshots; two single files are compared under the after file's name.
fn snapshots(before: &Path, after: &Path) -> anyhow::Result<(Snapshot, Snapshot)> {
    if before.is_file() && after.is_file() {
        let name = file_name(after)?;
        return Ok((
            BTreeMap::from([(name.clone(), read(before)?)]),
            BTreeMap::from([(name, read(after)?)]),
        ));
    }
    Ok((directory(before)?, directory(after)?))
}

fn file_name(path: &Path) -> anyhow::Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .with_context(|| format!("{} has no UTF-8 file name", path.display()))
}

fn read(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8", path.display()))
}

/// Every regular file under `root` (symlinks and `.git` skipped), by `/`-separated relative path.
fn directory(root: &Path) -> anyhow::Result<Snapshot> {
    let mut files = Snapshot::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))?
        {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() && entry.file_name() != ".git" {
                pending.push(entry.path());
            } else if kind.is_file() {
                let path = entry.path();
                let relative = path.strip_prefix(root)?;
                let key = relative
                    .components()
                    .map(|c| c.as_os_str().to_str())
                    .collect::<Option<Vec<_>>>()
                    .with_context(|| format!("{} has a non-UTF-8 name", path.display()))?
                    .join("/");
                files.insert(key, read(&path)?);
            }
        }
    }
    Ok(files)
}

/// One file pair of `--pairs`.
struct Pair {
    name: String,
    ext: String,
    before: PathBuf,
    after: PathBuf,
}

/// The subdirectories of `dir` holding exactly one `before.*` and one `after.*`, by name.
fn pairs(dir: &Path) -> anyhow::Result<Vec<Pair>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        let name = file_name(&entry.path())?;
        // Hidden directories hold caches (the benchmark's downloads), never pairs.
        if !entry.file_type()?.is_dir() || name.starts_with('.') {
            continue;
        }
        let mut sides: [Vec<PathBuf>; 2] = [Vec::new(), Vec::new()];
        for file in std::fs::read_dir(entry.path())? {
            let path = file?.path();
            let Some(file) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if file.starts_with("before.") {
                sides[0].push(path);
            } else if file.starts_with("after.") {
                sides[1].push(path);
            }
        }
        let [before, after] = sides;
        match (before.as_slice(), after.as_slice()) {
            ([before], [after]) => {
                let ext = after
                    .extension()
                    .and_then(|e| e.to_str())
                    .unwrap_or_default()
                    .to_owned();
                found.push(Pair {
                    name,
                    ext,
                    before: before.clone(),
                    after: after.clone(),
                });
            }
            _ => {
                eprintln!("skipping {name}: it needs exactly one before.<ext> and one after.<ext>")
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}

/// One output line of `--pairs`.
#[derive(Serialize)]
struct PairLine {
    pair: String,
    language: Option<Lang>,
    tree_edit_distance: Option<u64>,
    nodes_before: Option<u64>,
    nodes_after: Option<u64>,
    ast_similarity: Option<f64>,
    exact: Option<bool>,
    errors_before: Option<u32>,
    errors_after: Option<u32>,
    flags: Vec<Flag>,
    elapsed_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tree_before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tree_after: Option<String>,
}

fn score_pair(
    scorer: &Scorer,
    pair: &Pair,
    lang: Option<Lang>,
    emit_trees: bool,
) -> anyhow::Result<PairLine> {
    let (before, after) = (read(&pair.before)?, read(&pair.after)?);
    let path = format!("{}.{}", pair.name, pair.ext);
    let lang = lang.or_else(|| Lang::from_path(&path));
    let started = Instant::now();
    let report = scorer.score(
        &BTreeMap::from([(path.clone(), before.clone())]),
        &BTreeMap::from([(path, after.clone())]),
        &Request {
            lang,
            ..Request::default()
        },
    )?;
    let file = &report.files[0];
    // An identical pair is "unchanged" to the scorer, which skips it: it is distance 0 with
    // both trees the same.
    let identical = lang
        .filter(|_| before == after)
        .and_then(|l| scorer.tree(l, &before));
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    let ast = file.ast.clone();
    let mut line = PairLine {
        pair: pair.name.clone(),
        language: lang,
        tree_edit_distance: ast.as_ref().map(|a| a.tree_edit_distance),
        nodes_before: ast.as_ref().map(|a| a.nodes_before),
        nodes_after: ast.as_ref().map(|a| a.nodes_after),
        ast_similarity: ast.as_ref().map(|a| a.ast_similarity),
        exact: ast.as_ref().map(|a| a.exact),
        errors_before: ast.as_ref().map(|a| a.errors_before),
        errors_after: ast.as_ref().map(|a| a.errors_after),
        flags: report.flags,
        elapsed_ms,
        note: file.note.clone(),
        tree_before: None,
        tree_after: None,
    };
    if let Some(same) = &identical {
        let nodes = same.tree.len() as u64;
        let errors = same.tree.errors();
        line.tree_edit_distance = Some(0);
        (line.nodes_before, line.nodes_after) = (Some(nodes), Some(nodes));
        (line.ast_similarity, line.exact) = (Some(1.0), Some(true));
        (line.errors_before, line.errors_after) = (Some(errors), Some(errors));
    }
    if let Some(lang) = lang.filter(|_| emit_trees && line.tree_edit_distance.is_some()) {
        line.tree_before = scorer.tree(lang, &before).map(|f| f.tree.to_bracket());
        line.tree_after = scorer.tree(lang, &after).map(|f| f.tree.to_bracket());
    }
    Ok(line)
}
