//! `compare check --format bmf`: Bencher Metric Format, per benchmark the
//! candidate's throughput and latency with their run ranges.

use anyhow::Result;

use super::verdicts::{Comparison, Metric, Render};

pub struct Bmf;

impl Render for Bmf {
    fn render(&self, comparison: &Comparison) -> Result<String> {
        let mut out = serde_json::Map::new();
        for f in &comparison.findings {
            let measure = match f.metric {
                Metric::Throughput => "throughput",
                Metric::RttP99 => "latency",
                Metric::ServerInstructions => "server-instructions",
                Metric::ClientInstructions => "client-instructions",
                Metric::ServerSyscalls => "server-syscalls",
                Metric::ClientSyscalls => "client-syscalls",
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
