//! A stand-in that requires TLS and SCRAM-SHA-256, as a `requireTLS` deployment with users does:
//! the driver gets in with the CA and the password, and is kept out without either; a mongos
//! reaches its TLS, authenticated shards and config server with the same flags.

use microshard_standin::{Role, StandinHandle};
use mongodb::Client;
use mongodb::bson::{Document, doc};

use crate::util::{Certs, admin, code_of, initiate, start, wait_until};

const USER: &str = "--auth-user alice:s3cret-pw";

fn secure_uri(h: &StandinHandle, certs: &Certs, userinfo: &str, extra: &str) -> String {
    format!(
        "mongodb://{userinfo}127.0.0.1:{}/?directConnection=true&tls=true&tlsCAFile={}&serverSelectionTimeoutMS=3000{extra}",
        h.port(),
        certs.ca.display()
    )
}

async fn client(uri: &str) -> Client {
    Client::with_uri_str(uri).await.unwrap()
}

#[tokio::test]
async fn the_driver_gets_in_with_the_ca_and_the_password_only() {
    let certs = Certs::make();
    let h = start(Role::Mongod, &format!("{} {USER}", certs.flags().join(" ")));
    let good = client(&secure_uri(&h, &certs, "alice:s3cret-pw@", "")).await;
    let coll = good.database("ycsb").collection::<Document>("usertable");
    coll.insert_one(doc! {"_id": "user1", "field0": "x"})
        .await
        .unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 1);
    // The password is nowhere in what the server shows of its command line.
    let opts = admin(&good, doc! {"getCmdLineOpts": 1}).await.unwrap();
    assert!(!format!("{opts}").contains("s3cret"), "{opts}");

    let wrong = client(&secure_uri(&h, &certs, "alice:wrong@", "")).await;
    let e = admin(&wrong, doc! {"ping": 1}).await.unwrap_err();
    assert!(e.to_string().contains("Authentication failed"), "{e}");

    // Connected but not authenticated: the handshake answers, data commands are refused.
    let anonymous = client(&secure_uri(&h, &certs, "", "")).await;
    assert!(admin(&anonymous, doc! {"ping": 1}).await.is_ok());
    let find = anonymous
        .database("ycsb")
        .collection::<Document>("usertable")
        .find_one(doc! {})
        .await
        .unwrap_err();
    assert_eq!(code_of(&find), Some(13), "{find}");

    let other_ca = secure_uri(&h, &certs, "alice:s3cret-pw@", "")
        .replace(certs.ca.to_str().unwrap(), certs.other_ca.to_str().unwrap());
    let e = admin(&client(&other_ca).await, doc! {"ping": 1})
        .await
        .unwrap_err();
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");

    let plaintext = format!(
        "mongodb://alice:s3cret-pw@127.0.0.1:{}/?directConnection=true&serverSelectionTimeoutMS=1500",
        h.port()
    );
    assert!(
        admin(&client(&plaintext).await, doc! {"ping": 1})
            .await
            .is_err()
    );
    h.shutdown().await;
}

#[test]
fn security_flags_are_checked_before_the_server_starts() {
    let certs = Certs::make();
    let missing = format!(
        "--port 0 --tls-cert {} --tls-key /nonexistent/key.pem",
        certs.cert.display()
    );
    let cfg =
        microshard_standin::StandinConfig::from_args(Role::Mongod, &crate::util::args(&missing))
            .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let _guard = rt.enter();
    let e = microshard_standin::spawn(cfg).unwrap_err();
    assert!(e.is_bad_input());
    assert!(
        e.to_string().starts_with("--tls-key /nonexistent/key.pem"),
        "{e}"
    );
}

/// A one-member set with TLS and a user, initiated over a secured connection.
async fn secured_set(certs: &Certs, name: &str, role_flag: &str) -> StandinHandle {
    let h = start(
        Role::Mongod,
        &format!(
            "{role_flag} --replSet {name} --primary-delay-ms 50 {} {USER}",
            certs.flags().join(" ")
        ),
    );
    let c = client(&secure_uri(&h, certs, "alice:s3cret-pw@", "")).await;
    initiate(&c, name, &[h.host()]).await.unwrap();
    wait_until(|| async {
        admin(&c, doc! {"hello": 1})
            .await
            .is_ok_and(|d| d.get_bool("isWritablePrimary").unwrap_or(false))
    })
    .await;
    h
}

#[tokio::test]
async fn a_mongos_reaches_its_secured_shards_with_the_same_flags() {
    let certs = Certs::make();
    let config = secured_set(&certs, "cfg", "--configsvr").await;
    let shard = secured_set(&certs, "sh0", "--shardsvr").await;
    let mongos = start(
        Role::Mongos,
        &format!(
            "--configdb cfg/{} {} {USER}",
            config.host(),
            certs.flags().join(" ")
        ),
    );
    let uri =
        secure_uri(&mongos, &certs, "alice:s3cret-pw@", "").replace("directConnection=true&", "");
    let c = client(&uri).await;
    wait_until(|| async { admin(&c, doc! {"listShards": 1}).await.is_ok() }).await;
    admin(&c, doc! {"addShard": format!("sh0/{}", shard.host())})
        .await
        .unwrap();
    admin(&c, doc! {"enableSharding": "ycsb"}).await.unwrap();
    let key = doc! {"shardCollection": "ycsb.usertable", "key": {"_id": "hashed"}};
    admin(&c, key).await.unwrap();
    let coll = c.database("ycsb").collection::<Document>("usertable");
    let docs: Vec<Document> = (0..20).map(|i| doc! {"_id": format!("user{i}")}).collect();
    coll.insert_many(docs).await.unwrap();
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 20);
    mongos.shutdown().await;
    shard.shutdown().await;
    config.shutdown().await;
}
