//! What tells a cell from every other, defined once: its implementation
//! (whose name carries its version and configuration), its client, its
//! load and its workload. The key has one text form (its label, in checks,
//! histories and the site) and one serialised form (every dimension by
//! name, in the CSV, summary.json and the history), and `compare check`
//! matches cells by it.

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::Cell;
use crate::matrix::{Load, Rate, Tls, Workload};

/// One cell's identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellKey {
    /// Empty where two implementations of one run are matched with each
    /// other (`compare check --baseline A --candidate B`).
    pub implementation: String,
    pub client: String,
    pub load: Load,
    pub workload: Workload,
}

impl CellKey {
    pub fn of(cell: &Cell) -> Self {
        Self {
            implementation: cell.implementation.clone(),
            client: cell.client.clone(),
            load: cell.load(),
            workload: cell.workload(),
        }
    }

    /// The same key, its implementation and client those of `cell`.
    pub fn named_as(&self, cell: &Cell) -> Self {
        Self {
            implementation: cell.implementation.clone(),
            client: cell.client.clone(),
            ..self.clone()
        }
    }

    /// The same key without its implementation and client: what matches
    /// two implementations' cells inside one run.
    pub fn unnamed(&self) -> Self {
        Self {
            implementation: String::new(),
            client: String::new(),
            ..self.clone()
        }
    }

    /// The text form: "tokio (client mio), 1 thread, 1000 connections,
    /// 16384 B", then its window where pipelined and the rest of its
    /// workload.
    pub fn label(&self) -> String {
        let (implementation, client) = (&self.implementation, &self.client);
        let client = match client.is_empty() || client == implementation {
            true => String::new(),
            false => format!(" (client {client})"),
        };
        format!("{implementation}{client}, {}", self.what())
    }

    /// The label without the implementation: "1 thread, 1000 connections,
    /// 16384 B, spawn shape".
    pub fn what(&self) -> String {
        let window = match self.workload.window {
            1 => String::new(),
            w => format!(", window {w}"),
        };
        format!(
            "{}, {} B{window}{}",
            self.load.label(),
            self.workload.block,
            self.workload.beyond_block_and_window()
        )
    }

