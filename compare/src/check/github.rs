//! `compare check --format github-action-benchmark`: its
//! customBiggerIsBetter format, the candidate's MiB/s.

use anyhow::Result;

use model::verdicts::{Comparison, Render};

pub struct GithubActionBenchmark;

impl Render for GithubActionBenchmark {
    fn render(&self, comparison: &Comparison) -> Result<String> {
        let entries: Vec<serde_json::Value> = comparison
            .judgements
            .iter()
            .filter(|f| f.metric.key == "mib_per_s")
            .map(|f| {
                serde_json::json!({
                    "name": f.bench_name(comparison),
                    "unit": "MiB/s",
                    "value": f.candidate,
                    "range": format!("±{:.1}", (f.candidate_range.1 - f.candidate_range.0) / 2.0),
                    "extra": format!(
                        "median of {}; baseline {:.1}; change {:+.1}% [{:+.1}%, {:+.1}%]: {} \
                         (confirmed with all {} figures judged together: at most {}% of checks \
                         of two identical builds confirm a change)",
                        comparison.candidate_name,
                        f.baseline,
                        (f.ratio - 1.0) * 100.0,
                        (f.low - 1.0) * 100.0,
                        (f.high - 1.0) * 100.0,
                        f.word(),
                        comparison.judgements.len(),
                        comparison.false_alarm_percent(),
                    ),
                })
            })
            .collect();
        Ok(serde_json::to_string_pretty(&entries)? + "\n")
    }
}
