//! The MongoDB wire protocol: OP_MSG (with document sequences) and the legacy OP_QUERY/OP_REPLY handshake.

use mongodb::bson::{Bson, Document};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// OP_REPLY (legacy answer to OP_QUERY).
pub(crate) const OP_REPLY: i32 = 1;
/// OP_QUERY (legacy; only `<db>.$cmd` commands are served).
pub(crate) const OP_QUERY: i32 = 2004;
/// OP_MSG.
pub(crate) const OP_MSG: i32 = 2013;

const CHECKSUM_PRESENT: u32 = 1;
const MORE_TO_COME: u32 = 2;
/// The largest message accepted (`maxMessageSizeBytes`).
pub(crate) const MAX_MESSAGE: usize = 48_000_000;

/// Errors reading a message off a connection.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    /// The peer closed or the socket failed.
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// The bytes do not form a valid message.
    #[error("malformed message: {0}")]
    Malformed(String),
}

/// A command request, whichever opcode it came in.
#[derive(Debug)]
pub(crate) struct Request {
    /// The sender's request id (echoed as `responseTo`).
    pub request_id: i32,
    /// OP_MSG or OP_QUERY.
    pub op_code: i32,
    /// The command body with document sequences folded in as arrays.
    pub body: Document,
    /// The client set moreToCome: it wants no reply (w:0 writes).
    pub more_to_come: bool,
    /// For OP_QUERY: the database from `<db>.$cmd`.
    pub query_db: Option<String>,
}

fn read_cstring(buf: &[u8], pos: &mut usize) -> Result<String, WireError> {
    let start = *pos;
    let end = buf[start..]
        .iter()
        .position(|b| *b == 0)
        .ok_or_else(|| WireError::Malformed("unterminated cstring".into()))?;
    *pos = start + end + 1;
    String::from_utf8(buf[start..start + end].to_vec())
        .map_err(|_| WireError::Malformed("cstring is not UTF-8".into()))
}

fn read_i32(buf: &[u8], pos: &mut usize) -> Result<i32, WireError> {
    let bytes: [u8; 4] = buf
        .get(*pos..*pos + 4)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| WireError::Malformed("truncated".into()))?;
    *pos += 4;
    Ok(i32::from_le_bytes(bytes))
}

fn read_doc(buf: &[u8], pos: &mut usize) -> Result<Document, WireError> {
    let mut p = *pos;
    let len = read_i32(buf, &mut p)?;
    let len = usize::try_from(len)
        .map_err(|_| WireError::Malformed("negative document length".into()))?;
    let slice = buf
        .get(*pos..*pos + len)
        .ok_or_else(|| WireError::Malformed("document overruns message".into()))?;
    let doc = Document::from_reader(&mut &slice[..])
        .map_err(|e| WireError::Malformed(format!("invalid BSON: {e}")))?;
    *pos += len;
    Ok(doc)
}

/// Reads one message; `Ok(None)` on a clean end of stream.
pub(crate) async fn read_request<R: AsyncRead + Unpin>(
    r: &mut R,
) -> Result<Option<Request>, WireError> {
    let mut header = [0u8; 16];
    match r.read_exact(&mut header).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let mut p = 0;
    let len = read_i32(&header, &mut p)?;
    let request_id = read_i32(&header, &mut p)?;
    let _response_to = read_i32(&header, &mut p)?;
    let op_code = read_i32(&header, &mut p)?;
    let len = usize::try_from(len).unwrap_or(0);
    if !(16..=MAX_MESSAGE).contains(&len) {
        return Err(WireError::Malformed(format!(
            "message length {len} out of range"
        )));
    }
    let mut buf = vec![0u8; len - 16];
    r.read_exact(&mut buf).await?;
    match op_code {
        OP_MSG => parse_msg(request_id, &buf).map(Some),
        OP_QUERY => parse_query(request_id, &buf).map(Some),
        // OP_COMPRESSED (2012) among them: compression is never advertised.
        other => Err(WireError::Malformed(format!("unsupported opcode {other}"))),
    }
}

