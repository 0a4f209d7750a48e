//! The history: every run kept in one SQLite file or PostgreSQL database
//! ([`schema`], [`store`]), so that later readers ask what moved, and
//! since when, on one machine. A run goes in whole, in one transaction, and
//! comes back out as its results.json was; its figures lie in columns too,
//! for queries. Results made before come in through [`import`].

pub mod import;
pub mod schema;
pub mod store;
pub mod tls;

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use sea_query::{Expr, ExprTrait, Func, InsertStatement, OnConflict, Order, Query};
use sha2::{Digest, Sha256};

use model::results::{Cell, Host, Results, Run, Status, Summary};
use model::stats::LogChange;
use model::{defaults, stats};
pub use store::Location;
use store::{Row, Store};

use schema::MIGRATIONS;
pub use schema::VERSION;
/// The history's name beside the results folders.
pub const NAME: &str = "history.sqlite";

/// The default history of a run in `out`: beside it, with the other runs.
pub fn beside(out: &Path) -> PathBuf {
    out.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .join(NAME)
}

/// A history, open.
pub struct History {
    /// Behind a cell: a reader's queries take it for a moment each.
    db: RefCell<Store>,
    location: Location,
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
    /// What its results were when appended ([`digest`]).
    pub digest: String,
}

impl History {
    /// Opens the history at `location` (a file, or a `postgres://` URL),
    /// made with the schema where it is new. One of a newer schema, or no
    /// history at all, is refused.
    pub fn open(location: impl Into<Location>) -> Result<Self> {
        let location = location.into();
        let context = || format!("the history {location}");
        let db = Store::open(&location).with_context(context)?;
        let history = Self {
            db: RefCell::new(db),
            location: location.clone(),
        };
        history.migrate().with_context(context)?;
        Ok(history)
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Brings the schema to [`VERSION`]: made where the database is empty,
    /// migrated where it is older; refused where it is newer than this
    /// compare or not a history.
    fn migrate(&self) -> Result<()> {
        let mut found = self.db.borrow_mut().version()?;
        if found < VERSION {
            // Inside the writer's lock: of two processes making one new
            // history, the second finds the first's schema.
            self.db.borrow_mut().begin()?;
            match self.bring_up() {
                Ok(version) => {
                    self.db.borrow_mut().commit()?;
                    found = version;
                }
                Err(e) => {
                    self.db.borrow_mut().rollback()?;
                    return Err(e);
                }
            }
        }
        if found > VERSION {
            bail!(
                "its schema is version {found}, newer than this compare's {VERSION}: \
                 read it with a newer compare"
            );
        }
        Ok(())
    }

    /// Inside the writer's transaction: makes the schema where there is
    /// none, or migrates an older one; the version it leaves.
    fn bring_up(&self) -> Result<i64> {
        let mut db = self.db.borrow_mut();
        let found = db.version()?;
        if found >= VERSION {
            return Ok(found);
        }
        let backend = db.backend();
        if found > 0 {
            // An older history: each migration in turn.
            for migration in &MIGRATIONS[found as usize - 1..] {
                db.batch(backend.migration(migration))?;
            }
            db.set_version(VERSION)?;
            drop(db);
            if found < schema::DIGESTS {
                self.fill_digests()?;
            }
            return Ok(VERSION);
        }
        let tables = db.tables()?;
        if tables > 0 {
            bail!(
                "it is a database with {tables} table(s) but no history schema \
                 (version {found}); give another"
            );
        }
        db.batch(backend.schema())?;
        db.set_version(VERSION)?;
        Ok(VERSION)
    }

    /// Each run without a digest (one of an older version) read back and
    /// given its digest.
    fn fill_digests(&self) -> Result<()> {
        let missing = self.query(
            Query::select()
                .column("id")
                .from("run")
                .and_where(Expr::col("digest").is_null()),
        )?;
        for row in missing {
            let id = row[0].int()?;
            let digest = digest(&self.load(id)?)?;
            self.db.borrow_mut().execute(
                Query::update()
                    .table("run")
                    .value("digest", digest)
                    .and_where(Expr::col("id").eq(id)),
            )?;
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
                results.config.started, self.location
            )
        };
        let db = self.db.get_mut();
        db.begin().with_context(context)?;
        match insert(db, results, source) {
            Ok(appended) => {
                db.commit().with_context(context)?;
                Ok(appended)
            }
            Err(e) => {
                // What failed is the error to tell; a rollback that fails
                // too leaves the transaction to end with the connection.
                let _ = db.rollback();
                Err(e).with_context(context)
            }
        }
    }

