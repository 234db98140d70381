//! One dataset per tenant: selection, deduplication, split, views, manifest, event.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufWriter, Write};

use agentrl_core::calendar::utc_date;
use agentrl_core::contracts::{Counts, DatasetReady, FileEntry, MANIFEST_VERSION, Manifest};
use agentrl_core::dataset::{
    AgentStats, Episode, Group, Rules, Selection, Split, groups, near_duplicates, preference_pairs,
    select_agents, split_of,
};
use agentrl_store::ports::{ObjectMeta, Objects, Queue};
use agentrl_turns::{SCHEMA_VERSION, TABLE_PREFIX, TurnRow, TurnWriter, WriterOptions, read_turns};
use anyhow::Context;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{
    exports::{FewShot, Turn, openai_messages},
    progress::Progress,
    read::catalog,
    spill::Spill,
    upload::upload,
};

/// Where datasets are written.
pub const DATASETS_PREFIX: &str = "datasets/";

/// The turn table's objects by tenant partition (`tenant=<partition>/…`), in path order.
///
/// # Errors
/// A failing store.
pub(crate) async fn turn_tables(
    objects: &dyn Objects,
) -> anyhow::Result<BTreeMap<String, Vec<ObjectMeta>>> {
    tables_under(objects, TABLE_PREFIX).await
}

/// One tenant partition's turn-table objects, in path order (listing only its prefix).
///
/// # Errors
/// A failing store.
pub(crate) async fn turn_table(
    objects: &dyn Objects,
    tenant: &str,
) -> anyhow::Result<Vec<ObjectMeta>> {
    let prefix = format!("{TABLE_PREFIX}tenant={tenant}/");
    Ok(tables_under(objects, &prefix)
        .await?
        .remove(tenant)
        .unwrap_or_default())
}

async fn tables_under(
    objects: &dyn Objects,
    prefix: &str,
) -> anyhow::Result<BTreeMap<String, Vec<ObjectMeta>>> {
    let mut tenants: BTreeMap<String, Vec<ObjectMeta>> = BTreeMap::new();
    for meta in objects.list(prefix).await? {
        let tenant = meta
            .path
            .strip_prefix(TABLE_PREFIX)
            .and_then(|rest| rest.split('/').next())
            .and_then(|part| part.strip_prefix("tenant="));
        if let (Some(tenant), true) = (tenant, meta.path.ends_with(".parquet")) {
            tenants.entry(tenant.to_owned()).or_default().push(meta);
        }
    }
    for metas in tenants.values_mut() {
        metas.sort_by(|a, b| a.path.cmp(&b.path));
    }
    Ok(tenants)
}

/// Where a built dataset is announced: `training.dataset.ready` goes on `events` (for everyone)
/// and on `training` (the training function's work).
#[derive(Clone, Copy)]
pub(crate) struct Announce<'a> {
    pub events: &'a dyn Queue,
    pub training: &'a dyn Queue,
}

/// Builds one dataset per tenant of `objects` whose agents meet `rules` at `now_ms`, and sends
/// `training.dataset.ready` for each on `events` (the announcement) and on `training` (the
/// training function's work). Returns the manifests written.
///
/// # Errors
/// Invalid rules, an unreadable object, a failing store.
pub async fn build(
    objects: &dyn Objects,
    events: &dyn Queue,
    training: &dyn Queue,
    rules: &Rules,
    now_ms: i64,
) -> anyhow::Result<Vec<Manifest>> {
    let announce = Announce { events, training };
    let mut manifests = Vec::new();
    for (tenant, metas) in turn_tables(objects).await? {
        let paths: Vec<String> = metas.into_iter().map(|m| m.path).collect();
        let built = build_tenant(
            objects,
            announce,
            rules,
            &Selection::Rules,
            now_ms,
            &tenant,
            &paths,
        )
        .await?;
        manifests.extend(built);
    }
    Ok(manifests)
}

