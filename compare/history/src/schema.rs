//! What a history's database is made of, in each backend's own words: the
//! schema a new history is made with (`schema/sqlite.sql`,
//! `schema/postgres.sql`) and the migrations that bring an older one to
//! it, each written for both. Nothing is translated from one dialect to
//! the other; a test holds the two to one another, column by column, made
//! new and migrated from every older version.

/// The schema's version, as `PRAGMA user_version` keeps it (in
/// PostgreSQL, the table `history_version`).
pub const VERSION: i64 = 7;

/// The backends a history lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// One step of the schema, its statement in each dialect.
pub struct Migration {
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

/// What brings a history of each older version to the next:
/// `MIGRATIONS[v - 1]` takes version `v` to `v + 1`.
pub const MIGRATIONS: [Migration; VERSION as usize - 1] = [
    // UDP: the protocol joins a cell's identity; every older cell is TCP.
    Migration {
        sqlite: "ALTER TABLE cell ADD COLUMN protocol TEXT NOT NULL DEFAULT 'tcp'",
        postgres: "ALTER TABLE cell ADD COLUMN protocol TEXT NOT NULL DEFAULT 'tcp'",
    },
    // --client-threads: the client's threads join it; an older cell's
    // client had the server's (NULL).
    Migration {
        sqlite: "ALTER TABLE cell ADD COLUMN client_threads INTEGER",
        postgres: "ALTER TABLE cell ADD COLUMN client_threads BIGINT",
    },
    // --rates 10%: a share of capacity joins it; an older cell's rate, if
    // any, was blocks a second (NULL).
    Migration {
        sqlite: "ALTER TABLE cell ADD COLUMN rate_share INTEGER",
        postgres: "ALTER TABLE cell ADD COLUMN rate_share BIGINT",
    },
    // The open loop's generator left the mio baseline for a crate of its
    // own: an older open-loop cell's client, mio's, is the generator (its
    // record says mio still, and reads as the generator:
    // Cell::name_the_generator).
    Migration {
        sqlite: "UPDATE cell SET client = 'generator' \
                 WHERE client = 'mio' AND (rate IS NOT NULL OR rate_share IS NOT NULL)",
        postgres: "UPDATE cell SET client = 'generator' \
                   WHERE client = 'mio' AND (rate IS NOT NULL OR rate_share IS NOT NULL)",
    },
    // Each run's digest (filled in for the runs already there: see
    // History::migrate), and the index that reads a run's cells without
    // reading every other run's: loading one run of 1,000 scanned all
    // 110,000 cells (100 ms; 27 ms with it).
    Migration {
        sqlite: "ALTER TABLE run ADD COLUMN digest TEXT; \
                 CREATE INDEX cell_run ON cell (run, position)",
        postgres: "ALTER TABLE run ADD COLUMN digest TEXT; \
                   CREATE INDEX cell_run ON cell (run, position)",
    },
    // One cell identity, the key's (results::key): TLS by its setting's
    // name, not its label, and the client's threads always (NULL was the
    // server's count).
    Migration {
        sqlite: "UPDATE cell SET tls = CASE tls WHEN 'TLS' THEN 'full' \
                 WHEN 'TLS with resumption' THEN 'resumption' ELSE tls END; \
                 UPDATE cell SET client_threads = threads WHERE client_threads IS NULL",
        postgres: "UPDATE cell SET tls = CASE tls WHEN 'TLS' THEN 'full' \
                   WHEN 'TLS with resumption' THEN 'resumption' ELSE tls END; \
                   UPDATE cell SET client_threads = threads WHERE client_threads IS NULL",
    },
];

/// The version whose migration leaves each older run's digest to fill in.
pub const DIGESTS: i64 = 6;

impl Backend {
    /// The schema of [`VERSION`], which the book's history page shows whole.
    pub fn schema(self) -> &'static str {
        match self {
            Self::Sqlite => include_str!("schema/sqlite.sql"),
            Self::Postgres => include_str!("schema/postgres.sql"),
        }
    }

    /// A migration's statement in this dialect.
    pub fn migration(self, migration: &Migration) -> &'static str {
        match self {
            Self::Sqlite => migration.sqlite,
            Self::Postgres => migration.postgres,
        }
    }
}
