package journal

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Format is an export format.
type Format string

// FormatJSONL is one JSON object per line, the fields of [Event].
const FormatJSONL Format = "jsonl"

// SidecarSuffix is appended to an export's or backup's name for the file
// that holds its SHA-256, in the format `sha256sum -c` reads.
const SidecarSuffix = ".sha256"

// Artifact describes a file that Backup or Export wrote.
type Artifact struct {
	Path    string `json:"path"`
	Sidecar string `json:"sidecar"`
	SHA256  string `json:"sha256"`
	Bytes   int64  `json:"bytes"`
	// Rows is how many rows it holds; HeadID and Head are its last row.
	Rows   int64  `json:"rows"`
	HeadID int64  `json:"head_id"`
	Head   string `json:"head"`
}

// Export writes every row, oldest first, to a new file at dest in the
// given format (only "jsonl"), and its SHA-256 to dest.sha256. Neither file
// may exist: nothing is ever overwritten (both are created with O_EXCL,
// mode 0600). The rows carry prev_hash and hash, so the export can be
// checked against the chain elsewhere. A failure removes what it created.
func (j *Journal) Export(ctx context.Context, dest string, format Format) (Artifact, error) {
	if format != FormatJSONL {
		return Artifact{}, fmt.Errorf("journal: export: format %q: want %q", format, FormatJSONL)
	}
	out, err := createPair(dest)
	if err != nil {
		return Artifact{}, fmt.Errorf("journal: export: %w", err)
	}
	art := Artifact{Path: out.path, Sidecar: out.sidecarPath}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(out.f, h)}
	bw := bufio.NewWriterSize(cw, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	err = func() error {
		var last int64
		for {
			evs, err := j.Events(ctx, last, 1000)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if err := enc.Encode(ev); err != nil {
					return err
				}
				last = ev.ID
				art.Rows++
				art.HeadID, art.Head = ev.ID, ev.Hash
			}
			if len(evs) < 1000 {
				return bw.Flush()
			}
		}
	}()
	if err == nil {
		err = out.finish(h, cw.n, &art)
	}
	if err != nil {
		out.abort()
		return Artifact{}, fmt.Errorf("journal: export to %s: %w", dest, err)
	}
	return art, nil
}

// Backup writes a consistent copy of the whole database to a new file at
// dest (SQLite's VACUUM INTO, from one read snapshot, while writes go on),
// checks the copy (it opens as a journal and its chain is verified), and
// writes its SHA-256 to dest.sha256. Neither file may exist beforehand;
// both have mode 0600. A failure removes what it created, except that a
// copy whose chain is broken is kept, being evidence: Backup then returns
// the artifact and an error that wraps the *ChainError (ErrTampered). Rows
// is then the number verified before the break.
func (j *Journal) Backup(ctx context.Context, dest string) (Artifact, error) {
	out, err := createPair(dest)
	if err != nil {
		return Artifact{}, fmt.Errorf("journal: backup: %w", err)
	}
	art := Artifact{Path: out.path, Sidecar: out.sidecarPath}
	var chainErr error
	err = func() error {
		// VACUUM INTO writes into an existing file only if it is empty:
		// the file created above reserves the name and sets the mode.
		db, err := sql.Open("sqlite", dsn(j.path, "backup", j.busy))
		if err != nil {
			return err
		}
		_, err = db.ExecContext(ctx, `VACUUM INTO ?`, out.path)
		db.Close()
		if err != nil {
			return err
		}
		copyJ, err := Open(ctx, out.path, Options{ReadOnly: true, Logger: j.log})
		if err != nil {
			return fmt.Errorf("the copy does not open: %w", err)
		}
		rep, err := copyJ.Verify(ctx)
		copyJ.Close()
		if err != nil && !errors.Is(err, ErrTampered) {
			return fmt.Errorf("the copy does not verify: %w", err)
		}
		chainErr = err
		art.Rows, art.HeadID, art.Head = rep.Rows, rep.HeadID, rep.Head
		h := sha256.New()
		f, err := os.Open(out.path)
		if err != nil {
			return err
		}
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		return out.finish(h, n, &art)
	}()
	if err != nil {
		out.abort()
		return Artifact{}, fmt.Errorf("journal: backup to %s: %w", dest, err)
	}
	if chainErr != nil {
		return art, fmt.Errorf("journal: backup written to %s, but %w", out.path, chainErr)
	}
	return art, nil
}

// pair is a new file and its sidecar, both created exclusively.
type pair struct {
	path, sidecarPath string
	f, sidecar        *os.File
}

func createPair(dest string) (*pair, error) {
	if dest == "" {
		return nil, errors.New("no destination given")
	}
	abs, err := filepath.Abs(dest)
	if err != nil {
		return nil, err
	}
	p := &pair{path: abs, sidecarPath: abs + SidecarSuffix}
	if p.f, err = createExclusive(p.path); err != nil {
		return nil, err
	}
	if p.sidecar, err = createExclusive(p.sidecarPath); err != nil {
		p.f.Close()
		os.Remove(p.path)
		return nil, err
	}
	return p, nil
}

// createExclusive creates a new file with mode 0600, whatever the umask; an
// existing file (or symbolic link) at path is an error.
func createExclusive(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("%s already exists; exports and backups never overwrite", path)
		}
		return nil, err
	}
	if err := f.Chmod(fileMode); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// finish makes the file durable, then writes the sidecar.
func (p *pair) finish(h hash.Hash, n int64, art *Artifact) error {
	if err := p.f.Sync(); err != nil {
		return err
	}
	if err := p.f.Close(); err != nil {
		return err
	}
	p.f = nil
	art.SHA256 = hex.EncodeToString(h.Sum(nil))
	art.Bytes = n
	line := sidecarLine(art.SHA256, p.path)
	if _, err := io.WriteString(p.sidecar, line); err != nil {
		return err
	}
	if err := p.sidecar.Sync(); err != nil {
		return err
	}
	if err := p.sidecar.Close(); err != nil {
		return err
	}
	p.sidecar = nil
	return syncDir(filepath.Dir(p.path))
}

// sidecarLine is the line sha256sum writes for the file (named relative to
// the sidecar's directory): a name with a backslash or newline is escaped
// and the line starts with a backslash, as sha256sum does.
func sidecarLine(sum, path string) string {
	name := filepath.Base(path)
	if strings.ContainsAny(name, "\\\n") {
		return "\\" + sum + "  " + strings.NewReplacer("\\", "\\\\", "\n", "\\n").Replace(name) + "\n"
	}
	return sum + "  " + name + "\n"
}

// abort removes what was created.
func (p *pair) abort() {
	if p.f != nil {
		p.f.Close()
	}
	if p.sidecar != nil {
		p.sidecar.Close()
	}
	os.Remove(p.path)
	os.Remove(p.sidecarPath)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
