//! External implementations: programs outside this repository (muduo's or
//! asio's pingpong, say) that speak the protocol, described by a TOML file
//! of command lines with placeholders and a pattern that finds the client's
//! throughput in its output. `compare run --external NAME=FILE` makes one a
//! column like any other.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use pingpong::client::Arrival;
use pingpong::server::Shape;
use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What `{name}` in a command becomes.
pub const PLACEHOLDERS: [&str; 8] = [
    "host",
    "port",
    "threads",
    "block",
    "connections",
    "seconds",
    "window",
    "work",
];

/// An external implementation, as its file describes it; runs record it whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct External {
    /// The name it goes by in the run (`--external NAME=FILE`).
    #[serde(default)]
    pub name: String,
    /// Its IO model, in words, for the tables.
    pub model: String,
    /// The version of what was built, as the file says.
    #[serde(default = "unknown")]
    pub version: String,
    /// Where relative program paths in the commands start: the file's folder.
    #[serde(default)]
    pub dir: PathBuf,
    pub server: ServerCommand,
    pub client: ClientCommand,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerCommand {
    /// Serves on `{host}:{port}` until killed.
    pub command: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientCommand {
    /// Runs `{connections}` connections to `{host}:{port}` for `{seconds}`, then exits.
    pub command: String,
    /// A regular expression whose first group is the throughput, searched
    /// in stdout and then in stderr.
    pub throughput: String,
    /// What the group counts: MiB/s over the run, or bytes read in it.
    pub unit: Unit,
    /// The client reads its time as a whole number of seconds (atoi).
    #[serde(default)]
    pub whole_seconds: bool,
    /// When its connections start their pingpong: `immediate`, each as soon
    /// as it is connected (muduo's and asio's), or `gated`, once all are.
    /// Every file says which; results from before it was asked lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub arrival: Option<Arrival>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Unit {
    #[serde(rename = "MiB/s")]
    MibPerS,
    #[serde(rename = "bytes")]
    Bytes,
}

fn unknown() -> String {
    "unknown".into()
}

/// What one external command is run with.
pub struct Values<'a> {
    pub host: &'a str,
    pub port: u16,
    pub threads: usize,
    pub block: usize,
    pub connections: usize,
    pub seconds: f64,
    pub window: usize,
    pub work: u64,
}

