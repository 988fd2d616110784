package journal

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestExport(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	seed(t, j)
	dir := t.TempDir()
	dest := filepath.Join(dir, "audit.jsonl")
	art, err := j.Export(ctx, dest, FormatJSONL)
	if err != nil {
		t.Fatal(err)
	}
	if art.Rows != 10 || art.HeadID != 10 || art.Sidecar != dest+".sha256" {
		t.Errorf("artifact = %+v", art)
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if art.SHA256 != hex.EncodeToString(sum[:]) || art.Bytes != int64(len(b)) {
		t.Errorf("artifact sum %s, %d bytes; file %x, %d bytes", art.SHA256, art.Bytes, sum, len(b))
	}
	side, err := os.ReadFile(art.Sidecar)
	if err != nil || string(side) != art.SHA256+"  audit.jsonl\n" {
		t.Errorf("sidecar = %q, %v", side, err)
	}
	for _, p := range []string{dest, art.Sidecar} {
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", p, st.Mode().Perm())
		}
	}
	// Every line is one event, in order, with its chain fields.
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 4<<20)
	var prev string = genesis
	n := int64(0)
	for sc.Scan() {
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		n++
		if ev.ID != n || ev.PrevHash != prev {
			t.Errorf("line %d: id %d prev %s", n, ev.ID, ev.PrevHash)
		}
		prev = ev.Hash
	}
	if n != 10 {
		t.Errorf("%d lines", n)
	}
	// sha256sum itself accepts the sidecar.
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "-c", "audit.jsonl.sha256")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "audit.jsonl: OK") {
			t.Errorf("sha256sum -c: %s %v", out, err)
		}
	}
	// Nothing is overwritten.
	if _, err := j.Export(ctx, dest, FormatJSONL); err == nil || !strings.Contains(err.Error(), "already exists; exports and backups never overwrite") {
		t.Errorf("second export: %v", err)
	}
	if after, _ := os.ReadFile(dest); string(after) != string(b) {
		t.Error("the first export was changed")
	}
	// A sidecar in the way stops the export before anything is written.
	other := filepath.Join(dir, "other.jsonl")
	if err := os.WriteFile(other+".sha256", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Export(ctx, other, FormatJSONL); err == nil || !strings.Contains(err.Error(), "other.jsonl.sha256 already exists") {
		t.Errorf("export over a sidecar: %v", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused export left %s: %v", other, err)
	}
	if _, err := j.Export(ctx, filepath.Join(dir, "x.csv"), "csv"); err == nil || !strings.Contains(err.Error(), `format "csv": want "jsonl"`) {
		t.Errorf("csv export: %v", err)
	}
	if _, err := j.Export(ctx, filepath.Join(dir, "missing", "x.jsonl"), FormatJSONL); err == nil {
		t.Error("export into a missing directory succeeded")
	}
}

func TestBackup(t *testing.T) {
	ctx := context.Background()
	j := openTest(t, Options{})
	seed(t, j)
	dir := t.TempDir()
	dest := filepath.Join(dir, "journal-backup.db")
	// Writers keep going during the backup; the copy is one snapshot.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := j.Record(ctx, readCall(), Result{Outcome: OutcomeOK}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	art, err := j.Backup(ctx, dest)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if art.Rows < 10 || art.HeadID != art.Rows {
		t.Errorf("artifact = %+v", art)
	}
	b, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	side, _ := os.ReadFile(art.Sidecar)
	if art.SHA256 != hex.EncodeToString(sum[:]) || string(side) != art.SHA256+"  journal-backup.db\n" {
		t.Errorf("sum %s, file %x, sidecar %q", art.SHA256, sum, side)
	}
	for _, p := range []string{dest, art.Sidecar} {
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", p, st.Mode().Perm())
		}
	}
	// The copy is a journal: it opens, verifies and keeps the open intent.
	c, err := Open(ctx, dest, Options{ReadOnly: true, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rep, err := c.Verify(ctx)
	if err != nil || rep.Rows != art.Rows || rep.Head != art.Head || rep.OpenIntents != 1 {
		t.Errorf("verify the copy = %+v, %v", rep, err)
	}
	if _, err := j.Backup(ctx, dest); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second backup: %v", err)
	}
	if after, _ := os.ReadFile(dest); string(after) != string(b) {
		t.Error("the first backup was changed")
	}
}

// A tampered journal still backs up (the copy is evidence), and the break
// is reported.
func TestBackupOfATamperedJournal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	seed(t, j)
	mustExec(t, tamperer(t, path), `UPDATE events SET tool = 'other' WHERE id = 3`)
	dest := filepath.Join(t.TempDir(), "b.db")
	art, err := j.Backup(ctx, dest)
	var ce *ChainError
	if !errors.As(err, &ce) || ce.ID != 3 || !strings.Contains(err.Error(), "backup written to") {
		t.Fatalf("backup of a tampered journal: %v", err)
	}
	if art.Rows != 2 || art.SHA256 == "" {
		t.Errorf("artifact = %+v", art)
	}
	for _, p := range []string{dest, dest + ".sha256"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
