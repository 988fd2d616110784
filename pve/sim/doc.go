// Package sim is a stateful simulator of the Proxmox VE API that behaves
// like PVE on the wire: the {"data": …} envelope, error reason phrases in the
// HTTP status line, 400 parameter verification with an errors map, 401/403
// with PVE's messages, 500 on a stale digest, 501 for unknown methods, UPIDs
// and tasks that change state when they finish, PVEAPIToken authentication
// with privilege-separated tokens checked against PVE's roles and ACLs:
// the schema's permissions object of every endpoint and, in the handlers,
// the checks PVE makes in code (checks.go names the PVE function of each).
// A token is never root@pam, not even root@pam's own.
//
// Every endpoint of the loaded schema validates its parameters exactly as
// the schema says (package schema); endpoints without a semantic handler
// answer 501 and are counted by Coverage. State is in memory; the clock and
// every generated identifier are deterministic for a given seed, so tests
// can advance time and expect the same UPIDs, MACs and digests every run.
// Faults can be injected for tests: latency, 5xx, a proxy's HTML page,
// invalid JSON, a hang, a connection dropped after a write was applied,
// failing, warning or slow tasks.
//
// A VM's QEMU guest agent runs commands (agent/exec, agent/exec-status,
// agent.go) in the simulator's own guest, not a real one: a small,
// deterministic set of programs, named bare or under /bin, /usr/bin, /sbin
// or /usr/sbin — echo [-n], cat (stdin from input-data, /etc/hostname,
// /etc/os-release; other files are missing), hostname, uname [-a -s -n -r
// -v -m -o], true, false, sleep N (it exits N seconds later on the
// simulator's clock) and seq [FIRST] LAST. Any other program fails to
// start, and the exec call answers qemu-ga's spawn error, as PVE does.
package sim
