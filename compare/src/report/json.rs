//! The report as a JSON summary: every cell's summaries without the runs,
//! for dashboards and scripts.

use anyhow::Result;

use super::document::{Document, Export};
use crate::results::Results;

pub struct Summary;

impl Export for Summary {
    fn files(&self, document: &Document) -> Result<Vec<(String, String)>> {
        Ok(vec![("summary.json".into(), summary(document.results)?)])
    }
}

fn summary(results: &Results) -> Result<String> {
    let cells: Vec<_> = results
        .cells
        .iter()
        .map(|c| {
            serde_json::json!({
                "runtime": c.implementation,
                "version": c.version,
                "client": c.client,
                "threads": c.threads,
                "client_threads": c.load().client_threads(),
                "connections": c.connections,
                "block": c.block,
                "window": c.window,
                "work": c.work,
                "status": c.status,
                "oversubscribed": c.placement.oversubscribed,
                "noisy": c.noisy,
                "client_bound": c.client_bound,
                "runs": c.runs.len(),
                "mib_per_s": c.mib_per_s,
                "figures": c.figures,
                "interval": c.interval,
                "precision_percent": c.precision(),
                "modes": c.modes,
                "error": c.error,
            })
        })
        .collect();
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
