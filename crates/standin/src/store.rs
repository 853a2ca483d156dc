//! The in-memory storage: databases of collections of documents ordered by `_id`.

use std::collections::BTreeMap;

use mongodb::bson::{Binary, Bson, Document, doc, oid::ObjectId};

use super::cmderr::{CmdError, CmdResult, code};
use super::query::{IdPlan, Matcher, Projection, Sort, Update};
use super::value::{Key, bson_size, new_uuid};

/// What a find asks of the store beyond its filter: the order, the window and the projection.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FindOptions<'a> {
    pub sort: Option<&'a Sort>,
    pub skip: usize,
    pub limit: Option<usize>,
    pub projection: Option<&'a Projection>,
}

/// One collection: documents by `_id`, plus what `createIndexes` recorded.
#[derive(Debug, Clone)]
pub(crate) struct Collection {
    /// Documents ordered by `_id`.
    pub docs: BTreeMap<Key, Document>,
    /// Sum of the BSON sizes of the documents (`storageStats.size`).
    pub data_bytes: usize,
    /// Index specifications, `_id_` first.
    pub indexes: Vec<Document>,
    /// The collection UUID (listCollections `info.uuid`).
    pub uuid: Binary,
    /// Options given to `create`.
    pub options: Document,
}

impl Collection {
    fn new(options: Document) -> Self {
        Collection {
            docs: BTreeMap::new(),
            data_bytes: 0,
            indexes: vec![doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"}],
            uuid: new_uuid(),
            options,
        }
    }

    /// An estimate of the index bytes, so `totalIndexSize` grows with the data.
    pub(crate) fn index_bytes(&self) -> usize {
        let per_doc: usize = 24;
        self.docs.len() * per_doc * self.indexes.len()
    }

    fn candidates<'a>(
        &'a self,
        plan: IdPlan,
    ) -> Box<dyn DoubleEndedIterator<Item = &'a Document> + 'a> {
        match plan {
            IdPlan::All => Box::new(self.docs.values()),
            IdPlan::Points(keys) => {
                Box::new(keys.into_iter().filter_map(move |k| self.docs.get(&k)))
            }
            IdPlan::Range(lo, hi) => Box::new(self.docs.range((lo, hi)).map(|(_, d)| d)),
        }
    }

    /// The documents matching `m`, in `_id` order.
    pub(crate) fn matching<'a>(
        &'a self,
        m: &'a Matcher,
    ) -> impl DoubleEndedIterator<Item = &'a Document> + 'a {
        let plan = m.id_plan();
        self.candidates(plan).filter(move |d| m.matches(d))
    }

    fn matching_keys(&self, m: &Matcher, limit: Option<usize>) -> Vec<Key> {
        let mut out = Vec::new();
        for d in self.matching(m) {
            if let Some(id) = d.get("_id") {
                out.push(Key(id.clone()));
            }
            if limit.is_some_and(|l| out.len() >= l) {
                break;
            }
        }
        out
    }

    /// Inserts one document, assigning an ObjectId `_id` when it has none.
    pub(crate) fn insert(&mut self, mut doc: Document) -> CmdResult<()> {
        let id = match doc.get("_id") {
            Some(Bson::Array(_)) => {
                return Err(CmdError::new(
                    code::INVALID_ID_FIELD,
                    "can't use an array for _id",
                ));
            }
            Some(id) => id.clone(),
            None => {
                let id = Bson::ObjectId(ObjectId::new());
                let mut with_id = doc! {"_id": id.clone()};
                with_id.extend(doc);
                doc = with_id;
                id
            }
        };
        let size = bson_size(&doc);
        if size > 16 * 1024 * 1024 {
            return Err(CmdError::new(
                code::BSON_OBJECT_TOO_LARGE,
                format!("object to insert too large. size in bytes: {size}, max size: 16777216"),
            ));
        }
        let key = Key(id);
        if self.docs.contains_key(&key) {
            return Err(CmdError::new(
                code::DUPLICATE_KEY,
                format!(
                    "E11000 duplicate key error collection: {{ns}} index: _id_ dup key: {{ _id: {} }}",
                    key.0
                ),
            ));
        }
        self.data_bytes += size;
        self.docs.insert(key, doc);
        Ok(())
    }

    fn replace_doc(&mut self, key: &Key, doc: Document) {
        let new_size = bson_size(&doc);
        if let Some(old) = self.docs.insert(key.clone(), doc) {
            self.data_bytes = self.data_bytes.saturating_sub(bson_size(&old));
        }
        self.data_bytes += new_size;
    }

    /// Removes up to `limit` (0 = all) matching documents; returns how many.
    pub(crate) fn delete(&mut self, m: &Matcher, limit: usize) -> usize {
        let keys = self.matching_keys(m, if limit == 0 { None } else { Some(limit) });
        for k in &keys {
            if let Some(old) = self.docs.remove(k) {
                self.data_bytes = self.data_bytes.saturating_sub(bson_size(&old));
            }
        }
        keys.len()
    }
}

