//! Table cases: conditions, concurrency, transactions, pagination, TTL.

use std::sync::Arc;

use agentrl_store::{
    StoreError,
    ports::{Condition, Key, Put, Query, SortRange, Table, Write},
};
use agentrl_tests::{Ports, unique};
use serde_json::json;

fn put(key: &Key, doc: serde_json::Value, condition: Condition) -> Put {
    Put {
        key: key.clone(),
        doc,
        expires_at: None,
        condition,
    }
}

pub async fn conditional_writes_conflict(p: &Ports) {
    let t = &p.table;
    let key = Key::new(unique("pk"), "item");
    assert_eq!(
        t.put(put(&key, json!({"n": 1}), Condition::Absent))
            .await
            .unwrap(),
        1
    );
    let again = t.put(put(&key, json!({"n": 9}), Condition::Absent)).await;
    assert!(
        matches!(again, Err(StoreError::ConditionFailed { .. })),
        "{again:?}"
    );
    assert_eq!(
        t.put(put(&key, json!({"n": 2}), Condition::Version(1)))
            .await
            .unwrap(),
        2
    );
    let stale = t
        .put(put(&key, json!({"n": 9}), Condition::Version(1)))
        .await;
    assert!(stale.unwrap_err().is_condition_failed());
    let item = t.get(&key).await.unwrap().unwrap();
    assert_eq!((item.version, item.doc), (2, json!({"n": 2})));

    let missing = Key::new(unique("pk"), "item");
    assert!(
        t.put(put(&missing, json!({}), Condition::Exists))
            .await
            .unwrap_err()
            .is_condition_failed()
    );
    assert!(
        t.delete(&key, Condition::Version(1))
            .await
            .unwrap_err()
            .is_condition_failed()
    );
    t.delete(&key, Condition::Version(2)).await.unwrap();
    assert_eq!(t.get(&key).await.unwrap(), None);
    t.delete(&key, Condition::None).await.unwrap();
    assert_eq!(
        t.put(put(&key, json!({"n": 3}), Condition::None))
            .await
            .unwrap(),
        1
    );
}

