//! A team's own service as the workload, described once in a TOML file:
//! the cargo project and binary that build it, how to start it and know it
//! is ready, and the load: HTTP/1.1 or HTTP/2 requests (or a raw TCP
//! exchange of bytes) and what a good answer is. The suite builds it at
//! each version of a dependency (`measure::service`) and loads each build
//! the same way. A file is checked whole when read, and a bad one is
//! refused with the field it names:
//!
//! ```toml
//! [build]
//! path = "."                 # the cargo project, from this file's folder
//! binary = "example-service"
//!
//! [start]
//! command = "{binary} --port {port} --threads {threads}"
//! ready = "listening on"     # a line it prints on stdout; without, once it accepts
//!
//! [load]
//! protocol = "http1"         # http1, http2 (cleartext) or tcp
//! expect = { status = 200, body_contains = "\"ok\":true" }
//!
//! [[load.requests]]
//! method = "POST"
//! path = "/work"
//! headers = { content-type = "application/json" }
//! body = '{"n": 3}'
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::external::{placeholder_names, read_in_folder};

/// What `{name}` in the start command becomes.
pub const PLACEHOLDERS: [&str; 4] = ["binary", "host", "port", "threads"];

/// A service, as its file describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// The name it goes by in a run: the file's name without `.toml`
    /// unless the file says.
    #[serde(default)]
    pub name: String,
    /// The file's folder, where relative paths start (set when read).
    #[serde(default, skip_deserializing)]
    pub dir: PathBuf,
    pub build: Build,
    pub start: Start,
    pub load: Load,
}

/// The cargo project that builds the service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Build {
    /// The folder of its Cargo.toml (a package or a workspace) and its
    /// Cargo.lock, from the file's folder.
    #[serde(default = "here")]
    pub path: PathBuf,
    /// The binary to build and start.
    pub binary: String,
    /// The package holding the binary, in a workspace of several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
}

fn here() -> PathBuf {
    ".".into()
}

/// How the service is started and known to be ready.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Start {
    /// Its command line, with `{binary}` (the build's binary), `{host}`,
    /// `{port}` (compare chooses it) and `{threads}`.
    pub command: String,
    /// Environment variables it is started with.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Text of the line it prints on stdout once it serves; without it,
    /// it is ready once it accepts a connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
}

/// What the service is loaded with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Load {
    pub protocol: Protocol,
    /// Over HTTP: the requests, each sent in proportion to its weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<Request>,
    /// Over TCP: the bytes of one request and how its answer ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<Exchange>,
    /// What a good answer is; any other is counted as an error.
    #[serde(default)]
    pub expect: Expect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// HTTP/1.1, one request in flight on each connection.
    Http1,
    /// HTTP/2 over cleartext (prior knowledge), one stream in flight on
    /// each connection.
    Http2,
    /// A raw TCP request/response exchange.
    Tcp,
}

/// One HTTP request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Request {
    #[serde(default = "get")]
    pub method: String,
    /// Starts with `/`; the query too, if any.
    pub path: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Its body as text; or `body_bytes` (that many bytes) or `body_file`
    /// (a file's bytes, from the service file's folder); none: no body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_bytes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_file: Option<PathBuf>,
    /// How often it is sent beside the others.
    #[serde(default = "one")]
    pub weight: u32,
}

fn get() -> String {
    "GET".into()
}

fn one() -> u32 {
    1
}

/// A raw TCP exchange: what is sent, and how the answer's end is found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// The request's bytes (TOML's escapes: `\n`, `\u0000`).
    pub send: String,
    /// The answer is this many bytes long; or it ends with `read_until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_bytes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_until: Option<String>,
}

/// A good answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Over HTTP, its status.
    #[serde(default = "ok")]
    pub status: u16,
    /// Text its body holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_contains: Option<String>,
}

fn ok() -> u16 {
    200
}

impl Default for Expect {
    fn default() -> Self {
        Self {
            status: ok(),
            body_contains: None,
        }
    }
}

/// A crate whose locked versions a build of the service moved from its
/// own lockfile's: the one a run asks for, and those cargo had to move
/// with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Moved {
    pub name: String,
    /// Its versions in the service's lock (comma-separated); none: added.
    pub from: Option<String>,
    /// Its versions in the build's lock; none: removed.
    pub to: Option<String>,
}

