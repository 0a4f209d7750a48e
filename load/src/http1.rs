//! HTTP/1.1: each request's bytes made once and written whole, its answer
//! read back: the head parsed by httparse, the body by its length, its
//! chunks or the connection's end, then checked (status, body). A
//! connection the service closes is opened again.

use tokio::net::TcpStream;

use crate::exchange::{Answered, Failure, Reader, ask_over_tcp, holds};
use crate::{Connection, Expect, Request};

/// The most bytes an answer's head may have.
const MAX_HEAD: usize = 64 << 10;

/// `request`'s bytes, to `host`: a `host` header and the body's length
/// added where the request has none.
pub fn encode(request: &Request, host: &str) -> Vec<u8> {
    let has = |name: &str| (request.headers.iter()).any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut head = format!("{} {} HTTP/1.1\r\n", request.method, request.path);
    if !has("host") {
        head.push_str(&format!("host: {host}\r\n"));
    }
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let sends_body =
        !request.body.is_empty() || ["POST", "PUT", "PATCH"].contains(&request.method.as_str());
    if sends_body && !has("content-length") {
        head.push_str(&format!("content-length: {}\r\n", request.body.len()));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&request.body);
    bytes
}

/// The requests of `plan` in the order connection number `connection`
/// sends them: each as often as its weight says, spread out (smooth
/// weighted round robin), starting at a place of its own.
pub fn order(requests: &[Request], connection: usize) -> Vec<usize> {
    let total: i64 = requests.iter().map(|r| i64::from(r.weight)).sum();
    let mut current = vec![0i64; requests.len()];
    let mut order = Vec::with_capacity(total as usize);
    for _ in 0..total {
        for (c, r) in current.iter_mut().zip(requests) {
            *c += i64::from(r.weight);
        }
        let (best, _) = (current.iter().enumerate())
            .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
            .expect("a plan over HTTP has requests");
        current[best] -= total;
        order.push(best);
    }
    let start = connection % order.len();
    order.rotate_left(start);
    order
}

/// One connection over HTTP/1.1 until the window closes.
pub(crate) async fn connection(connection: &Connection) {
    let (plan, addr) = (&connection.plan, connection.addr);
    let host = addr.to_string();
    let requests: Vec<Vec<u8>> = plan.requests.iter().map(|r| encode(r, &host)).collect();
    let order = order(&plan.requests, connection.number);
    let mut next = 0;
    ask_over_tcp(connection, async |stream, reader| {
        let request = &requests[order[next % order.len()]];
        next += 1;
        reader.send(stream, request).await?;
        let answer = read_answer(stream, reader).await?;
        let body = reader.body(&answer);
        judge(answer.status, body, &plan.expect, answer.close)?;
        Ok(Answered {
            bytes: answer.bytes,
            close: answer.close,
        })
    })
    .await
}

/// An answer read whole.
#[derive(Debug, PartialEq)]
pub struct Answer {
    pub status: u16,
    /// Where its body is: in the reader's buffer, or decoded from chunks.
    pub body: Body,
    /// Head and body, as they came.
    pub bytes: usize,
    /// The service closes the connection after it.
    pub close: bool,
}

#[derive(Debug, PartialEq)]
pub enum Body {
    In(std::ops::Range<usize>),
    Decoded(Vec<u8>),
}

/// How an answer's body ends.
enum Framing {
    Length(usize),
    Chunked,
    AtClose,
}

/// Reads one answer into `reader`.
async fn read_answer(stream: &mut TcpStream, reader: &mut Reader) -> Result<Answer, Failure> {
    reader.clear();
    let (status, head, framing, close) = loop {
        if let Some(parsed) = head(reader.filled())? {
            break parsed;
        }
        if reader.filled().len() > MAX_HEAD {
            return Err(Failure::malformed("an answer's head is over 64 KiB"));
        }
        reader.more(stream).await?;
    };
    let body = match framing {
        Framing::Length(length) => {
            while reader.filled().len() < head + length {
                reader.more(stream).await?;
            }
            if reader.filled().len() > head + length {
                return Err(Failure::malformed("bytes came past the answer's length"));
            }
            Body::In(head..head + length)
        }
        Framing::Chunked => loop {
            match chunked(&reader.filled()[head..])? {
                Some((body, used)) if head + used == reader.filled().len() => {
                    break Body::Decoded(body);
                }
                Some(_) => {
                    return Err(Failure::malformed(
                        "bytes came past the answer's last chunk",
                    ));
                }
                None => reader.more(stream).await?,
            }
        },
        Framing::AtClose => {
            while reader.more_or_end(stream).await? {}
            Body::In(head..reader.filled().len())
        }
    };
    Ok(Answer {
        status,
        body,
        bytes: reader.filled().len(),
        close: close || matches!(framing, Framing::AtClose),
    })
}

