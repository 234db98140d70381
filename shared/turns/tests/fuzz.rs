//! Property-based fuzzing of the turn-table reader with Parquet files damaged the ways stored
//! objects get damaged: bytes flipped, spans overwritten, the file cut short or grown. Every
//! read answers rows or a described error, never panics. Bounded for CI (`PROPTEST_CASES`
//! raises it for a long run; docs/reliability.md).

#[path = "../src/test_rows.rs"]
#[allow(dead_code)] // the fuzzer uses one of the helpers
mod test_rows;

use std::sync::OnceLock;

use agentrl_turns::{RowToolCall, TurnRow, TurnWriter, WriterOptions, read_turns};
use bytes::Bytes;
use proptest::prelude::*;

/// A valid turn table of a few row groups: what the damage starts from.
fn table() -> &'static [u8] {
    static TABLE: OnceLock<Vec<u8>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let options = WriterOptions {
            rows_per_group: 16,
            ..WriterOptions::default()
        };
        let mut writer = TurnWriter::new(Vec::new(), &options).expect("writer");
        for row in test_rows::rows(40) {
            writer.write(&row).expect("row");
        }
        writer.finish().expect("finish")
    })
}

/// Reads every row; how many decoded before the first error, if any.
fn read_all(bytes: Vec<u8>) -> usize {
    match read_turns(Bytes::from(bytes)) {
        Ok(reader) => reader.take_while(Result::is_ok).count(),
        Err(_) => 0,
    }
}

#[derive(Debug, Clone)]
enum Damage {
    Flip { at: usize, mask: u8 },
    Overwrite { at: usize, with: Vec<u8> },
    Truncate { to: usize },
    Append { bytes: Vec<u8> },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), 1u8..).prop_map(|(at, mask)| Damage::Flip { at, mask }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, with)| Damage::Overwrite { at, with }),
        any::<usize>().prop_map(|to| Damage::Truncate { to }),
        prop::collection::vec(any::<u8>(), 1..64).prop_map(|bytes| Damage::Append { bytes }),
    ]
}

fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
    let len = bytes.len();
    match damage {
        Damage::Flip { at, mask } => bytes[at % len] ^= mask,
        Damage::Overwrite { at, with } => {
            let at = at % len;
            let end = (at + with.len()).min(len);
            bytes[at..end].copy_from_slice(&with[..end - at]);
        }
        Damage::Truncate { to } => bytes.truncate(to % len),
        Damage::Append { bytes: more } => bytes.extend_from_slice(more),
    }
}

#[test]
fn the_undamaged_table_reads_whole() {
    assert_eq!(read_all(table().to_vec()), 40);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: agentrl_testkit::proptest_cases(256), ..ProptestConfig::default() })]

    #[test]
    fn damaged_tables(damages in prop::collection::vec(damage(), 1..4)) {
        let mut bytes = table().to_vec();
        for d in &damages {
            if !bytes.is_empty() {
                apply(&mut bytes, d);
            }
        }
        prop_assert!(read_all(bytes) <= 40);
    }

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let mut with_magic = b"PAR1".to_vec();
        with_magic.extend_from_slice(&bytes);
        with_magic.extend_from_slice(b"PAR1");
        prop_assert_eq!(read_all(bytes), 0);
        prop_assert_eq!(read_all(with_magic), 0);
    }
}
