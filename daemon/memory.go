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
