//! What connections counted, merged per thread and then per process, and
//! the [`Outcome`] printed for compare.

use std::collections::BTreeMap;
use std::time::Instant;

use pingpong::latency::{self, Histogram};
use serde::{Deserialize, Serialize};

use crate::{Config, Window};

/// What one connection (or several, merged) counted.
pub struct Tally {
    /// Good answers inside the window.
    pub answered: u64,
    /// Good answers over the whole run, the warm-up's and the grace's too.
    pub all_answered: u64,
    /// Bytes of answers inside the window: heads and bodies, over HTTP/2
    /// the bodies only.
    pub bytes: u64,
    /// Bad answers and failures inside the window by kind, with the first
    /// one's words.
    pub errors: BTreeMap<String, (u64, String)>,
    /// Failures before the window opened, which no window count shows: a
    /// service that never answers well fails here first.
    pub before: BTreeMap<String, (u64, String)>,
    /// Each good answer's time from its request's first byte (in the open
    /// loop, from when it was due), in ns.
    pub latency: Histogram,
    /// Connections whose answer in flight never came within the grace.
    pub unanswered: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            answered: 0,
            all_answered: 0,
            bytes: 0,
            errors: BTreeMap::new(),
            before: BTreeMap::new(),
            latency: latency::histogram(),
            unanswered: 0,
        }
    }
}

impl Tally {
    /// A good answer of `bytes`, asked at `asked`, come back at `at`.
    pub fn answered(&mut self, window: &Window, asked: Instant, at: Instant, bytes: usize) {
        self.all_answered += 1;
        if window.holds(at) {
            self.answered += 1;
            self.bytes += bytes as u64;
            let ns = (at - asked).as_nanos().max(1) as u64;
            let _ = self.latency.record(ns.min(self.latency.high()));
        }
    }

    /// A bad answer or a failure of `kind`, at `at`; none counted after
    /// the window closed.
    pub fn failed(&mut self, window: &Window, kind: &str, words: &str, at: Instant) {
        let counts = match at {
            at if at < window.opens => &mut self.before,
            at if at < window.closes => &mut self.errors,
            _ => return,
        };
        // A failing service fails thousands of times a second: its words are
        // kept once, the first time.
        match counts.get_mut(kind) {
            Some((count, _)) => *count += 1,
            None => {
                counts.insert(kind.into(), (1, words.into()));
            }
        }
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: Tally) {
        self.answered += other.answered;
        self.all_answered += other.all_answered;
        self.bytes += other.bytes;
        self.unanswered += other.unanswered;
        for (mine, theirs) in [
            (&mut self.errors, other.errors),
            (&mut self.before, other.before),
        ] {
            for (kind, (count, words)) in theirs {
                mine.entry(kind).or_insert((0, words)).0 += count;
            }
        }
        let _ = self.latency.add(&other.latency);
    }

    /// Every thread's tally, added up.
    pub fn merged(tallies: impl IntoIterator<Item = Tally>) -> Tally {
        let mut all = Tally::default();
        for tally in tallies {
            all.add(tally);
        }
        all
    }

    /// What the load prints, from the tally of all its threads.
    pub fn outcome(self, config: &Config, window: Window, started: Instant) -> Outcome {
        let shown = |counts: BTreeMap<String, (u64, String)>| {
            counts
                .into_iter()
                .map(|(kind, (count, first))| Failures { kind, count, first })
                .collect()
        };
        Outcome {
            connections: config.connections,
            threads: config.threads,
            rate: config.rate,
            answered: self.answered,
            all_answered: self.all_answered,
            bytes: self.bytes,
            seconds: (window.closes - window.opens).as_secs_f64(),
            errors: shown(self.errors),
            before_window: shown(self.before),
            unanswered: self.unanswered,
            latency_histogram: (!self.latency.is_empty()).then(|| latency::encode(&self.latency)),
            ran_seconds: started.elapsed().as_secs_f64(),
            cpus: pingpong::affinity::of(std::process::id()).unwrap_or_default(),
        }
    }
}

/// Failures of one kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failures {
    pub kind: String,
    pub count: u64,
    /// What the first of them was.
    pub first: String,
}

/// What the load did, as it prints it (one JSON line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub connections: usize,
    pub threads: usize,
    /// The open loop's rate asked, requests a second; none: closed loop.
    pub rate: Option<f64>,
    /// Good answers inside the window.
    pub answered: u64,
    /// Good answers over the whole run (what its CPU time paid for).
    pub all_answered: u64,
    /// Their bytes: heads included, but over HTTP/2.
    pub bytes: u64,
    /// The window.
    pub seconds: f64,
    /// Bad answers and failures inside the window.
    pub errors: Vec<Failures>,
    /// Those before it, in the warm-up.
    pub before_window: Vec<Failures>,
    /// Answers in flight at the window's close that never came.
    pub unanswered: u64,
    /// Each good answer's time in ns, as pingpong's histograms are
    /// encoded; in the open loop, from when its request was due.
    pub latency_histogram: Option<String>,
    /// From the start to the end, connecting and the grace included.
    pub ran_seconds: f64,
    /// The CPUs the load may run on.
    pub cpus: Vec<usize>,
}

impl Outcome {
    /// Good answers a second.
    pub fn rate(&self) -> f64 {
        self.answered as f64 / self.seconds
    }
}
