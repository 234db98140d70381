//! Gated model turns kept in a scratch file instead of memory: a dataset's token ids stay on
//! disk and a step loads only the turns it trains on, so the trainer's memory follows the
//! micro-batch, not the dataset.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;

use crate::data::TurnSeq;
use crate::error::{Result, TrainError};

/// Where one turn lies in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnRef {
    offset: u64,
    len: u32,
}

/// An append-only file of encoded turns (deleted when dropped).
#[derive(Debug)]
pub struct TurnStore {
    writer: BufWriter<File>,
    len: u64,
}

const HEADER: usize = 9;

impl TurnStore {
    /// An empty store in the temporary directory (`TMPDIR`).
    ///
    /// # Errors
    /// I/O.
    pub fn create() -> Result<Self> {
        Ok(Self {
            writer: BufWriter::with_capacity(1 << 20, tempfile::tempfile()?),
            len: 0,
        })
    }

    /// Appends `turn` and returns where it lies.
    ///
    /// # Errors
    /// I/O, a turn too large for one record.
    pub fn append(&mut self, turn: &TurnSeq) -> Result<TurnRef> {
        let n = turn.ids.len();
        let response = n - turn.start;
        let behaviour = turn.behaviour.as_ref().filter(|b| b.len() == response);
        let len = HEADER + 4 * n + response + behaviour.map_or(0, |b| 4 * b.len());
        let too_large = || TrainError::Data(format!("a turn of {n} tokens is too large"));
        let mut record = Vec::with_capacity(len);
        record.extend(u32::try_from(n).map_err(|_| too_large())?.to_le_bytes());
        record.extend(
            u32::try_from(turn.start)
                .map_err(|_| too_large())?
                .to_le_bytes(),
        );
        record.push(u8::from(behaviour.is_some()));
        record.extend(turn.ids.iter().flat_map(|t| t.to_le_bytes()));
        record.extend(turn.mask.iter().map(|&m| u8::from(m)));
        for lp in behaviour.into_iter().flatten() {
            record.extend(lp.to_le_bytes());
        }
        self.writer.write_all(&record)?;
        let at = TurnRef {
            offset: self.len,
            len: u32::try_from(len).map_err(|_| too_large())?,
        };
        self.len += len as u64;
        Ok(at)
    }

    /// Makes every appended turn readable.
    ///
    /// # Errors
    /// I/O.
    pub fn flush(&mut self) -> Result<()> {
        Ok(self.writer.flush()?)
    }

    /// Reads one turn back (after [`TurnStore::flush`]).
    ///
    /// # Errors
    /// I/O, a reference from another store.
    pub fn load(&self, at: TurnRef) -> Result<TurnSeq> {
        let mut record = vec![0u8; at.len as usize];
        self.writer
            .get_ref()
            .read_exact_at(&mut record, at.offset)?;
        decode(&record).ok_or_else(|| TrainError::Data("turn store: a corrupt record".into()))
    }
}

fn decode(record: &[u8]) -> Option<TurnSeq> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(record.get(at..at + 4)?.try_into().ok()?))
    };
    let n = word(0)? as usize;
    let start = word(4)? as usize;
    let response = n.checked_sub(start)?;
    let ids_end = HEADER + 4 * n;
    let ids = record
        .get(HEADER..ids_end)?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mask = record
        .get(ids_end..ids_end + response)?
        .iter()
        .map(|&m| m != 0)
        .collect();
    let behaviour = match record.get(8)? {
        0 => None,
        1 => {
            let bytes = record.get(ids_end + response..)?;
            if bytes.len() != 4 * response {
                return None;
            }
            Some(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            )
        }
        _ => return None,
    };
    Some(TurnSeq {
        ids,
        start,
        mask,
        behaviour,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_read_back_as_written() {
        let turns = [
            TurnSeq {
                ids: vec![1, 2, 3, 70_000],
                start: 1,
                mask: vec![true, false, true],
                behaviour: Some(vec![-0.5, -1.25, -3.0e-7]),
            },
            TurnSeq {
                ids: vec![9, 8],
                start: 1,
                mask: vec![true],
                behaviour: None,
            },
        ];
        let mut store = TurnStore::create().expect("store");
        let at: Vec<TurnRef> = turns
            .iter()
            .map(|t| store.append(t).expect("append"))
            .collect();
        store.flush().expect("flush");
        for (t, &a) in turns.iter().zip(&at).rev() {
            assert_eq!(&store.load(a).expect("load"), t);
        }
    }
}
