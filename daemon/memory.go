package daemon

import "runtime/debug"

// largeHash is the working memory of a key hash above which the daemon
// returns the memory to the operating system once the hash is done: a
// record hashed at N=32768 takes 32 MiB, and a few first verifications in
// a row would otherwise leave the resident size at several times that. A
// hash of today's parameters (1 MiB) is left to the collector: a full
// collection after each would cost more than the memory is worth, and
// under a flood of wrong secrets it would run for every one.
const largeHash = 8 << 20

// afterHash is the key verifier's AfterHash.
func afterHash(memory int) {
	if memory >= largeHash {
		debug.FreeOSMemory()
	}
}

// releaseStartGarbage returns what a start or a schema swap allocated and
// dropped to the operating system: parsing PVE 9.1's apidoc.js (3.9 MB)
// allocates about 100 MiB on the way to a registry of 5, and the collector
// would otherwise keep the heap up to the soft memory limit until later
// collections and the scavenger gave it back. Both happen rarely; the
// collection costs a few milliseconds.
func releaseStartGarbage() { debug.FreeOSMemory() }