fn parse_msg(request_id: i32, buf: &[u8]) -> Result<Request, WireError> {
    let mut p = 0;
    // exhaustAllowed (bit 16) is ignored: the stand-in never streams replies.
    let flags = read_i32(buf, &mut p)? as u32;
    let end = if flags & CHECKSUM_PRESENT != 0 {
        buf.len().saturating_sub(4)
    } else {
        buf.len()
    };
    let mut body: Option<Document> = None;
    let mut sequences: Vec<(String, Vec<Bson>)> = Vec::new();
    while p < end {
        let kind = buf[p];
        p += 1;
        match kind {
            0 => body = Some(read_doc(buf, &mut p)?),
            1 => {
                let start = p;
                let size = usize::try_from(read_i32(buf, &mut p)?)
                    .map_err(|_| WireError::Malformed("negative section size".into()))?;
                let sec_end = start + size;
                if sec_end > end {
                    return Err(WireError::Malformed("section overruns message".into()));
                }
                let ident = read_cstring(buf, &mut p)?;
                let mut docs = Vec::new();
                while p < sec_end {
                    docs.push(Bson::Document(read_doc(buf, &mut p)?));
                }
                sequences.push((ident, docs));
            }
            other => {
                return Err(WireError::Malformed(format!(
                    "unknown section kind {other}"
                )));
            }
        }
    }
    let mut body =
        body.ok_or_else(|| WireError::Malformed("OP_MSG without a body section".into()))?;
    for (ident, docs) in sequences {
        body.insert(ident, Bson::Array(docs));
    }
    Ok(Request {
        request_id,
        op_code: OP_MSG,
        body,
        more_to_come: flags & MORE_TO_COME != 0,
        query_db: None,
    })
}

fn parse_query(request_id: i32, buf: &[u8]) -> Result<Request, WireError> {
    let mut p = 0;
    let _flags = read_i32(buf, &mut p)?;
    let ns = read_cstring(buf, &mut p)?;
    let _skip = read_i32(buf, &mut p)?;
    let _n = read_i32(buf, &mut p)?;
    let mut query = read_doc(buf, &mut p)?;
    let Some(db) = ns.strip_suffix(".$cmd") else {
        return Err(WireError::Malformed(format!(
            "OP_QUERY is only supported for commands (got namespace {ns})"
        )));
    };
    if let Ok(inner) = query.get_document("$query") {
        query = inner.clone();
    }
    Ok(Request {
        request_id,
        op_code: OP_QUERY,
        body: query,
        more_to_come: false,
        query_db: Some(db.to_string()),
    })
}

/// Encodes a reply in the form matching the request's opcode.
pub(crate) fn encode_reply(request: &Request, reply_id: i32, doc: &Document) -> Vec<u8> {
    let mut body = Vec::with_capacity(256);
    if doc.to_writer(&mut body).is_err() {
        body.clear();
        let fallback = mongodb::bson::doc! {"ok": 0.0, "errmsg": "reply could not be encoded", "code": super::cmderr::code::INTERNAL_ERROR};
        let _ = fallback.to_writer(&mut body);
    }
    let mut out = Vec::with_capacity(body.len() + 40);
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&reply_id.to_le_bytes());
    out.extend_from_slice(&request.request_id.to_le_bytes());
    if request.op_code == OP_QUERY {
        out.extend_from_slice(&OP_REPLY.to_le_bytes());
        out.extend_from_slice(&0i32.to_le_bytes()); // responseFlags
        out.extend_from_slice(&0i64.to_le_bytes()); // cursorID
        out.extend_from_slice(&0i32.to_le_bytes()); // startingFrom
        out.extend_from_slice(&1i32.to_le_bytes()); // numberReturned
    } else {
        out.extend_from_slice(&OP_MSG.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.push(0);
    }
    out.extend_from_slice(&body);
    let len = (out.len() as i32).to_le_bytes();
    out[..4].copy_from_slice(&len);
    out
}

