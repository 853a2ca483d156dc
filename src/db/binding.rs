//! The binding itself: one shared `mongodb::Client`, one [`DbClient`] per client task.

use std::sync::Arc;
use std::time::Duration;

use mongodb::action::Action;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{
    Binary, Bson, Document, RawBinaryRef, RawBsonRef, RawDocument, RawDocumentBuf, doc,
};
use mongodb::options::{Acknowledgment, ClientOptions};
use mongodb::{Client, Collection, Database};

use super::errors::{ErrorClass, ErrorLog, classify, describe};
use super::url::{self, DEFAULT_URL, ResolvedUrl};
use super::{DbError, DbOutcome, ReadRecord};
use crate::measure::Status;
use crate::workload::prop;
use crate::workload::{FieldSelection, FieldValue, Properties};

/// Binding settings resolved from properties, before any connection is made.
#[derive(Debug, Clone)]
pub struct BindingSettings {
    /// The resolved URL (legacy options applied, pool size and selection timeout added).
    pub resolved: ResolvedUrl,
    /// Inserts per `insert_many` (`batchsize`, or `mongodb.batchsize`); 1 = `insert_one`.
    pub batch_size: usize,
    /// `mongodb.upsert`: inserts become `replace_one(upsert)` (or upsert updates when batched).
    pub upsert: bool,
}

impl BindingSettings {
    /// Reads the binding's properties for `threads` clients; `url_override` wins over `mongodb.url`.
    /// Errors name the property and where it was set.
    pub fn from_properties(
        props: &Properties,
        threads: usize,
        url_override: Option<&str>,
    ) -> Result<BindingSettings, DbError> {
        for key in [prop::BATCHSIZE.name, prop::MONGODB_BATCHSIZE.name] {
            props.parse::<i64>(key).map_err(DbError::Property)?;
        }
        let get = |k: &str| props.get(k).map(str::to_string);
        Self::from_lookup(&get, threads, url_override)
    }

    /// Reads the binding's properties through `get` (name → value) for `threads` clients.
    ///
    /// `url_override` (from `--uri` or an experiment's topology) wins over `mongodb.url`.
    pub fn from_lookup(
        get: &dyn Fn(&str) -> Option<String>,
        threads: usize,
        url_override: Option<&str>,
    ) -> Result<BindingSettings, DbError> {
        let url = match url_override {
            Some(u) => u.to_string(),
            None => get(prop::MONGODB_URL.name).unwrap_or_else(|| DEFAULT_URL.to_string()),
        };
        let resolved = url::resolve(url.trim(), get, threads)?;
        let set = [prop::BATCHSIZE.name, prop::MONGODB_BATCHSIZE.name]
            .into_iter()
            .find_map(|name| get(name).map(|v| (name, v)));
        let batch_size = match set {
            None => prop::BATCHSIZE.default,
            Some((name, v)) => match v.trim().parse::<i64>() {
                Ok(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX),
                // YCSB treats anything below 2 as "no batching".
                Ok(_) => 1,
                Err(_) => {
                    return Err(DbError::BadProperty {
                        property: name.to_string(),
                        message: format!("{v:?} is not an integer"),
                    });
                }
            },
        };
        let upsert =
            get(prop::MONGODB_UPSERT.name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        Ok(BindingSettings {
            resolved,
            batch_size,
            upsert,
        })
    }
}

/// How the deployment's members are dialled one by one: the user's string, with the
/// credentials' source the driver settled on (a `mongodb+srv://` TXT record may name it).
fn dial_of(url: &str, options: &ClientOptions) -> super::dial::Dial {
    let dial = super::dial::Dial::from_uri(url);
    match options
        .credential
        .as_ref()
        .and_then(|c| c.source.as_deref())
    {
        Some(source) => dial.with_auth_source(source),
        None => dial,
    }
}

/// `ping`, so an unreachable server is reported within the server-selection timeout instead
/// of at the first operation, and a server that turns the connection away (credentials, TLS)
/// is named with what to fix.
async fn check_answers(
    admin: &Database,
    hosts: &str,
    tls: bool,
    timeout: Duration,
) -> Result<(), DbError> {
    // The driver already bounds the ping by the selection timeout; the outer timeout is a
    // guard against a server that accepts the connection but never answers.
    let ping = tokio::time::timeout(
        timeout + Duration::from_secs(5),
        admin.run_command(doc! {"ping": 1}),
    )
    .await;
    let hosts = hosts.to_string();
    match ping {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(match super::errors::refusal(&e, tls) {
            Some(message) => DbError::Refused { hosts, message },
            None => DbError::Unreachable {
                hosts,
                message: describe(&e),
            },
        }),
        Err(_) => Err(DbError::Unreachable {
            hosts,
            message: format!("no answer to ping within {} s", timeout.as_secs() + 5),
        }),
    }
}

/// What to fix when `database` refuses this connection's user (or its lack of one) what every
/// user of it may ask; `None` when it answers, or fails for another reason.
pub(crate) async fn authorization_refusal(database: &Database, tls: bool) -> Option<String> {
    let ask = doc! {"listCollections": 1, "nameOnly": true, "authorizedCollections": true};
    let answer = tokio::time::timeout(Duration::from_secs(10), database.run_command(ask)).await;
    match answer {
        Ok(Err(e)) => super::errors::refusal(&e, tls),
        _ => None,
    }
}

/// The MongoDB binding, shared by every client task of a run (one driver `Client`, one pool).
#[derive(Clone)]
pub struct MongoBinding {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    database: Database,
    settings: BindingSettings,
    acknowledged: bool,
    log: ErrorLog,
    hosts: String,
    /// How this deployment's members are dialled one by one (the user's TLS and credentials).
    dial: super::dial::Dial,
}

impl std::fmt::Debug for MongoBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MongoBinding")
            .field(
                "url",
                &crate::redact::redact_uri(&self.inner.settings.resolved.url),
            )
            .field("database", &self.inner.settings.resolved.database)
            .finish()
    }
}

