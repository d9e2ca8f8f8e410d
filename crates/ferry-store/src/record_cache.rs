//! Space files' records kept in memory on SQLite, so that reading a file read before costs no
//! database read (and no WAL read lock, which each read transaction takes: about half of a
//! point read's cost, bench/NOTES.md).
//!
//! Exactness rests on two rules:
//! - **Every change passes through this process.** The cache is made together with an
//!   exclusive `flock` on a lock file beside the database (`<database>.lock`), so a second
//!   `ferry serve` on the same SQLite file stops at start instead of writing behind this
//!   process's back. Within one process every `Db` on the same file shares one cache.
//! - **A change forgets before it answers.** Each write that changes a file's record (its
//!   write or its removal) runs to its end on a task of its own, even when its caller stops
//!   waiting, and forgets the record after the write ended and before the caller hears of it.
//!   Forgetting also moves the cache's generation on, and a read fills the cache only when the
//!   generation is still the one it saw before it read the database: a read that began before
//!   a change can never put back what the change replaced. So once a write has answered, every
//!   later read finds either nothing kept (and reads the database) or what a read begun after
//!   the write found.
//!
//! On PostgreSQL nothing is kept: several nodes write one database there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use crate::Error;
use crate::space_file::SpaceFile;

/// Records kept at most; the cache is emptied when it would hold more. Records of files that
/// do not exist are kept too (a missing file is read as often as a present one), so a client
/// probing invented names could otherwise grow it without end.
const MAX_RECORDS: usize = 8192;

/// The records of one SQLite database, kept while this process owns it.
pub(crate) struct RecordCache {
    state: Mutex<State>,
    /// The lock file, held with an exclusive `flock` for as long as the cache lives.
    _owner: std::fs::File,
}

impl std::fmt::Debug for RecordCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordCache").finish_non_exhaustive()
    }
}

struct State {
    /// Moved on by every change.
    generation: u64,
    /// By [`key`]; `None` for a file known not to exist.
    records: HashMap<String, Option<SpaceFile>>,
}

/// What the cache knows of one record.
pub(crate) enum Lookup {
    /// The record as the database has it (`None`: no such file).
    Known(Option<SpaceFile>),
    /// Not kept: read the database, then [`RecordCache::fill`] with this ticket.
    Unknown(Ticket),
}

/// The generation a read saw before it read the database.
pub(crate) struct Ticket(u64);

/// The cache's key for a file: each part prefixed with its length, so no two different
/// triples share a key whatever they contain.
pub(crate) fn key(owner: &str, space: &str, path: &str) -> String {
    format!("{}:{owner}{}:{space}{path}", owner.len(), space.len())
}

/// The caches of the databases this process owns, by the database file's absolute path.
static OWNED: Mutex<Vec<(PathBuf, Weak<RecordCache>)>> = Mutex::new(Vec::new());

impl RecordCache {
    /// The cache of the SQLite database at `file`, taking ownership of the database for this
    /// process if no `Db` in it holds it yet. Fails when another process owns it.
    pub(crate) fn own(file: &Path) -> Result<Arc<RecordCache>, Error> {
        let file = std::path::absolute(file).map_err(Error::Io)?;
        let mut owned = OWNED.lock().unwrap_or_else(|p| p.into_inner());
        owned.retain(|(_, cache)| cache.strong_count() > 0);
        if let Some(cache) = owned
            .iter()
            .find(|(path, _)| *path == file)
            .and_then(|(_, cache)| cache.upgrade())
        {
            return Ok(cache);
        }
        let mut lock_path = file.clone().into_os_string();
        lock_path.push(".lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(Error::Io)?;
        match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(Error::Config(format!(
                    "another process is serving the SQLite database {} (it holds {}): one \
                     process owns a SQLite database; to run several nodes, use PostgreSQL",
                    file.display(),
                    Path::new(&lock_path).display()
                )));
            }
            Err(e) => return Err(Error::Io(e.into())),
        }
        let cache = Arc::new(RecordCache {
            state: Mutex::new(State {
                generation: 0,
                records: HashMap::new(),
            }),
            _owner: lock,
        });
        owned.push((file, Arc::downgrade(&cache)));
        Ok(cache)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is valid after any panic: each method leaves it whole at every step.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn lookup(&self, key: &str) -> Lookup {
        let state = self.state();
        match state.records.get(key) {
            Some(record) => Lookup::Known(record.clone()),
            None => Lookup::Unknown(Ticket(state.generation)),
        }
    }