/// Builds the dataset of one tenant partition from the turn-table objects `paths`, taking the
/// agents `selection` names, and announces it. `None` when no agent is taken.
pub(crate) async fn build_tenant(
    objects: &dyn Objects,
    announce: Announce<'_>,
    rules: &Rules,
    selection: &Selection,
    now_ms: i64,
    tenant: &str,
    paths: &[String],
) -> anyhow::Result<Option<Manifest>> {
    rules
        .validate()
        .map_err(|e| anyhow::anyhow!("rules: {e}"))?;
    let Some(manifest) = write_dataset(objects, rules, selection, now_ms, tenant, paths).await?
    else {
        return Ok(None);
    };
    let path = format!(
        "{DATASETS_PREFIX}tenant={tenant}/{}/manifest.json",
        manifest.dataset_id
    );
    let event = serde_json::to_string(&DatasetReady::of(&manifest, path))?;
    announce.events.send(&event).await?;
    announce.training.send(&event).await?;
    tracing::info!(%tenant, dataset_id = %manifest.dataset_id, "training.dataset.ready sent");
    Ok(Some(manifest))
}

/// The prompt (messages before the last assistant turn) and that turn's content.
fn prompt_and_completion(turns: &[Turn]) -> Option<(Value, String)> {
    let last = turns.iter().rposition(|t| t.role == "assistant")?;
    let prompt = turns[..last]
        .iter()
        .map(|t| json!({"role": t.role, "content": t.content}))
        .collect();
    Some((Value::Array(prompt), turns[last].content.clone()))
}

/// The writers of pass two.
struct Outputs {
    dir: tempfile::TempDir,
    train: TurnWriter<BufWriter<std::fs::File>>,
    validation: TurnWriter<BufWriter<std::fs::File>>,
    sft: BufWriter<std::fs::File>,
    /// `openai-chat.jsonl` and `openai-chat-validation.jsonl`, by split.
    openai: [BufWriter<std::fs::File>; 2],
}

impl Outputs {
    fn create() -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let file = |name: &str| -> anyhow::Result<BufWriter<std::fs::File>> {
            Ok(BufWriter::new(std::fs::File::create(
                dir.path().join(name),
            )?))
        };
        let options = WriterOptions::default();
        Ok(Self {
            train: TurnWriter::new(file("train.parquet")?, &options)?,
            validation: TurnWriter::new(file("validation.parquet")?, &options)?,
            sft: file("sft.jsonl")?,
            openai: [
                file("openai-chat.jsonl")?,
                file("openai-chat-validation.jsonl")?,
            ],
            dir,
        })
    }
}