/// The head at the start of `bytes`, once whole: the status, its length,
/// how the body ends and whether the connection closes after it.
fn head(bytes: &[u8]) -> Result<Option<(u16, usize, Framing, bool)>, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let length = match response.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Failure::malformed(&format!("an answer's head: {e}"))),
    };
    let status = response.code.unwrap_or_default();
    // Read in place, as every answer's head is: nothing allocated.
    let value = |name: &str| {
        (response.headers.iter())
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.trim_ascii())
    };
    let close = response.version == Some(0)
        || value("connection").is_some_and(|v| v.eq_ignore_ascii_case(b"close"));
    let framing = if status / 100 == 1 || status == 204 || status == 304 {
        Framing::Length(0)
    } else if value("transfer-encoding")
        .is_some_and(|v| v.len() >= 7 && v[v.len() - 7..].eq_ignore_ascii_case(b"chunked"))
    {
        Framing::Chunked
    } else if let Some(length) = value("content-length") {
        let parsed = std::str::from_utf8(length)
            .ok()
            .and_then(|l| l.parse().ok());
        let length = parsed.ok_or_else(|| {
            Failure::malformed(&format!(
                "content-length {:?}",
                String::from_utf8_lossy(length)
            ))
        })?;
        Framing::Length(length)
    } else {
        Framing::AtClose
    };
    Ok(Some((status, length, framing, close)))
}

/// A chunked body at the start of `bytes`, once whole: the body and the
/// bytes it took (trailers and the last empty line included).
pub fn chunked(bytes: &[u8]) -> Result<Option<(Vec<u8>, usize)>, Failure> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(line) = bytes[at..].windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let size = String::from_utf8_lossy(&bytes[at..at + line]);
        let size = size.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| Failure::malformed(&format!("a chunk's size {size:?}")))?;
        at += line + 2;
        if size == 0 {
            // Trailers, if any, then an empty line.
            loop {
                let Some(end) = bytes[at..].windows(2).position(|w| w == b"\r\n") else {
                    return Ok(None);
                };
                at += end + 2;
                if end == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        if bytes.len() < at + size + 2 {
            return Ok(None);
        }
        if &bytes[at + size..at + size + 2] != b"\r\n" {
            return Err(Failure::malformed("a chunk does not end with CRLF"));
        }
        body.extend_from_slice(&bytes[at..at + size]);
        at += size + 2;
    }
}

/// A good answer (of `status` and `body`, the connection closed after it
/// or not), or the failure it is.
pub(crate) fn judge(status: u16, body: &[u8], expect: &Expect, close: bool) -> Result<(), Failure> {
    let excerpt = || {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        text.replace(['\r', '\n'], " ")
    };
    if status != expect.status {
        return Err(Failure {
            kind: format!("status {status}"),
            words: format!(
                "status {status} where {} was expected; its body: {:?}",
                expect.status,
                excerpt()
            ),
            close,
        });
    }
    if let Some(text) = &expect.body_contains
        && !holds(body, text)
    {
        return Err(Failure {
            kind: "body".into(),
            words: format!("a body without {text:?}: {:?}", excerpt()),
            close,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, body: &[u8], weight: u32) -> Request {
        Request {
            method: method.into(),
            path: "/work".into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_vec(),
            weight,
        }
    }

    #[test]
    fn a_request_gets_its_host_and_length() {
        let bytes = encode(&request("POST", b"{}", 1), "127.0.0.1:80");
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "POST /work HTTP/1.1\r\nhost: 127.0.0.1:80\r\ncontent-type: application/json\r\n\
             content-length: 2\r\n\r\n{}"
        );
        let get = encode(&request("GET", b"", 1), "h");
        assert!(!String::from_utf8(get).unwrap().contains("content-length"));
    }

    #[test]
    fn requests_come_as_often_as_their_weights_spread_out() {
        let requests = [request("GET", b"", 3), request("POST", b"", 1)];
        assert_eq!(order(&requests, 0), [0, 0, 1, 0]);
        assert_eq!(order(&requests, 2), [1, 0, 0, 0]);
    }

    #[test]
    fn a_chunked_body_is_whole_only_with_its_last_chunk() {
        let whole = b"4\r\nwiki\r\n5;x=y\r\npedia\r\n0\r\nexpires: never\r\n\r\n";
        assert_eq!(
            chunked(whole).unwrap(),
            Some((b"wikipedia".to_vec(), whole.len()))
        );
        for cut in [3, 9, 20, whole.len() - 1] {
            assert_eq!(chunked(&whole[..cut]).unwrap(), None, "{cut}");
        }
        assert!(chunked(b"zz\r\n").is_err());
        assert!(chunked(b"2\r\nabXX").is_err());
    }

    #[test]
    fn a_head_says_how_its_body_ends() {
        let parsed = |text: &str| {
            head(text.as_bytes())
                .unwrap()
                .map(|(s, l, f, c)| (s, l, matches!(f, Framing::Length(_)), c))
        };
        assert_eq!(
            parsed("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"),
            Some((200, 38, true, false))
        );
        assert_eq!(parsed("HTTP/1.1 200 OK\r\ncontent-len"), None);
        assert_eq!(
            parsed("HTTP/1.0 500 X\r\n\r\n"),
            Some((500, 18, false, true))
        );
        assert!(head(b"HTTP/1.1 2x0 OK\r\n\r\n").is_err());
    }

    #[test]
    fn a_wrong_status_or_body_is_a_failure_that_quotes_the_body() {
        let expect = Expect {
            status: 200,
            body_contains: Some("\"ok\":true".into()),
        };
        assert!(judge(200, br#"{"ok":true}"#, &expect, false).is_ok());
        let failed = judge(500, b"boom", &expect, true).unwrap_err();
        assert_eq!((failed.kind.as_str(), failed.close), ("status 500", true));
        assert!(failed.words.contains("boom"), "{}", failed.words);
        assert_eq!(judge(200, b"{}", &expect, false).unwrap_err().kind, "body");
    }
}
