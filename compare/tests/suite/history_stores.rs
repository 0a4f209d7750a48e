//! The history's guarantees, held by both of its stores: an SQLite file and
//! a database on a real PostgreSQL server (Debian's, which
//! `scripts/test.sh` installs; each test here starts a server of its own on
//! a loopback port and stops it). Runs go in and come back out as they
//! were, a run again replaces itself, a cell's past is its own, a run that
//! fails halfway leaves nothing, a newer schema or a foreign database is
//! refused, and two runs appended at once both land. Then `compare run`,
//! `history`, `check` and `site` on a PostgreSQL history.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use history::{Appended, History, Location};
use model::results::{Cell, Results, Status};

use crate::common::{assert_ok, compare, compare_with, folder, out_dir};
use crate::history_file::{run_mio, site_of_two};

fn fixture() -> Results {
    Results::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small/results.json"))
        .unwrap()
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

/// A store the checks run on: where a fresh history goes, and raw SQL on it.
trait Store {
    /// An empty history's place, named after the check.
    fn fresh(&self, name: &str) -> Location;
    /// Runs SQL on the database at `location`, outside the history.
    fn sql(&self, location: &Location, sql: &str);
    /// How many rows `table` holds.
    fn rows(&self, location: &Location, table: &str) -> i64;
    /// A trigger that fails the 6th repetition written, and its removal.
    fn failing_trigger(&self) -> [&'static str; 2];
    /// Sets the history's schema version.
    fn set_version(&self, location: &Location, version: i64);
    /// Every column of the history's tables, as "table.column", with the
    /// kind and width of its values and whether it may be NULL, in words
    /// both backends share: "integer 64", "float 64", "text", "bytes";
    /// and every index the schema names, as "index NAME".
    fn columns(&self, location: &Location) -> BTreeMap<String, String>;
}

/// What a history of `version` was: what each later version's migration
/// added not yet there (the 5th renamed a client and added nothing), and
/// `version` in the database.
fn at_version(store: &dyn Store, location: &Location, version: i64) {
    let added = [
        (2, "ALTER TABLE cell DROP COLUMN protocol"),
        (3, "ALTER TABLE cell DROP COLUMN client_threads"),
        (4, "ALTER TABLE cell DROP COLUMN rate_share"),
        (6, "ALTER TABLE run DROP COLUMN digest; DROP INDEX cell_run"),
    ];
    for (since, sql) in added.into_iter().filter(|(since, _)| version < *since) {
        assert!(since <= history::VERSION);
        store.sql(location, sql);
    }
    store.set_version(location, version);
}

struct Sqlite(PathBuf);

impl Store for Sqlite {
    fn fresh(&self, name: &str) -> Location {
        std::fs::create_dir_all(&self.0).unwrap();
        let path = self.0.join(format!("{name}.sqlite"));
        let _ = std::fs::remove_file(&path);
        Location::File(path)
    }

    fn sql(&self, location: &Location, sql: &str) {
        let Location::File(path) = location else {
            unreachable!()
        };
        rusqlite::Connection::open(path)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
    }

    fn rows(&self, location: &Location, table: &str) -> i64 {
        let Location::File(path) = location else {
            unreachable!()
        };
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    }

    fn failing_trigger(&self) -> [&'static str; 2] {
        [
            "CREATE TRIGGER halfway BEFORE INSERT ON repetition
             WHEN (SELECT count(*) FROM repetition) >= 5
             BEGIN SELECT RAISE(ABORT, 'injected'); END;",
            "DROP TRIGGER halfway",
        ]
    }

    fn set_version(&self, location: &Location, version: i64) {
        self.sql(location, &format!("PRAGMA user_version = {version}"));
    }

    fn columns(&self, location: &Location) -> BTreeMap<String, String> {
        let Location::File(path) = location else {
            unreachable!()
        };
        let db = rusqlite::Connection::open(path).unwrap();
        let mut found = BTreeMap::new();
        let mut tables = db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .unwrap();
        let tables: Vec<String> = tables
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut indexes = db
            .prepare(
                "SELECT name FROM sqlite_master \
                 WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%'",
            )
            .unwrap();
        for name in indexes.query_map([], |r| r.get::<_, String>(0)).unwrap() {
            found.insert(format!("index {}", name.unwrap()), String::new());
        }
        for table in tables {
            let mut columns = db.prepare(&format!("PRAGMA table_info({table})")).unwrap();
            let rows = columns
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, bool>(3)?,
                    ))
                })
                .unwrap();
            for row in rows {
                let (name, declared, not_null) = row.unwrap();
                // SQLite's integers and reals are 8 bytes whatever they
                // are declared as; its primary key is never NULL.
                let kind = match declared.as_str() {
                    "INTEGER" => "integer 64",
                    "REAL" => "float 64",
                    "TEXT" => "text",
                    "BLOB" => "bytes",
                    other => panic!("{table}.{name}: a column declared {other}"),
                };
                let null = match not_null || name == "id" {
                    true => "not null",
                    false => "null",
                };
                found.insert(format!("{table}.{name}"), format!("{kind}, {null}"));
            }
        }
        found
    }
}

