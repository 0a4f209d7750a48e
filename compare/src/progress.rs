//! Progress of a long run on standard error: a bar with the current cell and
//! an ETA on a terminal, plain lines otherwise (or with `--quiet`).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    /// Runs done before this process started (a resumed run).
    done_before: usize,
    started: Instant,
}

impl Progress {
    /// `total` runs to go; `done` of them already finished (a resumed run).
    pub fn new(total: usize, done: usize, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} runs, {elapsed} elapsed, ETA {eta}  {msg}",
                )
                .expect("a valid template"),
            );
            bar.set_position(done as u64);
            bar.reset_eta();
            bar
        });
        Self {
            bar,
            total,
            done,
            done_before: done,
            started: Instant::now(),
        }
    }

    /// `runs` more runs than planned: repetitions in pursuit of a precision.
    pub fn more(&mut self, runs: usize) {
        self.total += runs;
        if let Some(bar) = &self.bar {
            bar.set_length(self.total as u64);
        }
    }

    /// The run about to start.
    pub fn start(&self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(what.to_string());
        }
    }

    /// A run ended (or was skipped), with what it found.
    pub fn finished(&mut self, line: &str) {
        self.done += 1;
        match &self.bar {
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None => eprintln!(
                "[{:>4}/{}, ETA {}] {line}",
                self.done,
                self.total,
                self.eta()
            ),
        }
    }

    /// A line that is not a run's outcome.
    pub fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Runs planned so far.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Runs this process went through (ran, or skipped for a cell that had failed).
    pub fn finished_here(&self) -> usize {
        self.done - self.done_before
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Time left, from the pace of the runs done in this process.
    fn eta(&self) -> String {
        let left = self.total.saturating_sub(self.done);
        if left == 0 {
            return "0s".into();
        }
        let here = (self.done - self.done_before).max(1);
        let pace = self.started.elapsed().as_secs_f64() / here as f64;
        indicatif::HumanDuration(Duration::from_secs_f64(pace * left as f64)).to_string()
    }
}
