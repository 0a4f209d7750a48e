//! The end of a run: saved whole, its report rendered into its folder, and
//! on the terminal the answer last: the muduo tables, what their marks mean,
//! and where the report is.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::execute::Ended;
use history::{History, Location};
use model::named::Named;
use model::results::{Results, Status};
use report::Format;

/// What a finished run found.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every cell has a figure (or is unavailable here, with the reason).
    AllOk,
    /// A cell failed; the tables say which and why.
    SomeFailed,
    /// Stopped by Ctrl-C or SIGTERM; what it measured is saved.
    Interrupted,
}

impl Outcome {
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::AllOk => 0,
            Self::SomeFailed => 1,
            Self::Interrupted => 130,
        }
    }
}

/// How much of the plan this process ran, and since when.
pub struct Tally {
    /// Runs in the plan.
    pub total: usize,
    /// Runs this process went through (a resumed run skips those it holds).
    pub ran: usize,
    pub started: Instant,
}

pub fn finish(
    results: &mut Results,
    out: &Path,
    ended: Ended,
    tally: Tally,
    history: Option<&Path>,
) -> Result<Outcome> {
    let path = model::results::file::in_folder(out);
    if ended == Ended::Interrupted {
        results.save(&path)?;
        eprintln!(
            "interrupted: {} of {} runs saved in {}; continue with: compare run --resume {}",
            results.runs(),
            tally.total,
            path.display(),
            out.display()
        );
        return Ok(Outcome::Interrupted);
    }
    results.config.ended = Some(chrono::Utc::now().to_rfc3339());
    results.save(&path)?;
    let reference = report::reference(results, None)?;
    let files = report::write(results, Format::ALL, out, &reference)?;
    if let Some(history) = history {
        append(results, &path, history);
    }
    print!("{}", report::terminal::render(results));
    if let Some(reached) = results.reached() {
        println!("\n{reached}");
    }
    println!(
        "\n{} runs in {:.0} s; results: {}; report (every figure, load by load): {}",
        tally.ran,
        tally.started.elapsed().as_secs_f64(),
        path.display(),
        files
            .iter()
            .find(|f| f.extension().is_some_and(|e| e == "html"))
            .unwrap_or(&path)
            .display()
    );
    // An unavailable runtime is a fact of the machine, reported, not a failure.
    Ok(
        if results.cells.iter().all(|c| c.status != Status::Failed) {
            Outcome::AllOk
        } else {
            Outcome::SomeFailed
        },
    )
}

/// Appends the run to the history. A history that cannot take it loses
/// nothing: the results file is saved, and the warning says how to import it.
fn append(results: &Results, path: &Path, history: &Path) {
    let history = Location::from(history);
    let appended =
        History::open(&history).and_then(|mut h| h.append(results, &path.display().to_string()));
    match appended {
        Ok(_) => eprintln!("history: the run is in {history}"),
        Err(e) => eprintln!(
            "warning: {e:#}; the results are saved: add them later with \
             compare history import {} --history {history}",
            path.parent().unwrap_or(Path::new(".")).display(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_say_ok_failed_or_interrupted() {
        let codes =
            [Outcome::AllOk, Outcome::SomeFailed, Outcome::Interrupted].map(|o| o.exit_code());
        assert_eq!(codes, [0, 1, 130]);
    }
}
