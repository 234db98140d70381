//! Spans waiting for their conversation to end, kept durably: acknowledged spans are on
//! disk (or S3) before the export is answered.
//!
//! Spans are grouped by conversation (`gen_ai.conversation.id` or `session.id`); a span that
//! names none belongs to the conversation its trace was seen with, else to its trace. Each
//! export writes, per group, one object of its spans (`traces/tenant=…/group=…/{batch}.json`)
//! and one table item naming it under the group's partition; the group is on an
//! [`OpenList`] (`traces-open`) for the sweep, with a version every export bumps, so the sweep takes a group off the list only if nothing arrived since
//! it read it. A trace seen with a conversation is remembered (a day) both ways: spans of it
//! that arrive later join the conversation, and the conversation's end finds the spans that
//! arrived before under their trace.

use std::collections::{BTreeMap, BTreeSet};

use agentrl_core::TenantId;
use agentrl_core::traces::Span;
use agentrl_store::StoreError;
use agentrl_store::keys::partition;
use agentrl_store::open_list::OpenList;
use agentrl_store::ports::{Condition, Key, Objects, Put, Query, Table, Write, encode};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// What a group of spans will become one conversation of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Group {
    /// Spans that name the conversation, or whose trace was seen with it.
    Conversation(String),
    /// Spans of a trace seen with no conversation (yet).
    Trace(String),
}

impl Group {
    /// The group's id in keys and paths: a digest, since a conversation id is any string.
    pub(crate) fn digest(&self) -> String {
        let (kind, name) = match self {
            Self::Conversation(c) => ("c", c),
            Self::Trace(t) => ("t", t),
        };
        hex::encode(&Sha256::digest(format!("{kind}\0{name}").as_bytes())[..16])
    }

    /// The conversation id the group's trajectory carries.
    pub(crate) fn conversation(&self) -> &str {
        match self {
            Self::Conversation(c) | Self::Trace(c) => c,
        }
    }
}

/// One export's spans of a group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Batch {
    pub group: Group,
    pub spans: Vec<Span>,
}

/// The table's record of a batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub group: Group,
    /// The object holding the batch.
    pub path: String,
    /// Whether it holds a trace's root span.
    pub root: bool,
}

/// The open groups.
const OPEN: OpenList = OpenList::new("traces-open");

/// How long a trace's conversation is remembered.
const REMEMBERED_SECS: u64 = 24 * 3600;

/// Writes a transaction takes at most (DynamoDB's limit).
const TRANSACTION: usize = 100;

fn group_pk(t: &TenantId, digest: &str) -> String {
    partition(t, "traces-group", digest)
}

fn open_key(t: &TenantId, digest: &str) -> Key {
    let shard = u8::from_str_radix(&digest[..2], 16).unwrap_or(0);
    OPEN.key(shard, format!("{t}#{digest}"))
}

fn trace_key(t: &TenantId, trace: &str) -> Key {
    Key::new(partition(t, "traces-trace", trace), "conversation")
}

fn conversation_traces_pk(t: &TenantId, conversation: &Group) -> String {
    partition(t, "traces-conversation", &conversation.digest())
}

fn object_path(t: &TenantId, digest: &str, batch: &str) -> String {
    format!("traces/tenant={t}/group={digest}/{batch}.json")
}

#[derive(Serialize, Deserialize)]
struct Remembered {
    conversation: String,
}

fn put(key: Key, doc: serde_json::Value, expires_at: Option<u64>) -> Write {
    Write::Put(Put {
        key,
        doc,
        expires_at,
        condition: Condition::None,
    })
}