impl MongoBinding {
    /// Connects with resolved settings and checks the server answers (`ping`), so an
    /// unreachable server is reported within the server-selection timeout instead of at the first operation.
    /// Operation errors are said to `events` ([`crate::events::Event::OpError`]).
    pub async fn connect_with(
        settings: BindingSettings,
        events: crate::events::Sink,
    ) -> Result<MongoBinding, DbError> {
        let redacted = crate::redact::redact_uri(&settings.resolved.url);
        let options = ClientOptions::parse(&settings.resolved.url)
            .await
            .map_err(|e| DbError::BadUrl {
                url: redacted.clone(),
                message: describe(&e),
            })?;
        let dial = dial_of(&settings.resolved.url, &options);
        let hosts = options
            .hosts
            .iter()
            .map(|h| h.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let acknowledged = !matches!(
            options.write_concern.as_ref().and_then(|w| w.w.as_ref()),
            Some(Acknowledgment::Nodes(0))
        );
        let tls = matches!(options.tls, Some(mongodb::options::Tls::Enabled(_)));
        let timeout = options
            .server_selection_timeout
            .unwrap_or(Duration::from_millis(
                url::DEFAULT_SERVER_SELECTION_TIMEOUT_MS,
            ));
        let client = Client::with_options(options).map_err(|e| DbError::BadUrl {
            url: redacted.clone(),
            message: describe(&e),
        })?;
        let database = client.database(&settings.resolved.database);
        let admin = client.database("admin");
        check_answers(&admin, &hosts, tls, timeout).await?;
        // Refuses, before any work, a server that wants credentials the connection string did
        // not give: `ping` needs none, so it is asked what every user of the database may ask
        // (`listCollections`, names only, of the collections it may see), which an
        // unauthenticated connection is refused (Unauthorized). Other failures are left to the run.
        if let Some(message) = authorization_refusal(&database, tls).await {
            return Err(DbError::Refused { hosts, message });
        }
        Ok(MongoBinding {
            inner: Arc::new(Inner {
                client,
                database,
                settings,
                acknowledged,
                log: ErrorLog::new(events),
                hosts,
                dial,
            }),
        })
    }

    /// A per-client handle (owns that client's insert batch) for collection `table`.
    pub fn client(&self, table: &str) -> DbClient {
        DbClient {
            binding: self.clone(),
            coll: self.inner.database.collection::<RawDocumentBuf>(table),
            batch: Vec::new(),
        }
    }

    /// The settings in effect (URL is unredacted: redact before printing).
    pub fn settings(&self) -> &BindingSettings {
        &self.inner.settings
    }

    /// How this deployment's members are dialled one by one: the user's TLS, credentials and
    /// compressors (`db::dial`).
    pub(crate) fn dial(&self) -> &super::dial::Dial {
        &self.inner.dial
    }

    /// The members a run's liveness probes watch when the caller knows no topology, and a line
    /// for each advertised member this machine cannot reach (`db::discover`).
    pub(crate) async fn discover_members(&self) -> super::discover::Discovered {
        let admin = self.inner.client.database("admin");
        super::discover::members(&admin, &self.inner.hosts, &self.inner.dial).await
    }

    /// A line when the server has fewer connections left than `threads` (`db::discover`).
    pub(crate) async fn connections_notice(&self, threads: usize) -> Option<String> {
        let admin = self.inner.client.database("admin");
        super::discover::connections_notice(&admin, threads).await
    }

    /// Drops the benchmark database (`load --drop`), as the seed procedure does by hand before a
    /// fresh load.
    pub(crate) async fn drop_database(&self) -> Result<(), DbError> {
        self.inner
            .database
            .drop()
            .await
            .map_err(|e| DbError::Unreachable {
                hosts: self.inner.hosts.clone(),
                message: format!(
                    "dropping database {}: {}",
                    self.inner.settings.resolved.database,
                    describe(&e)
                ),
            })
    }

    /// Documents in `table`, from the collection's metadata (`count` without a query), or `None`
    /// when the server does not say.
    pub async fn document_count(&self, table: &str) -> Option<u64> {
        self.inner
            .database
            .collection::<Document>(table)
            .estimated_document_count()
            .await
            .ok()
    }

    /// What the server says it is: version, role (mongod / mongos / replica-set member), and
    /// whether it is microshard's stand-in, for the result document.
    pub async fn server_facts(&self) -> crate::measure::ServerFacts {
        let admin = self.inner.client.database("admin");
        let resolved = &self.inner.settings.resolved;
        let mut facts = crate::measure::ServerFacts {
            hosts: Some(self.inner.hosts.clone()),
            client_url: Some(crate::redact::redact_uri(&resolved.url)),
            client_max_pool_size: Some(resolved.max_pool_size),
            client_database: Some(resolved.database.clone()),
            write_concern: Some(
                url::write_concern_of(&resolved.url).unwrap_or_else(|| "server default".into()),
            ),
            read_preference: Some(
                url::query_option(&resolved.url, "readPreference")
                    .unwrap_or("primary")
                    .to_string(),
            ),
            ..Default::default()
        };
        let mut standin = false;
        match admin.run_command(doc! {"buildInfo": 1}).await {
            Ok(info) => {
                if let Ok(v) = info.get_str("version") {
                    facts.version = Some(v.to_string());
                    standin |= v.ends_with("-standin");
                }
                facts.git_version = info.get_str("gitVersion").ok().map(str::to_string);
                standin |= info.get_bool("microshardStandin").unwrap_or(false);
            }
            Err(e) => facts.build_info_error = Some(describe(&e)),
        }
        match super::reach::hello(&admin).await {
            Ok(hello) => {
                standin |= hello.get_bool("microshardStandin").unwrap_or(false);
                let role = if hello.get_str("msg").ok() == Some("isdbgrid") {
                    "mongos"
                } else if let Ok(set) = hello.get_str("setName") {
                    facts.replica_set = Some(set.to_string());
                    if hello.get_bool("isWritablePrimary").unwrap_or(false) {
                        "replica_set_primary"
                    } else {
                        "replica_set_secondary"
                    }
                } else {
                    "mongod"
                };
                facts.role = Some(role.to_string());
                facts.max_wire_version = hello.get_i32("maxWireVersion").ok();
            }
            Err(e) => facts.hello_error = Some(describe(&e)),
        }
        facts.standin = standin;
        facts
    }

    fn fail(&self, context: &str, err: &mongodb::error::Error) -> DbOutcome {
        let class = upsert_error_class(err).unwrap_or_else(|| classify(err));
        let operation = context.split(' ').next().unwrap_or(context);
        self.inner.log.report(
            &format!("{operation} {}", class.label()),
            &format!("{context}: {} [{}]", describe(err), class.label()),
        );
        DbOutcome::error(class)
    }
}

/// One client task's handle: the collection and this client's pending insert batch.
#[derive(Debug)]
pub struct DbClient {
    binding: MongoBinding,
    coll: Collection<RawDocumentBuf>,
    batch: Vec<RawDocumentBuf>,
}

/// Builds `{_id: key, <field>: Binary(subtype 0), ...}` with `_id` first, fields in the given order.
pub fn record_document(key: &str, values: &[FieldValue]) -> RawDocumentBuf {
    let mut doc = RawDocumentBuf::new();
    doc.append_ref("_id", RawBsonRef::String(key));
    append_binary_fields(&mut doc, values);
    doc
}

fn append_binary_fields(doc: &mut RawDocumentBuf, values: &[FieldValue]) {
    for v in values {
        doc.append_ref(
            &*v.name,
            RawBsonRef::Binary(RawBinaryRef {
                subtype: BinarySubtype::Generic,
                bytes: &v.bytes,
            }),
        );
    }
}

fn set_document(values: &[FieldValue]) -> Document {
    let mut fields = Document::new();
    for v in values {
        fields.insert(
            &*v.name,
            Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: v.bytes.clone(),
            }),
        );
    }
    doc! {"$set": fields}
}

