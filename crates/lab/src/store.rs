//! The result store: one SQLite file, schema versioned by `PRAGMA user_version` and
//! upgraded by migrations in order, each measured run committed the moment it finishes
//! (so a crash or Ctrl-C loses nothing already measured).
//!
//! A run row holds the figures tables need (req/s, latency percentiles, failures,
//! target CPU and peak RSS, client CPU) and the whole engine result as JSON — with the
//! merged HdrHistograms and the per-second series — so any statistic can be recomputed
//! and runs from different machines compared later.

use std::path::Path;

use crate::record::{RunRecord, Verification};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

/// Schema migrations, applied in order; the index + 1 is the schema version reached.
const MIGRATIONS: [&str; 5] = [
    // 1: benches and their runs.
    "CREATE TABLE bench (
        id INTEGER PRIMARY KEY,
        started_unix_ms INTEGER NOT NULL,
        plan_name TEXT NOT NULL,
        plan_source TEXT NOT NULL,
        environment TEXT NOT NULL
    );
    CREATE TABLE run (
        id INTEGER PRIMARY KEY,
        bench_id INTEGER NOT NULL REFERENCES bench(id),
        target TEXT NOT NULL,
        scenario TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        rps REAL NOT NULL,
        p50_us INTEGER NOT NULL,
        p99_us INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        non_2xx INTEGER NOT NULL,
        result TEXT NOT NULL
    );",
    // 2: resources per run, verification outcomes, target details.
    "ALTER TABLE run ADD COLUMN target_cpu_user_s REAL;
    ALTER TABLE run ADD COLUMN target_cpu_sys_s REAL;
    ALTER TABLE run ADD COLUMN target_peak_rss_kb INTEGER;
    ALTER TABLE run ADD COLUMN client_cpu_s REAL;
    CREATE INDEX run_by_key ON run(bench_id, target, scenario);
    CREATE TABLE verification (
        bench_id INTEGER NOT NULL REFERENCES bench(id),
        target TEXT NOT NULL,
        scenario TEXT NOT NULL,
        outcome TEXT NOT NULL,
        details TEXT NOT NULL
    );
    CREATE TABLE target_info (
        bench_id INTEGER NOT NULL REFERENCES bench(id),
        target TEXT NOT NULL,
        version TEXT,
        command TEXT,
        status TEXT NOT NULL,
        stderr_tail TEXT
    );",
    // 3: how a bench ended: NULL while it runs, or for ever when it was killed.
    "ALTER TABLE bench ADD COLUMN ended TEXT;
    UPDATE bench SET ended = 'complete';",
    // 4: which side was the limit of each run (NULL for runs stored before).
    "ALTER TABLE run ADD COLUMN limit_verdict TEXT;",
    // 5: notes per target × scenario (why automatic repetitions stopped).
    "CREATE TABLE note (
        bench_id INTEGER NOT NULL REFERENCES bench(id),
        target TEXT NOT NULL,
        scenario TEXT NOT NULL,
        note TEXT NOT NULL
    );",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// A store error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("store {path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// The file was written by a newer stampede.
    #[error("store {path} has schema version {found}, newer than this build's {SCHEMA_VERSION}")]
    TooNew {
        /// The database file.
        path: String,
        /// Its version.
        found: usize,
    },
    /// A stored result does not decode.
    #[error("store {path}: run {id} does not decode: {message}")]
    Decode {
        /// The database file.
        path: String,
        /// The run id.
        id: i64,
        /// What failed.
        message: String,
    },
}

/// A bench as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// Id.
    pub id: i64,
    /// Start, ms since the epoch.
    pub started_unix_ms: u64,
    /// Plan name.
    pub plan_name: String,
    /// Environment JSON.
    pub environment: String,
    /// How it ended: `complete`, `interrupted`, or `None` while it runs and for ever
    /// after it was killed.
    pub ended: Option<String>,
}

/// The store.
pub struct Store {
    conn: Connection,
    path: String,
}