/// Read-modify-write with version conditions: no increment is lost under contention.
pub async fn concurrent_writers_lose_no_update(p: &Ports) {
    const WRITERS: usize = 8;
    const EACH: u64 = 8;
    let key = Key::new(unique("pk"), "counter");
    p.table
        .put(put(&key, json!({"n": 0}), Condition::Absent))
        .await
        .unwrap();
    let tasks: Vec<_> = (0..WRITERS)
        .map(|_| {
            let table: Arc<dyn Table> = p.table.clone();
            let key = key.clone();
            tokio::spawn(async move {
                let mut conflicts = 0;
                for _ in 0..EACH {
                    loop {
                        let item = table.get(&key).await.unwrap().unwrap();
                        let n = item.doc["n"].as_u64().unwrap();
                        match table
                            .put(put(
                                &key,
                                json!({"n": n + 1}),
                                Condition::Version(item.version),
                            ))
                            .await
                        {
                            Ok(_) => break,
                            Err(e) if e.is_condition_failed() => conflicts += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let item = p.table.get(&key).await.unwrap().unwrap();
    assert_eq!(item.doc["n"], json!(WRITERS as u64 * EACH));
    assert_eq!(item.version, 1 + WRITERS as u64 * EACH);
}

pub async fn transactions_fail_atomically(p: &Ports) {
    let t = &p.table;
    let pk = unique("pk");
    let (a, b, c) = (Key::new(&pk, "a"), Key::new(&pk, "b"), Key::new(&pk, "c"));
    t.put(put(&b, json!({"v": "b1"}), Condition::Absent))
        .await
        .unwrap();

    let failed = t
        .transact(vec![
            Write::Put(put(&a, json!({"v": "a1"}), Condition::Absent)),
            Write::Put(put(&b, json!({"v": "b2"}), Condition::Version(7))),
        ])
        .await;
    assert!(
        matches!(failed, Err(StoreError::ConditionFailed { index: Some(1) })),
        "{failed:?}"
    );
    assert_eq!(
        t.get(&a).await.unwrap(),
        None,
        "the first write must not survive"
    );
    assert_eq!(t.get(&b).await.unwrap().unwrap().doc, json!({"v": "b1"}));

    let check_failed = t
        .transact(vec![
            Write::Put(put(&a, json!({"v": "a1"}), Condition::Absent)),
            Write::Check {
                key: c.clone(),
                condition: Condition::Exists,
            },
        ])
        .await;
    assert!(check_failed.unwrap_err().is_condition_failed());
    assert_eq!(t.get(&a).await.unwrap(), None);

    t.transact(vec![
        Write::Put(put(&a, json!({"v": "a1"}), Condition::Absent)),
        Write::Put(put(&b, json!({"v": "b2"}), Condition::Version(1))),
        Write::Delete {
            key: c.clone(),
            condition: Condition::None,
        },
    ])
    .await
    .unwrap();
    assert_eq!(t.get(&a).await.unwrap().unwrap().version, 1);
    assert_eq!(t.get(&b).await.unwrap().unwrap().version, 2);

    let dup = t
        .transact(vec![
            Write::Put(put(&a, json!({}), Condition::None)),
            Write::Delete {
                key: a.clone(),
                condition: Condition::None,
            },
        ])
        .await;
    assert!(matches!(dup, Err(StoreError::Invalid(_))), "{dup:?}");
}

pub async fn queries_paginate_in_sort_key_order(p: &Ports) {
    let t = &p.table;
    let pk = unique("pk");
    let other = unique("pk");
    for i in (0..25).rev() {
        t.put(put(
            &Key::new(&pk, format!("item#{i:03}")),
            json!({"i": i}),
            Condition::None,
        ))
        .await
        .unwrap();
    }
    t.put(put(&Key::new(&pk, "meta"), json!({}), Condition::None))
        .await
        .unwrap();
    t.put(put(
        &Key::new(&other, "item#000"),
        json!({}),
        Condition::None,
    ))
    .await
    .unwrap();

    let mut q = Query {
        pk: pk.clone(),
        range: SortRange::BeginsWith("item#".into()),
        limit: 10,
        cursor: None,
        ascending: true,
    };
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = t.query(&q).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 10);
        seen.extend(page.items.iter().map(|i| i.doc["i"].as_i64().unwrap()));
        match page.next {
            Some(next) => q.cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, (0..25).collect::<Vec<_>>());
    assert!((3..=4).contains(&pages), "{pages} pages");

    let desc = t
        .query(&Query {
            pk: pk.clone(),
            range: SortRange::Between("item#005".into(), "item#009".into()),
            limit: 100,
            cursor: None,
            ascending: false,
        })
        .await
        .unwrap();
    let got: Vec<_> = desc
        .items
        .iter()
        .map(|i| i.doc["i"].as_i64().unwrap())
        .collect();
    assert_eq!(got, vec![9, 8, 7, 6, 5]);
    assert_eq!(desc.next, None);

    let all = t.query(&Query::partition(&pk)).await.unwrap();
    assert_eq!(all.items.len(), 26);

    let bad = t
        .query(&Query {
            cursor: Some("not-a-cursor".into()),
            ..Query::partition(&pk)
        })
        .await;
    assert!(matches!(bad, Err(StoreError::Invalid(_))), "{bad:?}");
    let bad = t
        .query(&Query {
            limit: 0,
            ..Query::partition(&pk)
        })
        .await;
    assert!(matches!(bad, Err(StoreError::Invalid(_))), "{bad:?}");
}

pub async fn expired_items_are_absent(p: &Ports) {
    let t = &p.table;
    let pk = unique("pk");
    let past = Key::new(&pk, "old");
    let future = Key::new(&pk, "new");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    t.put(Put {
        key: past.clone(),
        doc: json!({"a": 1}),
        expires_at: Some(now - 10),
        condition: Condition::None,
    })
    .await
    .unwrap();
    t.put(Put {
        key: future.clone(),
        doc: json!({"a": 2}),
        expires_at: Some(now + 3600),
        condition: Condition::None,
    })
    .await
    .unwrap();
    assert_eq!(t.get(&past).await.unwrap(), None);
    assert_eq!(
        t.get(&future).await.unwrap().unwrap().expires_at,
        Some(now + 3600)
    );
    let page = t.query(&Query::partition(&pk)).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert!(
        t.put(put(&past, json!({"a": 3}), Condition::Exists))
            .await
            .unwrap_err()
            .is_condition_failed()
    );
    t.put(put(&past, json!({"a": 3}), Condition::Absent))
        .await
        .unwrap();
    assert_eq!(t.get(&past).await.unwrap().unwrap().doc, json!({"a": 3}));
}

/// `get_many` answers every key in order — present, absent, expired, repeated — across more
/// keys than one backend request takes.
pub async fn get_many_answers_every_key_in_order(p: &Ports) {
    let t = &p.table;
    let pk = unique("pk");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for i in 0..150 {
        t.put(Put {
            key: Key::new(&pk, format!("k{i:03}")),
            doc: json!({"i": i}),
            // Every tenth item has already expired.
            expires_at: (i % 10 == 0).then_some(now - 10),
            condition: Condition::None,
        })
        .await
        .unwrap();
    }
    let mut keys: Vec<Key> = (0..160)
        .rev()
        .map(|i| Key::new(&pk, format!("k{i:03}")))
        .collect();
    keys.push(Key::new(&pk, "k005"));
    let items = t.get_many(&keys).await.unwrap();
    assert_eq!(items.len(), keys.len());
    for (key, item) in keys.iter().zip(&items) {
        let i: u64 = key.sk[1..].parse().unwrap();
        match item {
            Some(item) => {
                assert!(i < 150 && !i.is_multiple_of(10), "{key:?} should be absent");
                assert_eq!((&item.key, &item.doc), (key, &json!({"i": i})));
            }
            None => assert!(i >= 150 || i.is_multiple_of(10), "{key:?} is missing"),
        }
    }
    assert!(t.get_many(&[]).await.unwrap().is_empty());
}
