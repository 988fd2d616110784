package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/changes"
	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

// The commands of one operation (docs/changes.md): show it, settle it by a
// person's word, bundle its evidence.

// operationOf reads an operation's rows; an id that names no write is an
// error that says so.
func operationOf(c *cli, j *journal.Journal, id string) (*changes.Operation, []journal.Event, error) {
	evs, err := j.CallEvents(c.ctx, id)
	if errors.Is(err, journal.ErrInvalid) {
		return nil, nil, usagef("ID %q: %v", id, err)
	}
	if err != nil {
		return nil, nil, err
	}
	op, err := changes.ReadOperation(evs)
	if errors.Is(err, changes.ErrNotOperation) {
		return nil, nil, fmt.Errorf("%s: %w", id, err)
	}
	return op, evs, err
}

func (c *cli) auditShow(args []string) error {
	fs := flag.NewFlagSet("audit show", flag.ContinueOnError)
	jf := addJournalFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object: the operation, its state and every row")
	pos, err := parse(fs, args, 1, "proxmox-mcp audit show ID [--journal FILE | --state-dir DIR] [--json]")
	if err != nil {
		return err
	}
	j, err := jf.open(c.ctx)
	if err != nil {
		return err
	}
	defer j.Close()
	op, evs, err := operationOf(c, j, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, map[string]any{"operation": op.ID(), "state": op.State(), "rows": evs})
	}
	out := bufio.NewWriter(c.stdout)
	writeOperation(out, op, evs)
	return out.Flush()
}

// writeOperation is the human form of an operation: a heading with its
// request and state, then each row with what it adds. Text that came from
// a caller or from PVE is quoted.
func writeOperation(w *bufio.Writer, op *changes.Operation, evs []journal.Event) {
	in := op.Intent
	fmt.Fprintf(w, "operation %s: %s %s, %s\n", op.ID(), in.Method, in.Path, op.State())
	for _, ev := range evs {
		d, _ := ev.DetailOf()
		head := fmt.Sprintf("  %-11s #%-5d %s", ev.Kind, ev.ID, ev.Time.UTC().Format(time.RFC3339))
		switch ev.Kind {
		case journal.KindIntent:
			p := ev.Principal
			fmt.Fprintf(w, "%s  %s (%s, %s %s) via %s, decision %s by %s\n", head, quoted(or(p.KeyName, p.KeyID)),
				or(p.Profile, p.Policy), p.Transport, or(p.Source, "-"), ev.Tool, or(ev.Decision.Effect, "-"), or(ev.Decision.Policy, "-"))
			var notes []string
			if d.OperationKey != "" {
				notes = append(notes, "operation key "+quoted(d.OperationKey))
			}
			if d.Token != "" {
				notes = append(notes, "token "+d.Token)
			}
			if ev.PriorDigest != "" {
				notes = append(notes, "planned against digest "+ev.PriorDigest)
			}
			if d.UndoOf != "" {
				notes = append(notes, "undoes "+d.UndoOf)
			}
			if d.Change != "" {
				notes = append(notes, "change "+quoted(d.Change))
			}
			if len(notes) > 0 {
				fmt.Fprintf(w, "              %s\n", strings.Join(notes, "; "))
			}
			if len(ev.Args) > 0 && string(ev.Args) != "null" {
				fmt.Fprintf(w, "              args %s\n", printable(string(ev.Args)))
			}
		case journal.KindReceipt:
			line := head + "  " + string(ev.Outcome)
			if ev.Status != 0 {
				line += " (HTTP " + strconv.Itoa(ev.Status) + ")"
			}
			if ev.UPID != "" {
				line += " " + ev.UPID
			}
			if ev.Error != "" {
				line += " error " + quoted(firstLineOf(ev.Error))
			}
			fmt.Fprintln(w, line)
			if d.Digest != "" {
				fmt.Fprintf(w, "              digest after %s\n", d.Digest)
			}
			writeChanges(w, d.Changes)
			writeEvidence(w, d.Evidence)
		case journal.KindResolution:
			p := ev.Principal
			fmt.Fprintf(w, "%s  %s by %s (%s): %s\n", head, d.State, quoted(or(p.KeyName, p.KeyID)), ev.Tool, quoted(d.Reason))
			writeEvidence(w, d.Evidence)
		case journal.KindObservation:
			fmt.Fprintf(w, "%s  the configuration seen with digest %s\n", head, d.Digest)
		default:
			fmt.Fprintf(w, "%s  %s %s %s\n", head, ev.Tool, ev.Method, ev.Path)
		}
	}
}

func writeChanges(w *bufio.Writer, ch map[string]journal.FieldChange) {
	names := make([]string, 0, len(ch))
	for k := range ch {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := ch[k]
		if v.Redacted {
			fmt.Fprintf(w, "              changed %s (a secret)\n", printable(k))
			continue
		}
		fmt.Fprintf(w, "              changed %s: %s → %s\n", printable(k), jsonText(v.Before), jsonText(v.After))
	}
}

func writeEvidence(w *bufio.Writer, evs []journal.Evidence) {
	for _, e := range evs {
		fmt.Fprintf(w, "              evidence %s: %s\n", e.Kind, printable(e.Says))
	}
}

// jsonText is a configuration value as JSON; absent is "(absent)".
func jsonText(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return printable(string(b))
}

