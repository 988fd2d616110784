// Command wedge holds a SQLite database's locks as another process would,
// for the booted tests of the daemon's journal.
//
// `wedge DATABASE` holds its WAL read locks, so that no other process can
// begin a read transaction on it: the journal of a daemon wedged by
// another process, for the watchdog test. SQLite keeps its WAL locks as
// POSIX record locks on bytes 120 to 127 of the -shm file
// (https://www.sqlite.org/walformat.html, "the locking bytes"); the five
// read-mark locks are bytes 123 to 127. wedge takes them exclusively.
//
// `wedge -write DATABASE` is a real SQLite client (the driver the daemon
// uses) in a write transaction (BEGIN IMMEDIATE) that it does not end: the
// journal held by another writer, so that a daemon starting meanwhile
// waits for the lock (its busy timeout), for the start-up test. Run it as
// the database's owner, since SQLite may create the -wal and -shm files.
//
// Either way it prints "wedged" once it holds the locks and holds them
// until it is killed (SIGTERM or SIGINT).
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the daemon's driver
)

const (
	lockBase  = 120 // the first locking byte of the -shm file
	readLock0 = 3   // WAL_READ_LOCK(0)
	nReaders  = 5   // WAL_NREADER
)

func main() {
	write := flag.Bool("write", false, "hold a write transaction instead of the read locks")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: wedge [-write] DATABASE") }
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	var err error
	if *write {
		err = holdWrite(flag.Arg(0), sig)
	} else {
		err = wedge(flag.Arg(0)+"-shm", sig)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wedge:", err)
		os.Exit(1)
	}
}

func wedge(shm string, sig <-chan os.Signal) error {
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
	<-sig
	return nil
}

func holdWrite(path string, sig <-chan os.Signal) error {
	q := url.Values{}
	q.Set("mode", "rw")
	q.Set("_busy_timeout", "10000")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}).String())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin a write transaction on %s: %w", path, err)
	}
	defer tx.Rollback() //nolint:errcheck // nothing was written
	// BEGIN IMMEDIATE took the write lock; a read makes the transaction
	// real in the driver too.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	fmt.Println("wedged")
	<-sig
	return nil
}
