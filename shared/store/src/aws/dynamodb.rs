//! [`Table`] on DynamoDB: every put is an `UpdateItem` that bumps the version, so one
//! request does the conditional write and returns the new version.

use std::collections::HashMap;

use anyhow::Context;
use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_dynamodb::{
    Client,
    error::SdkError,
    types::{
        AttributeValue, ConditionCheck, Delete, KeysAndAttributes, ReturnValue, TransactWriteItem,
        Update,
    },
};

use super::{AwsSettings, Deferred};
use crate::{
    StoreError,
    ports::{Condition, Item, Key, Page, Put, Query, SortRange, Table, Write},
    retry::{MAX_ATTEMPTS, back_off},
    validate::{check_query, check_transaction, encode_cursor},
};

/// The DynamoDB table.
#[derive(Clone)]
pub struct DynamoTable {
    /// Resolved once and shared by every clone: the client, or the work of building it.
    client: Deferred<Client>,
    name: String,
}

impl DynamoTable {
    /// The table `name`, with a client configured by `settings`, built on first use (see
    /// [`Deferred`]): routes that never touch the table (`/health`, validation errors) do not
    /// wait for it.
    pub fn connect(settings: &AwsSettings, name: &str) -> Self {
        Self::deferred(&settings.deferred(), name)
    }

    /// The table `name`, with a client built from `config` on first use.
    pub fn deferred(config: &Deferred<SdkConfig>, name: &str) -> Self {
        Self {
            client: config.client(Client::new),
            name: name.to_owned(),
        }
    }

    /// The table `name` reached through `client`.
    pub fn new(client: Client, name: &str) -> Self {
        Self {
            client: Deferred::ready(client),
            name: name.to_owned(),
        }
    }
}

