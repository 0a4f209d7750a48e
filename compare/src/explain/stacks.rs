//! What one side of a cell spends per block, by call stack and by
//! function: counted, the difference between a count of some blocks and of
//! twice as many, so that what starting and stopping cost cancels out;
//! sampled, both counts pooled.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use measure::callgrind::Stacks;
use measure::perf::{self, Sampled, Traced};

/// What a stack or a function costs per block: counted by callgrind
/// (instructions, system calls), sampled by perf (CPU time, and its
/// sampling variance), or traced by perf (wake-ups issued, sleeps taken).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub instructions: f64,
    pub syscalls: f64,
    pub cpu_ns: f64,
    /// The variance of `cpu_ns` that sampling alone gives, in ns².
    pub cpu_variance: f64,
    #[serde(default)]
    pub wakes: f64,
    #[serde(default)]
    pub sleeps: f64,
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, other: Self) {
        self.instructions += other.instructions;
        self.syscalls += other.syscalls;
        self.cpu_ns += other.cpu_ns;
        self.cpu_variance += other.cpu_variance;
        self.wakes += other.wakes;
        self.sleeps += other.sleeps;
    }
}

/// Per block, at the tip of each call stack.
pub type PerBlock = BTreeMap<String, Cost>;

/// Each stack's counts between a count of `short` and of `long` (twice as
/// long), per block of those between them (`blocks`: each count's). A
/// stack that cost less in the longer run (an event loop's turns vary with
/// the machine's timing) keeps its negative figure: a function's sum is
/// its cost per block still.
pub fn per_block(short: &Stacks, long: &Stacks, blocks: [f64; 2]) -> PerBlock {
    let blocks = blocks[1] - blocks[0];
    let stacks: BTreeSet<&String> = short.keys().chain(long.keys()).collect();
    stacks
        .into_iter()
        .map(|stack| {
            let count = |s: &Stacks| s.get(stack).copied().unwrap_or_default();
            let (short, long) = (count(short), count(long));
            let cost = Cost {
                instructions: (long.instructions as f64 - short.instructions as f64) / blocks,
                syscalls: (long.syscalls as f64 - short.syscalls as f64) / blocks,
                ..Cost::default()
            };
            (stack.clone(), cost)
        })
        .collect()
}

/// The same of two sampled runs, pooled: each stack's CPU time over both
/// counts, per block of both counts' `blocks`, with the variance of its samples (a count of `k`
/// samples varies by `k`: in ns², `k` times the period squared). Not
/// their difference: CPU time moves with the VM's speed by a fifth or more
/// within minutes, and a difference of two counts, the longer twice the
/// shorter, moves by more than twice that; starting and stopping cost a
/// few milliseconds of CPU (12 to 24 samples of a side here, of about
/// 2,700), alike on both implementations.
pub fn per_block_sampled(short: &Sampled, long: &Sampled, blocks: [f64; 2]) -> PerBlock {
    let pooled = blocks[0] + blocks[1];
    let stacks: BTreeSet<&String> = short.keys().chain(long.keys()).collect();
    stacks
        .into_iter()
        .map(|stack| {
            let ns = |s: &Sampled| s.get(stack).copied().unwrap_or(0) as f64;
            let all = ns(short) + ns(long);
            let cost = Cost {
                cpu_ns: all / pooled,
                cpu_variance: all * perf::PERIOD_NS as f64 / (pooled * pooled),
                ..Cost::default()
            };
            (stack.clone(), cost)
        })
        .collect()
}

/// Two traced runs' wake-ups and sleeps per block, by path, and their
/// wake-ups by whole stack (for the flame graph): as counted, the
/// difference between a count of `short` and of `long` per block of those
/// between them (`blocks`: each count's).
pub fn per_block_traced(short: &Traced, long: &Traced, blocks: [f64; 2]) -> [PerBlock; 2] {
    let blocks = blocks[1] - blocks[0];
    let mut paths = difference(&short.wakes, &long.wakes, blocks, |c, n| c.wakes = n);
    for (path, cost) in difference(&short.sleeps, &long.sleeps, blocks, |c, n| c.sleeps = n) {
        *paths.entry(path).or_default() += cost;
    }
    let stacks = difference(&short.wake_stacks, &long.wake_stacks, blocks, |c, n| {
        c.wakes = n
    });
    [paths, stacks]
}

/// Each key's count in `long` less that in `short`, per block, set into a
/// cost by `set`.
fn difference(short: &Sampled, long: &Sampled, blocks: f64, set: fn(&mut Cost, f64)) -> PerBlock {
    let keys: BTreeSet<&String> = short.keys().chain(long.keys()).collect();
    keys.into_iter()
        .map(|key| {
            let count = |s: &Sampled| s.get(key).copied().unwrap_or(0) as f64;
            let mut cost = Cost::default();
            set(&mut cost, (count(long) - count(short)) / blocks);
            (key.clone(), cost)
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

#[cfg(test)]
mod tests {
    use super::*;
    use measure::callgrind::Count;

    fn instructions(n: f64) -> Cost {
        Cost {
            instructions: n,
            ..Cost::default()
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
        let stacks = per_block(&short, &long, [100.0, 200.0]);
        let echo = Cost {
            instructions: 20.0,
            syscalls: 1.0,
            ..Cost::default()
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
    fn a_sampled_stack_s_time_per_block_pools_both_counts_with_its_variance() {
        let p = perf::PERIOD_NS;
        let sampled =
            |ns: u64| -> Sampled { [("main;echo".to_string(), ns)].into_iter().collect() };
        // 100 blocks in the shorter count, 200 in the longer: 40 samples
        // over 300 blocks.
        let stacks = per_block_sampled(&sampled(10 * p), &sampled(30 * p), [100.0, 200.0]);
        let echo = stacks["main;echo"];
        assert_eq!(echo.cpu_ns, 40.0 * p as f64 / 300.0);
        // A standard deviation of sqrt(40) samples, over the same blocks.
        let sd = echo.cpu_variance.sqrt() * 300.0 / p as f64;
        assert!((sd - 40f64.sqrt()).abs() < 1e-9, "{sd}");
        assert_eq!(echo.instructions, 0.0);
    }
}
