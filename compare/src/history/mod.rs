//! The history: every run kept in one SQLite file (`schema.sql`), so that
//! later readers ask what moved, and since when, on one machine. A run goes
//! in whole, in one transaction, and comes back out as its results.json
//! was; its figures lie in columns too, for queries. Results made before
//! come in through [`import`].

pub mod import;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params, params_from_iter};
use sha2::{Digest, Sha256};

use crate::results::{Cell, Host, Results, Run, Status, Summary};
use crate::{defaults, stats};

/// The schema's version, as `PRAGMA user_version` keeps it.
pub const VERSION: i64 = 1;
/// The schema, which the book's history page shows whole.
pub const SCHEMA: &str = include_str!("schema.sql");
/// The history's name beside the results folders.
pub const NAME: &str = "history.sqlite";
/// How long a writer waits for another one to finish its run.
const BUSY: Duration = Duration::from_secs(60);

/// The default history of a run in `out`: beside it, with the other runs.
pub fn beside(out: &Path) -> PathBuf {
    out.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(NAME)
}

/// A history file, open.
pub struct History {
    db: Connection,
    path: PathBuf,
}

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// A run the history did not have.
    New,
    /// A run it had (an import again, or a resumed run): replaced.
    Replaced,
}

/// A run in the history, in brief.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub id: i64,
    pub machine: String,
    pub started: String,
    pub command: String,
    pub cells: usize,
    pub source: String,
}

impl History {
    /// Opens the history at `path`, made with the schema where it is new.
    /// A file of a newer schema, or no history at all, is refused.
    pub fn open(path: &Path) -> Result<Self> {
        let context = || format!("the history {}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(context)?;
        }
        let db = Connection::open(path).with_context(context)?;
        db.busy_timeout(BUSY).with_context(context)?;
        db.pragma_update(None, "foreign_keys", true)
            .with_context(context)?;
        let mut history = Self {
            db,
            path: path.to_path_buf(),
        };
        history.migrate().with_context(context)?;
        Ok(history)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Brings the schema to [`VERSION`]: made where the file is empty;
    /// refused where it is newer than this compare or not a history.
    fn migrate(&mut self) -> Result<()> {
        let version = |db: &Connection| -> Result<i64> {
            db.pragma_query_value(None, "user_version", |r| r.get(0))
                .context("not an SQLite database")
        };
        let mut found = version(&self.db)?;
        if found < VERSION {
            // Inside the writer's lock: of two processes making one new
            // file, the second finds the first's schema.
            let tx = self
                .db
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            found = version(&tx)?;
            if found < VERSION {
                let tables: i64 = tx.query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                    [],
                    |r| r.get(0),
                )?;
                if tables > 0 {
                    bail!(
                        "it is an SQLite database with {tables} table(s) but no history \
                         schema (user_version {found}); give another file"
                    );
                }
                tx.execute_batch(SCHEMA)?;
                tx.pragma_update(None, "user_version", VERSION)?;
                found = VERSION;
            }
            tx.commit()?;
        }
        if found > VERSION {
            bail!(
                "its schema is version {found}, newer than this compare's {VERSION}: \
                 read it with a newer compare"
            );
        }
        Ok(())
    }

    /// Appends a run, whole or not at all. A run the history has (the same
    /// machine, start and command) is replaced: its import again, or a
    /// resumed run that ended.
    pub fn append(&mut self, results: &Results, source: &str) -> Result<Appended> {
        let context = || {
            format!(
                "appending the run of {} to the history {}",
                results.config.started,
                self.path.display()
            )
        };
        let tx = self
            .db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .with_context(context)?;
        let appended = insert(&tx, results, source).with_context(context)?;
        tx.commit().with_context(context)?;
        Ok(appended)
    }

