// Package localcron is the embedded twin of Amazon EventBridge Scheduler for
// oncepost's one-machine runtime (`oncepost run`, DESIGN §6): the same
// schedule expressions, evaluated in an IANA time zone, fired by a Runner
// whose state lives in the project's SQLite file, so that after downtime a
// missed firing is caught up once (not once per missed slot).
//
// Expressions are those of package schedexpr (the Scheduler's at, rate
// and cron, evaluated in an IANA zone, DST as EventBridge handles it):
// Parse and Schedule here are its.
//
// # Runner
//
// A Runner keeps schedules (Entry) in the table localcron_schedules of the
// SQLite file the store opened, with each schedule's last and next firing.
// RunDue fires every due schedule at most once per call with its latest
// missed firing, calling Fire first and recording after (at-least-once: a
// crash in between fires again); Run loops on RunDue with a timer set to the
// earliest next firing. A one-time at() schedule is deleted once it fired,
// as with ActionAfterCompletion DELETE. An at() that is already in the past
// when Put is due at once rather than never (the runtime re-registers
// schedules of due posts at start-up).
//
// PutTx writes a schedule inside the caller's transaction on the same file,
// so that a post and its schedules are stored all or nothing; the caller
// calls Wake after the commit. Wake is also how a Runner learns of
// schedules another process wrote into the file; otherwise Run re-reads
// them at least once a minute.
//
// Run's cost does not grow with the number of schedules: NewRunner,
// NextDue, RunDue, Run's idle loop and Prune read through indexes only the
// schedules that are due, the earliest next firing, or the rows they
// delete (the runtime may hold a million one-time schedules).
//
// # Retention
//
// EventBridge Scheduler deletes a schedule after its last invocation only
// when its ActionAfterCompletion is DELETE; the default NONE keeps it until
// it is deleted. Here one-time schedules are deleted when they fire, and
// Prune deletes the recurring ones that have no firing left, once they
// have been over for a while.
package localcron
