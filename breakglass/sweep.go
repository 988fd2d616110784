package breakglass

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// How long what the protocol leaves behind is kept.
const (
	// StagedTTL: a staged upload (or a part of one) no request awaiting
	// its run names.
	StagedTTL = 24 * time.Hour
	// NonceTTL: a used nonce. A request is refused once it has expired
	// (five minutes), so a nonce guards against a replay only while the
	// clock could still be wound back into its lifetime; a month is far
	// past that.
	NonceTTL = 30 * 24 * time.Hour
)

// Swept says what a sweep removed.
type Swept struct {
	Staged, Nonces int
}

// Sweep removes staged uploads older than StagedTTL that no live request
// names, and nonces older than NonceTTL. Records, results and the queue
// are kept: they are the requests' history, and the runner owns the
// queue.
func (s *Service) Sweep(ctx context.Context) (Swept, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Swept{}, err
	}
	defer unlock()
	recs, err := s.List()
	if err != nil {
		return Swept{}, err
	}
	return s.sweep(recs, "")
}

// sweep is Sweep with the lock held and the records read; keep is the
// content of a request being made, live too.
func (s *Service) sweep(recs []Record, keep string) (Swept, error) {
	now := s.opts.Now()
	live := map[string]bool{keep: keep != ""}
	for _, r := range recs {
		if sha := r.Preview.Operation.SHA256; sha != "" && r.live(now) {
			live[sha] = true
		}
	}
	var out Swept
	var err error
	out.Staged, err = s.sweepDir(stagingDir, now.Add(-StagedTTL), func(name string) bool {
		return !live[strings.TrimSuffix(name, ".part")]
	})
	if err != nil {
		return out, err
	}
	out.Nonces, err = s.sweepDir(nonceDir, now.Add(-NonceTTL), func(string) bool { return true })
	return out, err
}

// sweepDir removes the regular files of sub last written before cutoff
// that remove accepts.
func (s *Service) sweepDir(sub string, cutoff time.Time, remove func(string) bool) (int, error) {
	d, err := s.dir.OpenDir(sub)
	if err != nil {
		return 0, fmt.Errorf("breakglass: %w", err)
	}
	defer d.Close()
	names, err := d.ReadDirNames()
	if err != nil {
		return 0, fmt.Errorf("breakglass: %w", err)
	}
	n := 0
	for _, name := range names {
		fi, err := d.Lstat(name)
		if err != nil || !fi.Mode().IsRegular() || !remove(name) {
			continue
		}
		if fi.ModTime().After(cutoff) {
			continue
		}
		if ok, err := d.Remove(name); err != nil {
			return n, fmt.Errorf("breakglass: sweep %s/%s: %w", sub, name, err)
		} else if ok {
			n++
		}
	}
	return n, nil
}