    /// The runs, oldest first.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let mut statement = self.db.prepare(
            "SELECT run.id, machine.fingerprint, started, command, source,
                    (SELECT count(*) FROM cell WHERE cell.run = run.id)
             FROM run JOIN machine ON machine.id = run.machine ORDER BY started, run.id",
        )?;
        let entries = statement.query_map([], |r| {
            Ok(Entry {
                id: r.get(0)?,
                machine: r.get(1)?,
                started: r.get(2)?,
                command: r.get(3)?,
                source: r.get(4)?,
                cells: r.get::<_, i64>(5)? as usize,
            })
        })?;
        Ok(entries.collect::<rusqlite::Result<_>>()?)
    }

    /// A run as its results file had it.
    pub fn load(&self, id: i64) -> Result<Results> {
        let (suite, host, server_host, config, schema): (
            String,
            String,
            Option<String>,
            String,
            u32,
        ) = self
            .db
            .query_row(
                "SELECT suite, host, server_host, config, results_schema FROM run WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()?
            .with_context(|| format!("the history has no run {id}"))?;
        let mut statement = self
            .db
            .prepare("SELECT id, record FROM cell WHERE run = ?1 ORDER BY position")?;
        let cells = statement
            .query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Results {
            schema,
            suite: serde_json::from_str(&suite)?,
            host: serde_json::from_str(&host)?,
            server_host: server_host
                .as_deref()
                .map(serde_json::from_str)
                .transpose()?,
            config: serde_json::from_str(&config)?,
            cells: cells
                .into_iter()
                .map(|(cell, record)| self.cell(cell, &record))
                .collect::<Result<_>>()?,
        })
    }

    /// The cells of `cell`'s identity (implementation, client, load and
    /// workload) on the machine `fingerprint` that ended ok in runs started
    /// before `before` (RFC 3339), oldest first.
    pub fn past(&self, fingerprint: &str, cell: &Cell, before: &str) -> Result<Vec<Cell>> {
        let same: Vec<String> = IDENTITY.iter().map(|c| format!("cell.{c} IS ?")).collect();
        let mut statement = self.db.prepare(&format!(
            "SELECT cell.id, cell.record FROM cell
             JOIN run ON run.id = cell.run JOIN machine ON machine.id = run.machine
             WHERE machine.fingerprint = ? AND run.started < ? AND cell.status = 'ok' AND {}
             ORDER BY run.started, run.id",
            same.join(" AND ")
        ))?;
        let mut values = vec![
            Value::from(fingerprint.to_string()),
            Value::from(before.to_string()),
        ];
        values.extend(identity(cell));
        let found = statement
            .query_map(params_from_iter(values), |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        found
            .into_iter()
            .map(|(id, record)| self.cell(id, &record))
            .collect()
    }

    /// A cell and its repetitions, as results.json had them.
    fn cell(&self, id: i64, record: &str) -> Result<Cell> {
        let mut cell: Cell = serde_json::from_str(record)?;
        let mut statement = self.db.prepare(
            "SELECT cost, histogram, record FROM repetition WHERE cell = ?1 ORDER BY cost, position",
        )?;
        let rows = statement.query_map([id], |r| {
            Ok((
                r.get::<_, bool>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Vec<u8>>(2)?,
            ))
        })?;
        for row in rows {
            let (cost, histogram, record) = row?;
            let mut run: Run = serde_json::from_slice(&inflate(&record)?)?;
            if let Some(rtt) = run.rtt.as_mut() {
                rtt.histogram = histogram;
            }
            match cost {
                true => cell.cost_run = Some(run),
                false => cell.runs.push(run),
            }
        }
        Ok(cell)
    }
}

/// One cell on one machine, run after run.
#[derive(Debug, Clone)]
pub struct Series {
    pub machine: String,
    /// The cell of the latest run.
    pub cell: Cell,
    /// Oldest first.
    pub points: Vec<Point>,
}

/// A run of a series' cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The run's id in the history.
    pub run: i64,
    pub started: String,
    /// The suite's commit that ran it.
    pub commit: Option<String>,
    /// The implementation's resolved version.
    pub version: String,
    /// The MiB/s of its repetitions: median, min and max.
    pub mib_per_s: Summary,
}

impl History {
    /// Every cell's series: its ok runs on each machine, oldest first.
    pub fn series(&self) -> Result<Vec<Series>> {
        let mut statement = self.db.prepare(
            "SELECT machine.fingerprint, run.id, run.started, run.suite_commit, cell.record
             FROM cell JOIN run ON run.id = cell.run JOIN machine ON machine.id = run.machine
             WHERE cell.status = 'ok' AND cell.mib_per_s IS NOT NULL
             ORDER BY run.started, run.id, cell.position",
        )?;
        let rows = statement.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?;
        // By machine and cell identity; in that order.
        let mut all: BTreeMap<String, Series> = BTreeMap::new();
        for row in rows {
            let (machine, run, started, commit, record) = row?;
            let cell: Cell = serde_json::from_str(&record)?;
            let Some(mib_per_s) = cell.mib_per_s else {
                continue;
            };
            let point = Point {
                run,
                started,
                commit,
                version: cell.version.clone(),
                mib_per_s,
            };
            let key = format!("{machine} {:?}", identity(&cell));
            let series = all.entry(key).or_insert_with(|| Series {
                machine,
                cell: cell.clone(),
                points: Vec::new(),
            });
            series.points.push(point);
            series.cell = cell;
        }
        Ok(all.into_values().collect())
    }
}

