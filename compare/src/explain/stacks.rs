//! What one side of a cell spends per block, by call stack and by
//! function: the difference between a count of some blocks and of twice as
//! many, so that what starting and stopping cost cancels out.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::measure::callgrind::Stacks;

/// What a stack or a function costs per block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub instructions: f64,
    pub syscalls: f64,
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, other: Self) {
        self.instructions += other.instructions;
        self.syscalls += other.syscalls;
    }
}

/// Per block, at the tip of each call stack.
pub type PerBlock = BTreeMap<String, Cost>;

/// Each stack's counts between a count of `short` and of `long` (twice as
/// many blocks per connection), per block of the `blocks` between them. A
/// stack that cost less in the longer run (an event loop's turns vary with
/// the machine's timing) keeps its negative figure: a function's sum is
/// its cost per block still.
pub fn per_block(short: &Stacks, long: &Stacks, blocks: f64) -> PerBlock {
    let stacks: BTreeSet<&String> = short.keys().chain(long.keys()).collect();
    stacks
        .into_iter()
        .map(|stack| {
            let count = |s: &Stacks| s.get(stack).copied().unwrap_or_default();
            let (short, long) = (count(short), count(long));
            let cost = Cost {
                instructions: (long.instructions as f64 - short.instructions as f64) / blocks,
                syscalls: (long.syscalls as f64 - short.syscalls as f64) / blocks,
            };
            (stack.clone(), cost)
        })
        .collect()
}

/// A function's cost per block: its own, and with the functions it calls
/// (counted once per stack where it recurses).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Costs {
    pub own: Cost,
    pub inclusive: Cost,
}

/// Every function's costs per block, by name.
pub fn functions(stacks: &PerBlock) -> BTreeMap<String, Costs> {
    let mut functions: BTreeMap<String, Costs> = BTreeMap::new();
    for (stack, &cost) in stacks {
        let frames: Vec<&str> = stack.split(';').collect();
        let mut seen = BTreeSet::new();
        for frame in &frames {
            if seen.insert(*frame) {
                functions.entry(frame.to_string()).or_default().inclusive += cost;
            }
        }
        if let Some(tip) = frames.last() {
            functions.entry(tip.to_string()).or_default().own += cost;
        }
    }
    functions
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::callgrind::Count;

    fn instructions(n: f64) -> Cost {
        Cost {
            instructions: n,
            syscalls: 0.0,
        }
    }

    #[test]
    fn a_function_s_costs_are_the_longer_count_less_the_shorter_per_block() {
        let count = |pairs: &[(&str, u64, u64)]| -> Stacks {
            pairs
                .iter()
                .map(|&(s, instructions, syscalls)| {
                    let count = Count {
                        instructions,
                        syscalls,
                    };
                    (s.to_string(), count)
                })
                .collect()
        };
        let short = count(&[
            ("main;serve;echo", 1000, 100),
            ("main;serve", 300, 0),
            ("main", 50, 0),
        ]);
        let long = count(&[
            ("main;serve;echo", 3000, 200),
            ("main;serve", 500, 0),
            ("main", 50, 0),
        ]);
        let stacks = per_block(&short, &long, 100.0);
        let echo = Cost {
            instructions: 20.0,
            syscalls: 1.0,
        };
        assert_eq!(stacks["main;serve;echo"], echo);
        let f = functions(&stacks);
        assert_eq!(f["echo"].own, echo);
        assert_eq!(f["serve"].own, instructions(2.0));
        assert_eq!(f["serve"].inclusive.instructions, 22.0);
        assert_eq!(f["main"].own, instructions(0.0));
        assert_eq!(f["main"].inclusive.syscalls, 1.0);
        // Recursion counts once per stack.
        let f = functions(
            &[("a;b;a".to_string(), instructions(5.0))]
                .into_iter()
                .collect(),
        );
        assert_eq!(f["a"].inclusive, instructions(5.0));
    }

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
}