/// Stores `spans` (of one export, received at `now_ms`): when this returns, they are durable.
///
/// # Errors
/// The stores failed: nothing is acknowledged, the exporter retries.
pub(crate) async fn store(
    table: &dyn Table,
    objects: &dyn Objects,
    t: &TenantId,
    spans: Vec<Span>,
    now_ms: u64,
) -> Result<(), StoreError> {
    // Traces this export names a conversation for, and those it leaves to what is known.
    let mut named: BTreeMap<String, String> = BTreeMap::new();
    for s in &spans {
        if let Some(c) = s.conversation() {
            named
                .entry(s.trace_id.clone())
                .or_insert_with(|| c.to_owned());
        }
    }
    let unnamed: Vec<String> = spans
        .iter()
        .filter(|s| !named.contains_key(&s.trace_id))
        .map(|s| s.trace_id.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let keys: Vec<Key> = unnamed.iter().map(|trace| trace_key(t, trace)).collect();
    let mut known: BTreeMap<String, String> = BTreeMap::new();
    for (trace, item) in unnamed.iter().zip(table.get_many(&keys).await?) {
        if let Some(item) = item {
            let (r, _): (Remembered, u64) = item.decode()?;
            known.insert(trace.clone(), r.conversation);
        }
    }
    let mut groups: BTreeMap<Group, Vec<Span>> = BTreeMap::new();
    for s in spans {
        let group = match s.conversation().or_else(|| {
            named
                .get(&s.trace_id)
                .or_else(|| known.get(&s.trace_id))
                .map(String::as_str)
        }) {
            Some(c) => Group::Conversation(c.to_owned()),
            None => Group::Trace(s.trace_id.clone()),
        };
        groups.entry(group).or_default().push(s);
    }

    let batch = uuid::Uuid::now_v7().to_string();
    let mut entries = Vec::with_capacity(groups.len());
    let writes = groups.into_iter().map(|(group, spans)| {
        let digest = group.digest();
        let path = object_path(t, &digest, &batch);
        let pending = Pending {
            group: group.clone(),
            path: path.clone(),
            root: spans.iter().any(|s| s.parent_span_id.is_none()),
        };
        entries.push((digest, pending));
        async move {
            let bytes = serde_json::to_vec(&Batch { group, spans })
                .map_err(|e| StoreError::Backend(e.into()))?;
            objects.put(&path, Bytes::from(bytes)).await
        }
    });
    futures::future::try_join_all(writes).await?;

    let expires = now_ms / 1_000 + REMEMBERED_SECS;
    let mut items: Vec<Vec<Write>> = Vec::new();
    for (digest, pending) in entries {
        items.push(vec![
            put(
                Key::new(group_pk(t, &digest), batch.clone()),
                encode(&pending)?,
                None,
            ),
            put(open_key(t, &digest), listed(now_ms), None),
        ]);
    }
    for (trace, conversation) in &named {
        let c = Group::Conversation(conversation.clone());
        items.push(vec![
            put(
                trace_key(t, trace),
                encode(&Remembered {
                    conversation: conversation.clone(),
                })?,
                Some(expires),
            ),
            put(
                Key::new(conversation_traces_pk(t, &c), trace.clone()),
                serde_json::json!({}),
                Some(expires),
            ),
        ]);
    }
    let mut transactions = Vec::new();
    let mut current: Vec<Write> = Vec::new();
    for pair in items {
        if current.len() + pair.len() > TRANSACTION {
            transactions.push(std::mem::take(&mut current));
        }
        current.extend(pair);
    }
    transactions.push(current);
    futures::future::try_join_all(
        transactions
            .into_iter()
            .filter(|w| !w.is_empty())
            .map(|w| table.transact(w)),
    )
    .await?;
    Ok(())
}

/// A group on the open list, with the version its entry was read at.
#[derive(Debug, Clone)]
pub(crate) struct Open {
    pub tenant: TenantId,
    pub digest: String,
    pub version: u64,
    /// When its last batch arrived (epoch ms), as its entry says: the sweep passes over a
    /// group still active without reading it.
    pub last_ms: Option<u64>,
}

/// An open-list entry's document.
#[derive(Serialize, Deserialize)]
struct Listed {
    last_ms: u64,
}

fn listed(last_ms: u64) -> serde_json::Value {
    serde_json::json!(Listed { last_ms })
}

/// A page of shard `shard`'s open groups, and the cursor of the next.
pub(crate) async fn open(
    table: &dyn Table,
    shard: u8,
    cursor: Option<String>,
) -> Result<(Vec<Open>, Option<String>), StoreError> {
    let (items, next) = OPEN.page(table, shard, cursor).await?;
    let open = items
        .iter()
        .filter_map(|item| {
            let (tenant, digest) = item.key.sk.split_once('#')?;
            Some(Open {
                tenant: TenantId::parse(tenant).ok()?,
                digest: digest.to_owned(),
                version: item.version,
                last_ms: serde_json::from_value::<Listed>(item.doc.clone())
                    .ok()
                    .map(|l| l.last_ms),
            })
        })
        .collect();
    Ok((open, next))
}

/// The batches of a group, oldest first, each with its batch id (a UUIDv7).
pub(crate) async fn pending(
    table: &dyn Table,
    t: &TenantId,
    digest: &str,
) -> Result<Vec<(String, Pending)>, StoreError> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = table
            .query(&Query {
                limit: 1_000,
                cursor,
                ..Query::partition(group_pk(t, digest))
            })
            .await?;
        for item in page.items {
            let batch = item.key.sk.clone();
            out.push((batch, item.decode::<Pending>()?.0));
        }
        match page.next {
            Some(n) => cursor = Some(n),
            None => return Ok(out),
        }
    }
}