fn projection(fields: &FieldSelection) -> Option<Document> {
    fields.as_ref().map(|names| {
        let mut p = Document::new();
        for n in names {
            p.insert(&**n, 1);
        }
        p
    })
}

/// Copies the binary fields of a returned document (YCSB keeps only `Binary` values).
fn binary_fields(doc: &RawDocument) -> Vec<(String, Vec<u8>)> {
    doc.iter()
        .filter_map(|e| e.ok())
        .filter_map(|(name, value)| match value {
            RawBsonRef::Binary(b) if name != "_id" => Some((name.to_string(), b.bytes.to_vec())),
            _ => None,
        })
        .collect()
}

/// Reads a cursor to its end (multi-key reads and scans), keeping each document's `_id` and fields
/// in `out` when the caller wants them; returns how many documents came back.
async fn drain(
    cursor: mongodb::error::Result<mongodb::Cursor<RawDocumentBuf>>,
    mut out: Option<&mut Vec<ReadRecord>>,
) -> mongodb::error::Result<u64> {
    let mut cursor = cursor?;
    let mut found = 0;
    while cursor.advance().await? {
        found += 1;
        if let Some(out) = out.as_deref_mut() {
            let doc = cursor.current();
            out.push((id_of(doc), binary_fields(doc)));
        }
    }
    Ok(found)
}

