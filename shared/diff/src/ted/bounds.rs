//! Lower bounds that certify an upper bound as the exact distance: the string edit distance
//! between the postorder label sequences, and the one between the preorder sequences, never
//! exceed the tree edit distance (Guha et al., 2002).

use std::time::Instant;

use super::zhang_shasha::Forest;

/// A lower bound of the forest distance, capped at `cap`: the larger string edit distance of
/// the postorder and the preorder label sequences.
pub(super) fn lower_bound(a: Forest<'_>, b: Forest<'_>, cap: u64, deadline: Instant) -> u64 {
    let postorder = edit_distance_capped(a.labels, b.labels, cap, deadline);
    if postorder == cap {
        return cap;
    }
    let (pre_a, pre_b) = (preorder(a.labels, a.sizes), preorder(b.labels, b.sizes));
    postorder.max(edit_distance_capped(&pre_a, &pre_b, cap, deadline))
}

/// The labels of a postorder forest rearranged into preorder.
pub(super) fn preorder(labels: &[u32], sizes: &[u32]) -> Vec<u32> {
    let mut out = vec![0; labels.len()];
    // Node i's preorder position is its leftmost leaf plus its depth: the nodes before it in
    // preorder are its ancestors and everything before its subtree in postorder.
    let mut path: Vec<usize> = Vec::new();
    for i in (0..labels.len()).rev() {
        while path.last().is_some_and(|&p| p + 1 - sizes[p] as usize > i) {
            path.pop();
        }
        out[i + 1 - sizes[i] as usize + path.len()] = labels[i];
        path.push(i);
    }
    out
}

/// A lower bound of the Levenshtein distance between `a` and `b` that equals
/// `min(distance, cap)` unless the deadline passes first.
pub(super) fn edit_distance_capped(a: &[u32], b: &[u32], cap: u64, deadline: Instant) -> u64 {
    // A common prefix or suffix never changes the distance.
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    let floor = (a.len().abs_diff(b.len()) as u64).min(cap);
    if floor == cap {
        return cap;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let parallel_steps = (short.len().div_ceil(64) * long.len()) as u64;
    match landau_vishkin(a, b, cap, parallel_steps, deadline) {
        Ok(distance) => distance,
        Err(proven) if Instant::now() >= deadline => proven.max(floor),
        Err(proven) => {
            bit_parallel(short, long, deadline).map_or(proven.max(floor), |d| d.min(cap))
        }
    }
}

/// Furthest-reaching diagonals, one edit count at a time, stopping at `cap` edits: the time
/// grows with the square of the distance. `Ok(min(distance, cap))`, or, once `max_steps` or the
/// deadline is exhausted, `Err` with the edit count proven necessary so far.
pub(super) fn landau_vishkin(
    a: &[u32],
    b: &[u32],
    cap: u64,
    max_steps: u64,
    deadline: Instant,
) -> Result<u64, u64> {
    let (n, m) = (a.len() as i64, b.len() as i64);
    let target = m - n;
    // Substituting along the shorter sequence and inserting the rest costs max(n, m).
    let cap = cap.min(n.max(m) as u64 + 1) as i64;
    let slide = |mut i: i64, d: i64| {
        while i < n && i + d < m && a[i as usize] == b[(i + d) as usize] {
            i += 1;
        }
        i
    };
    // Row reached on each diagonal d = column - row, offset so d ± 1 stays in bounds. Entries
    // a pass leaves untouched hold rows reached with fewer edits: still reachable, so sound.
    const UNREACHED: i64 = i64::MIN / 4;
    let offset = cap + 1;
    let mut prev = vec![UNREACHED; (2 * cap + 3) as usize];
    let mut cur = prev.clone();
    prev[offset as usize] = slide(0, 0);
    if target == 0 && prev[offset as usize] >= n {
        return Ok(0);
    }
    let mut steps = prev[offset as usize] as u64;
    for edits in 1..cap {
        if steps > max_steps || (edits % 32 == 0 && Instant::now() >= deadline) {
            return Err(edits as u64);
        }
        // A diagonal far from the target one needs more edits than remain under the cap.
        let spare = cap - 1 - edits;
        let lo = (-edits).max(target - spare).max(-n);
        let hi = edits.min(target + spare).min(m);
        for d in lo..=hi {
            let at = (d + offset) as usize;
            let row = (prev[at] + 1).max(prev[at + 1] + 1).max(prev[at - 1]);
            let row = row.min(n).min(m - d);
            cur[at] = if row < 0 || row + d < 0 {
                UNREACHED
            } else {
                let end = slide(row, d);
                steps += (end - row) as u64;
                end
            };
        }
        steps += (hi - lo + 1).max(0) as u64;
        if (lo..=hi).contains(&target) && cur[(target + offset) as usize] >= n {
            return Ok(edits as u64);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Ok(cap as u64)
}

/// The Levenshtein distance by Myers' bit-vector algorithm in blocks of 64 pattern rows
/// (Hyyrö 2003): `|pattern| / 64 * |text|` word steps whatever the distance. `None` when the
/// deadline passes first.
pub(super) fn bit_parallel(pattern: &[u32], text: &[u32], deadline: Instant) -> Option<u64> {
    let Some(&max_label) = pattern.iter().max() else {
        return Some(text.len() as u64);
    };
    // Match masks of the current block's rows, by label.
    let mut peq = vec![0u64; max_label as usize + 1];
    // Horizontal deltas along the bottom row of the previous block; row 0 rises by one per
    // column.
    let mut deltas = vec![1i8; text.len()];
    for rows in pattern.chunks(64) {
        if Instant::now() >= deadline {
            return None;
        }
        for (r, &label) in rows.iter().enumerate() {
            peq[label as usize] |= 1 << r;
        }
        // In the last block, rows past the pattern end never feed the rows above them.
        let bottom = rows.len() - 1;
        // Column 0 rises by one per row.
        let (mut pv, mut mv) = (!0u64, 0u64);
        for (delta, &label) in deltas.iter_mut().zip(text) {
            let eq = peq.get(label as usize).copied().unwrap_or(0);
            let (carry_pos, carry_neg) = (u64::from(*delta > 0), u64::from(*delta < 0));
            let xv = eq | mv;
            let eq = eq | carry_neg;
            let xh = ((eq & pv).wrapping_add(pv) ^ pv) | eq;
            let ph = mv | !(xh | pv);
            let mh = pv & xh;
            *delta = ((ph >> bottom) & 1) as i8 - ((mh >> bottom) & 1) as i8;
            let ph = (ph << 1) | carry_pos;
            let mh = (mh << 1) | carry_neg;
            pv = mh | !(xv | ph);
            mv = ph & xv;
        }
        for &label in rows {
            peq[label as usize] = 0;
        }
    }
    let total = pattern.len() as i64 + deltas.iter().map(|&d| i64::from(d)).sum::<i64>();
    Some(total as u64)
}