/// Writes an encoded reply.
pub(crate) async fn write_reply<W: AsyncWrite + Unpin>(
    w: &mut W,
    bytes: &[u8],
) -> std::io::Result<()> {
    w.write_all(bytes).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    fn msg_with_sequence() -> Vec<u8> {
        let body = doc! {"insert": "c", "$db": "d"};
        let mut b = Vec::new();
        body.to_writer(&mut b).unwrap();
        let d1 = doc! {"_id": 1};
        let mut s = Vec::new();
        d1.to_writer(&mut s).unwrap();
        let mut sec = Vec::new();
        sec.extend_from_slice(b"documents\0");
        sec.extend_from_slice(&s);
        let sec_len = (sec.len() + 4) as i32;
        let mut msg = Vec::new();
        msg.extend_from_slice(&0i32.to_le_bytes());
        msg.extend_from_slice(&7i32.to_le_bytes());
        msg.extend_from_slice(&0i32.to_le_bytes());
        msg.extend_from_slice(&OP_MSG.to_le_bytes());
        msg.extend_from_slice(&CHECKSUM_PRESENT.to_le_bytes());
        msg.push(0);
        msg.extend_from_slice(&b);
        msg.push(1);
        msg.extend_from_slice(&sec_len.to_le_bytes());
        msg.extend_from_slice(&sec);
        msg.extend_from_slice(&0u32.to_le_bytes()); // checksum, not verified
        let len = (msg.len() as i32).to_le_bytes();
        msg[..4].copy_from_slice(&len);
        msg
    }

    #[tokio::test]
    async fn op_msg_sequences_fold_into_body() {
        let bytes = msg_with_sequence();
        let req = read_request(&mut &bytes[..]).await.unwrap().unwrap();
        assert_eq!(req.request_id, 7);
        assert_eq!(req.body.get_str("insert").unwrap(), "c");
        let docs = req.body.get_array("documents").unwrap();
        assert_eq!(docs.len(), 1);
    }

    #[tokio::test]
    async fn legacy_op_query_command_gets_op_reply() {
        let q = doc! {"isMaster": 1};
        let mut qb = Vec::new();
        q.to_writer(&mut qb).unwrap();
        let mut msg = Vec::new();
        msg.extend_from_slice(&0i32.to_le_bytes());
        msg.extend_from_slice(&3i32.to_le_bytes());
        msg.extend_from_slice(&0i32.to_le_bytes());
        msg.extend_from_slice(&OP_QUERY.to_le_bytes());
        msg.extend_from_slice(&0i32.to_le_bytes());
        msg.extend_from_slice(b"admin.$cmd\0");
        msg.extend_from_slice(&0i32.to_le_bytes());
        msg.extend_from_slice(&(-1i32).to_le_bytes());
        msg.extend_from_slice(&qb);
        let len = (msg.len() as i32).to_le_bytes();
        msg[..4].copy_from_slice(&len);
        let req = read_request(&mut &msg[..]).await.unwrap().unwrap();
        assert_eq!(req.query_db.as_deref(), Some("admin"));
        assert!(req.body.contains_key("isMaster"));
        let out = encode_reply(&req, 5, &doc! {"ismaster": true, "ok": 1.0});
        assert_eq!(
            i32::from_le_bytes(out[12..16].try_into().unwrap()),
            OP_REPLY
        );
        assert_eq!(i32::from_le_bytes(out[32..36].try_into().unwrap()), 1); // numberReturned
        let reply = Document::from_reader(&mut &out[36..]).unwrap();
        assert!(reply.get_bool("ismaster").unwrap());
    }

    #[tokio::test]
    async fn reply_echoes_request_id() {
        let bytes = msg_with_sequence();
        let req = read_request(&mut &bytes[..]).await.unwrap().unwrap();
        let out = encode_reply(&req, 99, &doc! {"ok": 1.0});
        assert_eq!(i32::from_le_bytes(out[8..12].try_into().unwrap()), 7);
        assert_eq!(i32::from_le_bytes(out[12..16].try_into().unwrap()), OP_MSG);
        assert_eq!(
            i32::from_le_bytes(out[0..4].try_into().unwrap()) as usize,
            out.len()
        );
    }
}