impl Service {
    /// Reads and checks `file`.
    pub fn load(file: &Path) -> Result<Self> {
        let (text, dir) = read_in_folder(file)?;
        let stem = file.file_stem().unwrap_or_default().to_string_lossy();
        Self::parse(&stem, &text, dir).with_context(|| format!("in {}", file.display()))
    }

    /// A file's text, named `stem` unless it says, its paths from `dir`.
    fn parse(stem: &str, text: &str, dir: PathBuf) -> Result<Self> {
        let mut service: Self = toml::from_str(text).context("not a valid service file")?;
        if service.name.is_empty() {
            service.name = stem.into();
        }
        service.dir = dir;
        service.check()?;
        Ok(service)
    }

    /// The cargo project's folder.
    pub fn project(&self) -> PathBuf {
        self.dir.join(&self.build.path)
    }

    fn check(&self) -> Result<()> {
        ensure!(
            !self.name.is_empty()
                && (self.name.chars())
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "name {:?} may hold only a-z, 0-9 and -",
            self.name
        );
        ensure!(
            self.project().join("Cargo.toml").is_file(),
            "build.path: {} holds no Cargo.toml",
            self.project().display()
        );
        ensure!(
            self.project().join("Cargo.lock").is_file(),
            "build.path: {} holds no Cargo.lock: a build at another version of a \
             dependency moves from the service's own lock",
            self.project().display()
        );
        ensure!(!self.build.binary.is_empty(), "build.binary is empty");
        self.check_start()?;
        self.check_load()
    }

    fn check_start(&self) -> Result<()> {
        let command = &self.start.command;
        ensure!(
            shlex::split(command).is_some_and(|words| !words.is_empty()),
            "start.command {command:?} is empty or its quotes do not close"
        );
        for found in placeholder_names(command) {
            ensure!(
                PLACEHOLDERS.contains(&found),
                "start.command has an unknown placeholder {{{found}}}; known: {}",
                PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
            );
        }
        ensure!(
            command.contains("{port}"),
            "start.command has no {{port}}: compare chooses the port"
        );
        ensure!(
            self.start.ready.as_ref().is_none_or(|r| !r.is_empty()),
            "start.ready is empty: leave it out to wait for the first connection accepted"
        );
        Ok(())
    }

    fn check_load(&self) -> Result<()> {
        let load = &self.load;
        match (load.protocol, load.requests.is_empty(), &load.exchange) {
            (Protocol::Tcp, _, None) => {
                bail!("load.exchange is missing: protocol tcp sends its bytes")
            }
            (Protocol::Tcp, false, _) => {
                bail!("load.requests: protocol tcp sends load.exchange, not requests")
            }
            (Protocol::Http1 | Protocol::Http2, true, _) => {
                bail!("load.requests is empty: give at least one [[load.requests]]")
            }
            (Protocol::Http1 | Protocol::Http2, _, Some(_)) => {
                bail!("load.exchange: over HTTP the load is load.requests")
            }
            _ => {}
        }
        for (i, request) in load.requests.iter().enumerate() {
            self.check_request(request)
                .with_context(|| format!("load.requests[{i}]"))?;
        }
        if let Some(exchange) = &load.exchange {
            ensure!(!exchange.send.is_empty(), "load.exchange.send is empty");
            match (exchange.read_bytes, &exchange.read_until) {
                (Some(0), _) => bail!("load.exchange.read_bytes is 0"),
                (Some(_), None) => {}
                (None, Some(until)) if !until.is_empty() => {}
                _ => bail!("load.exchange: give one of read_bytes and read_until (not empty)"),
            }
        }
        ensure!(
            (100..600).contains(&load.expect.status),
            "load.expect.status {} is no HTTP status",
            load.expect.status
        );
        Ok(())
    }

