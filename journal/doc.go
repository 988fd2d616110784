// Package journal is the daemon's durable record of everything done: every
// tool call, with who made it, what it asked for (secrets redacted), what
// the policy decided and how it ended, in a SQLite file (pure-Go driver, WAL,
// fsync on every commit, mode 0600) whose rows are chained by SHA-256.
//
// # Using it from the tool-call path
//
// Open the journal once at start-up and pass it to what needs it:
//
//	j, err := journal.Open(ctx, "/var/lib/proxmox-mcp/journal.db", journal.Options{Logger: log})
//	defer j.Close()
//
// A read, a refusal, or a call that sends nothing to PVE is one row,
// written when the call has ended and before the reply:
//
//	_, err := j.Record(ctx, call, journal.Result{Outcome: journal.OutcomeOK, Duration: d})
//
// A write is two rows linked by a call id. The intent is written before
// the request goes to PVE (with, for a configuration edit, the prior
// configuration and its digest); if Intent fails, the write is not sent.
// The receipt is written when PVE has answered, or the answer was lost:
//
//	in, err := j.Intent(ctx, call) // fail closed on err
//	... send to PVE ...
//	_, err = j.Receipt(ctx, in.CallID, journal.Result{Outcome: journal.OutcomeOK, UPID: upid, Duration: d})
//
// A crash between the two leaves an open intent; [Journal.OpenIntents]
// finds them so that reconciliation can look each one up in PVE's task
// index and close it with a receipt (outcome ok, error or uncertain).
//
// Every write method returns once its row is durable. Calls from many
// goroutines are safe: one writer goroutine commits whatever is waiting in
// one transaction and one fsync (group commit), so concurrent callers share
// the cost of durability. A rule broken by one call (a bad field, a
// receipt without an intent, a call id used twice) fails that call alone
// with an error naming the field and the rule.
//
// # Evidence
//
// Rows are append-only: triggers refuse UPDATE and DELETE, and each row
// stores the previous row's hash and its own, the SHA-256 of a canonical
// encoding of its columns. [Journal.Verify] walks the chain and names the
// first row that does not hold. [Journal.Export] (JSON lines) and
// [Journal.Backup] (a consistent SQLite copy, verified) never overwrite a
// file and write a SHA-256 sidecar that sha256sum -c reads.
//
// # Secrets
//
// Secrets never enter the journal: arguments, prior configurations, paths
// and error text pass through a [Redactor] first (see its documentation
// for the rules), which replaces a secret with a keyed hash marker so that
// calls using the same secret can still be correlated.
//
// docs/journal.md describes the rows, the chain, redaction and the
// `proxmox-mcp audit` commands.
package journal
