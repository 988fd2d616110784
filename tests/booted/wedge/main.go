// Command wedge holds a SQLite database's WAL read locks, so that no other
// process can begin a read transaction on it: the journal of a daemon
// wedged by another process, for the booted watchdog test. SQLite keeps
// its WAL locks as POSIX record locks on bytes 120 to 127 of the -shm
// file (https://www.sqlite.org/walformat.html, "the locking bytes"); the
// five read-mark locks are bytes 123 to 127. wedge takes them exclusively,
// prints "wedged" and holds them until it is killed.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const (
	lockBase  = 120 // the first locking byte of the -shm file
	readLock0 = 3   // WAL_READ_LOCK(0)
	nReaders  = 5   // WAL_NREADER
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: wedge DATABASE")
		os.Exit(2)
	}
	if err := wedge(os.Args[1] + "-shm"); err != nil {
		fmt.Fprintln(os.Stderr, "wedge:", err)
		os.Exit(1)
	}
}

func wedge(shm string) error {
	f, err := os.OpenFile(shm, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: lockBase + readLock0, Len: nReaders}
	// Readers hold these bytes for an instant at a time: try until no one
	// does.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) || time.Now().After(deadline) {
			return fmt.Errorf("lock the read marks of %s: %w", shm, err)
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("wedged")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return nil
}
