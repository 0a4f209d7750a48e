//! `compare run`: plan, prepare, execute, finish. Every implementation at
//! every load, repetitions interleaved, the results file saved after every
//! repetition, the report at the end.

mod execute;
mod finish;
mod interrupt;
mod prepare;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use crate::plan::Plan;
use crate::progress::Progress;
pub use finish::Outcome;
use interrupt::Interrupt;
use model::results::{Config, Results};
use prepare::Build;

/// What `compare run` runs, and how.
pub struct Options {
    pub start: Start,
    /// Plain progress lines instead of a bar.
    pub quiet: bool,
    /// Prebuilt binaries, instead of a build from the source tree.
    pub bin_dir: Option<PathBuf>,
    /// The cargo profile of a build from the source tree.
    pub profile: String,
    /// The history the finished run is appended to; none: not kept.
    pub history: Option<PathBuf>,
}

/// A new run, or one to continue.
pub enum Start {
    /// Its options, as its results will record them, and its folder.
    Fresh { config: Box<Config>, out: PathBuf },
    /// The folder of an interrupted run, which continues with its own options.
    Resume(PathBuf),
}

pub fn run(options: Options) -> Result<Outcome> {
    let interrupt = Interrupt::install()?;
    let (mut results, out) = match options.start {
        Start::Fresh { config, out } => (Results::new(*config), out),
        Start::Resume(dir) => (resume(&dir)?, dir),
    };
    let plan = Plan::of(&results.config)?;
    let build = Build {
        bin_dir: options.bin_dir.as_deref(),
        profile: &options.profile,
    };
    let mut prepared = match prepare::prepare(&plan, &mut results, &out, &build) {
        // The build's cargo, killed with every group of ours, failed it.
        Err(_) if interrupt.raised() => {
            eprintln!("interrupted while preparing the run (its builds): nothing was measured");
            return Ok(Outcome::Interrupted);
        }
        prepared => prepared?,
    };

    let path = model::results::file::in_folder(&out);
    let cost_runs: usize = results.cells.iter().map(|c| c.cost_runs.len()).sum();
    let ((least, most), done) = (plan.runs(), results.runs() + cost_runs);
    // The plan counts timed runs; cost runs join the total as they are
    // planned, and a resumed run's are already done.
    let mut progress = Progress::new(least + cost_runs, done, options.quiet);
    let config = &results.config;
    let repeated = match plan.precision {
        Some(percent) => format!(
            "; up to {most} runs while cells are short of +-{percent}% ({} repetitions each at \
             most{})",
            plan.max_repeat,
            // The default half minute read "0 min" when rounded.
            plan.budget.map_or(String::new(), |b| format!(
                ", {} min beyond the first rounds",
                b.as_secs_f64() / 60.0
            ))
        ),
        None => String::new(),
    };
    let costed = match (&prepared.counting, plan.cost_runs) {
        (Ok(()), 1) => ", then a cost run per cell (the kernel counting system calls)".into(),
        (Ok(()), n) => format!(
            ", then {n} cost runs per cell, round by round (the kernel counting system calls)"
        ),
        (Err(_), _) => String::new(),
    };
    progress.note(&format!(
        "{least} runs: {} workload(s) x {} loads x {} implementations x {} repetitions, \
         {:.2} s each at least{repeated}{costed}; results in {}",
        plan.workloads(),
        config.loads.len(),
        plan.servers.len(),
        plan.repeat,
        config.warmup + config.seconds,
        path.display()
    ));
    for note in &prepared.notes {
        progress.note(note);
    }
    let started = Instant::now();
    let execution = execute::Execution {
        plan: &plan,
        programs: &prepared.programs,
        placements: &prepared.placements,
        path: &path,
        interrupt: &interrupt,
        counting: &prepared.counting,
    };
    let ended = execution.run(&mut results, &mut prepared.pair, &mut progress)?;
    progress.finish();
    let tally = finish::Tally {
        total: progress.total(),
        ran: progress.finished_here(),
        started,
    };
    finish::finish(&mut results, &out, ended, tally, options.history.as_deref())
}

/// The results of an interrupted run, to continue.
fn resume(dir: &Path) -> Result<Results> {
    let mut results = Results::load(&model::results::file::in_folder(dir))?;
    results.config.resumed.push(chrono::Utc::now().to_rfc3339());
    results.config.ended = None;
    Ok(results)
}
