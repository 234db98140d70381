//! Near-duplicate removal by MinHash over word 5-shingles, with LSH banding so the work stays
//! close to linear in the number of episodes.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

const PERMUTATIONS: usize = 64;
const BANDS: usize = 16;
const ROWS: usize = PERMUTATIONS / BANDS;
const SHINGLE: usize = 5;

/// A MinHash signature; `None` for a text without words (never a duplicate of anything).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinHash(Option<Box<[u32; PERMUTATIONS]>>);

/// Odd multipliers and offsets of the hash family, fixed so signatures are comparable across
/// builds (SplitMix64 of the index).
fn family(i: usize) -> (u64, u64) {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let seed = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mix(seed) | 1, mix(seed ^ 0xdead_beef))
}

impl MinHash {
    /// The signature of `text` (lowercased words; shingles of 5 words, or all words when fewer).
    pub fn of(text: &str) -> Self {
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        if words.is_empty() {
            return Self(None);
        }
        let width = SHINGLE.min(words.len());
        let params: Vec<(u64, u64)> = (0..PERMUTATIONS).map(family).collect();
        let mut mins = Box::new([u32::MAX; PERMUTATIONS]);
        for shingle in words.windows(width) {
            // DefaultHasher::new() has fixed keys: the same text hashes the same in every process.
            let mut h = DefaultHasher::new();
            shingle.hash(&mut h);
            let base = h.finish();
            for (slot, (a, b)) in mins.iter_mut().zip(&params) {
                let v = (base.wrapping_mul(*a).wrapping_add(*b) >> 32) as u32;
                *slot = (*slot).min(v);
            }
        }
        Self(Some(mins))
    }

    /// The estimated Jaccard similarity of the two shingle sets.
    pub fn similarity(&self, other: &MinHash) -> f64 {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => {
                a.iter().zip(b.iter()).filter(|(x, y)| x == y).count() as f64 / PERMUTATIONS as f64
            }
            _ => 0.0,
        }
    }
}

/// For each signature, whether an earlier one is at least `threshold` similar to it (the first
/// of a cluster is kept, the rest are duplicates).
pub fn near_duplicates(signatures: &[&MinHash], threshold: f64) -> Vec<bool> {
    let mut buckets: HashMap<(usize, [u32; ROWS]), Vec<usize>> = HashMap::new();
    let mut duplicate = vec![false; signatures.len()];
    for (i, sig) in signatures.iter().enumerate() {
        let Some(mins) = &sig.0 else { continue };
        let mut candidates: Vec<usize> = Vec::new();
        for band in 0..BANDS {
            let mut key = [0u32; ROWS];
            key.copy_from_slice(&mins[band * ROWS..(band + 1) * ROWS]);
            let bucket = buckets.entry((band, key)).or_default();
            candidates.extend(bucket.iter().copied());
            bucket.push(i);
        }
        // Kept episodes only: a duplicate's own duplicates are judged against the original.
        duplicate[i] = candidates
            .into_iter()
            .any(|j| !duplicate[j] && signatures[j].similarity(sig) >= threshold);
    }
    duplicate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_copies_are_duplicates_and_different_texts_are_not() {
        let base = "the agent opened the file and fixed the off by one error in the pager loop then ran the tests which all passed";
        let near = format!("{base} again");
        let other = "a completely different conversation about scheduling a meeting with the finance team next tuesday afternoon";
        let sigs = [
            MinHash::of(base),
            MinHash::of(&near),
            MinHash::of(other),
            MinHash::of(base),
        ];
        assert!(sigs[0].similarity(&sigs[1]) > 0.8);
        assert!(sigs[0].similarity(&sigs[2]) < 0.2);
        let refs: Vec<&MinHash> = sigs.iter().collect();
        // One appended word: 20 of 21 shingles shared (Jaccard ≈ 0.95).
        assert_eq!(near_duplicates(&refs, 0.9), [false, true, false, true]);
        assert_eq!(near_duplicates(&refs, 1.0), [false, false, false, true]);
    }

    #[test]
    fn empty_texts_are_never_duplicates() {
        let sigs = [MinHash::of(""), MinHash::of("  ")];
        let refs: Vec<&MinHash> = sigs.iter().collect();
        assert_eq!(near_duplicates(&refs, 0.5), [false, false]);
    }
}