func firstLineOf(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// quoted is text from outside (a caller, PVE) in Go's quoting: nothing in
// it can move the terminal.
func quoted(s string) string { return strconv.Quote(s) }

// printable escapes what is not printable, so a row's text cannot act on
// the terminal.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0 && utf8.ValidString(s) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// states of audit resolve --as.
var resolveStates = map[string]string{"applied": journal.StateApplied, "not-applied": journal.StateNotApplied}

// maxReason bounds a person's reason: what the journal keeps of one whole.
const maxReason = 4096

func (c *cli) auditResolve(args []string) error {
	fs := flag.NewFlagSet("audit resolve", flag.ContinueOnError)
	jf := addJournalFlags(fs)
	as := fs.String("as", "", "what the operation did: applied or not-applied")
	reason := fs.String("reason", "", "why you say so (required): what you checked")
	asJSON := fs.Bool("json", false, "print the resolution row as one JSON object")
	const synopsis = "proxmox-mcp audit resolve ID --as applied|not-applied --reason TEXT [--journal FILE | --state-dir DIR] [--json]"
	pos, err := parse(fs, args, 1, synopsis)
	if err != nil {
		return err
	}
	state, ok := resolveStates[*as]
	if !ok {
		return usagef("--as %q: want applied or not-applied (usage: %s)", *as, synopsis)
	}
	text := strings.TrimSpace(*reason)
	if err := checkReason(text); err != nil {
		return usagef("--reason: %v (usage: %s)", err, synopsis)
	}
	path, err := jf.path()
	if err != nil {
		return err
	}
	person := hostPerson()
	if err := asJournalOwner(path); err != nil {
		return err
	}
	j, err := journal.Open(c.ctx, path, journal.Options{})
	if err != nil {
		return err
	}
	defer j.Close()
	op, _, err := operationOf(c, j, pos[0])
	if err != nil {
		return err
	}
	before := op.State()
	ev, err := j.Resolve(c.ctx, journal.Resolution{CallID: op.ID(), State: state, By: person, Tool: "audit resolve", Reason: text,
		Evidence: []journal.Evidence{{Kind: changes.EvidencePerson, Says: person.KeyName + " settled it at the host: " + text}}})
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c, ev)
	}
	_, err = fmt.Fprintf(c.stdout, "operation %s: %s (was %s), row #%d by %s\n", op.ID(), state, before, ev.ID, quoted(person.KeyName))
	return err
}

// checkReason: a reason is required, printable, and at most maxReason
// bytes.
func checkReason(s string) error {
	switch {
	case s == "":
		return errors.New("required: say what you checked")
	case len(s) > maxReason:
		return fmt.Errorf("%d bytes: at most %d", len(s), maxReason)
	case !utf8.ValidString(s):
		return errors.New("not UTF-8")
	}
	for i, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return fmt.Errorf("character %U at %d is not printable", r, i)
		}
	}
	return nil
}

// hostPerson is who runs the command, for the resolution row: root at the
// host ("local-root", as the journal names it elsewhere), with the sudo
// user when there is one.
func hostPerson() journal.Principal {
	name := "uid " + strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	id := "local-root"
	if os.Geteuid() != 0 {
		id = "local-" + name
	} else if s := os.Getenv("SUDO_USER"); s != "" {
		name += " (sudo from " + s + ")"
	}
	return journal.Principal{KeyID: id, KeyName: name, Transport: "stdio"}
}

// asJournalOwner gives up root for the journal's owner before the journal
// is opened for writing: root never writes in the service user's state
// directory, where a link planted as the journal, or as SQLite's -wal or
// -shm file beside it, would send root's write elsewhere. As the owner,
// the command can do only what the owner (the daemon's user) could; it
// needs nothing of root's afterwards. The journal is found without
// following a link where another user can write (atomicfile). A journal
// that is root's in a directory another user can write is refused.
func asJournalOwner(path string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	d, name, err := atomicfile.OpenParent(abs)
	if err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	defer d.Close()
	fi, err := d.Lstat(name)
	if err != nil {
		return fmt.Errorf("journal %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("journal %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	dfi, derr := d.File().Stat()
	if !ok || derr != nil {
		return fmt.Errorf("journal %s: cannot tell its owner", path)
	}
	dst, ok := dfi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("journal %s: cannot tell its directory's owner", path)
	}
	if st.Uid == 0 {
		if dst.Uid != 0 || dfi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("journal %s is root's, in a directory another user can write (owner uid %d, mode %s): give the journal to the daemon's user, or the directory to root", path, dst.Uid, dfi.Mode().Perm())
		}
		return nil
	}
	return becomeUser(int(st.Uid), int(st.Gid))
}

// becomeUser gives up root for uid and gid. Groups first, then the group,
// then the user: after setresuid there is no way back, nor any need for
// one.
func becomeUser(uid, gid int) error {
	if err := syscall.Setgroups([]int{}); err != nil {
		return fmt.Errorf("giving up root for the state's owner: %w", err)
	}
	if err := syscall.Setresgid(gid, gid, gid); err != nil {
		return fmt.Errorf("giving up root for the state's owner: %w", err)
	}
	if err := syscall.Setresuid(uid, uid, uid); err != nil {
		return fmt.Errorf("giving up root for the state's owner: %w", err)
	}
	return nil
}

func (c *cli) auditBundle(args []string) error {
	fs := flag.NewFlagSet("audit bundle", flag.ContinueOnError)
	jf := addJournalFlags(fs)
	dest := fs.String("o", "", "the bundle's file, which must not exist (default operation-ID.json here)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, 1, "proxmox-mcp audit bundle ID [-o FILE] [--journal FILE | --state-dir DIR] [--json]")
	if err != nil {
		return err
	}
	j, err := jf.open(c.ctx)
	if err != nil {
		return err
	}
	defer j.Close()
	id := pos[0]
	if _, _, err := operationOf(c, j, id); err != nil {
		return err
	}
	file := *dest
	if file == "" {
		file = "operation-" + id + ".json"
	}
	art, err := j.Bundle(c.ctx, id, file)
	if err != nil {
		return err
	}
	return printArtifact(c, "bundled", art, *asJSON)
}
