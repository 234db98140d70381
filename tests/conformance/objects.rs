//! Object cases: round trips (a large object through the streaming multipart writer), listing.

use agentrl_store::StoreError;
use agentrl_tests::{Ports, unique};
use bytes::Bytes;

pub async fn round_trips_small_and_large_objects(p: &Ports) {
    let o = p.objects.as_ref();
    let prefix = unique("t");
    let small = format!("{prefix}/small.json");
    o.put(&small, Bytes::from_static(b"{\"a\":1}"))
        .await
        .unwrap();
    assert_eq!(
        o.get(&small).await.unwrap().unwrap(),
        Bytes::from_static(b"{\"a\":1}")
    );
    assert_eq!(o.get(&format!("{prefix}/missing")).await.unwrap(), None);

    // 24 MiB in 1 MiB writes: several multipart parts on S3.
    let large = format!("{prefix}/large.bin");
    let chunk: Vec<u8> = (0..1024 * 1024).map(|i| (i * 31 % 251) as u8).collect();
    let mut w = o.writer(&large).await.unwrap();
    for i in 0..24u8 {
        let mut c = chunk.clone();
        c[0] = i;
        w.write(Bytes::from(c)).await.unwrap();
    }
    assert_eq!(
        o.get(&large).await.unwrap(),
        None,
        "invisible until finished"
    );
    w.finish().await.unwrap();
    let back = o.get(&large).await.unwrap().unwrap();
    assert_eq!(back.len(), 24 * 1024 * 1024);
    for i in 0..24usize {
        let part = &back[i * chunk.len()..(i + 1) * chunk.len()];
        assert_eq!(part[0], i as u8);
        assert_eq!(&part[1..], &chunk[1..]);
    }
}

pub async fn lists_by_prefix_and_refuses_bad_paths(p: &Ports) {
    let o = p.objects.as_ref();
    let prefix = unique("t");
    for name in ["b/2.parquet", "a/1.parquet", "b/1.parquet"] {
        o.put(&format!("{prefix}/{name}"), Bytes::from(name.to_owned()))
            .await
            .unwrap();
    }
    o.put(&format!("{prefix}x/other"), Bytes::new())
        .await
        .unwrap();
    let listed: Vec<String> = o
        .list(&prefix)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.path)
        .collect();
    assert_eq!(
        listed,
        ["a/1.parquet", "b/1.parquet", "b/2.parquet"].map(|n| format!("{prefix}/{n}"))
    );
    let b: Vec<u64> = o
        .list(&format!("{prefix}/b/"))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.size)
        .collect();
    assert_eq!(b, vec![11, 11]);
    for bad in ["", "../etc/passwd", "a//b", "a/./b"] {
        assert!(
            matches!(o.put(bad, Bytes::new()).await, Err(StoreError::Invalid(_))),
            "{bad:?}"
        );
    }
    // A deleted object is gone from reads and listings; deleting it again is no error.
    let gone = format!("{prefix}/b/1.parquet");
    o.delete(&gone).await.unwrap();
    assert_eq!(o.get(&gone).await.unwrap(), None);
    o.delete(&gone).await.unwrap();
    let left: Vec<String> = o
        .list(&format!("{prefix}/b/"))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.path)
        .collect();
    assert_eq!(left, [format!("{prefix}/b/2.parquet")]);
    assert!(matches!(
        o.delete("a//b").await,
        Err(StoreError::Invalid(_))
    ));
}
