// Package keys owns the daemon's API keys: their format, their scrypt-hashed
// records in one file under the state directory, and their verification.
//
// A key is pmcp_<id>_<secret>: the id (16 characters of lower-case base32)
// finds the record in O(1); the secret is 256 random bits in base64url. Only
// an scrypt hash of the secret is stored, with its parameters. The [Store]
// writes keys.json atomically, under an flock, with mode 0600 and the state
// directory's owner, so the CLI (often run as root) and the daemon (run as
// the service user) never lose or lock out each other's changes, and the
// daemon sees every change on its next request without a restart.
//
// [Verifier] refuses an unknown id without any hashing, runs at most a few
// scrypt computations at a time, and keeps a keyed cache of successful
// verifications so that repeated requests cost microseconds while
// revocation, rotation and expiry still apply to the next request. A hash
// runs only with a token from its key id's and its source's failure budgets,
// taken before scrypt and given back when the secret was right; keys refused
// without hashing have a per-source budget of their own, which never refuses
// a known key. Sources are normalized (every loopback address is one source,
// IPv6 counts by /64) and the tables are bounded.
//
// The package imports no network code.
package keys