/// The outcome of one update statement.
#[derive(Debug, Default, Clone)]
pub(crate) struct UpdateOutcome {
    /// Documents matched (`n` without upserts).
    pub matched: u64,
    /// Documents changed.
    pub modified: u64,
    /// The `_id` of an upserted document.
    pub upserted: Option<Bson>,
}

/// All databases of one stand-in.
#[derive(Debug, Default)]
pub(crate) struct Store {
    /// Databases by name, each a map of collections by name.
    pub dbs: BTreeMap<String, BTreeMap<String, Collection>>,
}

impl Store {
    /// A collection, if it exists.
    pub(crate) fn coll(&self, db: &str, name: &str) -> Option<&Collection> {
        self.dbs.get(db)?.get(name)
    }

    /// A collection, created (implicitly, as MongoDB does on first write) when missing.
    pub(crate) fn coll_mut(&mut self, db: &str, name: &str) -> (&mut Collection, bool) {
        let colls = self.dbs.entry(db.to_string()).or_default();
        let created = !colls.contains_key(name);
        let c = colls
            .entry(name.to_string())
            .or_insert_with(|| Collection::new(Document::new()));
        (c, created)
    }

    /// Explicit `create`; NamespaceExists (48) when present.
    pub(crate) fn create(&mut self, db: &str, name: &str, options: Document) -> CmdResult<()> {
        let colls = self.dbs.entry(db.to_string()).or_default();
        if colls.contains_key(name) {
            return Err(CmdError::new(
                code::NAMESPACE_EXISTS,
                format!("Collection {db}.{name} already exists."),
            ));
        }
        colls.insert(name.to_string(), Collection::new(options));
        Ok(())
    }

    /// Drops a collection; true when it existed.
    pub(crate) fn drop_coll(&mut self, db: &str, name: &str) -> bool {
        let Some(colls) = self.dbs.get_mut(db) else {
            return false;
        };
        let existed = colls.remove(name).is_some();
        if colls.is_empty() {
            self.dbs.remove(db);
        }
        existed
    }

    /// Drops a database; true when it existed.
    pub(crate) fn drop_db(&mut self, db: &str) -> bool {
        self.dbs.remove(db).is_some()
    }

    /// Runs a find: the documents matching `m`, ordered, windowed and projected as `opts` says.
    /// Returns the full result set.
    pub(crate) fn find(
        &self,
        db: &str,
        name: &str,
        m: &Matcher,
        opts: FindOptions<'_>,
    ) -> Vec<Document> {
        let Some(c) = self.coll(db, name) else {
            return Vec::new();
        };
        let skip = opts.skip;
        let take = opts.limit.unwrap_or(usize::MAX);
        // The documents are kept in `_id` order: sorting on `_id` ascending is no sort at all.
        let docs: Vec<Document> = match opts.sort.filter(|s| !s.is_id_ascending()) {
            None => c.matching(m).skip(skip).take(take).cloned().collect(),
            Some(s) if s.is_id_descending() => {
                c.matching(m).rev().skip(skip).take(take).cloned().collect()
            }
            Some(s) => {
                let mut all: Vec<&Document> = c.matching(m).collect();
                all.sort_by(|a, b| s.compare(a, b));
                all.into_iter().skip(skip).take(take).cloned().collect()
            }
        };
        match opts.projection {
            Some(p) => docs.iter().map(|d| p.apply(d)).collect(),
            None => docs,
        }
    }