impl Store {
    /// Opens (or creates) the store and upgrades its schema.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let p = path.display().to_string();
        let conn = Connection::open(path).map_err(|e| sql(&p, e))?;
        // Another bench may be creating or writing the same file: wait for it.
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(|e| sql(&p, e))?;
        let s = Store { conn, path: p };
        // Switching a new file to WAL, and the first read while another process does,
        // can answer SQLITE_BUSY without waiting in the busy handler: try again for as
        // long as the busy timeout would have waited.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let opened = s
                .conn
                .execute_batch(
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
                )
                .map_err(|e| sql(&s.path, e))
                .and_then(|_| s.migrate(SCHEMA_VERSION));
            match opened {
                Err(StoreError::Sqlite { source, .. })
                    if source.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => return other.map(|_| s),
            }
        }
    }

    /// The schema version of the open file.
    pub fn version(&self) -> Result<usize, StoreError> {
        let v: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| sql(&self.path, e))?;
        Ok(v as usize)
    }

    /// Brings the schema to version `to` in one write transaction, taken before the
    /// version is read: two processes opening a new file at once do not both create
    /// its tables (the second waits, then finds them made).
    fn migrate(&self, to: usize) -> Result<(), StoreError> {
        if self.version()? == to {
            return Ok(());
        }
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| sql(&self.path, e))?;
        let applied = (|| {
            let from = self.version()?;
            if from > SCHEMA_VERSION {
                return Err(StoreError::TooNew {
                    path: self.path.clone(),
                    found: from,
                });
            }
            for (i, m) in MIGRATIONS.iter().enumerate().take(to).skip(from) {
                self.conn
                    .execute_batch(&format!("{m}; PRAGMA user_version = {};", i + 1))
                    .map_err(|e| sql(&self.path, e))?;
            }
            Ok(())
        })();
        let end = if applied.is_ok() {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        let ended = self.conn.execute_batch(end).map_err(|e| sql(&self.path, e));
        applied.and(ended)
    }

    /// Records the start of a bench; returns its id.
    pub fn begin_bench(
        &self,
        started_unix_ms: u64,
        plan_name: &str,
        plan_source: &str,
        environment: &str,
    ) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT INTO bench (started_unix_ms, plan_name, plan_source, environment) VALUES (?1, ?2, ?3, ?4)",
                params![started_unix_ms as i64, plan_name, plan_source, environment],
            )
            .map_err(|e| sql(&self.path, e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Records how a bench ended (`complete` or `interrupted`); a bench never ended
    /// this way was killed.
    pub fn end_bench(&self, bench: i64, how: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE bench SET ended = ?2 WHERE id = ?1",
                params![bench, how],
            )
            .map_err(|e| sql(&self.path, e))?;
        Ok(())
    }

    /// Replaces the environment recorded with a bench (target versions arrive as they start).
    pub fn set_environment(&self, bench: i64, environment: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE bench SET environment = ?2 WHERE id = ?1",
                params![bench, environment],
            )
            .map_err(|e| sql(&self.path, e))?;
        Ok(())
    }

    /// Every bench in the store, newest first.
    pub fn benches(&self) -> Result<Vec<BenchRow>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, started_unix_ms, plan_name, environment, ended FROM bench ORDER BY id DESC",
            )
            .map_err(|e| sql(&self.path, e))?;
        let rows = st
            .query_map([], bench_row)
            .map_err(|e| sql(&self.path, e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| sql(&self.path, e))
    }

    /// What became of each target of a bench, in the order they ran.
    pub fn target_statuses(
        &self,
        bench: i64,
    ) -> Result<Vec<crate::record::TargetStatus>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT target, version, status, stderr_tail FROM target_info WHERE bench_id = ?1 ORDER BY rowid")
            .map_err(|e| sql(&self.path, e))?;
        let rows = st
            .query_map(params![bench], |r| {
                let status: String = r.get(2)?;
                Ok(crate::record::TargetStatus {
                    name: r.get(0)?,
                    ok: status.starts_with("stopped") || status.starts_with("external"),
                    status,
                    version: r.get(1)?,
                    stderr_tail: r.get(3)?,
                })
            })
            .map_err(|e| sql(&self.path, e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| sql(&self.path, e))
    }

    /// The plan source a bench ran.
    pub fn plan_source(&self, bench: i64) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT plan_source FROM bench WHERE id = ?1",
                params![bench],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| sql(&self.path, e))
    }

    /// One measured run by its id, with the bench it belongs to.
    pub fn run(&self, id: i64) -> Result<Option<(i64, RunRecord)>, StoreError> {
        let bench: Option<i64> = self
            .conn
            .query_row("SELECT bench_id FROM run WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| sql(&self.path, e))?;
        let Some(bench) = bench else {
            return Ok(None);
        };
        Ok(self
            .runs_with_ids(bench)?
            .into_iter()
            .find(|(i, _)| *i == id)
            .map(|(_, r)| (bench, r)))
    }

    /// Stores a measured run (committed at once).
    pub fn add_run(&self, bench: i64, r: &RunRecord) -> Result<i64, StoreError> {
        let res = &r.result;
        self.conn
            .execute(
                "INSERT INTO run (bench_id, target, scenario, repetition, rps, p50_us, p99_us, failed, non_2xx, result,
                                  target_cpu_user_s, target_cpu_sys_s, target_peak_rss_kb, client_cpu_s,
                                  limit_verdict)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    bench,
                    r.target,
                    r.scenario,
                    r.repetition,
                    res.throughput_rps,
                    res.latency.at(50.0).unwrap_or(0) as i64,
                    res.latency.at(99.0).unwrap_or(0) as i64,
                    res.requests.failed as i64,
                    res.non_2xx() as i64,
                    serde_json::to_string(res).expect("results serialise"),
                    r.target_cpu_user_s,
                    r.target_cpu_sys_s,
                    r.target_peak_rss_kb.map(|x| x as i64),
                    r.client_cpu_s,
                    res.limit.as_ref().map(|l| l.verdict.name()),
                ],
            )
            .map_err(|e| sql(&self.path, e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Stores a note on a target × scenario.
    pub fn add_note(&self, bench: i64, n: &crate::record::RunNote) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO note (bench_id, target, scenario, note) VALUES (?1, ?2, ?3, ?4)",
                params![bench, n.target, n.scenario, n.note],
            )
            .map_err(|e| sql(&self.path, e))?;
        Ok(())
    }

    /// A bench's notes, in the order they were made.
    pub fn notes(&self, bench: i64) -> Result<Vec<crate::record::RunNote>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT target, scenario, note FROM note WHERE bench_id = ?1 ORDER BY rowid")
            .map_err(|e| sql(&self.path, e))?;
        let rows = st
            .query_map(params![bench], |r| {
                Ok(crate::record::RunNote {
                    target: r.get(0)?,
                    scenario: r.get(1)?,
                    note: r.get(2)?,
                })
            })
            .map_err(|e| sql(&self.path, e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| sql(&self.path, e))
    }

    /// Stores a verification outcome.
    pub fn add_verification(&self, bench: i64, v: &Verification) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO verification (bench_id, target, scenario, outcome, details) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![bench, v.target, v.scenario, v.outcome.as_str(), v.failures.join("\n")],
            )
            .map_err(|e| sql(&self.path, e))?;
        Ok(())
    }

    /// Stores what is known of a target: version, command, how it ended.
    pub fn add_target_info(
        &self,
        bench: i64,
        target: &str,
        version: Option<&str>,
        command: Option<&str>,
        status: &str,
        stderr_tail: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO target_info (bench_id, target, version, command, status, stderr_tail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![bench, target, version, command, status, stderr_tail],
            )
            .map_err(|e| sql(&self.path, e))?;
        Ok(())
    }

    /// The measured runs of a bench, in the order they ran.
    pub fn runs(&self, bench: i64) -> Result<Vec<RunRecord>, StoreError> {
        Ok(self
            .runs_with_ids(bench)?
            .into_iter()
            .map(|(_, r)| r)
            .collect())
    }

    /// The measured runs of a bench with their ids, in the order they ran.
    pub fn runs_with_ids(&self, bench: i64) -> Result<Vec<(i64, RunRecord)>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT id, target, scenario, repetition, result, target_cpu_user_s, target_cpu_sys_s, target_peak_rss_kb, client_cpu_s
                 FROM run WHERE bench_id = ?1 ORDER BY id",
            )
            .map_err(|e| sql(&self.path, e))?;
        let rows = st
            .query_map(params![bench], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, u32>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, Option<f64>>(5)?,
                    row.get::<_, Option<f64>>(6)?,
                    row.get::<_, Option<i64>>(7)?,
                    row.get::<_, Option<f64>>(8)?,
                ))
            })
            .map_err(|e| sql(&self.path, e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, target, scenario, repetition, json, u, s, rss, c) =
                row.map_err(|e| sql(&self.path, e))?;
            let result = serde_json::from_str(&json).map_err(|e| StoreError::Decode {
                path: self.path.clone(),
                id,
                message: e.to_string(),
            })?;
            out.push((
                id,
                RunRecord {
                    target,
                    scenario,
                    repetition,
                    result,
                    target_cpu_user_s: u,
                    target_cpu_sys_s: s,
                    target_peak_rss_kb: rss.map(|x| x as u64),
                    client_cpu_s: c,
                },
            ));
        }
        Ok(out)
    }

    /// Verification outcomes of a bench.
    pub fn verifications(&self, bench: i64) -> Result<Vec<Verification>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT target, scenario, outcome, details FROM verification WHERE bench_id = ?1 ORDER BY rowid")
            .map_err(|e| sql(&self.path, e))?;
        let rows = st
            .query_map(params![bench], |r| {
                let outcome: String = r.get(2)?;
                let details: String = r.get(3)?;
                Ok(Verification {
                    target: r.get(0)?,
                    scenario: r.get(1)?,
                    outcome: outcome.parse().map_err(|e: stampede_engine::SyntaxError| {
                        rusqlite::Error::FromSqlConversionFailure(
                            2,
                            rusqlite::types::Type::Text,
                            e.into(),
                        )
                    })?,
                    failures: details
                        .lines()
                        .filter(|l| !l.is_empty())
                        .map(str::to_string)
                        .collect(),
                })
            })
            .map_err(|e| sql(&self.path, e))?;
        rows.collect::<Result<_, _>>()
            .map_err(|e| sql(&self.path, e))
    }

    /// A bench by id, or the latest one.
    pub fn bench(&self, id: Option<i64>) -> Result<Option<BenchRow>, StoreError> {
        let q = match id {
            Some(_) => "SELECT id, started_unix_ms, plan_name, environment, ended FROM bench WHERE id = ?1",
            None => "SELECT id, started_unix_ms, plan_name, environment, ended FROM bench WHERE ?1 IS NULL ORDER BY id DESC LIMIT 1",
        };
        self.conn
            .query_row(q, params![id], bench_row)
            .optional()
            .map_err(|e| sql(&self.path, e))
    }
}

