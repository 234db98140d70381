//! Which lines of a run's `metrics.jsonl` a curve draws: all of them when they fit, otherwise
//! an even sample that keeps the run's first and last step and its evaluations, so a chart of
//! a long run costs the browser a bounded number of points and still shows where it ended.

/// The indices (ascending) of the lines to keep out of `is_eval.len()` lines, at most `max`
/// of them (`max` ≥ 2): every line when they fit; else exactly `max`: the evaluation lines
/// (those flagged) up to a quarter of `max` (or what the step lines leave), and the step lines
/// evenly spaced, first and last included.
pub fn curve_lines(is_eval: &[bool], max: usize) -> Vec<usize> {
    if is_eval.len() <= max {
        return (0..is_eval.len()).collect();
    }
    let (evals, steps): (Vec<usize>, Vec<usize>) = (0..is_eval.len()).partition(|&i| is_eval[i]);
    // A quarter for evaluations, more when there are too few step lines to fill the rest.
    let eval_budget = evals.len().min((max / 4).max(max - steps.len().min(max)));
    let mut kept = evenly(&evals, eval_budget);
    kept.extend(evenly(&steps, max - eval_budget));
    kept.sort_unstable();
    kept
}

/// `k` of `items` at evenly spaced positions, the first and last included (all when `k` is at
/// least their number; the last alone when `k` is 1).
fn evenly(items: &[usize], k: usize) -> Vec<usize> {
    match k {
        _ if k >= items.len() => items.to_vec(),
        0 => Vec::new(),
        1 => items.last().copied().into_iter().collect(),
        _ => (0..k)
            .map(|j| items[(j * (items.len() - 1) + (k - 1) / 2) / (k - 1)])
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_short_run_keeps_every_line() {
        assert_eq!(curve_lines(&[false, true, false], 3), vec![0, 1, 2]);
        assert_eq!(curve_lines(&[], 2), Vec::<usize>::new());
    }

    #[test]
    fn a_long_run_keeps_its_ends_and_its_evaluations() {
        let mut lines = vec![false; 10_000];
        for i in (999..10_000).step_by(1_000) {
            lines[i] = true;
        }
        let kept = curve_lines(&lines, 2_000);
        assert_eq!(kept.len(), 2_000);
        assert_eq!(kept[0], 0);
        assert_eq!(*kept.last().unwrap(), 9_999, "the last line, an evaluation");
        assert!(kept.contains(&9_998), "the last step line");
        for i in (999..10_000).step_by(1_000) {
            assert!(kept.contains(&i), "evaluation line {i}");
        }
        // Step lines are evenly spaced: every gap is 5 or 6 lines of the 10,000 (eval lines
        // taken out).
        let steps: Vec<usize> = kept.iter().copied().filter(|&i| !lines[i]).collect();
        let gaps: Vec<usize> = steps.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|g| (4..=7).contains(g)), "{gaps:?}");
    }

    proptest! {
        #[test]
        fn never_more_than_asked_always_sorted_and_distinct(
            lines in proptest::collection::vec(any::<bool>(), 0..500),
            max in 2usize..100,
        ) {
            let kept = curve_lines(&lines, max);
            prop_assert!(kept.len() <= max);
            prop_assert_eq!(kept.len(), lines.len().min(max));
            prop_assert!(kept.windows(2).all(|w| w[0] < w[1]));
            if let Some(last_step) = lines.iter().rposition(|e| !e) {
                prop_assert!(kept.contains(&last_step));
            }
        }
    }
}
