//! Embeds every file under `console/src` (the console's single-page app) into the binary:
//! writes `assets.rs`, a table of `(path, include_bytes!)` sorted by path.

use std::{
    env, fs,
    path::{Path, PathBuf},
};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest
        .join("../../console/src")
        .canonicalize()
        .expect("the console's sources at console/src");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut found = Vec::new();
    files(&root, &mut found);
    found.sort();
    let mut table = String::from("&[\n");
    for path in found {
        let relative = path
            .strip_prefix(&root)
            .expect("under the root")
            .to_str()
            .expect("console file names are UTF-8")
            .replace('\\', "/");
        table.push_str(&format!(
            "    ({relative:?}, include_bytes!({:?})),\n",
            path.display().to_string()
        ));
    }
    table.push(']');
    let out = PathBuf::from(env::var("OUT_DIR").expect("set by cargo")).join("assets.rs");
    fs::write(out, table).expect("writing assets.rs");
}
