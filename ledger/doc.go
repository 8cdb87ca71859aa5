// Package ledger is the single source of truth for every conversation: an append-only,
// hash-chained, fsync'd log per conversation, stored in bbolt (DESIGN D-2..D-5, seed 000).
//
// The storage format is format 2 (DESIGN D-7, D-8): every entry of every conversation is
// stored once, in one append-ordered log ("v1.log", keyed by a global position), and each
// conversation keeps a head under contextid.Key(owner, contextId) ("v1/<64 hex>": original
// contextId and owner, last seq, hash and log position, epoch, counters, last task) from
// which it reaches its entries backwards, each log record naming the position of its
// conversation's previous entry; a sparse index of every 32nd seq serves Range. A commit
// writes at the right edge of the log and of the task index (time-ordered task ids), plus
// the heads of the conversations it touches, which live in a small tree of recent heads
// until a checkpoint moves them, and their keys in the activity index that List reads
// (List merges the recent heads in). log.go has the details. A global task index
// ("v1.tasks") finds a task's conversation and entries and lists a conversation's tasks,
// and a content-addressed artifact store ("v1.artifacts") holds parts larger than
// Options.LargePartBytes. The running-task index ("v1.running", running.go) holds the
// tasks started and not settled since, so that a restart reads those tasks only. Nothing
// outside this namespace (older versions, legacy names) is ever read, listed or written.
//
// Format 1, of earlier builds (each conversation one flat top-level bucket named by its
// key, holding its entries keyed by seq and its metadata), is only read, by the upgrade
// to format 2 ([Upgrade], upgrade.go: verify, copy beside it, verify, keep the old file,
// rename), which Open runs on a format-1 file before serving it, and by [Salvage], which
// copies the intact conversations of a damaged one into a format-2 file. format1.go holds
// that reader; no read, write or check of the Store touches format 1.
//
// Every entry carries seq (1, 2, ... without gaps), the conversation's epoch and
// hash = hex(sha256(prevHash ‖ canonical JSON of the entry with hash empty)), so
// [Store.Verify] can prove that nothing was edited, removed or reordered. The epoch is the
// fencing token of DESIGN L-2: an append with BeginTurn bumps it in the same transaction,
// and later appends of the turn that carry an older epoch fail with [ErrFenced].
//
// Appends from many goroutines share commits (group commit, DESIGN D-4): one committer
// goroutine owned by the [Store] takes the first queued append, drains whatever else is
// already queued into the same bbolt transaction, yielding the processor between drains
// while that brings more (so that batches form with one P too), commits, then answers
// every append of the batch. There is no timer, so a lone append commits at once. bbolt's
// DB.Batch is not used. Options.NoGroupCommit falls back to one transaction per append.
//
// With fsync, the Store commits through a write-ahead log, <file>.wal (wal.go): the
// transaction's writes, recorded as it makes them (redo.go), go to the log as one record,
// then bbolt commits without fsync and the committer goes on with the next batch while a
// syncer goroutine fdatasyncs the log (one fsync of the bytes the commits add; it starts
// as soon as the record is written, while bbolt commits) and only then answers the
// commit's appends; reads see the newest state both committed and fsync'd.
// A checkpoint (every 8 MiB of records or 512 pages waiting to be freed, and at Close)
// fsyncs the file and makes it the log's base: the log's header keeps the base's meta
// pages, and a read transaction held on the base keeps bbolt from reusing its pages. Open
// replays the records after the base (having written its meta pages back, so that a
// commit whose pages did not all reach the disk is not read) before bbolt reads the file.
// bbolt maps 64 GiB of address space ahead for the log's file; under an address-space
// limit (ulimit -v) less (openMapped), and below 1 GiB the Store runs without a log.
// With Options.NoSync it commits as bbolt does, without fsync.
//
// # Imports
//
// contextid (the pure contextId and key rules), internal/jsonenc (the JSON byte helpers
// the hand-written encoder of entries shares with a2a's wire encoders), internal/genmap
// (the bounded set of checked conversations), go.etcd.io/bbolt, google/uuid; nothing else
// of the project (not a2a, turn or another adapter).
//
// # Concurrency
//
// A Store is safe for concurrent use. Reads run in bbolt read transactions alongside the
// writer (with the write-ahead log: a shared one on the newest fsync'd state,
// wal_snap.go). The Store's mutex guards its closed flag and is never held across a wait.
// The log's lock order: wal.mu (held for a whole write transaction) first; the syncer's
// and the snapshots' mutexes are taken under it or alone, never one under the other, and
// never across a wait.
// The committer goroutine starts in [Open] and exits in [Store.Close] after answering
// every queued append; with the log, the syncer goroutine (wal_sync.go) starts in Open,
// fdatasyncs the log and answers the commits, and exits in Close once every commit is
// answered.
//
// # Caveats
//
// One writer process per data dir: bbolt locks the file, and a second process fails to
// open it after one second ("data dir is in use by another process"). Several gateway
// instances need a shared backend.
//
// "Acknowledged" means Append returned a nil error. That happens only after the commit
// holding the entries returned, which fsyncs its log record (or, without a log, the data
// and the meta page) unless Options.NoSync is set, so an acknowledged entry
// survives kill -9 and power loss (as far as the disk honours fsync). An Append that returns an error appended nothing that can be
// read (a failed final fsync is the one exception: see [Store.Append]); once its request was
// queued it waits for the commit even if its context is canceled, so a caller never
// believes a committed write failed.
//
// A commit that the file system refuses (full, read-only, failing) fails with a
// [*StorageError] that names the cause, classified from the error number; [Store.Ready]
// reports it until a commit succeeds again or its probe of the storage passes (see
// storage.go). bbolt formats the errors of growing its file as text, losing the error
// number; for such a failure a probe of the storage decides whether it is a storage error.
//
// The hash covers encoding/json's encoding of [Entry] in its field order. Long text and
// bytes of a part move to the artifact store before hashing, so the chain covers their
// sha256 reference rather than the content itself (content addressing covers the rest).
// An entry is stored, hashed and returned by Append as encoding/json reads it back: JSON
// values (metadata, data) compacted, each byte of invalid UTF-8 in a part's strings
// replaced by U+FFFD, empty slices nil.
//
// A data file written by an earlier build (conversations with sub-buckets and JSON
// metadata, layout 1) is moved to format 1's layout 2 in one transaction by the upgrade,
// and then copied to format 2; entries and their hashes do not change. Earlier builds do
// not understand the file after that: do not downgrade (the upgrade keeps the format-1
// file as ledger.db.format1.bak). Open refuses a file of a newer layout.
//
// # Damage
//
// A damaged file never panics the caller and never takes every conversation down with
// one. Open checks the file's pages from their raw bytes before bbolt opens it writable
// (check.go: bbolt crashes the process on a damaged page header while it rebuilds its
// freelist); a file with damaged pages opens read-only, or is salvaged first with
// Options.SalvageDamaged ([Salvage], salvage.go). A damaged page of the log is charged
// to the conversations whose entries it holds (check.go: chargeConvs). The conversations
// found damaged — by
// the page check, by a check of a conversation's bytes against its hashes before its first
// use since Open, by a read that meets a bad entry, or by [Store.VerifyAll] — are
// quarantined ([Store.Quarantined], quarantine.go): reads and appends of them fail with a
// [*QuarantinedError] ([ErrQuarantined]); the others are served.
//
// Keys and values read from bbolt are valid only inside their transaction; everything the
// package returns is a copy. Callbacks given to [Store.Last] run inside a read
// transaction and must not call the Store.
package ledger
