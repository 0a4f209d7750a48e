//! Where a history lies, and the little the history asks of it: an SQLite
//! file (the default, nothing to install) or a PostgreSQL database (one
//! history for several benchmark machines). Queries are built once with
//! sea-query and written in each backend's dialect by it; rows come back
//! as [`Value`]s; a writer's transaction holds every other writer off
//! until it ends.

use std::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use rusqlite::types::{ToSqlOutput, ValueRef};
use sea_query::{PostgresQueryBuilder, QueryStatementWriter, SqliteQueryBuilder};

use super::schema::Backend;
use super::tls;

/// How long a writer waits for another one to finish its run.
const BUSY: Duration = Duration::from_secs(60);

/// The PostgreSQL advisory lock that a writer holds through its
/// transaction: "pingpong" in ASCII.
const WRITER_LOCK: i64 = 0x7069_6e67_706f_6e67;

/// A history's place: a file, or a PostgreSQL URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Postgres(String),
}

impl From<&Path> for Location {
    /// `postgres://...` or `postgresql://...` names a database; anything
    /// else a file.
    fn from(path: &Path) -> Self {
        match path.to_str() {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Self::Postgres(url.to_string())
            }
            _ => Self::File(path.to_path_buf()),
        }
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Self {
        Self::from(path.as_path())
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

impl fmt::Display for Location {
    /// The file, or the URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => match url::Url::parse(url) {
                Ok(mut parsed) if parsed.password().is_some() => {
                    let _ = parsed.set_password(None);
                    write!(f, "{parsed}")
                }
                _ => write!(f, "{url}"),
            },
        }
    }
}

/// A value of a column or a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    pub fn int(&self) -> Result<i64> {
        match self {
            Self::Int(n) => Ok(*n),
            other => bail!("expected an integer, found {other:?}"),
        }
    }

    pub fn text(&self) -> Result<String> {
        match self {
            Self::Text(s) => Ok(s.clone()),
            other => bail!("expected text, found {other:?}"),
        }
    }

    pub fn optional_text(&self) -> Result<Option<String>> {
        match self {
            Self::Null => Ok(None),
            other => other.text().map(Some),
        }
    }

    pub fn blob(&self) -> Result<Vec<u8>> {
        match self {
            Self::Blob(b) => Ok(b.clone()),
            other => bail!("expected bytes, found {other:?}"),
        }
    }

    /// A parameter of a built query, as the history writes it: every
    /// integer 64 bits wide, every float a double.
    pub fn parameter(value: sea_query::Value) -> Result<Self> {
        use sea_query::Value as V;
        let int = |n: Option<i64>| n.map_or(Self::Null, Self::Int);
        Ok(match value {
            V::Bool(b) => int(b.map(i64::from)),
            V::TinyInt(n) => int(n.map(i64::from)),
            V::SmallInt(n) => int(n.map(i64::from)),
            V::Int(n) => int(n.map(i64::from)),
            V::BigInt(n) => int(n),
            V::TinyUnsigned(n) => int(n.map(i64::from)),
            V::SmallUnsigned(n) => int(n.map(i64::from)),
            V::Unsigned(n) => int(n.map(i64::from)),
            V::BigUnsigned(n) => int(n.map(i64::try_from).transpose()?),
            V::Float(x) => x.map_or(Self::Null, |x| Self::Real(x.into())),
            V::Double(x) => x.map_or(Self::Null, Self::Real),
            V::String(s) => s.map_or(Self::Null, Self::Text),
            V::Bytes(b) => b.map_or(Self::Null, Self::Blob),
            other => bail!("a parameter of a kind the history does not write: {other:?}"),
        })
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Self::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Self::Int(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
            Self::Real(x) => ToSqlOutput::Borrowed(ValueRef::Real(*x)),
            Self::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Self::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
        })
    }
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Self::Null => Ok(IsNull::Yes),
            Self::Int(n) => n.to_sql(ty, out),
            Self::Real(x) => x.to_sql(ty, out),
            Self::Text(s) => s.to_sql(ty, out),
            Self::Blob(b) => b.to_sql(ty, out),
        }
    }

    /// A NULL fits any column; the rest are checked as they are written.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A row of a query.