fn id_of(doc: &RawDocument) -> String {
    match doc.get("_id") {
        Ok(Some(RawBsonRef::String(s))) => s.to_string(),
        Ok(Some(other)) => format!("{other:?}"),
        _ => String::new(),
    }
}

impl DbClient {
    /// Inserts one record (YCSB `insert`): `insert_one`, `replace_one(upsert)` with `mongodb.upsert`,
    /// or with `batchsize` > 1 buffers and returns `BATCHED_OK` until the batch is full.
    pub async fn insert(&mut self, key: &str, values: &[FieldValue]) -> DbOutcome {
        let doc = record_document(key, values);
        let batch_size = self.binding.inner.settings.batch_size;
        if batch_size > 1 {
            self.batch.push(doc);
            if self.batch.len() < batch_size {
                return DbOutcome::status(Status::BatchedOk);
            }
            return self.flush().await;
        }
        let result = if self.binding.inner.settings.upsert {
            let replace = self.coll.replace_one(doc! {"_id": key}, &doc);
            replace.upsert(true).await.map(drop)
        } else {
            self.coll.insert_one(&doc).await.map(drop)
        };
        match result {
            Ok(()) => DbOutcome::ok(),
            Err(e) => self.binding.fail(&format!("insert {key}"), &e),
        }
    }

