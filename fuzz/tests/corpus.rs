//! The seed corpus and the crash reproducers replayed through every target. Each seed is a
//! valid input (so AFL++ starts from inputs that reach past the first check) and stays
//! accepted as the parsers change; each input that once crashed a target
//! (`fuzz/regressions/<target>/`) must never crash it again.

use std::path::{Path, PathBuf};

use agentrl_fuzz::{Outcome, TARGETS, Target};

fn inputs(kind: &str, target: &Target) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(kind)
        .join(target.name);
    let mut inputs: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.map(|entry| entry.unwrap().path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    inputs.sort();
    inputs
}

#[test]
fn every_seed_is_accepted_by_its_target() {
    for target in &TARGETS {
        let seeds = inputs("corpus", target);
        assert!(!seeds.is_empty(), "{}: no seeds", target.name);
        for seed in seeds {
            let data = std::fs::read(&seed).unwrap();
            assert_eq!((target.run)(&data), Outcome::Accepted, "{}", seed.display());
        }
    }
}

#[test]
fn inputs_that_once_crashed_a_target_no_longer_do() {
    let mut replayed = 0;
    for target in &TARGETS {
        for input in inputs("regressions", target) {
            // A panic here fails the test with the input's target in its message.
            (target.run)(&std::fs::read(&input).unwrap());
            replayed += 1;
        }
    }
    assert!(replayed > 0, "no reproducers in fuzz/regressions/");
}

#[test]
fn every_input_directory_is_a_target() {
    for kind in ["corpus", "regressions"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(kind);
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(agentrl_fuzz::target(&name).is_some(), "{kind}/{name}");
        }
    }
}
