//! One connection's closed loop, whatever it speaks ([`ask_until_closed`]),
//! its buffer ([`Reader`]), and the raw TCP exchange: the request's bytes
//! written, the answer read to its length or its delimiter.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::Connection;
use crate::http1::{Answer, Body};

/// A good answer: its bytes, and whether the service closes after it.
pub struct Answered {
    pub bytes: usize,
    pub close: bool,
}

/// A bad answer or a failure, of a kind counted apart.
#[derive(Debug)]
pub struct Failure {
    pub kind: String,
    pub words: String,
    /// The connection is not to be used again.
    pub close: bool,
}

impl Failure {
    pub fn malformed(words: &str) -> Self {
        Self {
            kind: "malformed".into(),
            words: words.into(),
            close: true,
        }
    }

    pub fn io(doing: &str, e: &std::io::Error) -> Self {
        Self {
            kind: format!("{doing}: {:?}", e.kind()),
            words: format!("{doing}: {e}"),
            close: true,
        }
    }

    fn closed() -> Self {
        Self {
            kind: "closed".into(),
            words: "the service closed the connection before its answer was whole".into(),
            close: true,
        }
    }
}

/// A connection's bytes come in: what has come of the answer so far.
#[derive(Default)]
pub struct Reader {
    buf: Vec<u8>,
}

/// Room made for each read: an answer's bytes are read straight into the
/// buffer, which keeps its size between answers (at 10,000 connections,
/// small answers hold 160 MB).
const READ: usize = 16 << 10;

impl Reader {
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    pub fn filled(&self) -> &[u8] {
        &self.buf
    }

    pub async fn send(&mut self, stream: &mut TcpStream, bytes: &[u8]) -> Result<(), Failure> {
        stream
            .write_all(bytes)
            .await
            .map_err(|e| Failure::io("sending", &e))
    }

    /// Reads what comes next; the connection's end is a failure.
    pub async fn more(&mut self, stream: &mut TcpStream) -> Result<(), Failure> {
        match self.more_or_end(stream).await? {
            true => Ok(()),
            false => Err(Failure::closed()),
        }
    }

    /// Reads what comes next: false at the connection's end.
    pub async fn more_or_end(&mut self, stream: &mut TcpStream) -> Result<bool, Failure> {
        self.buf.reserve(READ);
        let n = (stream.read_buf(&mut self.buf).await).map_err(|e| Failure::io("reading", &e))?;
        Ok(n > 0)
    }

    /// `answer`'s body.
    pub fn body<'a>(&'a self, answer: &'a Answer) -> &'a [u8] {
        match &answer.body {
            Body::In(range) => &self.buf[range.clone()],
            Body::Decoded(body) => body,
        }
    }
}

/// How long a connection that cannot connect waits before it tries again.
const RECONNECT: Duration = Duration::from_millis(10);

/// A connection to `addr`, its small writes sent at once.
pub async fn connect(addr: SocketAddr) -> Result<TcpStream, Failure> {
    let stream = (TcpStream::connect(addr).await).map_err(|e| Failure::io("connecting", &e))?;
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Opens a session (`open`: a connection, a handshake) and asks (`ask`
/// sends one request and reads and judges its answer) until the window
/// closes, opening another after a failure or an answer the service
/// closes after; counts in `window`. In the open loop each request waits
/// for when it is due and is timed from then.
pub async fn ask_until_closed<S>(
    connection: &Connection,
    mut open: impl AsyncFnMut() -> Result<S, Failure>,
    mut ask: impl AsyncFnMut(&mut S) -> Result<Answered, Failure>,
) {
    let window = connection.window;
    let failed = |failure: &Failure| {
        let mut tally = connection.tally.borrow_mut();
        tally.failed(&window, &failure.kind, &failure.words, Instant::now());
    };
    let mut session: Option<S> = None;
    let mut due = 0;
    while Instant::now() < window.closes {
        let open_one = match &mut session {
            Some(open_one) => open_one,
            None => match open().await {
                Ok(opened) => session.insert(opened),
                Err(failure) => {
                    failed(&failure);
                    tokio::time::sleep(RECONNECT).await;
                    continue;
                }
            },
        };
        let asked = match window.pace {
            None => Instant::now(),
            Some(pace) => {
                let at = pace.due(due);
                due += 1;
                if at >= window.closes {
                    break;
                }
                tokio::time::sleep_until(at.into()).await;
                at
            }
        };
        match ask(open_one).await {
            Ok(answered) => {
                let mut tally = connection.tally.borrow_mut();
                tally.answered(&window, asked, Instant::now(), answered.bytes);
                if answered.close {
                    session = None;
                }
            }
            Err(failure) => {
                failed(&failure);
                if failure.close {
                    session = None;
                }
            }
        }
    }
}

/// [`ask_until_closed`] over plain TCP connections, each answer read into
/// one buffer the connection keeps.
pub async fn ask_over_tcp(
    connection: &Connection,
    mut ask: impl AsyncFnMut(&mut TcpStream, &mut Reader) -> Result<Answered, Failure>,
) {
    let addr = connection.addr;
    let mut reader = Reader::default();
    let reader = &mut reader;
    ask_until_closed(
        connection,
        async || connect(addr).await,
        async |stream: &mut TcpStream| ask(stream, reader).await,
    )
    .await
}

/// Whether `body` holds `text`.
pub fn holds(body: &[u8], text: &str) -> bool {
    body.windows(text.len().max(1))
        .any(|w| w == text.as_bytes())
}

/// One connection of raw TCP exchanges until the window closes.
pub(crate) async fn connection(connection: &Connection) {
    let plan = &connection.plan;
    let exchange = plan
        .exchange
        .as_ref()
        .expect("a plan over TCP has its exchange");
    ask_over_tcp(connection, async |stream, reader| {
        reader.clear();
        reader.send(stream, &exchange.send).await?;
        let whole = |got: &[u8]| match (exchange.read_bytes, &exchange.read_until) {
            (Some(length), _) => got.len() >= length,
            (None, Some(end)) => got.ends_with(end),
            (None, None) => true,
        };
        while !whole(reader.filled()) {
            reader.more(stream).await?;
        }
        let got = reader.filled();
        if exchange.read_bytes.is_some_and(|length| got.len() > length) {
            return Err(Failure::malformed("bytes came past the answer's length"));
        }
        if let Some(text) = &plan.expect.body_contains
            && !holds(got, text)
        {
            return Err(Failure {
                kind: "body".into(),
                words: format!("an answer without {text:?}"),
                close: false,
            });
        }
        Ok(Answered {
            bytes: got.len(),
            close: false,
        })
    })
    .await
}
