//! User-space instructions, counted by valgrind's callgrind: nearly the same
//! count every time for the same work, whatever else the machine does,
//! where wall-clock figures move by tens of percent. It counts the
//! process's own code (the runtime, the protocol, libc), not the kernel's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use rustc_hash::FxHashMap;

/// How many frames of a call stack callgrind tells apart
/// (`--separate-callers`): a stack deeper than that is cut at its outer end.
pub const STACK_DEPTH: usize = 24;

/// Call stacks and what was counted at their tips, outermost frame
/// first, folded as flame graphs read them: `main;serve;echo` -> 1234
/// instructions and 1 system call.
pub type Stacks = BTreeMap<String, Count>;

/// What a function counted itself, not in the functions it called.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    pub instructions: u64,
    pub syscalls: u64,
}

/// valgrind, found on this machine.
#[derive(Clone)]
pub struct Callgrind {
    valgrind: PathBuf,
    /// As `valgrind --version` says it: "valgrind-3.19.0".
    pub version: String,
}

impl Callgrind {
    /// valgrind on the PATH, or why there is none.
    pub fn find() -> Result<Self, String> {
        let valgrind = which::which("valgrind").map_err(|_| {
            "valgrind is not installed (Debian: apt-get install valgrind)".to_string()
        })?;
        let out = Command::new(&valgrind)
            .arg("--version")
            .output()
            .map_err(|e| format!("running valgrind --version: {e}"))?;
        Ok(Self {
            version: String::from_utf8_lossy(&out.stdout).trim().to_string(),
            valgrind,
        })
    }

    /// The program and arguments that run `program args` under callgrind,
    /// its counts written to `out` when it exits; with `stacks`, counted
    /// by call stack ([`stacks`]) and not only in all.
    pub fn wrap(
        &self,
        program: &Path,
        args: &[String],
        out: &Path,
        stacks: bool,
    ) -> (PathBuf, Vec<String>) {
        let mut wrapped = vec![
            "--tool=callgrind".to_string(),
            format!("--callgrind-out-file={}", out.display()),
        ];
        if stacks {
            wrapped.extend([
                format!("--separate-callers={STACK_DEPTH}"),
                // A recursion is one function, not `f'2`, which would read
                // as a caller named 2.
                "--separate-recs=1".into(),
                "--collect-systime=yes".into(),
                "--compress-strings=no".into(),
                "--compress-pos=no".into(),
            ]);
        }
        wrapped.push(program.to_string_lossy().into_owned());
        wrapped.extend_from_slice(args);
        (self.valgrind.clone(), wrapped)
    }
}

/// The instructions and system calls at the tip of each call stack, from
/// a callgrind file written with its callers separated and nothing
/// compressed ([`Callgrind::wrap`] with stacks): each function context
/// (`fn=echo'serve'main`) is a stack, and its own cost lines, not those
/// of the calls it makes (the line after `calls=`), its counts.
pub fn stacks(out: &Path) -> Result<Stacks, String> {
    let text = std::fs::read_to_string(out)
        .map_err(|e| format!("callgrind wrote no {}: {e}", out.display()))?;
    let mut stacks = Stacks::new();
    // A file of 30 MB names some 13,000 contexts of up to 24 frames, the
    // same frames again and again: each is named once.
    let mut frames = Frames::default();
    let mut context: Option<(&str, Count)> = None;
    let mut a_call = false;
    // Where each event's figure stands on a cost line, after its position.
    let (mut ir, mut sys) = (Some(0), None);
    let mut add = |(context, count): (&str, Count)| {
        let sum = stacks.entry(frames.folded(context)).or_default();
        sum.instructions += count.instructions;
        sum.syscalls += count.syscalls;
    };
    for line in text.lines() {
        if let Some(events) = line.strip_prefix("events:") {
            let events: Vec<&str> = events.split_whitespace().collect();
            ir = events.iter().position(|e| *e == "Ir");
            sys = events.iter().position(|e| *e == "sysCount");
        } else if let Some(name) = line.strip_prefix("fn=") {
            if let Some(done) = context.replace((name, Count::default())) {
                add(done);
            }
        } else if line.starts_with("calls=") {
            a_call = true;
        } else if line.starts_with(|c: char| c.is_ascii_digit() || "+-*".contains(c)) {
            // The cost of the call just named is its callee's: not here.
            if std::mem::take(&mut a_call) {
                continue;
            }
            // Trailing events that counted nothing are left out.
            let event = |at: Option<usize>| {
                at.and_then(|i| line.split_whitespace().nth(i + 1)?.parse().ok())
                    .unwrap_or(0)
            };
            if let Some((_, count)) = &mut context {
                count.instructions += event(ir);
                count.syscalls += event(sys);
            }
        }
    }
    let Some(last) = context else {
        return Err(format!("{} names no function", out.display()));
    };
    add(last);
    Ok(stacks)
}