pub type Row = Vec<Value>;

/// An open history database.
pub enum Store {
    Sqlite(rusqlite::Connection),
    Postgres(Box<postgres::Client>),
}

impl Store {
    pub fn open(location: &Location) -> Result<Self> {
        match location {
            Location::File(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)?;
                }
                let db = rusqlite::Connection::open(path)?;
                db.busy_timeout(BUSY)?;
                db.pragma_update(None, "foreign_keys", true)?;
                Ok(Self::Sqlite(db))
            }
            Location::Postgres(url) => {
                let tls::Connection { config, mode, tls } = tls::connection(url)?;
                let client = match tls {
                    Some(tls) => config.connect(tls),
                    None => config.connect(postgres::NoTls),
                };
                let mut client = client.with_context(|| {
                    format!("connecting to the PostgreSQL server {location} ({mode:?})")
                })?;
                client.batch_execute(&format!(
                    "SET lock_timeout = '{}s'; SET client_min_messages = warning",
                    BUSY.as_secs()
                ))?;
                Ok(Self::Postgres(Box::new(client)))
            }
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            Self::Sqlite(_) => Backend::Sqlite,
            Self::Postgres(_) => Backend::Postgres,
        }
    }

    /// A statement as this backend's dialect writes it, with its parameters.
    fn build(&self, statement: &impl QueryStatementWriter) -> Result<(String, Vec<Value>)> {
        let (sql, values) = match self {
            Self::Sqlite(_) => statement.build(SqliteQueryBuilder),
            Self::Postgres(_) => statement.build(PostgresQueryBuilder),
        };
        let params = values
            .into_iter()
            .map(Value::parameter)
            .collect::<Result<_>>()?;
        Ok((sql, params))
    }

    /// Runs a statement; the rows it changed.
    pub fn execute(&mut self, statement: &impl QueryStatementWriter) -> Result<u64> {
        let (sql, params) = self.build(statement)?;
        Ok(match self {
            Self::Sqlite(db) => db.execute(&sql, rusqlite::params_from_iter(&params))? as u64,
            Self::Postgres(client) => client.execute(&sql, &pg(&params))?,
        })
    }

    /// Runs a query; its rows.
    pub fn query(&mut self, statement: &impl QueryStatementWriter) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        self.each(statement, |row| {
            rows.push(row);
            Ok(())
        })?;
        Ok(rows)
    }

    /// Runs a query, each row to `take` as it comes: a query of every
    /// cell of 1,000 runs held all their records at once (600 MB).
    pub fn each(
        &mut self,
        statement: &impl QueryStatementWriter,
        mut take: impl FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let (sql, params) = self.build(statement)?;
        match self {
            Self::Sqlite(db) => {
                let mut statement = db.prepare_cached(&sql)?;
                let width = statement.column_count();
                let mut rows = statement.query(rusqlite::params_from_iter(&params))?;
                while let Some(row) = rows.next()? {
                    let values = (0..width)
                        .map(|i| {
                            Ok(match row.get_ref(i)? {
                                ValueRef::Null => Value::Null,
                                ValueRef::Integer(n) => Value::Int(n),
                                ValueRef::Real(x) => Value::Real(x),
                                ValueRef::Text(t) => {
                                    Value::Text(String::from_utf8_lossy(t).into_owned())
                                }
                                ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                            })
                        })
                        .collect::<rusqlite::Result<_>>()?;
                    take(values)?;
                }
            }
            Self::Postgres(client) => {
                let params = params.iter().map(|p| p as &dyn ToSql);
                let mut rows = client.query_raw(&sql, params)?;
                while let Some(row) = rows.next()? {
                    take(
                        (0..row.len())
                            .map(|i| pg_value(&row, i))
                            .collect::<Result<_>>()?,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// The one value of a query of one row and column; none without a row.
    pub fn value(&mut self, statement: &impl QueryStatementWriter) -> Result<Option<Value>> {
        Ok(self
            .query(statement)?
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next()))
    }

    /// Statements in this backend's own dialect, without parameters: its
    /// schema, a migration, a transaction's start and end.
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Self::Sqlite(db) => db.execute_batch(sql)?,
            Self::Postgres(client) => client.batch_execute(sql)?,
        }
        Ok(())
    }

    /// Begins a writer's transaction: other writers wait until it ends.
    pub fn begin(&mut self) -> Result<()> {
        match self {
            Self::Sqlite(db) => db.execute_batch("BEGIN IMMEDIATE")?,
            Self::Postgres(client) => {
                client.batch_execute("BEGIN")?;
                client.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITER_LOCK])?;
            }
        }
        Ok(())
    }

    pub fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }

    pub fn rollback(&mut self) -> Result<()> {
        self.batch("ROLLBACK")
    }

    /// The history schema's version the database holds; 0 where none.
    pub fn version(&mut self) -> Result<i64> {
        match self {
            Self::Sqlite(db) => Ok(db
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .context("not an SQLite database")?),
            Self::Postgres(client) => {
                // information_schema, not to_regclass: inside a writer's
                // lock, a table another writer just made is seen only there.
                let exists: i64 = client
                    .query_one(
                        "SELECT count(*) FROM information_schema.tables
                         WHERE table_schema = current_schema() AND table_name = 'history_version'",
                        &[],
                    )?
                    .try_get(0)?;
                if exists != 1 {
                    return Ok(0);
                }
                let version = client.query_opt("SELECT version FROM history_version", &[])?;
                Ok(version.map(|row| row.try_get(0)).transpose()?.unwrap_or(0))
            }
        }
    }

    pub fn set_version(&mut self, version: i64) -> Result<()> {
        match self {
            Self::Sqlite(db) => db.pragma_update(None, "user_version", version)?,
            Self::Postgres(client) => {
                client.batch_execute(
                    "CREATE TABLE IF NOT EXISTS history_version (version BIGINT NOT NULL);
                     DELETE FROM history_version",
                )?;
                client.execute("INSERT INTO history_version VALUES ($1)", &[&version])?;
            }
        }
        Ok(())
    }

    /// How many tables the database (its current schema) holds.
    pub fn tables(&mut self) -> Result<i64> {
        Ok(match self {
            Self::Sqlite(db) => db.query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
                [],
                |r| r.get(0),
            )?,
            Self::Postgres(client) => client
                .query_one(
                    "SELECT count(*) FROM information_schema.tables \
                     WHERE table_schema = current_schema()",
                    &[],
                )?
                .try_get(0)?,
        })
    }
}

