-- The history's schema in SQLite, version 7 (PRAGMA user_version). Every
-- figure lies in a column where tables and trends query it, and whole in
-- the record beside it, so that a run read back is its results.json
-- again. postgres.sql is the same schema in PostgreSQL's words, kept beside
-- it: a test holds the two to one another, column by column.

-- A machine, as the runs found it: only runs of one fingerprint compare.
CREATE TABLE machine (
    id INTEGER PRIMARY KEY,
    -- SHA-256 (hex, 16 digits) of host name, CPU model, CPUs, cores and kernel.
    fingerprint TEXT NOT NULL UNIQUE,
    name TEXT,
    cpu_model TEXT,
    logical_cpus INTEGER,
    physical_cores INTEGER,
    memory_kib INTEGER,
    kernel TEXT
);

-- One `compare run`: its options and the suite that ran it.
CREATE TABLE run (
    id INTEGER PRIMARY KEY,
    machine INTEGER NOT NULL REFERENCES machine (id),
    -- RFC 3339, as in results.json; with the command, the run's identity.
    started TEXT NOT NULL,
    ended TEXT,
    command TEXT NOT NULL,
    suite_version TEXT NOT NULL,
    suite_commit TEXT,
    -- The results file's schema version.
    results_schema INTEGER NOT NULL,
    -- Where it came from: the results file it was appended or imported from.
    source TEXT NOT NULL,
    -- JSON: results.json's suite, host, server_host and config.
    suite TEXT NOT NULL,
    host TEXT NOT NULL,
    server_host TEXT,
    config TEXT NOT NULL,
    -- SHA-256 (hex) of the run's results as they were appended, and read
    -- back: what the site's pages of it were made from (version 6).
    digest TEXT,
    UNIQUE (machine, started, command)
);

-- Each implementation a run measured: its spec, and the version or
-- revision it resolved to.
CREATE TABLE implementation (
    run INTEGER NOT NULL REFERENCES run (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    version TEXT NOT NULL,
    PRIMARY KEY (run, name)
);

-- One implementation at one load in one workload.
CREATE TABLE cell (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL REFERENCES run (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    implementation TEXT NOT NULL,
    version TEXT NOT NULL,
    client TEXT NOT NULL,
    -- tcp or udp (version 2; a version 1 history's cells are tcp).
    protocol TEXT NOT NULL DEFAULT 'tcp',
    threads INTEGER NOT NULL,
    -- The client's threads (version 3; since version 7 always given, the
    -- server's count where the client had as many).
    client_threads INTEGER,
    connections INTEGER NOT NULL,
    block INTEGER NOT NULL,
    "window" INTEGER NOT NULL,
    rate INTEGER,
    -- An open loop at a share of capacity, in percent (version 4; NULL:
    -- none, as in every older cell); its rate then followed from it.
    rate_share INTEGER,
    churn INTEGER,
    -- full or resumption (since version 7; its label before), NULL: none.
    tls TEXT,
    shape TEXT NOT NULL,
    work INTEGER NOT NULL,
    -- ok, failed or unavailable.
    status TEXT NOT NULL,
    -- The median MiB/s over its repetitions; NULL unless ok.
    mib_per_s REAL,
    -- JSON: the cell of results.json without its repetitions.
    record TEXT NOT NULL
);
CREATE INDEX cell_identity ON cell (implementation, client, threads, connections, block);
-- A run's cells in their order, without reading every other run's
-- (version 6).
CREATE INDEX cell_run ON cell (run, position);

-- One repetition of a cell (its cost run has cost = 1).
CREATE TABLE repetition (
    cell INTEGER NOT NULL REFERENCES cell (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    cost INTEGER NOT NULL,
    run_order INTEGER NOT NULL,
    mib_per_s REAL NOT NULL,
    messages_per_s REAL NOT NULL,
    rtt_p50_us REAL,
    rtt_p99_us REAL,
    server_cpu_percent REAL,
    client_cpu_percent REAL,
    server_peak_rss_kib INTEGER,
    client_peak_rss_kib INTEGER,
    -- The round trips' HdrHistogram, V2 deflate, base64, as in results.json.
    histogram TEXT,
    -- The repetition of results.json without its histogram: JSON, deflated.
    record BLOB NOT NULL,
    PRIMARY KEY (cell, cost, position)
);