    /// Runs a query; what fails says which history (a file cut short
    /// reads as SQLite's "disk I/O error", which names none).
    fn query(&self, statement: &impl sea_query::QueryStatementWriter) -> Result<Vec<Row>> {
        self.db
            .borrow_mut()
            .query(statement)
            .with_context(|| format!("reading the history {}", self.location))
    }

    /// A record of the history read back: what does not decode says which
    /// history and which record (a file cut short can leave a row whose
    /// bytes end early, and a decoder's error names neither).
    fn decoded<T: serde::de::DeserializeOwned>(
        &self,
        json: &[u8],
        what: impl FnOnce() -> String,
    ) -> Result<T> {
        serde_json::from_slice(json)
            .with_context(|| format!("reading the history {}: {}", self.location, what()))
    }

    /// The runs, oldest first.
    pub fn entries(&self) -> Result<Vec<Entry>> {
        let rows = self.query(
            Query::select()
                .columns([
                    ("run", "id"),
                    ("machine", "fingerprint"),
                    ("run", "started"),
                ])
                .columns([("run", "command"), ("run", "source"), ("run", "digest")])
                .expr(Func::count(Expr::col(("cell", "id"))))
                .from("run")
                .inner_join(
                    "machine",
                    Expr::col(("machine", "id")).equals(("run", "machine")),
                )
                .left_join("cell", Expr::col(("cell", "run")).equals(("run", "id")))
                .group_by_columns([("run", "id"), ("machine", "fingerprint")])
                .order_by(("run", "started"), Order::Asc)
                .order_by(("run", "id"), Order::Asc),
        )?;
        rows.iter()
            .map(|r| {
                Ok(Entry {
                    id: r[0].int()?,
                    machine: r[1].text()?,
                    started: r[2].text()?,
                    command: r[3].text()?,
                    source: r[4].text()?,
                    digest: r[5].text()?,
                    cells: r[6].int()? as usize,
                })
            })
            .collect()
    }

    /// The ids of a run's cells, in its results' order.
    pub fn cells_of(&self, run: i64) -> Result<Vec<i64>> {
        let rows = self.query(
            Query::select()
                .column("id")
                .from("cell")
                .and_where(Expr::col("run").eq(run))
                .order_by("position", Order::Asc),
        )?;
        rows.iter().map(|r| r[0].int()).collect()
    }

    /// A run as its results file had it.
    pub fn load(&self, id: i64) -> Result<Results> {
        let rows = self.query(
            Query::select()
                .columns(["suite", "host", "server_host", "config", "results_schema"])
                .from("run")
                .and_where(Expr::col("id").eq(id)),
        )?;
        let run = rows
            .first()
            .with_context(|| format!("the history has no run {id}"))?;
        let cells = self.query(
            Query::select()
                .columns(["id", "record"])
                .from("cell")
                .and_where(Expr::col("run").eq(id))
                .order_by("position", Order::Asc),
        )?;
        let mut results = Results {
            schema: run[4].int()? as u32,
            suite: self.decoded(run[0].text()?.as_bytes(), || format!("run {id}'s suite"))?,
            host: self.decoded(run[1].text()?.as_bytes(), || format!("run {id}'s host"))?,
            server_host: run[2]
                .optional_text()?
                .map(|h| self.decoded(h.as_bytes(), || format!("run {id}'s server host")))
                .transpose()?,
            config: self.decoded(run[3].text()?.as_bytes(), || format!("run {id}'s config"))?,
            cells: cells
                .iter()
                .map(|c| self.cell(c[0].int()?, &c[1].text()?))
                .collect::<Result<_>>()?,
        };
        // Its figures follow from its runs, as a results file's do.
        results.summarize();
        Ok(results)
    }

