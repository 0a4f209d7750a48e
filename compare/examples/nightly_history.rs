//! Years of nightly runs of realistic shape, written into a history, for
//! sizing the history and its site (`scripts/history-size.sh`): a committed
//! run as the template, one run a night on one machine, each cell's
//! figures moved by ±3% noise, tokio 15% slower from night 400 and monoio
//! 10% faster from night 650 (two steps for the history to find), glommio
//! absent for a week from night 500 (it did not build) and no run at all
//! for ten nights from night 700 (the machine was down).
//!
//!   cargo run --release -p compare --example nightly_history -- TEMPLATE HISTORY RUNS [LAST] [--after N]
//!
//! TEMPLATE is a results file or a run's folder, HISTORY a file or a
//! `postgres://` URL; with LAST, the last two nights' results are written
//! there too (`LAST/before`, `LAST/after`), for `compare check`; with
//! `--after N`, the first N runs are taken as in the history already and
//! only the rest appended (each night's noise is its own: the same night
//! is the same run, whenever it is written). Each append's time is printed
//! at the end: its median and its slowest.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use chrono::{DateTime, TimeDelta};
use history::History;
use model::results::{Results, file};

/// The first night.
const START: &str = "2027-01-01T02:00:00+00:00";

fn main() -> Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: nightly_history TEMPLATE HISTORY RUNS [LAST] [--after N]";
    let after: usize = match args.iter().position(|a| a == "--after") {
        Some(at) => {
            let n = args
                .get(at + 1)
                .context(usage)?
                .parse()
                .context("--after N")?;
            args.drain(at..at + 2);
            n
        }
        None => 0,
    };
    let (template, history, runs, last) = match &args[..] {
        [t, h, r] => (t, h, r, None),
        [t, h, r, l] => (t, h, r, Some(PathBuf::from(l))),
        _ => bail!(usage),
    };
    let template = Results::load(&file::named(Path::new(template)))?;
    let runs: usize = runs.parse().context("RUNS is a number of runs")?;
    let mut history = History::open(Path::new(history))?;
    let start = DateTime::parse_from_rfc3339(START)?;
    let mut appends: Vec<Duration> = Vec::new();
    let mut night: i64 = 0;
    for i in 0..runs {
        if night == 700 {
            night += 10;
        }
        let mut rng = fastrand::Rng::with_seed(night as u64);
        let run = nightly(&template, night, start + TimeDelta::days(night), &mut rng);
        if i >= after {
            let begun = Instant::now();
            history.append(&run, &format!("nightly/{night}"))?;
            appends.push(begun.elapsed());
        }
        if let Some(last) = &last
            && i + 2 >= runs
        {
            let dir = last.join(if i + 1 == runs { "after" } else { "before" });
            std::fs::create_dir_all(&dir)?;
            run.save(&file::in_folder(&dir))?;
        }
        if (i + 1) % 50 == 0 {
            eprintln!("{} runs appended", i + 1);
        }
        night += 1;
    }
    appends.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    if let (Some(median), Some(slowest)) = (appends.get(appends.len() / 2), appends.last()) {
        println!(
            "{} runs of {} cells appended: median {:.0} ms, slowest {:.0} ms",
            appends.len(),
            template.cells.len(),
            ms(*median),
            ms(*slowest)
        );
    }
    Ok(())
}

/// The template as the run of `night`, started at `at`.
fn nightly(
    template: &Results,
    night: i64,
    at: DateTime<chrono::FixedOffset>,
    rng: &mut fastrand::Rng,
) -> Results {
    let mut run = template.clone();
    run.config.started = at.to_rfc3339();
    run.config.ended = Some((at + TimeDelta::minutes(15)).to_rfc3339());
    if (500..507).contains(&night) {
        run.cells.retain(|c| c.implementation != "glommio");
        run.config.implementations.retain(|i| i != "glommio");
    }
    for cell in &mut run.cells {
        let step = match cell.implementation.as_str() {
            "tokio" if night >= 400 => 0.85,
            "monoio" if night >= 650 => 1.10,
            _ => 1.0,
        };
        for r in &mut cell.runs {
            let factor = step * (1.0 + 0.03 * (2.0 * rng.f64() - 1.0));
            r.mib_per_s *= factor;
            r.messages_per_s *= factor;
            r.bytes = (r.bytes as f64 * factor) as u64;
        }
    }
    run.summarize();
    run
}