/// A step in a series: where its level of MiB/s moved.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The point it begins with: its estimate, "near" that run.
    pub at: usize,
    /// The medians of the points on either side, up to the next steps.
    pub before: f64,
    pub after: f64,
    /// What changed across it: the version, with the bisect that would pin
    /// it, the suite, or neither.
    pub cause: String,
}

impl Series {
    /// Its steps; none where it has too few runs to tell (see [`judged`]).
    pub fn steps(&self) -> Vec<Step> {
        if !judged(self) {
            return Vec::new();
        }
        let values: Vec<f64> = self.points.iter().map(|p| p.mib_per_s.median).collect();
        let found = stats::steps(
            &values,
            defaults::HISTORY_FEWEST_RUNS / 2,
            defaults::HISTORY_FLOOR_PERCENT / 100.0,
        );
        let mut edges = vec![0];
        edges.extend(&found);
        edges.push(values.len());
        let level = |a: usize, b: usize| stats::median(&values[a..b]).unwrap_or(0.0);
        found
            .iter()
            .enumerate()
            .map(|(i, &at)| Step {
                at,
                before: level(edges[i], at),
                after: level(at, edges[i + 2]),
                cause: cause(&self.cell, &self.points[at - 1], &self.points[at]),
            })
            .collect()
    }
}

/// Whether a series has runs enough for its steps to be looked for: half
/// the runs a learned threshold needs, on either side of a step.
pub fn judged(series: &Series) -> bool {
    series.points.len() >= 2 * (defaults::HISTORY_FEWEST_RUNS / 2)
}

impl Step {
    /// The change across it, as a signed fraction.
    pub fn change(&self) -> f64 {
        self.after / self.before - 1.0
    }
}

/// The steps in every series of MiB/s with enough runs, each "near" the
/// run it begins with, and what changed across it.
pub fn steps(history: &History) -> Result<String> {
    let all = history.series()?;
    let mut out = String::new();
    let (mut judged_series, mut steps) = (0, 0);
    for series in all.iter().filter(|s| judged(s)) {
        judged_series += 1;
        for step in series.steps() {
            steps += 1;
            let (last, first) = (&series.points[step.at - 1], &series.points[step.at]);
            out += &format!(
                "{} on machine {}: MiB/s {} {:.0}% near the run of {} ({:.0} -> {:.0} \
                 MiB/s, the medians of the runs either side; the last run before: {})\n  {}\n",
                series.cell.label(),
                series.machine,
                if step.after < step.before {
                    "down"
                } else {
                    "up"
                },
                step.change().abs() * 100.0,
                first.started,
                step.before,
                step.after,
                last.started,
                step.cause
            );
        }
    }
    Ok(format!(
        "{out}{steps} step(s) in {judged_series} series of {} or more runs ({} series in all)\n",
        2 * (defaults::HISTORY_FEWEST_RUNS / 2),
        all.len()
    ))
}

/// What changed between two runs either side of a step.
fn cause(cell: &Cell, last: &Point, first: &Point) -> String {
    let name = cell.implementation.split('@').next().unwrap_or_default();
    if last.version != first.version {
        return format!(
            "{name} {} -> {}: to pin it, compare bisect {name} {} {} --connections {} --threads {}",
            last.version,
            first.version,
            last.version,
            first.version,
            cell.connections,
            cell.threads
        );
    }
    match (&last.commit, &first.commit) {
        (Some(a), Some(b)) if a != b => format!(
            "the same {name} {}; the suite moved from {a} to {b} (git log {a}..{b})",
            first.version
        ),
        _ => format!(
            "the same {name} {} and suite: the machine, or noise",
            first.version
        ),
    }
}

/// The runs of a history, a line each, oldest first.
pub fn list(history: &History) -> Result<String> {
    let entries = history.entries()?;
    let mut out = format!("{}: {} run(s)\n", history.path().display(), entries.len());
    for e in entries {
        out += &format!(
            "{:>4}  {}  machine {}  {:>4} cells  {}\n      {}\n",
            e.id, e.started, e.machine, e.cells, e.source, e.command
        );
    }
    Ok(out)
}

