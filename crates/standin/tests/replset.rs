//! The stand-in as a replica-set member: uninitiated answers, initiation rules, election, driver discovery.

use crate::util::*;
use std::time::{Duration, Instant};

use microshard_standin::{Role, StandinHandle};
use mongodb::Client;
use mongodb::bson::{Document, doc};

/// A replica-set member with `flags` (elections take 100 ms), and a client connected to it.
async fn member(flags: &str) -> (StandinHandle, Client) {
    let h = start(Role::Mongod, &format!("--primary-delay-ms 100 {flags}"));
    let c = direct(&h).await;
    (h, c)
}

async fn wait_primary(c: &Client) -> Document {
    hello_until(c, "never became primary", |h| {
        h.get_bool("isWritablePrimary").unwrap_or(false)
    })
    .await
}

#[tokio::test]
async fn uninitiated_member_answers_like_mongod() {
    let (h, c) = member("--replSet rs0").await;
    let hello = admin(&c, doc! {"hello": 1}).await.unwrap();
    assert!(hello.get_bool("isreplicaset").unwrap());
    assert!(!hello.get_bool("isWritablePrimary").unwrap());
    assert!(hello.get("setName").is_none());
    assert!(hello.get_str("info").is_ok());
    let e = admin(&c, doc! {"replSetGetStatus": 1}).await.unwrap_err();
    assert_eq!(code_of(&e), Some(94));
    let e = c
        .database("d")
        .run_command(doc! {"insert": "c", "documents": [{"_id": 1}]})
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(10107));
    h.shutdown().await;
}

#[tokio::test]
async fn initiate_validation_refusals() {
    let (h, c) = member("--replSet rs0").await;
    let port = h.port();
    let cases = [
        (
            doc! {"_id": "other", "members": [{"_id": 0, "host": format!("localhost:{port}")}]},
            93,
        ),
        (
            doc! {"_id": "rs0", "members": [{"_id": 0, "host": "localhost:1"}]},
            93,
        ),
        (
            doc! {"_id": "rs0", "members": [{"_id": 0, "host": format!("localhost:{port}")}, {"_id": 0, "host": "localhost:2"}]},
            93,
        ),
        (
            doc! {"_id": "rs0", "members": [{"_id": 0, "host": format!("localhost:{port}")}, {"_id": 1, "host": format!("localhost:{port}")}]},
            93,
        ),
        (
            doc! {"_id": "rs0", "members": [{"_id": 0, "host": format!("localhost:{port}")}, {"_id": 1, "host": "db.example.invalid:27017"}]},
            93,
        ),
        (
            doc! {"_id": "rs0", "configsvr": true, "members": [{"_id": 0, "host": format!("localhost:{port}")}]},
            93,
        ),
    ];
    for (cfg, want) in cases {
        let e = admin(&c, doc! {"replSetInitiate": cfg.clone()})
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), Some(want), "{cfg}");
    }
    // Still uninitiated after all the refusals.
    let e = admin(&c, doc! {"replSetGetStatus": 1}).await.unwrap_err();
    assert_eq!(code_of(&e), Some(94));
    h.shutdown().await;
}

#[tokio::test]
async fn initiated_member_becomes_primary_and_serves_the_driver() {
    let (h, c) = member("--replSet rs0").await;
    let host = format!("localhost:{}", h.port());
    initiate(&c, "rs0", std::slice::from_ref(&host))
        .await
        .unwrap();
    let e = initiate(&c, "rs0", std::slice::from_ref(&host))
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(23));
    let hello = wait_primary(&c).await;
    assert_eq!(hello.get_str("setName").unwrap(), "rs0");
    assert_eq!(hello.get_str("primary").unwrap(), host);
    assert_eq!(hello.get_str("me").unwrap(), host);
    assert!(hello.get_object_id("electionId").is_ok());
    assert_eq!(hello.get_i32("setVersion").unwrap(), 1);
    let status = admin(&c, doc! {"replSetGetStatus": 1}).await.unwrap();
    assert_eq!(status.get_i32("myState").unwrap(), 1);

    // The driver discovering the set by name.
    let rs = Client::with_uri_str(format!(
        "mongodb://{host}/?replicaSet=rs0&serverSelectionTimeoutMS=5000"
    ))
    .await
    .unwrap();
    let coll = rs.database("ycsb").collection::<Document>("usertable");
    coll.insert_one(doc! {"_id": "user1", "f": 1})
        .await
        .unwrap();
    let d = coll.find_one(doc! {"_id": "user1"}).await.unwrap().unwrap();
    assert_eq!(d.get_i32("f").unwrap(), 1);
    h.shutdown().await;
}

