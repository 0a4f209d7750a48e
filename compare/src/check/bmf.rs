//! `compare check --format bmf`: Bencher Metric Format, per benchmark the
//! candidate's throughput and latency with their run ranges.

use anyhow::Result;

use model::verdicts::{Comparison, Render};

pub struct Bmf;

impl Render for Bmf {
    fn render(&self, comparison: &Comparison) -> Result<String> {
        let mut out = serde_json::Map::new();
        for f in &comparison.judgements {
            // Bencher's own names for throughput and latency; the
            // registry's key for every other figure.
            let measure = match f.metric.key {
                "mib_per_s" => "throughput",
                "rtt_p99_us" => "latency",
                key => key,
            };
            let entry = out
                .entry(f.bench_name(comparison))
                .or_insert_with(|| serde_json::json!({}));
            entry[measure] = serde_json::json!({
                "value": f.candidate,
                "lower_value": f.candidate_range.0,
                "upper_value": f.candidate_range.1,
            });
        }
        Ok(serde_json::to_string_pretty(&serde_json::Value::Object(out))? + "\n")
    }
}