    /// The cells that ended ok on the machine `fingerprint`, by identity
    /// (implementation, client, load and workload): where each cell's past
    /// lies. One query for the machine: a query for each cell read every
    /// cell of its identity, and a site of 1,000 runs spent minutes in them.
    pub fn timeline(&self, fingerprint: &str) -> Result<Timeline> {
        let mut query = Query::select();
        query
            .columns([("cell", "id"), ("run", "id"), ("run", "started")])
            .columns(IDENTITY.map(|column| ("cell", column)))
            .from("cell")
            .inner_join("run", Expr::col(("run", "id")).equals(("cell", "run")))
            .inner_join(
                "machine",
                Expr::col(("machine", "id")).equals(("run", "machine")),
            )
            .and_where(Expr::col(("machine", "fingerprint")).eq(fingerprint))
            .and_where(Expr::col(("cell", "status")).eq("ok"));
        let mut cells: HashMap<String, Vec<(String, i64, i64)>> = HashMap::new();
        self.db
            .borrow_mut()
            .each(&query, |row| {
                let place = (row[2].text()?, row[1].int()?, row[0].int()?);
                cells
                    .entry(format!("{:?}", &row[3..]))
                    .or_default()
                    .push(place);
                Ok(())
            })
            .with_context(|| format!("reading the history {}", self.location))?;
        for places in cells.values_mut() {
            places.sort_unstable();
        }
        Ok(Timeline { cells })
    }

    /// The cell `id`, as results.json had it, but for the figures that
    /// follow from its runs: none until its run summarizes it.
    pub fn cell_of(&self, id: i64) -> Result<Cell> {
        let rows = self.query(
            Query::select()
                .column("record")
                .from("cell")
                .and_where(Expr::col("id").eq(id)),
        )?;
        let row = rows
            .first()
            .with_context(|| format!("the history has no cell {id}"))?;
        self.cell(id, &row[0].text()?)
    }

