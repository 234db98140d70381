//! Capped collections whose contents do not depend on insertion order.
//!
//! A map keeps its `cap` smallest keys. Because keys only ever accumulate, a key that is in the
//! final smallest-`cap` set was in it from the moment it first arrived (so its value saw every
//! update), and a key evicted once can never return: the same set of inserts, in any order,
//! leaves the same map. A sorted list keeps its `cap` largest items by the same argument.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The entry for `key` when the map may hold it, evicting the largest key if needed; `None`
/// when the map is full of smaller keys.
pub(crate) fn entry<'a, V: Default>(
    map: &'a mut BTreeMap<String, V>,
    key: &str,
    cap: usize,
) -> Option<&'a mut V> {
    if !map.contains_key(key) {
        if map.len() >= cap {
            let largest = map.keys().next_back()?;
            if key > largest.as_str() {
                return None;
            }
            map.pop_last();
        }
        map.insert(key.to_string(), V::default());
    }
    map.get_mut(key)
}

/// Inserts `item` into the list, ascending by `order`, and drops the smallest items beyond
/// `cap`. `order` must be total over the items ever inserted (ties make the result depend on
/// arrival order).
pub(crate) fn insert_sorted<T>(
    list: &mut Vec<T>,
    item: T,
    cap: usize,
    order: impl Fn(&T, &T) -> Ordering,
) {
    let at = list.partition_point(|x| order(x, &item) == Ordering::Less);
    list.insert(at, item);
    if list.len() > cap {
        list.drain(..list.len() - cap);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fill(keys: &[u8], cap: usize) -> BTreeMap<String, u32> {
        let mut map = BTreeMap::new();
        for k in keys {
            if let Some(count) = entry(&mut map, &format!("k{k:03}"), cap) {
                *count += 1;
            }
        }
        map
    }

    #[test]
    fn keeps_the_smallest_keys() {
        let map = fill(&[9, 1, 9, 5, 3, 1], 2);
        let want: BTreeMap<String, u32> = [("k001".to_string(), 2), ("k003".to_string(), 1)].into();
        assert_eq!(map, want);
        let mut zero = BTreeMap::<String, u32>::new();
        assert!(entry(&mut zero, "a", 0).is_none());
    }

    proptest! {
        #[test]
        fn map_is_order_independent(
            (keys, shuffled) in proptest::collection::vec(0u8..40, 0..80)
                .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle())),
            cap in 0usize..10,
        ) {
            prop_assert_eq!(fill(&keys, cap), fill(&shuffled, cap));
        }

        #[test]
        fn list_is_order_independent(
            (items, shuffled) in proptest::collection::vec(0u16..500, 0..80)
                .prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle())),
            cap in 0usize..10,
        ) {
            let run = |items: &[u16]| {
                let mut list = Vec::new();
                for &i in items {
                    insert_sorted(&mut list, i, cap, u16::cmp);
                }
                list
            };
            let mut want = items.clone();
            want.sort_unstable();
            let want = want[want.len().saturating_sub(cap)..].to_vec();
            prop_assert_eq!(run(&items), want.clone());
            prop_assert_eq!(run(&shuffled), want);
        }
    }
}