/// A PostgreSQL server of the test's own: a cluster made in a folder of
/// its own, listening on a free loopback port, stopped when dropped.
struct Postgres {
    /// Under the system's temporary folder, which the server's owner can
    /// reach wherever the checkout lies.
    dir: tempfile::TempDir,
    /// Debian's server programs.
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    /// Who runs the server: PostgreSQL refuses to run as root.
    user: Option<&'static str>,
}

/// What a server with TLS is started with: its certificate and key (PEM),
/// and the password its TCP connections need.
struct Tls {
    certificate: String,
    key: String,
    password: &'static str,
}

impl Postgres {
    fn start(test: &str) -> Self {
        Self::launch(test, None)
    }

    fn launch(test: &str, tls: Option<&Tls>) -> Self {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .and_then(|versions| versions.filter_map(|v| Some(v.ok()?.path())).max())
            .map(|v| v.join("bin"))
            .filter(|bin| bin.join("initdb").is_file())
            .expect("no PostgreSQL server: scripts/test.sh installs Debian's postgresql package");
        let dir = tempfile::Builder::new()
            .prefix(&format!("pingpong-{test}-"))
            .tempdir()
            .unwrap();
        let data = dir.path().join("data");
        let root = nix::unistd::geteuid().is_root();
        let user = root.then_some("postgres");
        if let Some(user) = user {
            let owner = nix::unistd::User::from_name(user).unwrap().unwrap();
            std::os::unix::fs::chown(
                dir.path(),
                Some(owner.uid.as_raw()),
                Some(owner.gid.as_raw()),
            )
            .unwrap();
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = Self {
            dir,
            bin,
            data,
            port,
            user,
        };
        let mut initdb = vec!["-D", server.data.to_str().unwrap(), "-U", "bench"];
        initdb.extend(["-E", "UTF8", "--no-sync"]);
        let mut options = format!(
            "-p {port} -c listen_addresses=127.0.0.1 -k {} -c fsync=off",
            server.dir.path().display()
        );
        let pwfile = server.dir.path().join("password");
        match tls {
            None => initdb.extend(["-A", "trust"]),
            Some(tls) => {
                // TCP needs the password; the socket, for the test's own
                // set-up, does not.
                server.owned(&pwfile, tls.password);
                initdb.extend(["--auth-host=scram-sha-256", "--auth-local=trust"]);
                initdb.extend(["--pwfile", pwfile.to_str().unwrap()]);
                let (cert, key) = (
                    server.dir.path().join("server.crt"),
                    server.dir.path().join("server.key"),
                );
                server.owned(&cert, &tls.certificate);
                server.owned(&key, &tls.key);
                options += &format!(
                    " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                    cert.display(),
                    key.display()
                );
            }
        }
        server.as_owner("initdb", &initdb);
        server.as_owner(
            "pg_ctl",
            &[
                "-D",
                server.data.to_str().unwrap(),
                "-o",
                &options,
                "-l",
                server.dir.path().join("server.log").to_str().unwrap(),
                "-w",
                "start",
            ],
        );
        server
    }

    /// Writes `text` to `path`, readable by the server's owner alone (as
    /// PostgreSQL wants of its key).
    fn owned(&self, path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        if let Some(user) = self.user {
            let owner = nix::unistd::User::from_name(user).unwrap().unwrap();
            std::os::unix::fs::chown(path, Some(owner.uid.as_raw()), Some(owner.gid.as_raw()))
                .unwrap();
        }
    }

    /// Runs one of the server's programs as the server's owner.
    fn as_owner(&self, program: &str, args: &[&str]) {
        let program = self.bin.join(program);
        let mut command = match self.user {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        let output = command.args(args).output().unwrap();
        assert!(
            output.status.success(),
            "{} {args:?}: {}{}",
            program.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn url(&self, database: &str) -> String {
        format!("postgres://bench@127.0.0.1:{}/{database}", self.port)
    }

    fn client(&self, location: &Location) -> postgres::Client {
        let Location::Postgres(url) = location else {
            unreachable!()
        };
        postgres::Client::connect(url, postgres::NoTls).unwrap()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.as_owner(
            "pg_ctl",
            &["-D", self.data.to_str().unwrap(), "-m", "immediate", "stop"],
        );
    }
}

impl Store for Postgres {
    fn fresh(&self, name: &str) -> Location {
        let mut admin = postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
        // One statement each: neither runs inside a transaction.
        for sql in [
            format!("DROP DATABASE IF EXISTS {name}"),
            format!("CREATE DATABASE {name}"),
        ] {
            admin.batch_execute(&sql).unwrap();
        }
        Location::Postgres(self.url(name))
    }

    fn sql(&self, location: &Location, sql: &str) {
        self.client(location).batch_execute(sql).unwrap();
    }

    fn rows(&self, location: &Location, table: &str) -> i64 {
        self.client(location)
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0)
    }

    fn failing_trigger(&self) -> [&'static str; 2] {
        [
            "CREATE FUNCTION halfway() RETURNS trigger AS $$ BEGIN
               IF (SELECT count(*) FROM repetition) >= 5 THEN RAISE EXCEPTION 'injected'; END IF;
               RETURN NEW;
             END $$ LANGUAGE plpgsql;
             CREATE TRIGGER halfway BEFORE INSERT ON repetition
             FOR EACH ROW EXECUTE FUNCTION halfway();",
            "DROP TRIGGER halfway ON repetition",
        ]
    }

    fn set_version(&self, location: &Location, version: i64) {
        self.sql(
            location,
            &format!("UPDATE history_version SET version = {version}"),
        );
    }

    fn columns(&self, location: &Location) -> BTreeMap<String, String> {
        let mut client = self.client(location);
        // Those of the schema: not its keys' (machine_pkey, run_machine_started_command_key).
        let indexes = client
            .query(
                "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() \
                 AND indexname NOT LIKE '%pkey' AND indexname NOT LIKE '%key'",
                &[],
            )
            .unwrap();
        let indexes = indexes
            .iter()
            .map(|r| (format!("index {}", r.get::<_, String>(0)), String::new()));
        let rows = client
            .query(
                "SELECT table_name::text, column_name::text, data_type::text, is_nullable::text
                 FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name <> 'history_version'",
                &[],
            )
            .unwrap();
        rows.iter()
            .map(|r| {
                let (table, name, kind): (String, String, String) = (r.get(0), r.get(1), r.get(2));
                let kind = match kind.as_str() {
                    "bigint" => "integer 64",
                    "integer" => "integer 32",
                    "double precision" => "float 64",
                    "real" => "float 32",
                    "text" => "text",
                    "bytea" => "bytes",
                    other => panic!("{table}.{name}: a column of type {other}"),
                };
                let null = match r.get::<_, String>(3).as_str() {
                    "NO" => "not null",
                    _ => "null",
                };
                (format!("{table}.{name}"), format!("{kind}, {null}"))
            })
            .chain(indexes)
            .collect()
    }
}

/// Every guarantee, on one store.
fn holds(store: &dyn Store) {
    two_runs_go_in_and_come_back_out_as_they_were(store);
    the_past_of_a_cell_is_its_own_on_one_machine_before_a_time(store);
    a_run_that_fails_halfway_leaves_nothing_of_itself(store);
    a_newer_schema_or_a_database_of_something_else_is_refused(store);
    a_version_1_history_is_migrated_and_protocol_and_client_threads_tell_cells_apart(store);
    two_runs_appended_at_once_both_land(store);
}

fn two_runs_go_in_and_come_back_out_as_they_were(store: &dyn Store) {
    let location = store.fresh("two");
    let mut history = History::open(&location).unwrap();
    let (a, b) = (started("2026-01-01T00:00:00+00:00"), fixture());
    assert!(history.append(&a, "a").unwrap() == Appended::New);
    assert!(history.append(&b, "b").unwrap() == Appended::New);
    let entries = history.entries().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].cells, a.cells.len());
    assert_eq!(entries[0].machine, history::fingerprint(&a.host));
    assert_eq!(json(&history.load(entries[0].id).unwrap()), json(&a));
    assert_eq!(json(&history.load(entries[1].id).unwrap()), json(&b));
    // The same run again replaces itself, in a history opened anew.
    drop(history);
    let mut history = History::open(&location).unwrap();
    assert!(history.append(&b, "b").unwrap() == Appended::Replaced);
    assert_eq!(history.entries().unwrap().len(), 2);
    let listed = history::list(&history).unwrap();
    assert!(
        listed.contains("2 run(s)") && listed.contains(&b.config.command),
        "{listed}"
    );
}

fn the_past_of_a_cell_is_its_own_on_one_machine_before_a_time(store: &dyn Store) {
    let mut history = History::open(store.fresh("past")).unwrap();
    let times = ["2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"];
    for at in times {
        history.append(&started(at), at).unwrap();
    }
    let mut elsewhere = started("2026-01-01T12:00:00+00:00");
    elsewhere.host.name = Some("another".into());
    history.append(&elsewhere, "elsewhere").unwrap();
    let run = fixture();
    let cell = run.cells.iter().find(|c| c.status == Status::Ok).unwrap();
    let machine = history::fingerprint(&run.host);
    let timeline = history.timeline(&machine).unwrap();
    let past = timeline.past(cell, times[1]).unwrap();
    assert_eq!(past.len(), 1);
    // As its results had it, but for the figures its run computes again.
    let unsummarized = Cell {
        figures: None,
        ..cell.clone()
    };
    assert_eq!(
        serde_json::to_value(history.cell_of(past[0]).unwrap()).unwrap(),
        serde_json::to_value(unsummarized).unwrap()
    );
    assert_eq!(timeline.past(cell, "9999").unwrap().len(), 2);
    let unavailable = run.cells.iter().find(|c| c.status != Status::Ok).unwrap();
    assert!(timeline.past(unavailable, "9999").unwrap().is_empty());
}

fn a_run_that_fails_halfway_leaves_nothing_of_itself(store: &dyn Store) {
    let location = store.fresh("halfway");
    let mut history = History::open(&location).unwrap();
    // A failure after the run, its cells and some repetitions went in, as a
    // killed process leaves its transaction.
    let [fail, mend] = store.failing_trigger();
    store.sql(&location, fail);
    let e = format!("{:#}", history.append(&fixture(), "x").unwrap_err());
    assert!(
        e.contains("injected") && e.contains("appending the run"),
        "{e}"
    );
    for table in ["run", "cell", "repetition", "implementation"] {
        assert_eq!(store.rows(&location, table), 0, "{table}");
    }
    // And the connection goes on: the next run, without the fault, lands.
    store.sql(&location, mend);
    history.append(&fixture(), "x").unwrap();
    assert_eq!(store.rows(&location, "run"), 1);
}

fn a_newer_schema_or_a_database_of_something_else_is_refused(store: &dyn Store) {
    let location = store.fresh("newer");
    drop(History::open(&location).unwrap());
    store.set_version(&location, history::VERSION + 1);
    let e = format!("{:#}", History::open(&location).err().unwrap());
    let newer = format!("version {}", history::VERSION + 1);
    assert!(e.contains(&newer) && e.contains("newer"), "{e}");

    let other = store.fresh("other");
    store.sql(&other, "CREATE TABLE mine (x INTEGER)");
    let e = format!("{:#}", History::open(&other).err().unwrap());
    assert!(
        e.contains("no history schema") && e.contains(&other.to_string()),
        "{e}"
    );
}

fn a_version_1_history_is_migrated_and_protocol_and_client_threads_tell_cells_apart(
    store: &dyn Store,
) {
    let location = store.fresh("migrated");
    let tcp = started("2026-01-01T00:00:00+00:00");
    History::open(&location)
        .unwrap()
        .append(&tcp, "tcp")
        .unwrap();
    // An open loop of the days its generator ran as mio's client.
    let mut as_mio = started("2025-12-31T00:00:00+00:00");
    for cell in &mut as_mio.cells {
        (cell.rate, cell.client) = (Some(7000), "mio".into());
    }
    History::open(&location)
        .unwrap()
        .append(&as_mio, "as-mio")
        .unwrap();
    // What a version 1 history is: no protocol column, nor the client's
    // threads of version 3, nor the share of version 4; every migration
    // then runs.
    at_version(store, &location, 1);

    let mut history = History::open(&location).unwrap();
    let entries = history.entries().unwrap();
    assert_eq!(json(&history.load(entries[1].id).unwrap()), json(&tcp));
    // The open loop's cells are the generator's now, in their record and
    // in their identity.
    let machine = history::fingerprint(&tcp.host);
    // How many past cells of `cell`'s identity the machine has.
    let past = |history: &History, cell: &Cell| {
        let timeline = history.timeline(&machine).unwrap();
        timeline.past(cell, "9999").unwrap().len()
    };
    let mut generator = as_mio.clone();
    for cell in &mut generator.cells {
        cell.client = "generator".into();
    }
    assert_eq!(
        json(&history.load(entries[0].id).unwrap()),
        json(&generator)
    );
    let cell = generator
        .cells
        .iter()
        .find(|c| c.status == Status::Ok)
        .unwrap();
    assert_eq!(past(&history, cell), 1);
    // The same cells over UDP, a day later: not the TCP cells' past.
    let mut udp = started("2026-01-02T00:00:00+00:00");
    for cell in &mut udp.cells {
        cell.protocol = pingpong::protocol::Protocol::Udp;
    }
    history.append(&udp, "udp").unwrap();
    let cell = udp.cells.iter().find(|c| c.status == Status::Ok).unwrap();
    assert_eq!(past(&history, cell), 1);
    let entries = history.entries().unwrap();
    assert_eq!(json(&history.load(entries[2].id).unwrap()), json(&udp));
    // With a client of other threads than the server's: a cell of its own.
    let mut sized = started("2026-01-03T00:00:00+00:00");
    for cell in &mut sized.cells {
        cell.client_threads = Some(cell.threads + 1);
    }
    history.append(&sized, "sized").unwrap();
    let cell = sized.cells.iter().find(|c| c.status == Status::Ok).unwrap();
    assert_eq!(past(&history, cell), 1);
    // In the open loop at 10% of capacity, and at as many blocks a second
    // as that made: two cells, each its own.
    for (day, share) in [("04", Some(10)), ("05", None)] {
        let mut open = started(&format!("2026-01-{day}T00:00:00+00:00"));
        for cell in &mut open.cells {
            (cell.rate, cell.rate_share) = (Some(5000), share);
        }
        history.append(&open, day).unwrap();
        let cell = open.cells.iter().find(|c| c.status == Status::Ok).unwrap();
        assert_eq!(past(&history, cell), 1);
    }
    drop(history);
    // Opened again, it is of this version: the column is not added twice.
    History::open(&location).unwrap();
}

fn two_runs_appended_at_once_both_land(store: &dyn Store) {
    let location = store.fresh("once");
    let times = ["2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"];
    // Two writers of a history made by neither yet: both make it, one schema.
    std::thread::scope(|s| {
        for at in times {
            let location = &location;
            s.spawn(move || {
                History::open(location)
                    .unwrap()
                    .append(&started(at), at)
                    .unwrap()
            });
        }
    });
    let entries = History::open(&location).unwrap().entries().unwrap();
    let starts: Vec<&str> = entries.iter().map(|e| e.started.as_str()).collect();
    assert_eq!(starts, times);
}

/// The columns of a history made new on `store`, after checking that one
/// migrated from each older version, holding a run, has the same.
fn one_schema_new_and_migrated(store: &dyn Store) -> BTreeMap<String, String> {
    let new = store.fresh("schema_new");
    drop(History::open(&new).unwrap());
    let made = store.columns(&new);
    assert!(
        made.contains_key("cell.client_threads") && made.contains_key("index cell_run"),
        "{made:?}"
    );
    for version in 1..history::VERSION {
        let old = store.fresh(&format!("schema_from_{version}"));
        History::open(&old)
            .unwrap()
            .append(&fixture(), "old")
            .unwrap();
        at_version(store, &old, version);
        let history = History::open(&old).unwrap();
        let entries = history.entries().unwrap();
        assert_eq!(
            json(&history.load(entries[0].id).unwrap()),
            json(&fixture())
        );
        assert_eq!(entries[0].digest, history::digest(&fixture()).unwrap());
        let migrated = store.columns(&old);
        let differ: Vec<_> = made
            .iter()
            .filter(|(column, kind)| migrated.get(*column) != Some(kind))
            .chain(
                migrated
                    .iter()
                    .filter(|(column, _)| !made.contains_key(*column)),
            )
            .collect();
        assert!(
            differ.is_empty(),
            "migrated from version {version}: {differ:?}"
        );
    }
    made
}

#[test]
fn both_backends_make_one_schema_new_and_from_every_older_version() {
    let sqlite = one_schema_new_and_migrated(&Sqlite(out_dir("history-schemas")));
    let server = Postgres::start("history-schemas");
    let postgres = one_schema_new_and_migrated(&server);
    let differ: Vec<String> = sqlite
        .keys()
        .chain(postgres.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|c| sqlite.get(*c) != postgres.get(*c))
        .map(|c| {
            format!(
                "{c}: SQLite {:?}, PostgreSQL {:?}",
                sqlite.get(c),
                postgres.get(c)
            )
        })
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
}

#[test]
fn an_sqlite_history_keeps_its_guarantees() {
    let dir = out_dir("history-sqlite");
    holds(&Sqlite(dir.clone()));
    let text = dir.join("text.sqlite");
    std::fs::write(
        &text,
        "not a database, but long enough to be read as one's header",
    )
    .unwrap();
    let e = format!("{:#}", History::open(&text).err().unwrap());
    assert!(e.contains(&text.display().to_string()), "{e}");
}

#[test]
fn a_postgresql_history_keeps_them_and_serves_every_command() {
    let server = Postgres::start("history-postgres");
    holds(&server);

    // A run appended as a team's machine appends it, and a run imported.
    let Location::Postgres(url) = server.fresh("team") else {
        unreachable!()
    };
    let said = run_mio(
        &folder("history-postgres").join("run"),
        "1",
        &["--history", &url],
    );
    assert!(
        said.contains("history: the run is in postgres://bench@127.0.0.1"),
        "{said}"
    );
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small");
    let args = [
        "history",
        "import",
        fixtures.to_str().unwrap(),
        "--history",
        &url,
    ];
    let output = compare(&args);
    assert_ok(&output, &args);
    let output = compare(&["history", "list", "--history", &url]);
    assert!(String::from_utf8_lossy(&output.stdout).contains("2 run(s)"));
    site_of_two(&url, &folder("history-postgres").join("site"));
}

/// A certificate authority, and a server certificate for localhost that
/// it signs: the CA's PEM, the server's and its key's.
fn authority() -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    let cert = server.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

#[test]
fn a_postgresql_history_over_tls_verifies_its_server_and_keeps_its_password_to_itself() {
    let (root, certificate, key) = authority();
    let (other_root, _, _) = authority();
    let password = "pingpong-secret-7f3a";
    let tls = Tls {
        certificate,
        key,
        password,
    };
    let server = Postgres::launch("history-tls", Some(&tls));
    let out = out_dir("history-tls");
    std::fs::create_dir_all(&out).unwrap();
    let (root_file, other_file) = (out.join("root.pem"), out.join("other.pem"));
    std::fs::write(&root_file, root).unwrap();
    std::fs::write(&other_file, other_root).unwrap();
    // The database, made over the socket (trusted, without TLS).
    let socket = format!(
        "host={} port={} user=bench dbname=postgres",
        server.dir.path().display(),
        server.port
    );
    let mut admin = postgres::Client::connect(&socket, postgres::NoTls).unwrap();
    admin.batch_execute("CREATE DATABASE tls").unwrap();
    let url = |root: &Path| {
        format!(
            "postgres://bench@localhost:{}/tls?sslmode=verify-full&sslrootcert={}",
            server.port,
            root.display()
        )
    };
    let run = out.join("run");
    let history = url(&root_file);
    let mut args = vec![
        "run",
        "--runtimes",
        "mio",
        "--connections",
        "1",
        "--threads",
        "1",
    ];
    args.extend([
        "--seconds",
        "0.1",
        "--warmup",
        "0",
        "--repeat",
        "1",
        "--no-cost",
    ]);
    args.extend([
        "--quiet",
        "--out",
        run.to_str().unwrap(),
        "--history",
        &history,
    ]);
    let output = compare_with(&args, &[("PGPASSWORD", password)]);
    assert_ok(&output, &args);
    let listed = compare_with(
        &["history", "list", "--history", &history],
        &[("PGPASSWORD", password)],
    );
    let said = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success() && said.contains("mio"), "{said}");
    // Nowhere it writes: not in what it said, nor in its results.
    let mut written = format!("{output:?}{listed:?}");
    for file in ["results.json", "report.md", "summary.json"] {
        written += &std::fs::read_to_string(run.join(file)).unwrap();
    }
    assert!(!written.contains(password), "the password was written out");
    // A server whose certificate the root does not sign is refused, and
    // says so; the password in the URL stays out of the message.
    let wrong = url(&other_file).replace("bench@", &format!("bench:{password}@"));
    let refused = compare_with(&["history", "list", "--history", &wrong], &[]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("VerifyFull") && stderr.contains("certificate"),
        "{stderr}"
    );
    assert!(!stderr.contains(password), "{stderr}");
}