fn pg(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// A PostgreSQL column's value, by the column's type.
fn pg_value(row: &postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_().clone();
    let int = |n: Option<i64>| n.map_or(Value::Null, Value::Int);
    let value = match ty {
        Type::INT8 => int(row.try_get(i)?),
        Type::INT4 => int(row.try_get::<_, Option<i32>>(i)?.map(i64::from)),
        Type::BOOL => int(row.try_get::<_, Option<bool>>(i)?.map(i64::from)),
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(i)?
            .map_or(Value::Null, Value::Real),
        Type::TEXT | Type::VARCHAR => row
            .try_get::<_, Option<String>>(i)?
            .map_or(Value::Null, Value::Text),
        Type::BYTEA => row
            .try_get::<_, Option<Vec<u8>>>(i)?
            .map_or(Value::Null, Value::Blob),
        other => bail!("a column of type {other}, which the history does not use"),
    };
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_a_database_shown_without_its_password() {
        let url = Location::from(Path::new("postgres://bench:secret@127.0.0.1:5432/history"));
        assert!(matches!(url, Location::Postgres(_)));
        assert_eq!(url.to_string(), "postgres://bench@127.0.0.1:5432/history");
        let file = Location::from(Path::new("results/history.sqlite"));
        assert_eq!(file, Location::File("results/history.sqlite".into()));
    }
}