    /// The serialised form: every dimension by name, in one order, an
    /// absent one null (a closed loop's rate, plain TCP's TLS).
    pub fn fields(&self) -> [(&'static str, Value); 13] {
        let (load, w) = (&self.load, &self.workload);
        let (per_second, share) = match w.rate {
            None => (None, None),
            Some(Rate::PerSecond(r)) => (Some(r), None),
            Some(Rate::Share(p)) => (None, Some(p)),
        };
        let tls = w.tls.map(|t| match t {
            Tls::Full => "full",
            Tls::Resumption => "resumption",
        });
        [
            ("runtime", self.implementation.as_str().into()),
            ("client", self.client.as_str().into()),
            ("protocol", w.protocol.name().into()),
            ("tls", tls.into()),
            ("shape", w.shape.name().into()),
            ("threads", load.threads.into()),
            ("client_threads", load.client_threads().into()),
            ("connections", load.connections.into()),
            ("block", w.block.into()),
            ("window", w.window.into()),
            ("rate", per_second.into()),
            ("rate_share", share.into()),
            ("churn", w.churn.into()),
        ]
    }
}

impl Serialize for CellKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let fields = self.fields();
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (name, value) in &fields {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl Cell {
    /// Its identity ([`CellKey`]).
    pub fn key(&self) -> CellKey {
        CellKey::of(self)
    }

    /// Its name in checks, histories and the site ([`CellKey::label`]).
    pub fn label(&self) -> String {
        self.key().label()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeSet;

    use pingpong::protocol::Protocol;
    use pingpong::server::Shape;

    use super::*;
    use crate::report::{self, Format};
    use crate::results::{Results, Status};

    /// A run whose cells differ from each other in one dimension or more,
    /// every dimension among them: the implementation (a release, a
    /// configuration), protocol, TLS, shape, rate (blocks a second, or a
    /// share of capacity that made as many), churn, block, window, threads,
    /// client threads and connections.
    pub fn every_dimension() -> Results {
        let mut results = report::tests::fixture();
        let mut model = results.cells[0].clone();
        model.status = Status::Ok;
        // Six runs: enough for `compare check` to judge each cell.
        model.runs = vec![model.runs[0].clone(); 6];
        model.cost_runs.clear();
        let mut cells = Vec::new();
        for implementation in ["tokio", "tokio@1.47.0", "tokio{event_interval=1}"] {
            for (protocol, tls) in [
                (Protocol::Tcp, None),
                (Protocol::Tcp, Some(Tls::Full)),
                (Protocol::Tcp, Some(Tls::Resumption)),
                (Protocol::Udp, None),
                (Protocol::Http, None),
            ] {
                for shape in [Shape::Echo, Shape::Spawn] {
                    for (rate, share, churn) in [
                        (None, None, None),
                        (Some(5000), None, None),
                        (Some(5000), Some(10), None),
                        (None, None, Some(10)),
                    ] {
                        for (block, window) in [(16384, 1), (1024, 1), (16384, 4)] {
                            for (threads, client_threads, connections) in [
                                (1, None, 10),
                                (2, None, 10),
                                (1, Some(2), 10),
                                (1, None, 100),
                            ] {
                                let mut cell = model.clone();
                                cell.implementation = implementation.into();
                                cell.client = implementation.into();
                                (cell.protocol, cell.tls, cell.shape) = (protocol, tls, shape);
                                (cell.rate, cell.rate_share) = (rate, share);
                                cell.churn = churn;
                                (cell.block, cell.window) = (block, window);
                                (cell.threads, cell.client_threads) = (threads, client_threads);
                                cell.connections = connections;
                                cells.push(cell);
                            }
                        }
                    }
                }
            }
        }
        results.cells = cells;
        results.summarize();
        results
    }

    #[test]
    fn no_two_cells_share_a_key_in_any_output() {
        let results = every_dimension();
        let n = results.cells.len();
        assert_eq!(n, 3 * 5 * 2 * 4 * 3 * 4);
        let keys: BTreeSet<CellKey> = results.cells.iter().map(Cell::key).collect();
        assert_eq!(keys.len(), n, "the keys");
        let labels: BTreeSet<String> = results.cells.iter().map(Cell::label).collect();
        assert_eq!(labels.len(), n, "the labels");
        let files = report::render(&results, &[Format::Csv, Format::Json], "tokio").unwrap();
        let file = |name: &str| &files.iter().find(|(n, _)| n == name).unwrap().1;
        // The CSV: a row per run, its cell told apart by the key's columns alone.
        let mut csv = csv::Reader::from_reader(file("results.csv").as_bytes());
        let header = csv.headers().unwrap().clone();
        let names: Vec<&str> = CellKey::of(&results.cells[0])
            .fields()
            .iter()
            .map(|(name, _)| *name)
            .collect();
        let at: Vec<usize> = (names.iter())
            .map(|name| header.iter().position(|h| h == *name).unwrap())
            .collect();
        let rows: BTreeSet<Vec<String>> = csv
            .records()
            .map(|r| {
                let r = r.unwrap();
                at.iter().map(|&i| r[i].to_string()).collect()
            })
            .collect();
        assert_eq!(rows.len(), n, "results.csv");
        // summary.json, read as other programs would, untyped.
        let summary: serde_json::Value = serde_json::from_str(file("summary.json")).unwrap();
        let cells: BTreeSet<String> = summary["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let fields: Vec<String> = names.iter().map(|name| c[*name].to_string()).collect();
                fields.join("|")
            })
            .collect();
        assert_eq!(cells.len(), n, "summary.json");
        // compare check matches cell by cell, never two as one.
        let sides = crate::check::verdicts::between("a", &results, "b", &results);
        assert_eq!(sides.matched(), n, "compare check");
    }
}