/// The columns that identify a cell across runs: its implementation,
/// client, load and workload, in the order of [`identity`].
const IDENTITY: [&str; 11] = [
    "implementation",
    "client",
    "threads",
    "connections",
    "block",
    "window",
    "rate",
    "churn",
    "tls",
    "shape",
    "work",
];

/// A cell's values of [`IDENTITY`].
fn identity(cell: &Cell) -> Vec<Value> {
    let w = cell.workload();
    let count = |n: usize| Value::from(n as i64);
    let some = |n: Option<u64>| Value::from(n.map(|n| n as i64));
    vec![
        Value::from(cell.implementation.clone()),
        Value::from(cell.client.clone()),
        count(cell.threads),
        count(cell.connections),
        count(w.block),
        count(w.window),
        some(w.rate),
        some(w.churn),
        Value::from(w.tls.map(|t| t.label().to_string())),
        Value::from(w.shape.name().to_string()),
        Value::from(cell.work as i64),
    ]
}

/// A machine's fingerprint: what makes its figures comparable with each
/// other's and no other machine's.
pub fn fingerprint(host: &Host) -> String {
    let what = serde_json::json!([
        host.name,
        host.cpu_model,
        host.logical_cpus,
        host.physical_cores,
        host.kernel
    ]);
    let digest = Sha256::digest(what.to_string().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

fn insert(tx: &rusqlite::Transaction, results: &Results, source: &str) -> Result<Appended> {
    let host = &results.host;
    let fingerprint = fingerprint(host);
    tx.execute(
        "INSERT OR IGNORE INTO machine
         (fingerprint, name, cpu_model, logical_cpus, physical_cores, memory_kib, kernel)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            fingerprint,
            host.name,
            host.cpu_model,
            host.logical_cpus,
            host.physical_cores,
            host.memory_kib,
            host.kernel
        ],
    )?;
    let machine: i64 = tx.query_row(
        "SELECT id FROM machine WHERE fingerprint = ?1",
        [&fingerprint],
        |r| r.get(0),
    )?;
    let config = &results.config;
    let before: Option<i64> = tx
        .query_row(
            "SELECT id FROM run WHERE machine = ?1 AND started = ?2 AND command = ?3",
            params![machine, config.started, config.command],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = before {
        tx.execute("DELETE FROM run WHERE id = ?1", [id])?;
    }
    tx.execute(
        "INSERT INTO run (machine, started, ended, command, suite_version, suite_commit,
                          results_schema, source, suite, host, server_host, config)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            machine,
            config.started,
            config.ended,
            config.command,
            results.suite.version,
            results.suite.commit,
            results.schema,
            source,
            serde_json::to_string(&results.suite)?,
            serde_json::to_string(host)?,
            results
                .server_host
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?,
            serde_json::to_string(config)?,
        ],
    )?;
    let run = tx.last_insert_rowid();
    for cell in &results.cells {
        tx.execute(
            "INSERT OR IGNORE INTO implementation (run, name, version) VALUES (?1, ?2, ?3)",
            params![run, cell.implementation, cell.version],
        )?;
    }
    for (position, cell) in results.cells.iter().enumerate() {
        insert_cell(tx, run, position, cell)?;
    }
    Ok(match before {
        Some(_) => Appended::Replaced,
        None => Appended::New,
    })
}

fn insert_cell(tx: &rusqlite::Transaction, run: i64, position: usize, cell: &Cell) -> Result<()> {
    let record = Cell {
        runs: Vec::new(),
        cost_run: None,
        ..cell.clone()
    };
    let mut values = identity(cell);
    values.extend([
        Value::from(run),
        Value::from(position as i64),
        Value::from(cell.version.clone()),
        Value::from(status(cell.status).to_string()),
        Value::from(cell.mib_per_s.as_ref().map(|s| s.median)),
        Value::from(serde_json::to_string(&record)?),
    ]);
    let slots = vec!["?"; values.len()].join(", ");
    tx.execute(
        &format!(
            "INSERT INTO cell ({}, run, position, version, status, mib_per_s, record)
             VALUES ({slots})",
            IDENTITY.join(", ")
        ),
        params_from_iter(values),
    )?;
    let id = tx.last_insert_rowid();
    let repetitions = cell.runs.iter().enumerate().map(|(i, r)| (false, i, r));
    for (cost, position, repetition) in
        repetitions.chain(cell.cost_run.iter().map(|r| (true, 0, r)))
    {
        insert_repetition(tx, id, cost, position, repetition)?;
    }
    Ok(())
}