impl External {
    /// Parses `NAME=FILE` and reads the file.
    pub fn from_arg(arg: &str) -> Result<Self> {
        let (name, file) = arg
            .split_once('=')
            .with_context(|| format!("--external {arg:?}: expected NAME=FILE"))?;
        ensure!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "--external {arg:?}: the name may hold only a-z, 0-9 and -"
        );
        Self::load(name, Path::new(file))
    }

    fn load(name: &str, file: &Path) -> Result<Self> {
        let (text, dir) = read_in_folder(file)?;
        Self::parse(name, &text, dir).with_context(|| format!("in {}", file.display()))
    }

    /// A file's text, its relative paths from `dir`.
    fn parse(name: &str, text: &str, dir: PathBuf) -> Result<Self> {
        let mut external: Self = toml::from_str(text).context("not a valid file")?;
        external.name = name.into();
        external.dir = dir;
        external.check()?;
        Ok(external)
    }

    /// Every placeholder known, the address in both commands, a pattern with a group.
    fn check(&self) -> Result<()> {
        for (side, command) in [
            ("server", &self.server.command),
            ("client", &self.client.command),
        ] {
            ensure!(
                shlex::split(command).is_some_and(|words| !words.is_empty()),
                "{side}.command {command:?} is empty or its quotes do not close"
            );
            for found in placeholder_names(command) {
                ensure!(
                    PLACEHOLDERS.contains(&found),
                    "{side}.command has an unknown placeholder {{{found}}}; known: {}",
                    PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" ")
                );
            }
            ensure!(
                command.contains("{port}"),
                "{side}.command has no {{port}}: compare chooses the port"
            );
        }
        ensure!(
            self.client.arrival.is_some(),
            "client.arrival is missing: say whether the client starts each connection's \
             pingpong as soon as it is connected (\"immediate\") or once all are (\"gated\")"
        );
        for needed in ["connections", "seconds"] {
            ensure!(
                self.client.command.contains(&format!("{{{needed}}}")),
                "client.command has no {{{needed}}}"
            );
        }
        let pattern = self.pattern()?;
        ensure!(
            pattern.captures_len() > 1,
            "client.throughput {:?} has no group ( ) around the number",
            self.client.throughput
        );
        Ok(())
    }

    fn pattern(&self) -> Result<Regex> {
        Regex::new(&self.client.throughput)
            .with_context(|| format!("client.throughput {:?}", self.client.throughput))
    }

    /// Why its server cannot run a workload, if it cannot: a command
    /// without `{work}` cannot be told to work, and none has our shapes.
    pub fn server_unsupported(&self, work: u64, shape: Shape) -> Option<String> {
        if shape != Shape::Echo {
            return Some(format!(
                "its server has no {} shape, only the echo",
                shape.name()
            ));
        }
        (work > 0 && !self.server.command.contains("{work}"))
            .then(|| "its server does no work per block (no {work})".into())
    }

    /// Why its client cannot run a workload, if it cannot.
    pub fn client_unsupported(
        &self,
        window: usize,
        seconds: f64,
        churn: Option<u64>,
    ) -> Option<String> {
        if churn.is_some() {
            return Some("its client keeps its connections open (no --churn)".into());
        }
        if window > 1 && !self.client.command.contains("{window}") {
            return Some("its client keeps one block in flight (no {window})".into());
        }
        (self.client.whole_seconds && seconds.fract() != 0.0)
            .then(|| format!("its client takes whole seconds, not --seconds {seconds}"))
    }

    pub fn server_command(&self, values: &Values) -> Result<Vec<String>> {
        self.expand(&self.server.command, values)
    }

    pub fn client_command(&self, values: &Values) -> Result<Vec<String>> {
        self.expand(&self.client.command, values)
    }

    /// The command's words with the placeholders filled in; a relative
    /// program path starts from the file's folder.
    fn expand(&self, command: &str, v: &Values) -> Result<Vec<String>> {
        let mut words = shlex::split(command).context("unbalanced quotes")?;
        for word in &mut words {
            for (name, value) in [
                ("host", v.host.to_string()),
                ("port", v.port.to_string()),
                ("threads", v.threads.to_string()),
                ("block", v.block.to_string()),
                ("connections", v.connections.to_string()),
                ("seconds", v.seconds.to_string()),
                ("window", v.window.to_string()),
                ("work", v.work.to_string()),
            ] {
                *word = word.replace(&format!("{{{name}}}"), &value);
            }
        }
        words[0] = self.program(&words[0]).to_string_lossy().into_owned();
        Ok(words)
    }

    /// A command's program: a relative path starts from the file's folder;
    /// a bare name is left for PATH.
    fn program(&self, word: &str) -> PathBuf {
        let program = Path::new(word);
        if program.is_relative() && program.components().count() > 1 {
            self.dir.join(program)
        } else {
            program.to_path_buf()
        }
    }

    /// The programs its commands run, by side, for the run's record of hashes.
    pub fn programs(&self) -> Result<Vec<(&'static str, PathBuf)>> {
        [
            ("server", &self.server.command),
            ("client", &self.client.command),
        ]
        .into_iter()
        .map(|(side, command)| {
            let first = shlex::split(command).and_then(|words| words.into_iter().next());
            let program = self.program(&first.unwrap_or_default());
            let found = if program.components().count() > 1 {
                Some(program.clone()).filter(|p| p.is_file())
            } else {
                which::which(&program).ok()
            };
            let found = found.with_context(|| {
                format!(
                    "{}: its {side} program {} is not there; build it, or set {side}.command \
                         in its file to where it is",
                    self.name,
                    program.display()
                )
            })?;
            Ok((side, found))
        })
        .collect()
    }

    /// Bytes read over `seconds`, from the client's output.
    pub fn bytes_read(&self, stdout: &str, stderr: &str, seconds: f64) -> Result<u64> {
        let pattern = self.pattern()?;
        let Some(found) = [stdout, stderr]
            .iter()
            .find_map(|text| pattern.captures(text))
        else {
            bail!(
                "the client's output has no match for {:?}; it printed: {}",
                self.client.throughput,
                tail(&format!("{stdout}{stderr}"))
            );
        };
        let text = &found[1];
        let number: f64 = text
            .trim()
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite() && *n >= 0.0)
            .with_context(|| format!("the client's throughput {text:?} is not a number"))?;
        let bytes = match self.client.unit {
            Unit::Bytes => number,
            Unit::MibPerS => number * seconds * (1 << 20) as f64,
        };
        // Past what a u64 counts, `as` would say u64::MAX: no reading at all.
        ensure!(
            bytes < u64::MAX as f64,
            "the client's throughput {text:?} is past any count of bytes"
        );
        Ok(bytes as u64)
    }
}

/// The names inside `{...}` in a command.
/// A description file's text, and its folder, where the relative paths it
/// names start.
pub(crate) fn read_in_folder(file: &Path) -> Result<(String, PathBuf)> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = std::path::absolute(dir)
        .with_context(|| format!("resolving the folder of {}", file.display()))?;
    Ok((text, dir))
}

pub(crate) fn placeholder_names(command: &str) -> Vec<&str> {
    command
        .split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .collect()
}

