//! What tells a cell from every other, defined once: its implementation
//! (whose name carries its version and configuration), its client, its
//! load, its workload and the server's work per block. The key has one
//! text form (its label, in checks, histories and the site) and one
//! serialised form (every dimension by name, in the CSV, summary.json and
//! the history), and `compare check` matches cells by it, as the history
//! tells a cell's past runs by it.

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
    /// Units of server work per block (`--work`): a cell with more does
    /// other work, and is another cell. A run's cells share it, so a
    /// run's files (the CSV, summary.json) leave it to the run's options
    /// and the label leaves it out; the history, which holds the cells of
    /// many runs, keeps it beside the other fields ([`CellKey::identity`]).
    pub work: u64,
}

impl CellKey {
    pub fn of(cell: &Cell) -> Self {
        Self {
            implementation: cell.implementation.clone(),
            client: cell.client.clone(),
            load: cell.load(),
            workload: cell.workload(),
            work: cell.work,
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

    /// Every dimension across runs, as the history keeps it: the
    /// serialised form's fields, then the server's work.
    pub fn identity(&self) -> Vec<(&'static str, Value)> {
        let mut all = self.fields().to_vec();
        all.push(("work", self.work.into()));
        all
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
