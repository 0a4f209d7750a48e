//! The report as a JSON summary: every cell's summaries without the runs,
//! for dashboards and scripts, each cell named by its key's fields and
//! label, its figures by the registry's keys.

use anyhow::Result;
use serde_json::{Map, Value, json};

use super::document::{Document, Export};
use model::results::registry::{self, Better};
use model::results::{Cell, Results};
use model::{defaults, stats};

pub struct Summary;

impl Export for Summary {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>> {
        Ok(vec![("summary.json".into(), summary(document.results)?)])
    }
}

fn summary(results: &Results) -> Result<String> {
    let cells: Vec<_> = results.cells.iter().map(cell).collect();
    let mut summary = serde_json::json!({
        "schema": results.schema,
        "suite": results.suite,
        "host": results.host,
        "config": results.config,
        "cells": cells,
    });
    if let Some(host) = &results.server_host {
        summary["server_host"] = serde_json::to_value(host)?;
    }
    Ok(serde_json::to_string_pretty(&summary)? + "\n")
}

/// A cell: its key's fields and label, then what it is and its summaries,
/// each figure of the registry by key with its unit, which way is better,
/// and the interval of its median where its runs give one.
fn cell(c: &Cell) -> Value {
    let mut out = Map::new();
    for (name, value) in c.key().fields() {
        out.insert(name.into(), value);
    }
    let figures: Map<String, Value> = registry::figures()
        .filter_map(|f| {
            let summary = c.summary(f)?;
            let values = c.values(f);
            let interval = stats::median_interval(&values, defaults::CONFIDENCE);
            Some((
                f.key.to_string(),
                json!({
                    "unit": f.unit,
                    "better": match f.better {
                        Better::Higher => "higher",
                        Better::Lower => "lower",
                    },
                    "runs": values.len(),
                    "median": summary.median,
                    "min": summary.min,
                    "max": summary.max,
                    "interval": interval.map(|(low, high, confidence)| json!({
                        "low": low,
                        "high": high,
                        "confidence": confidence,
                    })),
                }),
            ))
        })
        .collect();
    let rest = json!({
        "label": c.label(),
        "rate_per_s": c.rate,
        "version": c.version,
        "client_version": c.client_version,
        "knobs": c.knobs,
        "work": c.work,
        "status": c.status,
        "oversubscribed": c.placement.oversubscribed,
        "noisy": c.noisy,
        "client_bound": c.client_bound,
        "runs": c.runs.len(),
        "cost_runs": c.cost_runs.len(),
        "precision_percent": c.precision(),
        "modes": c.modes,
        "figures": figures,
        "error": c.error,
    });
    if let Value::Object(rest) = rest {
        out.extend(rest);
    }
    Value::Object(out)
}
