//! The local deployment's pseudonymisation secret: generated once per data directory and kept
//! beside the data it keys (on AWS it lives in Secrets Manager).

use std::{io::Write, path::Path, sync::Arc};

use agentrl_core::privacy::Pseudonymizer;
use anyhow::Context;
use rand::RngCore;

/// The secret's file in the data directory.
const FILE: &str = "pseudonym.key";

/// The pseudonymiser of the data directory `dir`, creating its secret on first use.
///
/// # Errors
/// When the file cannot be read or created.
pub fn local_pseudonyms(dir: &Path) -> anyhow::Result<Arc<Pseudonymizer>> {
    let path = dir.join(FILE);
    let secret = match std::fs::read_to_string(&path) {
        Ok(secret) => secret.trim().to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)?;
            let mut bytes = [0u8; 32];
            rand::rng().fill_bytes(&mut bytes);
            let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options
                .open(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            file.write_all(secret.as_bytes())?;
            file.sync_all()?;
            secret
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    Ok(Arc::new(
        Pseudonymizer::new(secret.as_bytes()).with_context(|| format!("{}", path.display()))?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_is_created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let first = local_pseudonyms(dir.path())
            .unwrap()
            .pseudonym("user", "u-1");
        let second = local_pseudonyms(dir.path())
            .unwrap()
            .pseudonym("user", "u-1");
        assert_eq!(first, second);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(
            local_pseudonyms(other.path())
                .unwrap()
                .pseudonym("user", "u-1"),
            first
        );
    }
}