    /// Keeps what a read found, unless something changed since the read took its ticket.
    pub(crate) fn fill(&self, key: String, ticket: Ticket, record: &Option<SpaceFile>) {
        let mut state = self.state();
        if state.generation != ticket.0 {
            return;
        }
        if state.records.len() >= MAX_RECORDS {
            state.records.clear();
        }
        state.records.insert(key, record.clone());
    }

    /// Forgets the record at `key`; called once a write that changes it has ended.
    pub(crate) fn forget(&self, key: &str) {
        let mut state = self.state();
        state.generation += 1;
        state.records.remove(key);
    }
}

impl RecordCache {
    /// Forgets every record; called once a change of many files at once (a thread's stored
    /// sandbox removed with its thread) has ended.
    pub(crate) fn forget_all(&self) {
        let mut state = self.state();
        state.generation += 1;
        state.records.clear();
    }
}

/// Forgets one record when dropped: held by a changing write's task, so the record is
/// forgotten however the write ends.
pub(crate) struct ForgetOnDrop {
    pub(crate) cache: Arc<RecordCache>,
    pub(crate) key: String,
}

impl Drop for ForgetOnDrop {
    fn drop(&mut self) {
        self.cache.forget(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::Timestamp;

    fn file(n: u64) -> Option<SpaceFile> {
        Some(SpaceFile {
            path: "a.md".into(),
            blob_key: format!("key-{n}"),
            size: n,
            content_type: "text/plain".into(),
            sha256: format!("{n:064x}"),
            updated_at: Timestamp(0),
            attributes: None,
        })
    }

    fn ticket(cache: &RecordCache, key: &str) -> Ticket {
        match cache.lookup(key) {
            Lookup::Unknown(ticket) => ticket,
            Lookup::Known(_) => panic!("{key} is kept"),
        }
    }

    fn known(cache: &RecordCache, key: &str) -> Option<Option<SpaceFile>> {
        match cache.lookup(key) {
            Lookup::Known(record) => Some(record),
            Lookup::Unknown(_) => None,
        }
    }

    #[test]
    fn a_read_that_began_before_a_change_cannot_put_back_what_it_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cache = RecordCache::own(&dir.path().join("t.db")).unwrap();
        let k = key("u", "s", "a.md");
        // A read takes its ticket and finds version 1; a write to version 2 ends meanwhile.
        let before = ticket(&cache, &k);
        cache.forget(&k);
        cache.fill(k.clone(), before, &file(1));
        assert_eq!(known(&cache, &k), None, "the stale read was not kept");
        // A read begun after the change is kept, and read back.
        let after = ticket(&cache, &k);
        cache.fill(k.clone(), after, &file(2));
        assert_eq!(known(&cache, &k), Some(file(2)));
        // Missing files are kept as missing, and a change forgets them too.
        let missing = key("u", "s", "b.md");
        let t = ticket(&cache, &missing);
        cache.fill(missing.clone(), t, &None);
        assert_eq!(known(&cache, &missing), Some(None));
        cache.forget(&missing);
        assert_eq!(known(&cache, &missing), None);
    }

    #[test]
    fn keys_of_different_files_never_meet() {
        assert_ne!(key("u1", "s", "a"), key("u", "1s", "a"));
        assert_ne!(key("u", "s1", "a"), key("u", "s", "1a"));
    }

    #[test]
    fn the_cache_never_holds_more_than_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let cache = RecordCache::own(&dir.path().join("t.db")).unwrap();
        for n in 0..=MAX_RECORDS {
            let k = key("u", "s", &n.to_string());
            let t = ticket(&cache, &k);
            cache.fill(k, t, &None);
        }
        assert!(cache.state().records.len() <= MAX_RECORDS);
    }

    #[test]
    fn one_process_owns_a_database_and_shares_its_cache() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        let first = RecordCache::own(&db).unwrap();
        let second = RecordCache::own(&db).unwrap();
        assert!(
            Arc::ptr_eq(&first, &second),
            "one cache per database in a process"
        );
        // Another process's lock (a second open file description here) refuses ownership.
        drop((first, second));
        let other = std::fs::File::create(dir.path().join("t.db.lock")).unwrap();
        rustix::fs::flock(&other, rustix::fs::FlockOperation::LockExclusive).unwrap();
        let refused = RecordCache::own(&db).unwrap_err();
        assert!(
            refused.to_string().contains("another process is serving"),
            "{refused}"
        );
        drop(other);
        assert!(RecordCache::own(&db).is_ok(), "free again once it let go");
    }
}