fn now_s() -> u64 {
    crate::clock::now_ms() / 1_000
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn key_map(key: &Key) -> HashMap<String, AttributeValue> {
    HashMap::from([("pk".to_owned(), s(&key.pk)), ("sk".to_owned(), s(&key.sk))])
}

/// A condition expression with the names and values it uses (DynamoDB rejects unused ones).
#[derive(Default)]
struct Expr {
    text: Option<String>,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

fn condition_expr(condition: Condition, now: u64) -> Expr {
    let mut e = Expr::default();
    let live = "(attribute_not_exists(#exp) OR #exp > :now)";
    let text = match condition {
        Condition::None => return e,
        Condition::Absent => "(attribute_not_exists(pk) OR #exp <= :now)".to_owned(),
        Condition::Exists => format!("attribute_exists(pk) AND {live}"),
        Condition::Version(v) => {
            e.names.insert("#v".into(), "v".into());
            e.values.insert(":ver".into(), n(v));
            format!("#v = :ver AND {live}")
        }
    };
    e.names.insert("#exp".into(), "expires_at".into());
    e.values.insert(":now".into(), n(now));
    e.text = Some(text);
    e
}

/// The update of a put: document, expiry, version + 1, under the put's condition.
fn put_expr(put: &Put, now: u64) -> Result<(String, Expr), StoreError> {
    let mut e = condition_expr(put.condition, now);
    let doc: AttributeValue = serde_dynamo::to_attribute_value(&put.doc)
        .map_err(|err| StoreError::Invalid(format!("document not storable: {err}")))?;
    e.names.insert("#doc".into(), "doc".into());
    e.names.insert("#v".into(), "v".into());
    e.names.insert("#exp".into(), "expires_at".into());
    e.values.insert(":doc".into(), doc);
    e.values.insert(":one".into(), n(1));
    let update = match put.expires_at {
        Some(at) => {
            e.values.insert(":at".into(), n(at));
            "SET #doc = :doc, #exp = :at ADD #v :one"
        }
        None => "SET #doc = :doc REMOVE #exp ADD #v :one",
    };
    Ok((update.to_owned(), e))
}

fn opt_map<T: Clone>(m: HashMap<String, T>) -> Option<HashMap<String, T>> {
    (!m.is_empty()).then_some(m)
}

fn to_item(mut m: HashMap<String, AttributeValue>) -> Result<Item, StoreError> {
    let corrupt = |what: &str| StoreError::Backend(anyhow::anyhow!("corrupt item: {what}"));
    let text = |m: &mut HashMap<String, AttributeValue>, k: &str| match m.remove(k) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(corrupt(k)),
    };
    let num = |m: &HashMap<String, AttributeValue>, k: &str| match m.get(k) {
        Some(AttributeValue::N(v)) => v.parse::<u64>().map(Some).map_err(|_| corrupt(k)),
        None => Ok(None),
        _ => Err(corrupt(k)),
    };
    let key = Key::new(text(&mut m, "pk")?, text(&mut m, "sk")?);
    let version = num(&m, "v")?.ok_or_else(|| corrupt("v"))?;
    let expires_at = num(&m, "expires_at")?;
    let doc = m.remove("doc").ok_or_else(|| corrupt("doc"))?;
    let doc = serde_dynamo::from_attribute_value(doc)
        .map_err(|e| StoreError::Backend(anyhow::Error::new(e).context("corrupt item document")))?;
    Ok(Item {
        key,
        version,
        doc,
        expires_at,
    })
}

fn is_live(item: &Item, now: u64) -> bool {
    item.expires_at.is_none_or(|e| e > now)
}

/// Maps an SDK error: condition failures and conflicts to their variants, the rest to Backend.
fn map_err<E>(err: SdkError<E>, what: &'static str) -> StoreError
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let code = err
        .as_service_error()
        .and_then(|e| e.code())
        .unwrap_or_default()
        .to_owned();
    match code.as_str() {
        "ConditionalCheckFailedException" => StoreError::ConditionFailed { index: None },
        "TransactionConflictException" => StoreError::Conflict,
        "ValidationException" => StoreError::Invalid(
            err.as_service_error()
                .and_then(|e| e.message())
                .unwrap_or("rejected by DynamoDB")
                .to_owned(),
        ),
        _ => StoreError::Backend(anyhow::Error::new(err).context(what)),
    }
}

#[async_trait]
impl Table for DynamoTable {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get()
            .await
            .get_item()
            .table_name(&self.name)
            .set_key(Some(key_map(key)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| map_err(e, "GetItem"))?;
        let now = now_s();
        Ok(out
            .item
            .map(to_item)
            .transpose()?
            .filter(|i| is_live(i, now)))
    }

    async fn get_many(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        // BatchGetItem takes 100 distinct keys per request and may hand some back unprocessed
        // under throttling: those are asked again, with back-off.
        let mut unique: Vec<&Key> = keys.iter().collect();
        unique.sort();
        unique.dedup();
        let mut found: HashMap<Key, Item> = HashMap::new();
        for chunk in unique.chunks(100) {
            let mut request = KeysAndAttributes::builder()
                .set_keys(Some(chunk.iter().map(|k| key_map(k)).collect()))
                .consistent_read(true)
                .build()
                .map_err(|e| StoreError::Backend(e.into()))?;
            let mut attempt = 0;
            loop {
                let out = self
                    .client
                    .get()
                    .await
                    .batch_get_item()
                    .request_items(&self.name, request)
                    .send()
                    .await
                    .map_err(|e| map_err(e, "BatchGetItem"))?;
                let items = out.responses.and_then(|mut r| r.remove(&self.name));
                for m in items.unwrap_or_default() {
                    let item = to_item(m)?;
                    found.insert(item.key.clone(), item);
                }
                match out.unprocessed_keys.and_then(|mut u| u.remove(&self.name)) {
                    Some(rest) if !rest.keys().is_empty() => {
                        if attempt + 1 >= MAX_ATTEMPTS {
                            return Err(StoreError::Backend(anyhow::anyhow!(
                                "BatchGetItem left keys unprocessed after {MAX_ATTEMPTS} attempts"
                            )));
                        }
                        back_off(attempt).await;
                        attempt += 1;
                        request = rest;
                    }
                    _ => break,
                }
            }
        }
        let now = now_s();
        Ok(keys
            .iter()
            .map(|k| found.get(k).filter(|i| is_live(i, now)).cloned())
            .collect())
    }

    async fn put(&self, put: Put) -> Result<u64, StoreError> {
        let (update, e) = put_expr(&put, now_s())?;
        let out = self
            .client
            .get()
            .await
            .update_item()
            .table_name(&self.name)
            .set_key(Some(key_map(&put.key)))
            .update_expression(update)
            .set_condition_expression(e.text)
            .set_expression_attribute_names(opt_map(e.names))
            .set_expression_attribute_values(opt_map(e.values))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await
            .map_err(|e| map_err(e, "UpdateItem"))?;
        match out.attributes.as_ref().and_then(|a| a.get("v")) {
            Some(AttributeValue::N(v)) => v
                .parse()
                .context("version is not a number")
                .map_err(StoreError::Backend),
            _ => Err(StoreError::Backend(anyhow::anyhow!(
                "UpdateItem returned no version"
            ))),
        }
    }

    async fn delete(&self, key: &Key, condition: Condition) -> Result<(), StoreError> {
        let e = condition_expr(condition, now_s());
        self.client
            .get()
            .await
            .delete_item()
            .table_name(&self.name)
            .set_key(Some(key_map(key)))
            .set_condition_expression(e.text)
            .set_expression_attribute_names(opt_map(e.names))
            .set_expression_attribute_values(opt_map(e.values))
            .send()
            .await
            .map_err(|e| map_err(e, "DeleteItem"))?;
        Ok(())
    }

    async fn query(&self, query: &Query) -> Result<Page, StoreError> {
        let after = check_query(query)?;
        let now = now_s();
        let mut values = HashMap::from([
            (":pk".to_owned(), s(&query.pk)),
            (":now".to_owned(), n(now)),
        ]);
        let key_condition = match &query.range {
            SortRange::All => "pk = :pk".to_owned(),
            SortRange::BeginsWith(p) => {
                values.insert(":p".into(), s(p));
                "pk = :pk AND begins_with(sk, :p)".to_owned()
            }
            SortRange::Between(a, b) => {
                values.insert(":a".into(), s(a));
                values.insert(":b".into(), s(b));
                "pk = :pk AND sk BETWEEN :a AND :b".to_owned()
            }
        };
        let start = after.map(|sk| key_map(&Key::new(query.pk.clone(), sk)));
        let mut items = Vec::new();
        let mut start = start;
        // DynamoDB applies Limit before the expiry filter; keep reading until the page is
        // full or the partition is done, so pages have the same meaning on both adapters.
        loop {
            let out = self
                .client
                .get()
                .await
                .query()
                .table_name(&self.name)
                .key_condition_expression(&key_condition)
                .filter_expression("attribute_not_exists(#exp) OR #exp > :now")
                .expression_attribute_names("#exp", "expires_at")
                .set_expression_attribute_values(Some(values.clone()))
                .set_exclusive_start_key(start.take())
                .scan_index_forward(query.ascending)
                .consistent_read(true)
                .limit((query.limit + 1 - items.len()) as i32)
                .send()
                .await
                .map_err(|e| map_err(e, "Query"))?;
            for m in out.items.unwrap_or_default() {
                items.push(to_item(m)?);
            }
            match out.last_evaluated_key {
                Some(k) if items.len() <= query.limit => start = Some(k),
                _ => break,
            }
        }
        let next = if items.len() > query.limit {
            items.truncate(query.limit);
            items.last().map(|i| encode_cursor(&i.key.sk))
        } else {
            None
        };
        Ok(Page { items, next })
    }

    async fn transact(&self, writes: Vec<Write>) -> Result<(), StoreError> {
        check_transaction(&writes)?;
        let now = now_s();
        let mut items = Vec::with_capacity(writes.len());
        for w in &writes {
            let item = match w {
                Write::Put(p) => {
                    let (update, e) = put_expr(p, now)?;
                    TransactWriteItem::builder().update(
                        Update::builder()
                            .table_name(&self.name)
                            .set_key(Some(key_map(&p.key)))
                            .update_expression(update)
                            .set_condition_expression(e.text)
                            .set_expression_attribute_names(opt_map(e.names))
                            .set_expression_attribute_values(opt_map(e.values))
                            .build()
                            .context("building an update")?,
                    )
                }
                Write::Delete { key, condition } => {
                    let e = condition_expr(*condition, now);
                    TransactWriteItem::builder().delete(
                        Delete::builder()
                            .table_name(&self.name)
                            .set_key(Some(key_map(key)))
                            .set_condition_expression(e.text)
                            .set_expression_attribute_names(opt_map(e.names))
                            .set_expression_attribute_values(opt_map(e.values))
                            .build()
                            .context("building a delete")?,
                    )
                }
                Write::Check { key, condition } => {
                    let e = condition_expr(*condition, now);
                    // A ConditionCheck needs an expression: "always" is written as pk existing or not.
                    let text = e.text.unwrap_or_else(|| {
                        "attribute_exists(pk) OR attribute_not_exists(pk)".into()
                    });
                    TransactWriteItem::builder().condition_check(
                        ConditionCheck::builder()
                            .table_name(&self.name)
                            .set_key(Some(key_map(key)))
                            .condition_expression(text)
                            .set_expression_attribute_names(opt_map(e.names))
                            .set_expression_attribute_values(opt_map(e.values))
                            .build()
                            .context("building a condition check")?,
                    )
                }
            };
            items.push(item.build());
        }
        let result = self
            .client
            .get()
            .await
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        let Err(err) = result else { return Ok(()) };
        if let Some(aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c)) =
            err.as_service_error()
        {
            let reasons = c.cancellation_reasons();
            if let Some(i) = reasons
                .iter()
                .position(|r| r.code() == Some("ConditionalCheckFailed"))
            {
                return Err(StoreError::ConditionFailed { index: Some(i) });
            }
            if reasons.iter().any(|r| r.code() == Some("TransactionConflict")) {
                return Err(StoreError::Conflict);
            }
        }
        Err(map_err(err, "TransactWriteItems"))
    }
}