    /// A cell and its repetitions, as results.json had them.
    fn cell(&self, id: i64, record: &str) -> Result<Cell> {
        let mut cell: Cell = self.decoded(record.as_bytes(), || format!("cell {id}"))?;
        cell.name_the_generator();
        let rows = self.query(
            Query::select()
                .columns(["cost", "histogram", "record"])
                .from("repetition")
                .and_where(Expr::col("cell").eq(id))
                .order_by("cost", Order::Asc)
                .order_by("position", Order::Asc),
        )?;
        for row in rows {
            let what = || format!("a repetition of cell {id}");
            let json = inflate(&row[2].blob()?)
                .with_context(|| format!("reading the history {}: {}", self.location, what()))?;
            let mut run: Run = self.decoded(&json, what)?;
            if let Some(rtt) = run.rtt.as_mut() {
                rtt.histogram = row[1].optional_text()?;
            }
            match row[0].int()? != 0 {
                true => cell.cost_runs.push(run),
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
    /// Its steps that `compare check`'s rule confirms, every series of the
    /// history judged together (see [`confirm_steps`]).
    pub steps: Vec<Step>,
    /// The places its segmentation proposed that the rule did not confirm.
    pub unconfirmed: usize,
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
    /// The cell was client-bound in that run: a lower bound for the server.
    pub client_bound: bool,
}

impl History {
    /// Every cell's series: its ok runs on each machine, oldest first.
    pub fn series(&self) -> Result<Vec<Series>> {
        let mut query = Query::select();
        query.columns([
            ("machine", "fingerprint"),
            ("run", "id"),
            ("run", "started"),
        ]);
        query.columns([
            ("run", "suite_commit"),
            ("cell", "record"),
            ("cell", "position"),
        ]);
        query.columns(IDENTITY.map(|column| ("cell", column)));
        query
            .from("cell")
            .inner_join("run", Expr::col(("run", "id")).equals(("cell", "run")))
            .inner_join(
                "machine",
                Expr::col(("machine", "id")).equals(("run", "machine")),
            )
            .and_where(Expr::col(("cell", "status")).eq("ok"))
            .and_where(Expr::col(("cell", "mib_per_s")).is_not_null());
        /// What a point needs of a cell's record: read without the rest of
        /// it, which is most of reading 110,000 cells of 1,000 runs.
        #[derive(serde::Deserialize)]
        struct Figure {
            version: String,
            mib_per_s: Option<Summary>,
            #[serde(default)]
            client_bound: bool,
        }
        // By machine and cell identity, in that order; each point with
        // its place (its run's start, the run, the cell's position), and
        // the latest cell's record, read whole at the end. Sorted here: the
        // database sorting 110,000 records spilled them to a file.
        type Place = (String, i64, i64);
        struct Gathered {
            machine: String,
            points: Vec<(Place, Point)>,
            latest: (Place, String),
        }
        let mut all: BTreeMap<String, Gathered> = BTreeMap::new();
        let gather = |row: Row| -> Result<()> {
            let machine = row[0].text()?;
            let record = row[4].text()?;
            let figure: Figure = self.decoded(record.as_bytes(), || "a cell of a series".into())?;
            let Some(mib_per_s) = figure.mib_per_s else {
                return Ok(());
            };
            let point = Point {
                run: row[1].int()?,
                started: row[2].text()?,
                commit: row[3].optional_text()?,
                version: figure.version,
                mib_per_s,
                client_bound: figure.client_bound,
            };
            let place: Place = (point.started.clone(), point.run, row[5].int()?);
            let key = format!("{machine} {:?}", &row[6..]);
            let series = all.entry(key).or_insert_with(|| Gathered {
                machine,
                points: Vec::new(),
                latest: (place.clone(), String::new()),
            });
            if place >= series.latest.0 {
                series.latest = (place.clone(), record);
            }
            series.points.push((place, point));
            Ok(())
        };
        self.db
            .borrow_mut()
            .each(&query, gather)
            .with_context(|| format!("reading the history {}", self.location))?;
        all.into_values()
            .map(|mut gathered| {
                gathered.points.sort_by(|a, b| a.0.cmp(&b.0));
                let points = gathered.points.into_iter().map(|(_, p)| p).collect();
                let (machine, record) = (gathered.machine, gathered.latest.1);
                let mut cell: Cell =
                    self.decoded(record.as_bytes(), || "a cell of a series".into())?;
                cell.name_the_generator();
                Ok(Series {
                    machine,
                    cell,
                    points,
                    steps: Vec::new(),
                    unconfirmed: 0,
                })
            })
            .collect::<Result<Vec<Series>>>()
            .map(|mut all| {
                confirm_steps(&mut all);
                all
            })
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

/// Finds every series' steps and keeps those `compare check`'s rule
/// confirms. Binary segmentation proposes them where the medians either
/// side differ by more than the series' own noise between runs (see
/// [`stats::steps`]); each proposal is the change in logarithms between
/// the runs' medians either side of it, up to the proposals next to it,
/// tested (Welch's t) beyond the floor of a change that counts, and
/// Holm's rule over every proposal of every series confirms them: a
/// history with no step in it has any confirmed at most 5% of the time
/// however many series it holds. A step's levels are the medians between
/// confirmed steps.
pub fn confirm_steps(all: &mut [Series]) {
    let floor = defaults::HISTORY_FLOOR_PERCENT / 100.0;
    let mut proposals: Vec<(usize, usize)> = Vec::new();
    let mut p = Vec::new();
    for (i, series) in all.iter().enumerate() {
        if !judged(series) {
            continue;
        }
        let values = series.values();
        let found = stats::steps(&values, defaults::HISTORY_FEWEST_RUNS / 2, floor);
        let edges = edges(&found, values.len());
        for (k, &at) in found.iter().enumerate() {
            let (before, after) = (&values[edges[k]..at], &values[at..edges[k + 2]]);
            let change = LogChange::unpaired(before, after).expect("three runs a side");
            proposals.push((i, at));
            p.push(change.beyond(floor, change.estimate > 0.0));
        }
    }
    let held = stats::holm(&p, 1.0 - defaults::CONFIDENCE);
    for series in all.iter_mut() {
        (series.steps, series.unconfirmed) = (Vec::new(), 0);
    }
    let mut confirmed: Vec<Vec<usize>> = vec![Vec::new(); all.len()];
    for ((i, at), held) in proposals.into_iter().zip(held) {
        match held {
            true => confirmed[i].push(at),
            false => all[i].unconfirmed += 1,
        }
    }
    for (series, found) in all.iter_mut().zip(confirmed) {
        let values = series.values();
        let edges = edges(&found, values.len());
        let level = |a: usize, b: usize| stats::median(&values[a..b]).unwrap_or(0.0);
        series.steps = found
            .iter()
            .enumerate()
            .map(|(k, &at)| Step {
                at,
                before: level(edges[k], at),
                after: level(at, edges[k + 2]),
                cause: cause(&series.cell, &series.points[at - 1], &series.points[at]),
            })
            .collect();
    }
}

/// The stretches' ends: 0, each step, and the series' length.
fn edges(steps: &[usize], len: usize) -> Vec<usize> {
    let mut edges = vec![0];
    edges.extend(steps);
    edges.push(len);
    edges
}

impl Series {
    /// Each point's median MiB/s, oldest first.
    fn values(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.mib_per_s.median).collect()
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
    let (mut judged_series, mut steps, mut unconfirmed) = (0, 0, 0);
    for series in all.iter().filter(|s| judged(s)) {
        judged_series += 1;
        unconfirmed += series.unconfirmed;
        for step in &series.steps {
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
        "{out}{steps} step(s) in {judged_series} series of {} or more runs ({} series in all), \
         confirmed by compare check's rule with every series judged together; {unconfirmed} \
         more proposed, unconfirmed\n",
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
    let mut out = format!("{}: {} run(s)\n", history.location(), entries.len());
    for e in entries {
        out += &format!(
            "{:>4}  {}  machine {}  {:>4} cells  {}\n      {}\n",
            e.id, e.started, e.machine, e.cells, e.source, e.command
        );
    }
    Ok(out)
}

/// A machine's cells that ended ok, from [`History::timeline`].
pub struct Timeline {
    /// By identity: each cell's run's start, its run and itself, in that order.
    cells: HashMap<String, Vec<(String, i64, i64)>>,
}

impl Timeline {
    /// The cells of `cell`'s identity in runs started before `before` (RFC
    /// 3339), the latest [`defaults::HISTORY_LEARNING_RUNS`], oldest first:
    /// their ids, for [`History::cell_of`].
    pub fn past(&self, cell: &Cell, before: &str) -> Result<Vec<i64>> {
        let values = identity(cell)
            .into_iter()
            .map(|(_, value)| value.map_or(Ok(store::Value::Null), store::Value::parameter))
            .collect::<Result<Vec<_>>>()?;
        let Some(places) = self.cells.get(&format!("{:?}", &values[..])) else {
            return Ok(Vec::new());
        };
        let earlier = places.partition_point(|(started, ..)| started.as_str() < before);
        let first = earlier.saturating_sub(defaults::HISTORY_LEARNING_RUNS as usize);
        Ok(places[first..earlier].iter().map(|&(.., id)| id).collect())
    }
}

/// A value of a column, or NULL: none.
type Column = (&'static str, Option<sea_query::Value>);

/// A count as the history writes it: 64 bits wide.
fn count(n: usize) -> i64 {
    n as i64
}

/// The columns that identify a cell across runs, one for each dimension
/// of its key's identity ([`CellKey::identity`]), in its order (the
/// implementation is the key's `runtime`).
const IDENTITY: [&str; 14] = [
    "implementation",
    "client",
    "protocol",
    "tls",
    "shape",
    "threads",
    "client_threads",
    "connections",
    "block",
    "window",
    "rate",
    "rate_share",
    "churn",
    "work",
];

/// A cell's values of [`IDENTITY`]: its key's, as the key encodes them.
fn identity(cell: &Cell) -> Vec<Column> {
    let values = cell
        .key()
        .identity()
        .into_iter()
        .map(|(_, value)| match value {
            serde_json::Value::Null => None,
            serde_json::Value::String(text) => Some(text.into()),
            serde_json::Value::Number(n) => {
                Some(n.as_i64().expect("a key's counts fit 64 bits").into())
            }
            other => unreachable!("a key's field is a text, a count or none, not {other}"),
        });
    IDENTITY.into_iter().zip(values).collect()
}

/// A column's value as a query writes it.
fn written(value: Option<sea_query::Value>) -> Expr {
    value.map_or(Expr::null(), Expr::val)
}

/// A run's digest: SHA-256 of its results' JSON, in hex. A run read back
/// is its results again, and so has the digest it was appended with.
pub fn digest(results: &Results) -> Result<String> {
    let digest = Sha256::digest(serde_json::to_vec(results)?);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
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

/// An insert of one row into `table`, its columns named beside their values.
fn row(table: &'static str, columns: Vec<(&'static str, Expr)>) -> InsertStatement {
    let (names, values): (Vec<&str>, Vec<Expr>) = columns.into_iter().unzip();
    Query::insert()
        .into_table(table)
        .columns(names)
        .values_panic(values)
        .to_owned()
}

fn insert(db: &mut Store, results: &Results, source: &str) -> Result<Appended> {
    let host = &results.host;
    let fingerprint = fingerprint(host);
    db.execute(
        row(
            "machine",
            vec![
                ("fingerprint", fingerprint.clone().into()),
                ("name", host.name.clone().into()),
                ("cpu_model", host.cpu_model.clone().into()),
                ("logical_cpus", host.logical_cpus.map(count).into()),
                ("physical_cores", host.physical_cores.map(count).into()),
                ("memory_kib", host.memory_kib.into()),
                ("kernel", host.kernel.clone().into()),
            ],
        )
        .on_conflict(OnConflict::column("fingerprint").do_nothing().to_owned()),
    )?;
    let machine = db
        .value(
            Query::select()
                .column("id")
                .from("machine")
                .and_where(Expr::col("fingerprint").eq(fingerprint.as_str())),
        )?
        .context("the machine just written is not there")?
        .int()?;
    let config = &results.config;
    let before = db
        .value(
            Query::select()
                .column("id")
                .from("run")
                .and_where(Expr::col("machine").eq(machine))
                .and_where(Expr::col("started").eq(config.started.as_str()))
                .and_where(Expr::col("command").eq(config.command.as_str())),
        )?
        .map(|id| id.int())
        .transpose()?;
    if let Some(id) = before {
        db.execute(
            Query::delete()
                .from_table("run")
                .and_where(Expr::col("id").eq(id)),
        )?;
    }
    let server_host = results
        .server_host
        .as_ref()
        .map(serde_json::to_string)
        .transpose()?;
    let run = db
        .value(
            row(
                "run",
                vec![
                    ("machine", machine.into()),
                    ("started", config.started.clone().into()),
                    ("ended", config.ended.clone().into()),
                    ("command", config.command.clone().into()),
                    ("suite_version", results.suite.version.clone().into()),
                    ("suite_commit", results.suite.commit.clone().into()),
                    ("results_schema", results.schema.into()),
                    ("source", source.into()),
                    ("suite", serde_json::to_string(&results.suite)?.into()),
                    ("host", serde_json::to_string(host)?.into()),
                    ("server_host", server_host.into()),
                    ("config", serde_json::to_string(config)?.into()),
                    ("digest", digest(results)?.into()),
                ],
            )
            .returning_col("id"),
        )?
        .context("the run just written has no id")?
        .int()?;
    for cell in &results.cells {
        db.execute(
            row(
                "implementation",
                vec![
                    ("run", run.into()),
                    ("name", cell.implementation.clone().into()),
                    ("version", cell.version.clone().into()),
                ],
            )
            .on_conflict(OnConflict::columns(["run", "name"]).do_nothing().to_owned()),
        )?;
    }
    for (position, cell) in results.cells.iter().enumerate() {
        insert_cell(db, run, position, cell)?;
    }
    Ok(match before {
        Some(_) => Appended::Replaced,
        None => Appended::New,
    })
}

fn insert_cell(db: &mut Store, run: i64, position: usize, cell: &Cell) -> Result<()> {
    let record = Cell {
        runs: Vec::new(),
        cost_runs: Vec::new(),
        ..cell.clone()
    };
    let mut columns: Vec<(&str, Expr)> = identity(cell)
        .into_iter()
        .map(|(name, value)| (name, written(value)))
        .collect();
    columns.extend([
        ("run", run.into()),
        ("position", count(position).into()),
        ("version", cell.version.clone().into()),
        ("status", status(cell.status).into()),
        (
            "mib_per_s",
            cell.mib_per_s.as_ref().map(|s| s.median).into(),
        ),
        ("record", serde_json::to_string(&record)?.into()),
    ]);
    let id = db
        .value(row("cell", columns).returning_col("id"))?
        .context("the cell just written has no id")?
        .int()?;
    let repetitions = cell.runs.iter().enumerate().map(|(i, r)| (false, i, r));
    let cost_runs = cell.cost_runs.iter().enumerate().map(|(i, r)| (true, i, r));
    for (cost, position, repetition) in repetitions.chain(cost_runs) {
        insert_repetition(db, id, cost, position, repetition)?;
    }
    Ok(())
}

fn insert_repetition(
    db: &mut Store,
    cell: i64,
    cost: bool,
    position: usize,
    run: &Run,
) -> Result<()> {
    let mut record = run.clone();
    let histogram = record.rtt.as_mut().and_then(|rtt| rtt.histogram.take());
    let (server, client) = (run.server_usage.as_ref(), run.client_usage.as_ref());
    db.execute(&row(
        "repetition",
        vec![
            ("cell", cell.into()),
            ("position", count(position).into()),
            ("cost", cost.into()),
            ("run_order", count(run.order).into()),
            ("mib_per_s", run.mib_per_s.into()),
            ("messages_per_s", run.messages_per_s.into()),
            ("rtt_p50_us", run.rtt.as_ref().map(|r| r.p50_us).into()),
            ("rtt_p99_us", run.rtt.as_ref().map(|r| r.p99_us).into()),
            ("server_cpu_percent", server.map(|u| u.cpu_percent).into()),
            ("client_cpu_percent", client.map(|u| u.cpu_percent).into()),
            ("server_peak_rss_kib", server.map(|u| u.peak_rss_kib).into()),
            ("client_peak_rss_kib", client.map(|u| u.peak_rss_kib).into()),
            ("histogram", histogram.into()),
            ("record", deflate(&serde_json::to_vec(&record)?)?.into()),
        ],
    ))?;
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
    use model::fixtures::small as fixture;

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

    #[test]
    fn a_cell_is_told_by_its_key_and_older_histories_are_written_so() {
        let results = fixture();
        let key = results.cells[0].key();
        let named: Vec<&str> = key
            .identity()
            .iter()
            .map(|(name, _)| match *name {
                "runtime" => "implementation",
                name => name,
            })
            .collect();
        assert_eq!(named, IDENTITY);
        // Version 6 wrote TLS by its label and a client with the server's
        // threads as none: version 7 writes them as the key does.
        let db = rusqlite::Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE cell (threads INTEGER, client_threads INTEGER, tls TEXT); \
             INSERT INTO cell VALUES (2, NULL, 'TLS'), (2, 1, 'TLS with resumption'), (1, NULL, NULL)",
        )
        .unwrap();
        db.execute_batch(schema::MIGRATIONS[5].sqlite).unwrap();
        let mut rows = db.prepare("SELECT client_threads, tls FROM cell").unwrap();
        let rows: Vec<(i64, Option<String>)> = rows
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let expected = [(2, Some("full")), (1, Some("resumption")), (1, None)];
        let expected = expected.map(|(n, tls)| (n, tls.map(String::from)));
        assert_eq!(rows, expected);
        assert_eq!(schema::MIGRATIONS[5].sqlite, schema::MIGRATIONS[5].postgres);
    }

    #[test]
    fn a_cell_s_past_is_its_latest_runs_before_a_time_oldest_first() {
        let path = fresh("latest");
        let mut history = History::open(&path).unwrap();
        let runs = defaults::HISTORY_LEARNING_RUNS as usize + 3;
        let first = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00+00:00").unwrap();
        let day = |i: usize| (first + chrono::TimeDelta::days(i as i64)).to_rfc3339();
        for i in 0..runs {
            history.append(&started(&day(i)), "x").unwrap();
        }
        let entries = history.entries().unwrap();
        let run = fixture();
        let cell = run.cells.iter().find(|c| c.status == Status::Ok).unwrap();
        let machine = fingerprint(&run.host);
        let past = history
            .timeline(&machine)
            .unwrap()
            .past(cell, &day(runs - 1))
            .unwrap();
        assert_eq!(past.len(), defaults::HISTORY_LEARNING_RUNS as usize);
        // The run's own cell at the fixture's cell's position, in each of
        // the latest runs before the last.
        let position = run
            .cells
            .iter()
            .position(|c| std::ptr::eq(c, cell))
            .unwrap();
        let expected: Vec<i64> = entries[runs - 1 - past.len()..runs - 1]
            .iter()
            .map(|e| {
                let cells = history
                    .query(
                        Query::select()
                            .column("id")
                            .from("cell")
                            .and_where(Expr::col("run").eq(e.id))
                            .and_where(Expr::col("position").eq(position as i64)),
                    )
                    .unwrap();
                cells[0][0].int().unwrap()
            })
            .collect();
        assert_eq!(past, expected);
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
                "{ok} step(s) in {ok} series of 6 or more runs ({ok} series in all), confirmed \
                 by compare check's rule with every series judged together; 0 more proposed, \
                 unconfirmed\n"
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

    /// A series of the fixture's first ok cell at these medians, a run a day.
    fn series(medians: &[f64]) -> Series {
        let cell = fixture().cells.into_iter().find(|c| c.status == Status::Ok);
        let points = medians
            .iter()
            .enumerate()
            .map(|(i, &median)| Point {
                run: i as i64,
                started: format!("2026-01-{:02}T00:00:00+00:00", i + 1),
                commit: None,
                version: "1.0.0".into(),
                mib_per_s: Summary {
                    median,
                    min: median,
                    max: median,
                },
                client_bound: false,
            })
            .collect();
        Series {
            machine: "m".into(),
            cell: cell.unwrap(),
            points,
            steps: Vec::new(),
            unconfirmed: 0,
        }
    }

    #[test]
    fn a_step_counts_where_the_rule_confirms_it_among_every_series() {
        // A clean 30% step; and one of 1.1%, just past the 1% floor that
        // proposes it, its runs' spread as large as its distance past
        // that: proposed, not confirmed.
        let clean = [100.0, 102.0, 99.0, 101.0, 70.0, 71.0, 69.0, 70.5];
        let barely = [100.0, 100.1, 99.9, 100.0, 98.9, 99.0, 98.8, 98.9];
        let mut all = vec![series(&clean), series(&barely)];
        confirm_steps(&mut all);
        assert_eq!(all[0].steps.len(), 1, "{:?}", all[0].steps);
        assert_eq!((all[0].steps[0].at, all[0].unconfirmed), (4, 0));
        assert!((all[0].steps[0].change() + 0.3).abs() < 0.01);
        assert_eq!((all[1].steps.len(), all[1].unconfirmed), (0, 1));
    }

    #[test]
    fn the_book_shows_the_schema_it_is_made_with() {
        let page =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/methodology/history.md");
        let page = std::fs::read_to_string(page).unwrap();
        for (file, backend, kept) in [
            ("sqlite", schema::Backend::Sqlite, "(PRAGMA user_version)"),
            (
                "postgres",
                schema::Backend::Postgres,
                "(the table\n-- history_version)",
            ),
        ] {
            let include =
                format!("{{{{#include ../../../compare/history/src/schema/{file}.sql}}}}");
            assert!(
                page.contains(&include),
                "the history page includes {file}.sql"
            );
            let said = format!("version {VERSION} {kept}");
            assert!(backend.schema().contains(&said), "{file}.sql: {said}");
        }
        assert!(
            page.contains(&format!("version {VERSION}")),
            "the page names the version"
        );
    }

    /// Every way the history is read: entries, each run, each cell's past,
    /// the series; each returns or says why it cannot.
    fn read_all(location: &Path) -> Result<()> {
        let history = History::open(location)?;
        for entry in history.entries()? {
            let run = history.load(entry.id)?;
            let timeline = history.timeline(&entry.machine)?;
            for cell in &run.cells {
                for id in timeline.past(cell, &entry.started)? {
                    history.cell_of(id)?;
                }
            }
        }
        history.series()?;
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]
        #[test]
        fn a_history_cut_short_or_another_program_s_file_is_refused_with_a_message(
            cut in 0usize..1_000_000,
            foreign in proptest::collection::vec(proptest::num::u8::ANY, 0..4096),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let whole = dir.path().join("whole.sqlite");
            History::open(&whole).unwrap().append(&fixture(), "x").unwrap();
            let bytes = std::fs::read(&whole).unwrap();
            let cut_short = dir.path().join("cut.sqlite");
            std::fs::write(&cut_short, &bytes[..cut % bytes.len()]).unwrap();
            if let Err(e) = read_all(&cut_short) {
                proptest::prop_assert!(format!("{e:#}").contains("cut.sqlite"), "{e:#}");
            }
            let other = dir.path().join("other.sqlite");
            std::fs::write(&other, &foreign).unwrap();
            if let Err(e) = read_all(&other) {
                proptest::prop_assert!(format!("{e:#}").contains("other.sqlite"), "{e:#}");
            }
        }
    }
}