    /// Applies one update statement.
    pub(crate) fn update(
        &mut self,
        db: &str,
        name: &str,
        q: &Document,
        u: &Update,
        multi: bool,
        upsert: bool,
    ) -> CmdResult<UpdateOutcome> {
        let m = Matcher::new(q)?;
        if let Update::Replacement(_) = u
            && multi
        {
            return Err(CmdError::new(
                code::FAILED_TO_PARSE,
                "multi update is not supported for replacement-style update",
            ));
        }
        let (c, _) = self.coll_mut(db, name);
        let keys = c.matching_keys(&m, if multi { None } else { Some(1) });
        let mut out = UpdateOutcome::default();
        for k in &keys {
            let Some(mut d) = c.docs.get(k).cloned() else {
                continue;
            };
            out.matched += 1;
            if u.apply(&mut d, false)? {
                out.modified += 1;
                c.replace_doc(k, d);
            }
        }
        if keys.is_empty() && upsert {
            let mut d = match u {
                Update::Replacement(_) => {
                    let mut base = Document::new();
                    if let Some(id) = m.single_id() {
                        base.insert("_id", id);
                    }
                    base
                }
                Update::Modifiers(_) => Matcher::equality_fields(q),
            };
            u.apply(&mut d, true)?;
            if !d.contains_key("_id") {
                let mut with_id = doc! {"_id": ObjectId::new()};
                with_id.extend(d);
                d = with_id;
            }
            let id = d.get("_id").cloned().unwrap_or(Bson::Null);
            c.insert(d)?;
            out.upserted = Some(id);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_id_is_11000() {
        let mut s = Store::default();
        let (c, created) = s.coll_mut("db", "c");
        assert!(created);
        c.insert(doc! {"_id": "a"}).unwrap();
        assert_eq!(c.insert(doc! {"_id": "a"}).unwrap_err().code, 11000);
    }

    #[test]
    fn find_range_sorted_with_limit() {
        let mut s = Store::default();
        let (c, _) = s.coll_mut("db", "c");
        for i in 0..10 {
            c.insert(doc! {"_id": format!("user{i}"), "f": i}).unwrap();
        }
        let m = Matcher::new(&doc! {"_id": {"$gte": "user3"}}).unwrap();
        let sort = Sort::new(&doc! {"_id": -1}).unwrap();
        let opts = FindOptions {
            sort: sort.as_ref(),
            limit: Some(2),
            ..FindOptions::default()
        };
        let out = s.find("db", "c", &m, opts);
        let ids: Vec<&str> = out.iter().filter_map(|d| d.get_str("_id").ok()).collect();
        assert_eq!(ids, vec!["user9", "user8"]);
    }

    #[test]
    fn upsert_inserts_with_filter_id() {
        let mut s = Store::default();
        let u = Update::new(&Bson::Document(doc! {"$set": {"a": 1}})).unwrap();
        let o = s
            .update("db", "c", &doc! {"_id": "k"}, &u, false, true)
            .unwrap();
        assert_eq!(o.upserted, Some(Bson::String("k".into())));
        let o = s
            .update("db", "c", &doc! {"_id": "k"}, &u, false, true)
            .unwrap();
        assert_eq!((o.matched, o.modified, o.upserted), (1, 0, None));
        assert_eq!(s.coll("db", "c").map(|c| c.docs.len()), Some(1));
    }
}