/// When a batch was stored (epoch ms), from its UUIDv7 id.
pub(crate) fn batch_ms(batch: &str) -> Option<u64> {
    let (secs, nanos) = uuid::Uuid::parse_str(batch)
        .ok()?
        .get_timestamp()?
        .to_unix();
    Some(secs * 1_000 + u64::from(nanos) / 1_000_000)
}

/// The conversation a trace was seen with, if any.
pub(crate) async fn conversation_of(
    table: &dyn Table,
    t: &TenantId,
    trace: &str,
) -> Result<Option<String>, StoreError> {
    match table.get(&trace_key(t, trace)).await? {
        Some(item) => Ok(Some(item.decode::<Remembered>()?.0.conversation)),
        None => Ok(None),
    }
}

/// The traces seen with a conversation.
pub(crate) async fn traces_of(
    table: &dyn Table,
    t: &TenantId,
    conversation: &Group,
) -> Result<Vec<String>, StoreError> {
    let page = table
        .query(&Query {
            limit: 1_000,
            ..Query::partition(conversation_traces_pk(t, conversation))
        })
        .await?;
    Ok(page.items.into_iter().map(|i| i.key.sk).collect())
}

/// Moves a trace group's batches into its conversation's group (the objects stay where
/// they are; their table items move) and takes the trace group off the list.
pub(crate) async fn join(
    table: &dyn Table,
    t: &TenantId,
    trace: &Group,
    conversation: &Group,
) -> Result<(), StoreError> {
    let (from, to) = (trace.digest(), conversation.digest());
    let batches = pending(table, t, &from).await?;
    let last = batches
        .iter()
        .filter_map(|(b, _)| batch_ms(b))
        .max()
        .unwrap_or(0);
    for chunk in batches.chunks(TRANSACTION / 2 - 1) {
        let mut writes = vec![put(open_key(t, &to), listed(last), None)];
        for (batch, p) in chunk {
            let moved = Pending {
                group: conversation.clone(),
                ..p.clone()
            };
            writes.push(put(
                Key::new(group_pk(t, &to), batch.clone()),
                encode(&moved)?,
                None,
            ));
            writes.push(Write::Delete {
                key: Key::new(group_pk(t, &from), batch.clone()),
                condition: Condition::None,
            });
        }
        table.transact(writes).await?;
    }
    unlist_if_empty(table, t, &from, None).await
}

/// Every span of the batches (a batch object that is gone is skipped: its spans were taken).
pub(crate) async fn spans(
    objects: &dyn Objects,
    batches: &[(String, Pending)],
) -> Result<Vec<Span>, StoreError> {
    let reads = batches.iter().map(|(_, p)| objects.get(&p.path));
    let mut out = Vec::new();
    for bytes in futures::future::try_join_all(reads)
        .await?
        .into_iter()
        .flatten()
    {
        let batch: Batch =
            serde_json::from_slice(&bytes).map_err(|e| StoreError::Backend(e.into()))?;
        out.extend(batch.spans);
    }
    Ok(out)
}

/// Forgets the batches (their items, then their objects) and takes the group off the list
/// unless an export added to it meanwhile.
pub(crate) async fn close(
    table: &dyn Table,
    objects: &dyn Objects,
    t: &TenantId,
    digest: &str,
    batches: &[(String, Pending)],
    listed_at: Option<u64>,
) -> Result<(), StoreError> {
    for chunk in batches.chunks(TRANSACTION) {
        let writes = chunk
            .iter()
            .map(|(batch, _)| Write::Delete {
                key: Key::new(group_pk(t, digest), batch.clone()),
                condition: Condition::None,
            })
            .collect();
        table.transact(writes).await?;
    }
    futures::future::try_join_all(batches.iter().map(|(_, p)| objects.delete(&p.path))).await?;
    unlist_if_empty(table, t, digest, listed_at).await
}

/// Takes a group off the open list when it holds no batch, and (given `listed_at`) only if
/// its entry is still at that version: an export since then keeps it listed.
async fn unlist_if_empty(
    table: &dyn Table,
    t: &TenantId,
    digest: &str,
    listed_at: Option<u64>,
) -> Result<(), StoreError> {
    let left = table
        .query(&Query {
            limit: 1,
            ..Query::partition(group_pk(t, digest))
        })
        .await?;
    if !left.items.is_empty() {
        return Ok(());
    }
    let condition = listed_at.map_or(Condition::None, Condition::Version);
    match table
        .transact(vec![Write::Delete {
            key: open_key(t, digest),
            condition,
        }])
        .await
    {
        Ok(()) | Err(StoreError::ConditionFailed { .. } | StoreError::Conflict) => Ok(()),
        Err(e) => Err(e),
    }
}