#[tokio::test]
async fn config_server_defaults_configsvr_true() {
    let (h, c) = member("--replSet cfg --configsvr").await;
    let host = format!("127.0.0.1:{}", h.port());
    initiate(&c, "cfg", &[host]).await.unwrap();
    let conf = admin(&c, doc! {"replSetGetConfig": 1}).await.unwrap();
    assert!(
        conf.get_document("config")
            .unwrap()
            .get_bool("configsvr")
            .unwrap()
    );
    wait_primary(&c).await;
    h.shutdown().await;
}

async fn hello_until(c: &Client, what: &str, done: impl Fn(&Document) -> bool) -> Document {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let h = admin(c, doc! {"hello": 1}).await.unwrap();
        if done(&h) {
            return h;
        }
        assert!(Instant::now() < deadline, "{what}: {h}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// As in MongoDB, member 0 of a larger set need not win its first election: here member 2 does
/// (`--election-winner 2` on the member that receives `replSetInitiate`).
#[tokio::test]
async fn three_member_set_elects_the_winner_not_the_initiator() {
    let flags = "--replSet rs3 --election-winner 2 --election-delay-ms 300";
    let (a, ca) = member(flags).await;
    let (b, cb) = member(flags).await;
    let (c, cc) = member(flags).await;
    let hosts = [a.host(), b.host(), c.host()];
    initiate(&ca, "rs3", &hosts).await.unwrap();
    wait_primary(&cc).await;
    for cl in [&ca, &cb] {
        let h = hello_until(cl, "member never learnt the primary", |h| {
            h.get_str("primary").is_ok()
        })
        .await;
        assert!(h.get_bool("secondary").unwrap());
        assert!(!h.get_bool("isWritablePrimary").unwrap());
        assert_eq!(h.get_str("primary").unwrap(), hosts[2]);
        let e = cl
            .database("d")
            .run_command(doc! {"insert": "c", "documents": [{"_id": 1}]})
            .await
            .unwrap_err();
        assert_eq!(code_of(&e), Some(10107));
    }
    // A driver given member 1 only finds the primary through the set.
    let rs = Client::with_uri_str(format!(
        "mongodb://{}/?replicaSet=rs3&serverSelectionTimeoutMS=5000",
        hosts[1]
    ))
    .await
    .unwrap();
    rs.database("d")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = admin(&ca, doc! {"replSetGetStatus": 1}).await.unwrap();
        let states: Vec<i32> = status
            .get_array("members")
            .unwrap()
            .iter()
            .map(|m| m.as_document().unwrap().get_i32("state").unwrap())
            .collect();
        if states == vec![2, 2, 1] {
            break;
        }
        assert!(Instant::now() < deadline, "member states {states:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for h in [a, b, c] {
        h.shutdown().await;
    }
}

/// By default a larger set is won by a member other than member 0, and nobody is primary before
/// the election is decided; only a one-member set elects itself at once.
#[tokio::test]
async fn larger_sets_take_an_election_that_member_0_does_not_win_by_default() {
    // An election that will not be decided during the test: nobody may be primary.
    let slow = "--replSet slow --election-delay-ms 600000";
    let (a, ca) = member(slow).await;
    let (b, cb) = member(slow).await;
    initiate(&ca, "slow", &[a.host(), b.host()]).await.unwrap();
    let h = hello_until(&cb, "member 1 never got the configuration", |h| {
        h.get_str("setName").is_ok()
    })
    .await;
    assert!(h.get("primary").is_none(), "{h}");
    let h = admin(&ca, doc! {"hello": 1}).await.unwrap();
    assert!(!h.get_bool("isWritablePrimary").unwrap(), "{h}");
    assert!(h.get("primary").is_none(), "{h}");
    // A winner outside the set is refused, as a bad configuration would be.
    let (x, cx) = member("--replSet bad --election-winner 5").await;
    let e = initiate(&cx, "bad", &[x.host(), a.host()])
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(2), "{e}");
    // Default winner: never member 0.
    let (d, cd) = member("--replSet dflt").await;
    let (e2, ce) = member("--replSet dflt").await;
    let (f, cf) = member("--replSet dflt").await;
    let hosts = [d.host(), e2.host(), f.host()];
    initiate(&cd, "dflt", &hosts).await.unwrap();
    let h = hello_until(&cd, "no primary was elected", |h| {
        h.get_str("primary").is_ok()
    })
    .await;
    let primary = h.get_str("primary").unwrap().to_string();
    assert_ne!(primary, hosts[0], "member 0 won: {h}");
    let winner = if primary == hosts[1] { &ce } else { &cf };
    wait_primary(winner).await;
    for h in [a, b, x, d, e2, f] {
        h.shutdown().await;
    }
}

/// As mongod does, `replSetInitiate` first checks that every other member answers, runs with
/// `--replSet` and has no configuration yet (NodeNotFound, 74, otherwise), and accepts nothing
/// until then: a tool that initiates before all members run is refused.
#[tokio::test]
async fn initiate_refuses_members_that_are_not_up_or_taken() {
    let (a, ca) = member("--replSet q").await;
    // A port nobody listens on.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("127.0.0.1:{}", l.local_addr().unwrap().port())
    };
    let e = initiate(&ca, "q", &[a.host(), dead.clone()])
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(74), "{e}");
    assert!(e.to_string().contains(&dead), "{e}");
    // Nothing was accepted: the node is still uninitiated.
    let h = admin(&ca, doc! {"hello": 1}).await.unwrap();
    assert!(h.get("setName").is_none(), "{h}");
    // A member that belongs to another set is refused too.
    let (other, co) = member("--replSet elsewhere").await;
    initiate(&co, "elsewhere", &[other.host()]).await.unwrap();
    let e = initiate(&ca, "q", &[a.host(), other.host()])
        .await
        .unwrap_err();
    assert_eq!(code_of(&e), Some(74), "{e}");
    assert!(e.to_string().contains("replica set elsewhere"), "{e}");
    // With every member up, the same node accepts.
    let (b, _cb) = member("--replSet q --election-delay-ms 50").await;
    initiate(&ca, "q", &[a.host(), b.host()]).await.unwrap();
    for h in [a, b, other] {
        h.shutdown().await;
    }
}