fn insert_repetition(
    tx: &rusqlite::Transaction,
    cell: i64,
    cost: bool,
    position: usize,
    run: &Run,
) -> Result<()> {
    let mut record = run.clone();
    let histogram = record.rtt.as_mut().and_then(|rtt| rtt.histogram.take());
    let (server, client) = (run.server_usage.as_ref(), run.client_usage.as_ref());
    tx.execute(
        "INSERT INTO repetition (cell, position, cost, run_order, mib_per_s, messages_per_s,
                                 rtt_p50_us, rtt_p99_us, server_cpu_percent, client_cpu_percent,
                                 server_peak_rss_kib, client_peak_rss_kib, histogram, record)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            cell,
            position,
            cost,
            run.order,
            run.mib_per_s,
            run.messages_per_s,
            run.rtt.as_ref().map(|r| r.p50_us),
            run.rtt.as_ref().map(|r| r.p99_us),
            server.map(|u| u.cpu_percent),
            client.map(|u| u.cpu_percent),
            server.map(|u| u.peak_rss_kib),
            client.map(|u| u.peak_rss_kib),
            histogram,
            deflate(&serde_json::to_vec(&record)?)?,
        ],
    )?;
    Ok(())
}

fn status(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::Unavailable => "unavailable",
    }
}

fn deflate(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes)?;
    Ok(encoder.finish()?)
}