async fn write_dataset(
    objects: &dyn Objects,
    rules: &Rules,
    selection: &Selection,
    now_ms: i64,
    tenant: &str,
    paths: &[String],
) -> anyhow::Result<Option<Manifest>> {
    let catalog = catalog(objects, paths).await?;
    let agents = select_agents(&catalog.episodes, rules, selection, now_ms);
    let selected: HashSet<&str> = agents
        .iter()
        .filter(|a| a.selected)
        .map(|a| a.agent_id.as_str())
        .collect();
    if selected.is_empty() {
        tracing::info!(%tenant, "no agent taken: no dataset");
        return Ok(None);
    }
    let since = now_ms.saturating_sub(i64::from(rules.window_days) * 86_400_000);
    let candidates: Vec<&Episode> = catalog
        .episodes
        .iter()
        .filter(|e| selected.contains(e.agent_id.as_str()))
        .filter(|e| (since..=now_ms).contains(&e.ingested_at_ms))
        .collect();
    let duplicate = near_duplicates(
        &candidates.iter().map(|e| &e.signature).collect::<Vec<_>>(),
        rules.near_duplicate_jaccard,
    );
    let kept: Vec<&Episode> = candidates
        .iter()
        .zip(&duplicate)
        .filter(|(_, d)| !**d)
        .map(|(e, _)| *e)
        .collect();
    let kept_ids: HashMap<&str, &Episode> = kept
        .iter()
        .map(|e| (e.trajectory_id.as_str(), *e))
        .collect();
    let grpo: Vec<Group> = groups(&kept, rules.min_group_size);
    let pairs = preference_pairs(&kept, &grpo, rules.preference_margin);
    let in_pairs: HashSet<&str> = pairs
        .iter()
        .flat_map(|p| [p.chosen.as_str(), p.rejected.as_str()])
        .collect();

    let mut out = Outputs::create()?;
    let mut counts = Counts {
        episodes_considered: candidates.len() as u64,
        duplicates_removed: (candidates.len() - kept.len()) as u64,
        agents_selected: selected.len() as u64,
        groups: grpo.len() as u64,
        zero_variance_groups: grpo.iter().filter(|g| g.zero_variance).count() as u64,
        ..Counts::default()
    };
    let mut conversations: [HashSet<String>; 2] = [HashSet::new(), HashSet::new()];
    let mut open: HashMap<String, Vec<Turn>> = HashMap::new();
    let mut few_shot = FewShot::default();
    let mut finished = Spill::create(&out.dir.path().join("pairs.spill"))?;
    let mut progress = Progress::start("writing splits", paths.len() as u64);
    for (object, path) in paths.iter().enumerate() {
        let bytes = objects
            .get(path)
            .await?
            .with_context(|| format!("{path} vanished"))?;
        for row in read_turns(bytes).with_context(|| format!("reading {path}"))? {
            let row: TurnRow = row.with_context(|| format!("reading {path}"))?;
            let Some(episode) = kept_ids.get(row.trajectory_id.as_str()) else {
                continue;
            };
            if catalog.owner.get(&row.trajectory_id) != Some(&object) {
                continue;
            }
            let split = split_of(
                &row.conversation_id,
                rules.split_seed,
                rules.validation_fraction,
            );
            let side = usize::from(split == Split::Validation);
            conversations[side].insert(row.conversation_id.clone());
            let first = row.turn_index == 0;
            match split {
                Split::Train => {
                    out.train.write(&row)?;
                    counts.train_rows += 1;
                    counts.train_trajectories += u64::from(first);
                }
                Split::Validation => {
                    out.validation.write(&row)?;
                    counts.validation_rows += 1;
                    counts.validation_trajectories += u64::from(first);
                }
            }
            let positive = rules.is_positive(episode);
            if !positive && !in_pairs.contains(row.trajectory_id.as_str()) {
                continue;
            }
            let last = row.turn_index + 1 >= row.turn_count;
            open.entry(row.trajectory_id.clone())
                .or_default()
                .push(Turn::from(&row));
            if !last {
                continue;
            }
            let messages = open.remove(&row.trajectory_id).unwrap_or_default();
            let Some((prompt, completion)) = prompt_and_completion(&messages) else {
                continue;
            };
            if positive {
                let line = json!({
                    "trajectory_id": row.trajectory_id,
                    "conversation_id": row.conversation_id,
                    "split": if side == 0 { "train" } else { "validation" },
                    "prompt": prompt,
                    "completion": [{"role": "assistant", "content": completion}],
                    "reward": episode.reward,
                });
                writeln!(out.sft, "{line}")?;
                counts.sft_examples += 1;
                if let Some(chat) = openai_messages(&messages) {
                    writeln!(out.openai[side], "{chat}")?;
                    counts.openai_chat_examples += 1;
                    if side == 0 {
                        few_shot.offer(&row.agent_id, &row.trajectory_id, episode.reward, chat);
                    }
                }
            }
            if in_pairs.contains(row.trajectory_id.as_str()) {
                finished.put(&row.trajectory_id, &prompt, &completion)?;
            }
        }
        progress.advance(1);
    }
    progress.finish();
    counts.train_conversations = conversations[0].len() as u64;
    counts.validation_conversations = conversations[1].len() as u64;

    let dir = out.dir.path().to_owned();
    out.train.finish()?.flush()?;
    out.validation.finish()?.flush()?;
    out.sft.flush()?;
    for file in &mut out.openai {
        file.flush()?;
    }
    let (few_shot, few_shot_examples) = few_shot.finish();
    counts.few_shot_examples = few_shot_examples;
    std::fs::write(
        dir.join("few-shot.json"),
        serde_json::to_vec_pretty(&few_shot)?,
    )?;
    let mut preferences = BufWriter::new(std::fs::File::create(dir.join("preferences.jsonl"))?);
    let mut finished = finished.finish()?;
    for pair in &pairs {
        let (Some((prompt, chosen)), Some((_, rejected))) =
            (finished.get(&pair.chosen)?, finished.get(&pair.rejected)?)
        else {
            continue;
        };
        let line = json!({
            "group_id": pair.group_id,
            "prompt": prompt,
            "chosen": [{"role": "assistant", "content": chosen}],
            "rejected": [{"role": "assistant", "content": rejected}],
            "chosen_reward": pair.chosen_reward,
            "rejected_reward": pair.rejected_reward,
            "chosen_trajectory_id": pair.chosen,
            "rejected_trajectory_id": pair.rejected,
        });
        writeln!(preferences, "{line}")?;
        counts.preference_pairs += 1;
    }
    preferences.flush()?;
    let mut group_lines = BufWriter::new(std::fs::File::create(dir.join("groups.jsonl"))?);
    for group in &grpo {
        writeln!(group_lines, "{}", serde_json::to_string(group)?)?;
    }
    group_lines.flush()?;

    let dataset_id = dataset_id(tenant, rules, &agents, paths, now_ms)?;
    let root = format!("{DATASETS_PREFIX}tenant={tenant}/{dataset_id}");
    let mut files = BTreeMap::new();
    for (name, file) in [
        ("few_shot", "few-shot.json"),
        ("groups", "groups.jsonl"),
        ("openai_chat", "openai-chat.jsonl"),
        ("openai_chat_validation", "openai-chat-validation.jsonl"),
        ("preferences", "preferences.jsonl"),
        ("sft", "sft.jsonl"),
        ("train", "train.parquet"),
        ("validation", "validation.parquet"),
    ] {
        let mut handle = std::fs::File::open(dir.join(file))?;
        let done = upload(objects, &format!("{root}/{file}"), &mut handle).await?;
        files.insert(
            name.to_owned(),
            FileEntry {
                path: done.path,
                bytes: done.bytes,
                sha256: done.sha256,
            },
        );
    }
    let mut whole = Sha256::new();
    for entry in files.values() {
        whole.update(entry.sha256.as_bytes());
    }
    let manifest = Manifest {
        manifest_version: MANIFEST_VERSION,
        schema_version: SCHEMA_VERSION,
        dataset_id,
        tenant: tenant.to_owned(),
        created_at_ms: now_ms,
        rules: rules.clone(),
        counts,
        files,
        content_hash: hex::encode(whole.finalize()),
        source_objects: paths.to_vec(),
        agents,
    };
    objects
        .put(
            &format!("{root}/manifest.json"),
            serde_json::to_vec_pretty(&manifest)?.into(),
        )
        .await?;
    Ok(Some(manifest))
}

/// `YYYY-MM-DD-<12 hex>`: the build date and a hash of the tenant, rules, agents taken and
/// source objects, so a rerun on the same inputs (a redelivered request, a retried schedule)
/// rewrites the same dataset instead of adding one.
fn dataset_id(
    tenant: &str,
    rules: &Rules,
    agents: &[AgentStats],
    paths: &[String],
    now_ms: i64,
) -> anyhow::Result<String> {
    let mut hash = Sha256::new();
    hash.update(tenant.as_bytes());
    hash.update(serde_json::to_vec(rules)?);
    for agent in agents.iter().filter(|a| a.selected) {
        hash.update(agent.agent_id.as_bytes());
        hash.update([0]);
    }
    for path in paths {
        hash.update(path.as_bytes());
        hash.update([0]);
    }
    Ok(format!(
        "{}-{}",
        utc_date(now_ms),
        &hex::encode(hash.finalize())[..12]
    ))
}