/// The primary's `electionId`, waiting until `c`'s member is primary.
async fn election_id(c: &Client) -> mongodb::bson::oid::ObjectId {
    wait_primary(c).await.get_object_id("electionId").unwrap()
}

/// `--step-down T/D`: T after the primary's first query on a user database, no member is
/// primary for D (`hello` names none; writes fail with NotWritablePrimary, labelled
/// `RetryableWriteError` when retryable); then the next member is primary with a newer
/// election id, which every member names and a replica-set driver writes to.
#[tokio::test]
async fn a_step_down_leaves_the_set_without_a_primary_then_elects_the_next_member() {
    let flags = "--replSet fo --election-winner 0 --election-delay-ms 100 --step-down fo:300/1500";
    let (a, ca) = member(flags).await;
    let (b, cb) = member(flags).await;
    let (c, cc) = member(flags).await;
    let hosts = [a.host(), b.host(), c.host()];
    initiate(&ca, "fo", &hosts).await.unwrap();
    let first = election_id(&ca).await;
    // Queries on the cluster's own databases do not start the clock; one on a user database does.
    let coll = ca.database("d").collection::<Document>("c");
    admin(&ca, doc! {"find": "system.version"}).await.ok();
    coll.find_one(doc! {}).await.unwrap();
    let started = Instant::now();
    for cl in [&ca, &cb, &cc] {
        let h = hello_until(cl, "the set never lost its primary", |h| {
            !h.get_bool("isWritablePrimary").unwrap_or(true) && h.get("primary").is_none()
        })
        .await;
        assert!(h.get_bool("secondary").unwrap(), "{h}");
    }
    assert!(started.elapsed() < Duration::from_millis(1500));
    let insert = doc! {"insert": "c", "documents": [{"_id": 1}], "txnNumber": 1_i64};
    let e = ca.database("d").run_command(insert).await.unwrap_err();
    assert_eq!(code_of(&e), Some(10107), "{e}");
    assert!(e.contains_label("RetryableWriteError"), "{e}");
    let plain = doc! {"insert": "c", "documents": [{"_id": 1}]};
    let e = ca.database("d").run_command(plain).await.unwrap_err();
    assert!(!e.contains_label("RetryableWriteError"), "{e}");
    // Then member 1 is primary, with a newer term's election id, and the others say so.
    let second = election_id(&cb).await;
    assert!(second > first, "{second} after {first}");
    for cl in [&ca, &cc] {
        let h = hello_until(cl, "the new primary is not named", |h| {
            h.get_str("primary").is_ok()
        })
        .await;
        assert_eq!(h.get_str("primary").unwrap(), hosts[1]);
        assert!(!h.get_bool("isWritablePrimary").unwrap());
    }
    let rs = Client::with_uri_str(format!(
        "mongodb://{}/?replicaSet=fo&serverSelectionTimeoutMS=5000",
        hosts[0]
    ))
    .await
    .unwrap();
    rs.database("d")
        .collection::<Document>("c")
        .insert_one(doc! {"_id": 2})
        .await
        .unwrap();
    assert_eq!(
        cb.database("d")
            .collection::<Document>("c")
            .count_documents(doc! {})
            .await
            .unwrap(),
        1
    );
    for h in [a, b, c] {
        h.shutdown().await;
    }
}