    /// Number of inserts waiting in this client's batch.
    pub fn pending_inserts(&self) -> usize {
        self.batch.len()
    }

    /// Sends the pending batch (unordered), if any. `OK` when empty.
    pub(crate) async fn flush(&mut self) -> DbOutcome {
        if self.batch.is_empty() {
            return DbOutcome::ok();
        }
        let batch = std::mem::take(&mut self.batch);
        let n = batch.len();
        let result = if self.binding.inner.settings.upsert {
            self.upsert_many(batch).await
        } else {
            self.coll
                .insert_many(batch)
                .ordered(false)
                .await
                .map(|_| ())
        };
        match result {
            Ok(()) => DbOutcome::ok(),
            Err(e) => self
                .binding
                .fail(&format!("Exception while trying bulk insert with {n}"), &e),
        }
    }

    /// One unordered `update` command of upserts `{_id}` → `{$set: fields}` (YCSB's batched upsert).
    async fn upsert_many(&self, batch: Vec<RawDocumentBuf>) -> mongodb::error::Result<()> {
        let mut updates = Vec::with_capacity(batch.len());
        for raw in &batch {
            let full = raw.to_document()?;
            let mut fields = full.clone();
            let id = fields.remove("_id").unwrap_or(Bson::Null);
            updates.push(Bson::Document(
                doc! {"q": {"_id": id}, "u": {"$set": fields}, "upsert": true},
            ));
        }
        let mut command = doc! {
            "update": self.coll.name(),
            "updates": updates,
            "ordered": false,
        };
        if let Some(wc) = self.binding.inner.database.write_concern() {
            let wc = mongodb::bson::to_bson(wc)?;
            command.insert("writeConcern", wc);
        }
        let reply = self.binding.inner.database.run_command(command).await?;
        match upsert_reply_error(&reply) {
            Some(e) => Err(mongodb::error::Error::custom(e)),
            None => Ok(()),
        }
    }

    /// Reads one record (`find_one`) or, with several keys, all of them with one `$in` query;
    /// `NOT_FOUND` when any is missing. Returned fields are appended to `out` when given.
    pub async fn read(
        &mut self,
        keys: &[String],
        fields: &FieldSelection,
        out: Option<&mut Vec<ReadRecord>>,
    ) -> DbOutcome {
        match keys {
            [] => DbOutcome::status(Status::BadRequest),
            [key] => {
                let find = self.coll.find_one(doc! {"_id": key.as_str()});
                let find = find.optional(projection(fields), |f, p| f.projection(p));
                match find.await {
                    Ok(Some(doc)) => {
                        if let Some(out) = out {
                            out.push((key.clone(), binary_fields(&doc)));
                        }
                        DbOutcome::ok()
                    }
                    Ok(None) => DbOutcome::status(Status::NotFound),
                    Err(e) => self.binding.fail(&format!("read {key}"), &e),
                }
            }
            many => {
                let ids: Vec<Bson> = many.iter().map(|k| Bson::String(k.clone())).collect();
                // `limit` with the batch size: mongod fills a first batch of n and keeps the
                // cursor open (one more getMore per read) unless the limit closes it; the
                // driver then sends batchSize n + 1, so mongos too asks past the n-th document
                // and closes (`docs/mongodb-versions.md`, "Conformance").
                let n = many.len();
                let find = self
                    .coll
                    .find(doc! {"_id": {"$in": ids}})
                    .limit(i64::try_from(n).unwrap_or(i64::MAX))
                    .batch_size(u32::try_from(n).unwrap_or(u32::MAX))
                    .optional(projection(fields), |f, p| f.projection(p));
                let found = match drain(find.await, out).await {
                    Ok(found) => found,
                    Err(e) => return self.binding.fail(&format!("read {} keys", many.len()), &e),
                };
                if found < many.len() as u64 {
                    DbOutcome::status(Status::NotFound)
                } else {
                    DbOutcome::ok()
                }
            }
        }
    }

