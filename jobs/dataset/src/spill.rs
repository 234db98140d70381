//! The prompt and completion of every episode in a preference pair, kept on disk until both
//! sides of each pair are known: the pairs are written after the pass over the table, and
//! holding their text in memory made the job's memory grow with the table.

use std::{
    collections::HashMap,
    fs::File,
    io::{BufWriter, Read, Seek, SeekFrom, Write},
    path::Path,
};

use serde_json::Value;

/// Appends episodes' (prompt, completion) to a file, remembering where each one is.
pub(crate) struct Spill {
    file: BufWriter<File>,
    at: HashMap<String, (u64, usize)>,
    end: u64,
}

impl Spill {
    /// A spill file at `path`.
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        Ok(Self {
            file: BufWriter::new(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .open(path)?,
            ),
            at: HashMap::new(),
            end: 0,
        })
    }

    /// Keeps `trajectory`'s prompt and completion.
    pub fn put(
        &mut self,
        trajectory: &str,
        prompt: &Value,
        completion: &str,
    ) -> anyhow::Result<()> {
        let bytes = serde_json::to_vec(&(prompt, completion))?;
        self.file.write_all(&bytes)?;
        self.at
            .insert(trajectory.to_owned(), (self.end, bytes.len()));
        self.end += bytes.len() as u64;
        Ok(())
    }

    /// Done writing: the kept episodes, readable by trajectory id.
    pub fn finish(self) -> anyhow::Result<SpillReader> {
        let file = self.file.into_inner().map_err(|e| e.into_error())?;
        Ok(SpillReader { file, at: self.at })
    }
}

/// Reads back what a [`Spill`] kept.
pub(crate) struct SpillReader {
    file: File,
    at: HashMap<String, (u64, usize)>,
}

impl SpillReader {
    /// `trajectory`'s prompt and completion, if it was kept.
    pub fn get(&mut self, trajectory: &str) -> anyhow::Result<Option<(Value, String)>> {
        let Some(&(offset, len)) = self.at.get(trajectory) else {
            return Ok(None);
        };
        self.file.seek(SeekFrom::Start(offset))?;
        let mut bytes = vec![0; len];
        self.file.read_exact(&mut bytes)?;
        Ok(Some(serde_json::from_slice(&bytes)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kept_episodes_read_back_in_any_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = Spill::create(&dir.path().join("spill")).unwrap();
        spill
            .put("a", &json!([{"role": "user", "content": "1+1"}]), "2")
            .unwrap();
        spill.put("b", &json!([]), "ünïcode").unwrap();
        let mut read = spill.finish().unwrap();
        assert_eq!(
            read.get("b").unwrap(),
            Some((json!([]), "ünïcode".to_owned()))
        );
        assert_eq!(
            read.get("a").unwrap(),
            Some((json!([{"role": "user", "content": "1+1"}]), "2".to_owned()))
        );
        assert_eq!(read.get("c").unwrap(), None);
    }
}
