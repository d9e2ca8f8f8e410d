//! A write as data: the statements of one transaction, written once in the SQL both engines
//! share, and run either through the pool (PostgreSQL, and SQLite's rarer writes) or by
//! SQLite's group-committing writer ([`crate::group_commit`]).
//!
//! A plan is owned data (SQL and values, no borrows), so it can be handed to the writer's
//! thread and run there inside a transaction shared with other writes.

use sqlx::{AnyConnection, AssertSqlSafe};

use crate::Error;

/// A value bound to a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Value {
    Text(String),
    Int(i64),
    Null,
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::Text(text.to_owned())
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<Option<&str>> for Value {
    fn from(text: Option<&str>) -> Value {
        text.map_or(Value::Null, Value::from)
    }
}

/// Binds every value of `params` to a sqlx query (plain or scalar), in order.
macro_rules! bind_all {
    ($query:expr, $params:expr) => {{
        let mut query = $query;
        for value in $params {
            query = match value {
                Value::Text(text) => query.bind(text.as_str()),
                Value::Int(n) => query.bind(*n),
                Value::Null => query.bind(None::<&str>),
            };
        }
        query
    }};
}

/// One statement: SQL with `$1, $2, …` placeholders and the values for them, in order.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    sql: String,
    params: Vec<Value>,
}

impl Statement {
    pub(crate) fn new(sql: impl Into<String>, params: Vec<Value>) -> Statement {
        Statement {
            sql: sql.into(),
            params,
        }
    }

    /// Runs the statement on a pool's connection (inside its write transaction), ignoring
    /// any rows.
    pub(crate) async fn execute(&self, conn: &mut AnyConnection) -> Result<(), Error> {
        bind_all!(sqlx::query(AssertSqlSafe(self.sql.as_str())), &self.params)
            .execute(conn)
            .await?;
        Ok(())
    }

    /// The first column of the first row, if the statement returns one.
    async fn first_int(&self, conn: &mut AnyConnection) -> Result<Option<i64>, Error> {
        let query = sqlx::query_scalar::<_, i64>(AssertSqlSafe(self.sql.as_str()));
        Ok(bind_all!(query, &self.params).fetch_optional(conn).await?)
    }

    /// The same on a rusqlite connection.
    fn prepared<'c>(
        &self,
        conn: &'c rusqlite::Connection,
    ) -> rusqlite::Result<rusqlite::CachedStatement<'c>> {
        let mut stmt = conn.prepare_cached(&numbered(&self.sql))?;
        for (i, value) in self.params.iter().enumerate() {
            match value {
                Value::Text(text) => stmt.raw_bind_parameter(i + 1, text.as_str())?,
                Value::Int(n) => stmt.raw_bind_parameter(i + 1, n)?,
                Value::Null => stmt.raw_bind_parameter(i + 1, rusqlite::types::Null)?,
            }
        }
        Ok(stmt)
    }
}

/// Shared SQL as rusqlite must have it. SQLite reads `$1` as a parameter *named* "$1" and
/// numbers named parameters by first appearance, so a statement whose `$5` comes before its
/// `$1` would bind the wrong values by position; `?N` is numbered by its digits. (The shared
/// SQL holds no `$` but in placeholders.)
pub(crate) fn numbered(sql: &str) -> String {
    sql.replace('$', "?")
}

/// The statements of one write: `setup` runs first, in order; then each of `decide` in turn
/// until one returns a row, whose first column (an integer) is the write's result; then, only
/// when one did, `then` (what the write records besides, such as its event). The plan's
/// verdict (see [`Plan::run_pooled`]) turns that result into the caller's answer or an error,
/// and an error undoes everything the plan did.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub(crate) setup: Vec<Statement>,
    pub(crate) decide: Vec<Statement>,
    pub(crate) then: Vec<Statement>,
}

impl Plan {
    /// Runs the plan on a pool's connection inside an open write transaction; `None` when no
    /// decisive statement returned a row.
    pub(crate) async fn run_pooled(&self, conn: &mut AnyConnection) -> Result<Option<i64>, Error> {
        for statement in &self.setup {
            statement.execute(conn).await?;
        }
        for statement in &self.decide {
            if let Some(found) = statement.first_int(conn).await? {
                for statement in &self.then {
                    statement.execute(conn).await?;
                }
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The same on a rusqlite connection inside an open transaction.
    pub(crate) fn run_sqlite(&self, conn: &rusqlite::Connection) -> rusqlite::Result<Option<i64>> {
        for statement in &self.setup {
            let mut stmt = statement.prepared(conn)?;
            stmt.raw_execute()?;
        }
        for statement in &self.decide {
            let mut stmt = statement.prepared(conn)?;
            let mut rows = stmt.raw_query();
            if let Some(row) = rows.next()? {
                let found = row.get(0)?;
                drop(rows);
                for statement in &self.then {
                    let mut stmt = statement.prepared(conn)?;
                    stmt.raw_execute()?;
                }
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}