/// The last lines of a program's output, for an error.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    let shown = lines[lines.len().saturating_sub(5)..].join(" | ");
    if shown.is_empty() {
        "nothing".into()
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Values<'static> {
        Values {
            host: "127.0.0.1",
            port: 4000,
            threads: 2,
            block: 16384,
            connections: 10,
            seconds: 1.0,
            window: 1,
            work: 0,
        }
    }

    fn parse(text: &str) -> Result<External> {
        External::parse("x", text, "/opt/x".into())
    }

    const MUDUO: &str = r#"
        model = "reactor"
        [server]
        command = "bin/pingpong_server {host} {port} {threads}"
        [client]
        command = "bin/pingpong_client {host} {port} {threads} {block} {connections} {seconds}"
        throughput = '([0-9.]+) MiB/s throughput'
        unit = "MiB/s"
        whole_seconds = true
        arrival = "immediate"
    "#;

    #[test]
    fn commands_get_their_values_and_programs_their_folder() {
        let e = parse(MUDUO).unwrap();
        assert_eq!(
            e.client_command(&values()).unwrap(),
            [
                "/opt/x/bin/pingpong_client",
                "127.0.0.1",
                "4000",
                "2",
                "16384",
                "10",
                "1"
            ]
        );
        assert_eq!(e.version, "unknown");
    }

    #[test]
    fn throughput_is_read_as_bytes_over_the_run() {
        let e = parse(MUDUO).unwrap();
        let out = "20240101 WARN all disconnected\n20240101 WARN 123.5 MiB/s throughput\n";
        assert_eq!(e.bytes_read("", out, 2.0).unwrap(), 258_998_272);
        let e = parse(
            &MUDUO
                .replace("MiB/s throughput'", "total bytes read'")
                .replace("\"MiB/s\"", "\"bytes\""),
        )
        .unwrap();
        assert_eq!(
            e.bytes_read("12345 total bytes read\n", "", 1.0).unwrap(),
            12345
        );
        let past = e.bytes_read(&format!("1{} total bytes read", "0".repeat(30)), "", 1.0);
        assert!(past.unwrap_err().to_string().contains("past any count"));
        let missing = e
            .bytes_read("nothing here", "", 1.0)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("it printed: nothing here"), "{missing}");
    }

    #[test]
    fn files_with_mistakes_are_refused_with_the_reason() {
        for (bad, reason) in [
            (
                MUDUO.replace("{threads}\"", "{thread}\""),
                "unknown placeholder {thread}",
            ),
            (
                MUDUO.replace("{host} {port} {threads}\"", "{host} {threads}\""),
                "server.command has no {port}",
            ),
            (
                MUDUO.replace("'([0-9.]+) MiB", "'[0-9.]+ MiB"),
                "has no group",
            ),
            (MUDUO.replace("([0-9.]+)", "(["), "client.throughput"),
            (MUDUO.replace("\"MiB/s\"", "\"MB\""), "unknown variant"),
            (
                MUDUO.replace("whole_seconds", "whole_second"),
                "unknown field",
            ),
            (
                MUDUO.replace("arrival = \"immediate\"", ""),
                "client.arrival is missing",
            ),
            (
                MUDUO.replace("\"immediate\"", "\"soon\""),
                "unknown variant",
            ),
        ] {
            let e = format!("{:#}", parse(&bad).unwrap_err());
            assert!(e.contains(reason), "{reason}: {e}");
        }
    }

    #[test]
    fn workloads_the_commands_cannot_express_are_named() {
        let e = parse(MUDUO).unwrap();
        assert_eq!(e.client_unsupported(1, 2.0, None), None);
        assert_eq!(e.server_unsupported(0, Shape::Echo), None);
        assert!(
            e.client_unsupported(4, 1.0, None)
                .unwrap()
                .contains("{window}")
        );
        assert!(
            e.client_unsupported(1, 1.0, Some(5))
                .unwrap()
                .contains("--churn")
        );
        assert!(
            e.server_unsupported(10, Shape::Echo)
                .unwrap()
                .contains("{work}")
        );
        assert!(
            e.server_unsupported(0, Shape::Pool)
                .unwrap()
                .contains("no pool shape")
        );
        assert!(
            e.client_unsupported(1, 0.5, None)
                .unwrap()
                .contains("whole seconds")
        );
    }

    proptest::proptest! {
        #[test]
        fn any_file_and_any_output_are_read_or_refused_without_a_panic(
            text in ".{0,300}",
            at in 0usize..1000,
            cut in 0usize..1000,
            byte in proptest::char::any(),
            stdout in ".{0,200}",
        ) {
            let _ = parse(&text);
            // The muduo file, one character changed and cut short.
            let mut chars: Vec<char> = MUDUO.chars().collect();
            let at = at % chars.len();
            chars[at] = byte;
            chars.truncate(cut);
            let damaged: String = chars.into_iter().collect();
            for text in [damaged.as_str(), MUDUO] {
                if let Ok(e) = parse(text) {
                    let _ = e.server_command(&values());
                    let _ = e.client_command(&values());
                    let _ = e.bytes_read(&stdout, &stdout, 1.0);
                }
            }
        }
    }
}
