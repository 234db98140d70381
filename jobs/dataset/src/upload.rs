//! Files are written to local temporary files first (bounded memory whatever their size), then
//! streamed to the object store in parts, hashed on the way.

use std::io::Read;

use agentrl_store::ports::Objects;
use sha2::{Digest, Sha256};

/// Size of one streamed part.
const PART_BYTES: usize = 8 * 1024 * 1024;

/// What an uploaded file was.
pub(crate) struct Uploaded {
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Streams `file` (from its start) to `path`.
pub(crate) async fn upload(
    objects: &dyn Objects,
    path: &str,
    file: &mut std::fs::File,
) -> anyhow::Result<Uploaded> {
    use std::io::Seek;
    file.rewind()?;
    let mut writer = objects.writer(path).await?;
    let mut hash = Sha256::new();
    let mut total = 0u64;
    let mut buffer = vec![0u8; PART_BYTES];
    loop {
        let mut filled = 0;
        while filled < buffer.len() {
            let n = file.read(&mut buffer[filled..])?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        if filled == 0 {
            break;
        }
        hash.update(&buffer[..filled]);
        total += filled as u64;
        writer
            .write(bytes::Bytes::copy_from_slice(&buffer[..filled]))
            .await?;
    }
    writer.finish().await?;
    Ok(Uploaded {
        path: path.to_owned(),
        bytes: total,
        sha256: hex::encode(hash.finalize()),
    })
}