fn bench_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<BenchRow> {
    Ok(BenchRow {
        id: r.get(0)?,
        started_unix_ms: r.get::<_, i64>(1)? as u64,
        plan_name: r.get(2)?,
        environment: r.get(3)?,
        ended: r.get(4)?,
    })
}

fn sql(path: &str, source: rusqlite::Error) -> StoreError {
    StoreError::Sqlite {
        path: path.to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store's path under the system's temporary directory; the store's files (the
    /// database, its write-ahead log and shared memory) are removed when dropped.
    struct Tmp(std::path::PathBuf);

    impl std::ops::Deref for Tmp {
        type Target = std::path::Path;
        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Tmp {
        fn remove(&self) {
            for ext in ["db", "db-wal", "db-shm"] {
                let _ = std::fs::remove_file(self.0.with_extension(ext));
            }
        }
    }

    impl Drop for Tmp {
        fn drop(&mut self) {
            self.remove();
        }
    }

    fn tmp(name: &str) -> Tmp {
        let t =
            Tmp(std::env::temp_dir().join(format!("stampede-store-{}-{name}", std::process::id())));
        t.remove();
        t
    }

    #[test]
    fn migrates_an_old_store_and_keeps_its_rows() {
        let path = tmp("old.db");
        {
            // A store as version 1 left it, with a bench and a run.
            let s = Store {
                conn: Connection::open(&*path).unwrap(),
                path: "old.db".into(),
            };
            s.migrate(1).unwrap();
            assert_eq!(s.version().unwrap(), 1);
            s.conn
                .execute_batch(
                    "INSERT INTO bench VALUES (1, 1000, 'old plan', 'src', '{}');
                     INSERT INTO run (bench_id, target, scenario, repetition, rps, p50_us, p99_us, failed, non_2xx, result)
                     VALUES (1, 't', 's', 1, 123.0, 10, 20, 0, 0, 'not decoded here');",
                )
                .unwrap();
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(s.version().unwrap(), SCHEMA_VERSION);
        let b = s.bench(None).unwrap().unwrap();
        assert_eq!(b.plan_name, "old plan");
        assert_eq!(
            b.ended.as_deref(),
            Some("complete"),
            "benches before version 3"
        );
        let (rps, rss): (f64, Option<i64>) = s
            .conn
            .query_row(
                "SELECT rps, target_peak_rss_kb FROM run WHERE id = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((rps, rss), (123.0, None));
        let v = Verification {
            target: "t".into(),
            scenario: "s".into(),
            outcome: crate::record::Outcome::Warn,
            failures: vec!["status 500".into(), "no body".into()],
        };
        s.add_verification(1, &v).unwrap();
        assert_eq!(s.verifications(1).unwrap(), [v]);
        // Opening again is a no-op.
        drop(s);
        assert_eq!(
            Store::open(&path).unwrap().version().unwrap(),
            SCHEMA_VERSION
        );
    }

    #[test]
    fn benches_creating_one_new_store_at_once_all_open_it() {
        for round in 0..10 {
            let path = tmp(&format!("race-{round}.db"));
            let start = std::sync::Arc::new(std::sync::Barrier::new(6));
            let opened: Vec<_> = (0..6)
                .map(|_| {
                    let (path, start) = (path.to_path_buf(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        Store::open(&path).map(|s| s.version().unwrap())
                    })
                })
                .collect();
            for t in opened {
                match t.join().unwrap() {
                    Ok(v) => assert_eq!(v, SCHEMA_VERSION),
                    Err(e) => panic!("round {round}: {e}"),
                }
            }
        }
    }

    #[test]
    fn a_bench_that_never_ended_is_told_apart() {
        let path = tmp("ended.db");
        let s = Store::open(&path).unwrap();
        let a = s.begin_bench(1, "p", "src", "{}").unwrap();
        let b = s.begin_bench(2, "p", "src", "{}").unwrap();
        s.end_bench(a, "complete").unwrap();
        let ended: Vec<(i64, Option<String>)> = s
            .benches()
            .unwrap()
            .into_iter()
            .map(|r| (r.id, r.ended))
            .collect();
        assert_eq!(ended, [(b, None), (a, Some("complete".into()))]);
    }

    #[test]
    fn refuses_a_store_from_the_future() {
        let path = tmp("future.db");
        Connection::open(&*path)
            .unwrap()
            .execute_batch("PRAGMA user_version = 99;")
            .unwrap();
        let e = Store::open(&path).err().unwrap();
        assert!(e.to_string().contains("newer than this build"), "{e}");
    }
}