    /// Reads up to `count` records in `_id` order from `start_key`. An empty result is `ERROR`,
    /// as in YCSB's synchronous MongoDB binding (the async one said `NOT_FOUND`).
    pub async fn scan(
        &mut self,
        start_key: &str,
        count: u64,
        fields: &FieldSelection,
        out: Option<&mut Vec<ReadRecord>>,
    ) -> DbOutcome {
        let limit = i64::try_from(count).unwrap_or(i64::MAX);
        let find = self
            .coll
            .find(doc! {"_id": {"$gte": start_key}})
            .sort(doc! {"_id": 1})
            .limit(limit)
            .batch_size(u32::try_from(count.max(1)).unwrap_or(u32::MAX))
            .optional(projection(fields), |f, p| f.projection(p));
        let found = match drain(find.await, out).await {
            Ok(found) => found,
            Err(e) => return self.binding.fail(&format!("scan {start_key}"), &e),
        };
        if found == 0 {
            self.binding.inner.log.report(
                "scan-empty",
                &format!("Nothing found in scan for key {start_key}"),
            );
            return DbOutcome::status(Status::Error);
        }
        DbOutcome::ok()
    }

    /// `update_one({_id}, {$set: ...})`; `NOT_FOUND` when nothing matched (acknowledged writes only).
    pub async fn update(&mut self, key: &str, values: &[FieldValue]) -> DbOutcome {
        match self
            .coll
            .update_one(doc! {"_id": key}, set_document(values))
            .await
        {
            Ok(r) if self.binding.inner.acknowledged && r.matched_count == 0 => {
                self.binding.inner.log.report(
                    "update-unmatched",
                    &format!("Nothing updated for key {key}"),
                );
                DbOutcome::status(Status::NotFound)
            }
            Ok(_) => DbOutcome::ok(),
            Err(e) => self.binding.fail(&format!("update {key}"), &e),
        }
    }

    /// `delete_one({_id})`; `NOT_FOUND` when nothing was deleted (acknowledged writes only).
    pub async fn delete(&mut self, key: &str) -> DbOutcome {
        match self.coll.delete_one(doc! {"_id": key}).await {
            Ok(r) if self.binding.inner.acknowledged && r.deleted_count == 0 => {
                DbOutcome::status(Status::NotFound)
            }
            Ok(_) => DbOutcome::ok(),
            Err(e) => self.binding.fail(&format!("delete {key}"), &e),
        }
    }

    /// `delete_many({_id: {$in: keys}})`: removes documents a run inserted (they need not all
    /// exist); the number deleted.
    pub async fn delete_keys(&mut self, keys: &[String]) -> Result<u64, DbError> {
        let filter = doc! {"_id": {"$in": keys}};
        match self.coll.delete_many(filter).await {
            Ok(r) => Ok(r.deleted_count),
            Err(e) => Err(DbError::Failed {
                what: format!("deleting {} inserted keys", keys.len()),
                message: describe(&e),
            }),
        }
    }

    /// End of this client's phase: flushes the last partial insert batch (YCSB forgets it).
    pub async fn cleanup(&mut self) -> DbOutcome {
        self.flush().await
    }
}

/// A write error, or a write-concern error, reported inside a batched upsert's reply.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("batched upsert: {what}code {code}: {message}")]
struct UpsertBatchError {
    /// "write concern " for a `writeConcernError`, empty for a write error.
    what: &'static str,
    code: i32,
    message: String,
}

/// The failure in a batched upsert's `update` reply, if any: its first write error, else its
/// `writeConcernError`. `run_command` returns the reply as it is, so this is the check the
/// driver's own write paths make: a write that missed its write concern (`w: "majority"` with
/// `wtimeout`) is an error for the client, as Java YCSB's `bulkWrite` raises it
/// (`docs/mongodb-versions.md`, "Conformance").
fn upsert_reply_error(reply: &Document) -> Option<UpsertBatchError> {
    let (what, failure) = if let Ok(errors) = reply.get_array("writeErrors")
        && let Some(Bson::Document(first)) = errors.first()
    {
        ("", first)
    } else {
        (
            "write concern ",
            reply.get_document("writeConcernError").ok()?,
        )
    };
    Some(UpsertBatchError {
        what,
        code: failure.get_i32("code").unwrap_or(0),
        message: failure
            .get_str("errmsg")
            .unwrap_or("write error")
            .to_string(),
    })
}