    fn check_request(&self, request: &Request) -> Result<()> {
        let token = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b))
        };
        ensure!(
            token(&request.method),
            "method {:?} is no HTTP method",
            request.method
        );
        ensure!(
            request.path.starts_with('/') && !request.path.contains(char::is_whitespace),
            "path {:?} starts with / and holds no space",
            request.path
        );
        for (name, value) in &request.headers {
            ensure!(token(name), "headers: {name:?} is no header name");
            ensure!(
                !value.contains(['\r', '\n']),
                "headers.{name}: a value is one line"
            );
        }
        let bodies = [
            request.body.is_some(),
            request.body_bytes.is_some(),
            request.body_file.is_some(),
        ];
        ensure!(
            bodies.iter().filter(|b| **b).count() <= 1,
            "give one of body, body_bytes and body_file"
        );
        if let Some(file) = &request.body_file {
            let file = self.dir.join(file);
            ensure!(file.is_file(), "body_file: no file at {}", file.display());
        }
        ensure!(
            request.weight > 0,
            "weight is 0: leave the request out instead"
        );
        Ok(())
    }

    /// The body of `request`: its text, its bytes or its file's.
    pub fn body(&self, request: &Request) -> Result<Vec<u8>> {
        Ok(
            match (&request.body, request.body_bytes, &request.body_file) {
                (Some(text), _, _) => text.as_bytes().to_vec(),
                (_, Some(bytes), _) => vec![b'x'; bytes],
                (_, _, Some(file)) => {
                    let file = self.dir.join(file);
                    std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?
                }
                _ => Vec::new(),
            },
        )
    }

    /// The start command's words for `binary` on `port` with `threads`.
    pub fn command(&self, binary: &Path, port: u16, threads: usize) -> Result<Vec<String>> {
        let mut words = shlex::split(&self.start.command).context("start.command's quotes")?;
        for word in &mut words {
            for (name, value) in [
                ("binary", binary.to_string_lossy().into_owned()),
                ("host", "127.0.0.1".into()),
                ("port", port.to_string()),
                ("threads", threads.to_string()),
            ] {
                *word = word.replace(&format!("{{{name}}}"), &value);
            }
        }
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example's file, as the repository has it.
    fn example() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../services/example/example.toml")
    }

    fn error(text: &str) -> String {
        let dir = example().parent().unwrap().to_path_buf();
        format!("{:#}", Service::parse("bad", text, dir).unwrap_err())
    }

    #[test]
    fn the_example_reads_and_its_command_gets_its_values() {
        let service = Service::load(&example()).unwrap();
        assert_eq!(service.name, "example");
        assert_eq!(service.load.protocol, Protocol::Http1);
        let words = service
            .command(Path::new("/b/example-service"), 4000, 2)
            .unwrap();
        assert_eq!(words[0], "/b/example-service");
        assert!(words.contains(&"4000".to_string()), "{words:?}");
        let request = &service.load.requests[0];
        assert!(!service.body(request).unwrap().is_empty());
    }

    #[test]
    fn a_bad_file_is_refused_with_the_field_it_names() {
        let good = std::fs::read_to_string(example()).unwrap();
        for (bad, named) in [
            (
                good.replace("binary = ", "binar = "),
                "unknown field `binar`",
            ),
            (
                good.replace("{port}", "{prot}"),
                "unknown placeholder {prot}",
            ),
            (
                good.replace("\"http1\"", "\"http3\""),
                "unknown variant `http3`",
            ),
            (
                good.replace("path = \"/", "path = \""),
                "load.requests[0]: path",
            ),
            (
                good.replace("[[load.requests]]", "[[load.requests]]\nbody_bytes = 10"),
                "load.requests[0]: give one of body, body_bytes and body_file",
            ),
            (
                good.replace("status = 200", "status = 42"),
                "load.expect.status 42",
            ),
            (
                good.replace("path = \".\"", "path = \"nowhere\""),
                "build.path",
            ),
            (
                good.replace("\"http1\"", "\"tcp\""),
                "load.exchange is missing",
            ),
        ] {
            assert_ne!(bad, good, "{named}");
            let said = error(&bad);
            assert!(said.contains(named), "{named}: {said}");
        }
    }

    #[test]
    fn a_tcp_exchange_says_how_its_answer_ends() {
        let dir = example().parent().unwrap().to_path_buf();
        let tcp = |read: &str| {
            format!(
                "[build]\nbinary = \"s\"\n[start]\ncommand = \"{{binary}} {{port}}\"\n\
                 [load]\nprotocol = \"tcp\"\nexchange = {{ send = \"PING\\n\"{read} }}\n"
            )
        };
        let service = Service::parse("echo", &tcp(", read_until = \"\\n\""), dir.clone()).unwrap();
        assert_eq!(service.load.exchange.unwrap().send, "PING\n");
        let said = format!("{:#}", Service::parse("echo", &tcp(""), dir).unwrap_err());
        assert!(
            said.contains("give one of read_bytes and read_until"),
            "{said}"
        );
    }
}
