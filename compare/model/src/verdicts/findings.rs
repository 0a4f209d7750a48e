//! A comparison's flags grouped by what moves them together: one side's
//! figures of one cell (its CPU, context switches and system calls, which
//! one cause in the runtime moves at once), or a cell's throughput and
//! round trips, each group one finding with its figures. A check then
//! names a cause once, not a dozen times.

use super::{Comparison, Judgement};
use crate::results::key::CellKey;
use crate::results::registry::Side;
use crate::stats::Verdict;

/// What a list of findings is headed with, wherever it is shown.
pub const HEADING: &str =
    "Findings (the flagged figures of one side of one cell, together), worst first:";

/// The flagged figures of one side of one cell.
pub struct Finding<'a> {
    /// The cell, as its judgements label it.
    pub cell: &'a str,
    pub key: &'a CellKey,
    /// Whose figures: a side's, or none for the cell's throughput and
    /// round trips.
    pub side: Option<Side>,
    /// Its flagged figures, worst first.
    pub judgements: Vec<&'a Judgement>,
}

impl Finding<'_> {
    /// What counts of it: a regression where any of its figures is a
    /// confirmed one, else an improvement where any is, else no change
    /// (its flags unconfirmed).
    pub fn verdict(&self) -> Verdict {
        let confirmed = |v: Verdict| self.judgements.iter().any(|j| j.counts() == v);
        [Verdict::Regressed, Verdict::Improved]
            .into_iter()
            .find(|&v| confirmed(v))
            .unwrap_or(Verdict::NoChange)
    }

    pub fn confirmed(&self) -> bool {
        self.verdict() != Verdict::NoChange
    }

    /// "REGRESSED: tokio@1.51.0 ..., split shape, server: futex/block
    /// +232% [+184%, +269%], ...": the verdict (or the way its worst flag
    /// went, not confirmed), whose, and each figure's change, those not
    /// confirmed marked.
    pub fn line(&self) -> String {
        let word = match (self.verdict(), self.judgements[0].verdict) {
            (Verdict::NoChange, Verdict::Improved) => "unconfirmed improvement",
            (Verdict::NoChange, _) => "unconfirmed regression",
            (v, _) => v.word(),
        };
        let whose = self.side.map_or("throughput and round trips", Side::word);
        let figures: Vec<String> = self
            .judgements
            .iter()
            .map(|j| {
                let mark = match (j.confirmed, self.confirmed()) {
                    (false, true) => " (unconfirmed)",
                    _ => "",
                };
                format!("{} {}{mark}", j.metric.label, change(j))
            })
            .collect();
        format!("{word}: {}, {whose}: {}", self.cell, figures.join(", "))
    }
}

/// "+231.5% [+184.4%, +268.9%]": a judgement's change and its interval.
pub fn change(j: &Judgement) -> String {
    let percent = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);
    format!(
        "{} [{}, {}]",
        percent(j.ratio),
        percent(j.low),
        percent(j.high)
    )
}

/// The comparison's flagged figures as findings: confirmed regressions
/// first, then confirmed improvements, then what is flagged but not
/// confirmed, each group in the order of its worst figure.
pub fn findings(comparison: &Comparison) -> Vec<Finding<'_>> {
    let mut found: Vec<Finding> = Vec::new();
    for j in &comparison.judgements {
        if j.verdict == Verdict::NoChange {
            continue;
        }
        let side = j.metric.side;
        match found.iter_mut().find(|f| *f.key == j.key && f.side == side) {
            Some(finding) => finding.judgements.push(j),
            None => found.push(Finding {
                cell: &j.cell,
                key: &j.key,
                side,
                judgements: vec![j],
            }),
        }
    }
    let rank = |f: &Finding| match f.verdict() {
        Verdict::Regressed => 0,
        Verdict::Improved => 1,
        Verdict::NoChange => 2,
    };
    found.sort_by_key(rank);
    found
}

/// The findings, a line each, worst first; nothing where none is flagged.
pub fn lines(comparison: &Comparison) -> Vec<String> {
    findings(comparison).iter().map(Finding::line).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdicts::tests::halved_and_lone;

    #[test]
    fn figures_that_moved_together_are_one_finding() {
        // The halved load's MiB/s and p99: one finding, confirmed. The
        // lone flag of the other load: a finding of its own, unconfirmed.
        let found = lines(&halved_and_lone());
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].starts_with("REGRESSED: ")
                && found[0].contains("throughput and round trips: p99 RTT us +100.0% [")
                && found[0].contains(", MiB/s -50.0% ["),
            "{found:?}"
        );
        assert!(
            found[1].starts_with("unconfirmed regression: "),
            "{found:?}"
        );
    }
}