/// Frames as the explanations name them ([`frame_name`]), each named once.
#[derive(Default)]
struct Frames {
    index: FxHashMap<String, usize>,
    names: Vec<String>,
}

impl Frames {
    /// A function context (`echo'serve'main`) as a folded stack
    /// (`main;serve;echo`).
    fn folded(&mut self, context: &str) -> String {
        let at: Vec<usize> = context.split('\'').rev().map(|f| self.at(f)).collect();
        let names: Vec<&str> = at.iter().map(|&i| self.names[i].as_str()).collect();
        names.join(";")
    }

    fn at(&mut self, frame: &str) -> usize {
        if let Some(&i) = self.index.get(frame) {
            return i;
        }
        self.names.push(frame_name(frame));
        self.index.insert(frame.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// A frame as the explanations name it: without its symbol's hash and
/// without the separator of folded stacks (`[u8; 16]` -> `[u8, 16]`).
pub fn frame_name(frame: &str) -> String {
    let frame = match frame.rsplit_once("::h") {
        Some((name, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            name
        }
        _ => frame,
    };
    let frame = match frame.split_once("::") {
        Some((krate, rest)) => format!("{}::{rest}", unversioned(krate)),
        None => frame.to_string(),
    };
    frame.replace(';', ",")
}

/// A binary's crate without the release or commit a build of a version
/// gives its name (`pingpong_tokio_1_51_0`, `pingpong_mio_g09267b51e9f8`):
/// both sides of an explanation name its `main` alike.
fn unversioned(krate: &str) -> &str {
    if !krate.starts_with("pingpong_") {
        return krate;
    }
    let parts: Vec<&str> = krate.split('_').collect();
    let number = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let hex = |p: &str| p.len() == 12 && p.bytes().all(|b| b.is_ascii_hexdigit());
    let start = (2..parts.len()).find(|&i| {
        let part = parts[i];
        (parts[i..].len() >= 3 && parts[i..i + 3].iter().all(number))
            || part.strip_prefix('g').is_some_and(hex)
            || (part == "path" && parts.get(i + 1).is_some_and(|p| hex(p)))
    });
    match start {
        Some(i) => &krate[..parts[..i].iter().map(|p| p.len() + 1).sum::<usize>() - 1],
        None => krate,
    }
}

/// The crate a demangled Rust function belongs to (`tokio` of
/// `<tokio::net::TcpStream as ...>::poll_read`); none for a C function
/// or an address.
pub fn crate_of(function: &str) -> Option<&str> {
    let name = function.trim_start_matches(['<', '&', '*']);
    let name = name.strip_prefix("mut ").unwrap_or(name);
    let (first, _) = name.split_once("::")?;
    first
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(first)
}

/// The instructions (Ir) a callgrind output file counts in all.
pub fn total(out: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(out)
        .map_err(|e| format!("callgrind wrote no {}: {e}", out.display()))?;
    text.lines()
        .find_map(|l| {
            l.strip_prefix("totals:")
                .or_else(|| l.strip_prefix("summary:"))
        })
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("{} has no totals line", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_function_s_crate_is_its_path_s_first_segment() {
        for (function, krate) in [
            ("tokio::runtime::park::Inner::park", Some("tokio")),
            (
                "<tokio::net::TcpStream as tokio::io::AsyncRead>::poll_read",
                Some("tokio"),
            ),
            (
                "<&mut pingpong::Thing as core::ops::Fn>::call",
                Some("pingpong"),
            ),
            ("epoll_wait", None),
            ("0x000000000010a000", None),
            ("<[u8, 16]>::fill", None),
        ] {
            assert_eq!(crate_of(function), krate, "{function}");
        }
    }

    #[test]
    fn a_frame_is_named_without_its_hash_or_its_binary_s_version() {
        for (frame, name) in [
            (
                "tokio::park::Inner::park::h0123456789abcdef",
                "tokio::park::Inner::park",
            ),
            ("pingpong_tokio_1_51_0::main", "pingpong_tokio::main"),
            (
                "pingpong_tokio_local_1_0_0_alpha_1::main",
                "pingpong_tokio_local::main",
            ),
            ("pingpong_mio_g09267b51e9f8::main", "pingpong_mio::main"),
            ("pingpong_mio_path_a075a4f53019::main", "pingpong_mio::main"),
            ("pingpong_tokio::main", "pingpong_tokio::main"),
            ("pingpong::cli::main", "pingpong::cli::main"),
            ("a;b", "a,b"),
        ] {
            assert_eq!(frame_name(frame), name, "{frame}");
        }
    }

    #[test]
    #[ignore = "needs valgrind: scripts/test.sh installs it, as root, and runs this"]
    fn a_program_run_twice_counts_the_same_and_more_work_counts_more() {
        let callgrind = Callgrind::find().unwrap_or_else(|why| panic!("{why}"));
        assert!(
            callgrind.version.starts_with("valgrind-"),
            "{}",
            callgrind.version
        );
        let dir = tempfile::tempdir().unwrap();
        let count = |n: &str, name: &str| {
            let out = dir.path().join(name);
            let args = [
                "-c".into(),
                format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"),
            ];
            let (program, args) = callgrind.wrap(Path::new("/bin/sh"), &args, &out, false);
            let status = Command::new(program).args(args).output().unwrap().status;
            assert!(status.success());
            total(&out).unwrap()
        };
        let (a, b, more) = (count("1000", "a"), count("1000", "b"), count("2000", "c"));
        assert!(a.abs_diff(b) * 1000 < a, "{a} and {b} for the same work");
        assert!(more > a + (a / 10), "{more} for twice the loop of {a}");
    }

    #[test]
    fn a_function_s_own_instructions_are_its_stack_s_and_a_call_s_are_its_callee_s() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x");
        let file = "events: Ir sysCount sysTime\nfl=a.rs\n\
                    fn=echo::h0123456789abcdef'serve'main\n3 10\n\
                    cfn=write'echo'serve\ncalls=2 0\n4 500 2 9\n5 7 1 3\n\
                    fn=<[u8; 16]>::fill'echo'serve\n1 4\nfn=echo'serve'main\n+1 3\n";
        std::fs::write(&out, file).unwrap();
        let found = stacks(&out).unwrap();
        let expected = [
            ("main;serve;echo", 20, 1),
            ("serve;echo;<[u8, 16]>::fill", 4, 0),
        ];
        let expected: Stacks = expected
            .into_iter()
            .map(|(s, instructions, syscalls)| {
                let count = Count {
                    instructions,
                    syscalls,
                };
                (s.to_string(), count)
            })
            .collect();
        assert_eq!(found, expected);
        std::fs::write(&out, "events: Ir\n").unwrap();
        assert!(stacks(&out).unwrap_err().contains("names no function"));
    }

    #[test]
    fn a_file_without_totals_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("x");
        std::fs::write(&out, "events: Ir\nsummary: 1234\n").unwrap();
        assert_eq!(total(&out), Ok(1234));
        std::fs::write(&out, "events: Ir\n").unwrap();
        assert!(total(&out).is_err());
        assert!(total(&dir.path().join("missing")).is_err());
    }
}