fn inflate(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    DeflateDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::fixture;

    fn fresh(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("history-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join(NAME)
    }

    /// The fixture, started at another time.
    fn started(at: &str) -> Results {
        let mut run = fixture();
        run.config.started = at.into();
        run
    }

    fn json(results: &Results) -> serde_json::Value {
        serde_json::to_value(results).unwrap()
    }

    #[test]
    fn two_runs_go_in_and_come_back_out_as_they_were() {
        let path = fresh("two");
        let mut history = History::open(&path).unwrap();
        let (a, b) = (started("2026-01-01T00:00:00+00:00"), fixture());
        assert!(history.append(&a, "a").unwrap() == Appended::New);
        assert!(history.append(&b, "b").unwrap() == Appended::New);
        let entries = history.entries().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].cells, a.cells.len());
        assert_eq!(entries[0].machine, fingerprint(&a.host));
        assert_eq!(json(&history.load(entries[0].id).unwrap()), json(&a));
        assert_eq!(json(&history.load(entries[1].id).unwrap()), json(&b));
        // The same run again replaces itself, in a history opened anew.
        drop(history);
        let mut history = History::open(&path).unwrap();
        assert!(history.append(&b, "b").unwrap() == Appended::Replaced);
        assert_eq!(history.entries().unwrap().len(), 2);
        let listed = list(&history).unwrap();
        assert!(
            listed.contains("2 run(s)") && listed.contains(&b.config.command),
            "{listed}"
        );
    }

    #[test]
    fn the_past_of_a_cell_is_its_own_on_one_machine_before_a_time() {
        let path = fresh("past");
        let mut history = History::open(&path).unwrap();
        let times = ["2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"];
        for at in times {
            history.append(&started(at), at).unwrap();
        }
        let mut elsewhere = started("2026-01-01T12:00:00+00:00");
        elsewhere.host.name = Some("another".into());
        history.append(&elsewhere, "elsewhere").unwrap();
        let run = fixture();
        let cell = run.cells.iter().find(|c| c.status == Status::Ok).unwrap();
        let machine = fingerprint(&run.host);
        let past = history.past(&machine, cell, times[1]).unwrap();
        assert_eq!(past.len(), 1);
        assert_eq!(
            serde_json::to_value(&past[0]).unwrap(),
            serde_json::to_value(cell).unwrap()
        );
        assert_eq!(history.past(&machine, cell, "9999").unwrap().len(), 2);
        let unavailable = run.cells.iter().find(|c| c.status != Status::Ok).unwrap();
        assert!(
            history
                .past(&machine, unavailable, "9999")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_run_that_fails_halfway_leaves_nothing_of_itself() {
        let path = fresh("halfway");
        let mut history = History::open(&path).unwrap();
        // A failure after the run, its cells and some repetitions went in,
        // as a killed process leaves its transaction.
        history
            .db
            .execute_batch(
                "CREATE TRIGGER halfway BEFORE INSERT ON repetition
                 WHEN (SELECT count(*) FROM repetition) >= 5
                 BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            )
            .unwrap();
        let e = format!("{:#}", history.append(&fixture(), "x").unwrap_err());
        assert!(
            e.contains("injected") && e.contains("appending the run"),
            "{e}"
        );
        for table in ["run", "cell", "repetition", "implementation"] {
            let rows: i64 = history
                .db
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap();
            assert_eq!(rows, 0, "{table}");
        }
    }

    #[test]
    fn a_newer_schema_or_a_database_of_something_else_is_refused_by_name() {
        let path = fresh("newer");
        drop(History::open(&path).unwrap());
        let db = Connection::open(&path).unwrap();
        db.pragma_update(None, "user_version", VERSION + 1).unwrap();
        drop(db);
        let e = format!("{:#}", History::open(&path).err().unwrap());
        assert!(
            e.contains(&format!("version {}", VERSION + 1)) && e.contains("newer"),
            "{e}"
        );

        let other = fresh("other");
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE mine (x)")
            .unwrap();
        let e = format!("{:#}", History::open(&other).err().unwrap());
        assert!(
            e.contains("no history schema") && e.contains(&other.display().to_string()),
            "{e}"
        );

        let text = fresh("text");
        std::fs::create_dir_all(text.parent().unwrap()).unwrap();
        std::fs::write(
            &text,
            "not a database, but long enough to be read as one's header",
        )
        .unwrap();
        let e = format!("{:#}", History::open(&text).err().unwrap());
        assert!(e.contains(&text.display().to_string()), "{e}");
    }

    #[test]
    fn two_runs_appended_at_once_both_land() {
        let path = fresh("once");
        let times = ["2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"];
        std::thread::scope(|s| {
            for at in times {
                let path = &path;
                s.spawn(move || {
                    History::open(path)
                        .unwrap()
                        .append(&started(at), at)
                        .unwrap()
                });
            }
        });
        let entries = History::open(&path).unwrap().entries().unwrap();
        let starts: Vec<&str> = entries.iter().map(|e| e.started.as_str()).collect();
        assert_eq!(starts, times);
    }

    #[test]
    fn a_step_in_a_series_is_found_near_its_run_with_the_bisect_that_pins_it() {
        let path = fresh("steps");
        let mut history = History::open(&path).unwrap();
        // Eight runs: four at one level, then four 30% lower on a new version.
        let levels = [100.0, 102.0, 99.0, 101.0, 70.0, 71.0, 69.0, 70.5];
        for (i, level) in levels.into_iter().enumerate() {
            let mut run = started(&format!("2026-01-0{}T00:00:00+00:00", i + 1));
            for cell in run.cells.iter_mut().filter(|c| c.status == Status::Ok) {
                let median = cell.mib_per_s.as_mut().unwrap();
                median.median = level;
                if i >= 4 {
                    cell.version = "9.9.9".into();
                }
            }
            history.append(&run, "x").unwrap();
        }
        let run = fixture();
        let ok = run.cells.iter().filter(|c| c.status == Status::Ok).count();
        let said = steps(&history).unwrap();
        assert!(
            said.ends_with(&format!(
                "{ok} step(s) in {ok} series of 6 or more runs ({ok} series in all)\n"
            )),
            "{said}"
        );
        let first = said.lines().next().unwrap();
        assert!(
            first.contains("MiB/s down 30% near the run of 2026-01-05"),
            "{first}"
        );
        assert!(first.contains("the last run before: 2026-01-04"), "{first}");
        let cell = run.cells.iter().find(|c| c.status == Status::Ok).unwrap();
        let bisect = format!(
            "compare bisect {} {} 9.9.9",
            cell.implementation, cell.version
        );
        assert!(said.lines().nth(1).unwrap().contains(&bisect), "{said}");
    }

    #[test]
    fn the_book_shows_the_schema_it_is_made_with() {
        let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/methodology/history.md");
        let page = std::fs::read_to_string(page).unwrap();
        assert!(
            page.contains("{{#include ../../../compare/src/history/schema.sql}}"),
            "the history page includes schema.sql"
        );
        assert!(
            page.contains(&format!("version {VERSION}")),
            "the page names the version"
        );
        assert!(SCHEMA.contains(&format!("version {VERSION} (PRAGMA user_version)")));
    }
}