/// The class of an error raised by [`DbClient::upsert_many`] (it travels as a custom driver error).
pub(crate) fn upsert_error_class(err: &mongodb::error::Error) -> Option<ErrorClass> {
    err.get_custom::<UpsertBatchError>()
        .map(|e| super::errors::classify_code(e.code))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fv(name: &str, bytes: &[u8]) -> FieldValue {
        FieldValue {
            name: Arc::from(name),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn a_batched_upsert_reply_fails_on_a_write_error_or_a_write_concern_error() {
        assert_eq!(upsert_reply_error(&doc! {"n": 10, "ok": 1.0}), None);
        let wce = doc! {"code": 64, "codeName": "WriteConcernFailed", "errmsg": "waiting for replication timed out", "errInfo": {"wtimeout": true}};
        let e = upsert_reply_error(&doc! {"n": 10, "writeConcernError": wce.clone(), "ok": 1.0});
        let e = e.expect("a writeConcernError fails the batch");
        assert_eq!((e.what, e.code), ("write concern ", 64));
        assert!(e.to_string().contains("waiting for replication timed out"));
        let dup = doc! {"index": 3, "code": 11000, "errmsg": "E11000 duplicate key"};
        let both = doc! {"n": 9, "writeErrors": [dup], "writeConcernError": wce, "ok": 1.0};
        assert_eq!(upsert_reply_error(&both).map(|e| e.code), Some(11000));
    }

    #[test]
    fn document_has_id_first_then_binary_fields_in_order() {
        let doc = record_document("user1", &[fv("field1", b"ab"), fv("field0", b"c")]);
        let names: Vec<&str> = doc.iter().map(|e| e.unwrap().0).collect();
        assert_eq!(names, ["_id", "field1", "field0"]);
        match doc.get("field1").unwrap().unwrap() {
            RawBsonRef::Binary(b) => {
                assert_eq!(b.subtype, BinarySubtype::Generic);
                assert_eq!(b.bytes, b"ab");
            }
            other => panic!("not binary: {other:?}"),
        }
        assert_eq!(id_of(&doc), "user1");
        assert_eq!(
            binary_fields(&doc),
            vec![
                ("field1".to_string(), b"ab".to_vec()),
                ("field0".to_string(), b"c".to_vec())
            ]
        );
    }

    #[test]
    fn update_sets_binary_fields() {
        let d = set_document(&[fv("field3", b"xyz")]);
        let set = d.get_document("$set").unwrap();
        assert_eq!(
            set.get("field3"),
            Some(&Bson::Binary(Binary {
                subtype: BinarySubtype::Generic,
                bytes: b"xyz".to_vec()
            }))
        );
    }

    #[test]
    fn projection_only_for_subsets() {
        assert!(projection(&None).is_none());
        let p = projection(&Some(vec![Arc::from("field4")])).unwrap();
        assert_eq!(p, doc! {"field4": 1});
    }

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        Properties::lookup_of(pairs)
    }

    #[test]
    fn settings_read_batchsize_and_upsert() {
        let s = BindingSettings::from_lookup(&lookup(&[("batchsize", "100")]), 4, None).unwrap();
        assert_eq!(s.batch_size, 100);
        assert!(!s.upsert);
        let s = BindingSettings::from_lookup(
            &lookup(&[("mongodb.batchsize", "7"), ("mongodb.upsert", "TRUE")]),
            4,
            Some("mongodb://127.0.0.1:1/x"),
        )
        .unwrap();
        assert_eq!(s.batch_size, 7);
        assert!(s.upsert);
        assert_eq!(s.resolved.database, "x");
        let err =
            BindingSettings::from_lookup(&lookup(&[("batchsize", "ten")]), 4, None).unwrap_err();
        assert!(err.to_string().contains("batchsize"), "{err}");
        let err =
            BindingSettings::from_lookup(&lookup(&[("mongodb.url", "localhost:27017")]), 4, None)
                .unwrap_err();
        assert!(err.to_string().contains("mongodb.url"), "{err}");
    }
}
