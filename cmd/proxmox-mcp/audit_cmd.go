package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/journal"
)

func auditCommands() map[string]command {
	return map[string]command{
		"audit tail":    {"show the last calls in the audit journal (--follow: and new ones as they come)", (*cli).auditTail},
		"audit verify":  {"check the audit journal's hash chain; exit 1 if it is broken", (*cli).auditVerify},
		"audit intents": {"list writes whose intent has no receipt (what reconciliation resolves)", (*cli).auditIntents},
		"audit export":  {"export the audit journal as JSON lines to a new file, with a .sha256 sidecar", (*cli).auditExport},
		"audit backup":  {"copy the audit journal to a new SQLite file, verified, with a .sha256 sidecar", (*cli).auditBackup},
		"audit show":    {"show one operation: its request, receipt, evidence and resolutions", (*cli).auditShow},
		"audit resolve": {"settle an operation whose outcome is unknown, as applied or not-applied, with a reason (journaled)", (*cli).auditResolve},
		"audit bundle":  {"write one operation's rows, evidence and receipts to a new file, with a .sha256 sidecar", (*cli).auditBundle},
	}
}

// journalFlags locate the journal: --journal FILE, or STATE/journal.db of
// the configuration's state directory (--config, --state-dir).
type journalFlags struct {
	st   stateFlags
	file *string
}

func addJournalFlags(fs *flag.FlagSet) journalFlags {
	return journalFlags{
		st:   addStateFlags(fs),
		file: fs.String("journal", "", "journal file (default STATE-DIR/journal.db)"),
	}
}

// open opens the journal read-only: the CLI never creates it, and writes
// to it only to settle an operation (audit resolve).
func (f journalFlags) open(ctx context.Context) (*journal.Journal, error) {
	path, err := f.path()
	if err != nil {
		return nil, err
	}
	return journal.Open(ctx, path, journal.Options{ReadOnly: true})
}

// path is the journal's file: --journal, or the state directory's.
func (f journalFlags) path() (string, error) {
	path := *f.file
	if path != "" && (*f.st.stateDir != "" || *f.st.config != "") {
		return "", usagef("give --journal, or --config/--state-dir, not both")
	}
	if path == "" {
		cfg, err := f.st.resolve()
		if err != nil {
			return "", err
		}
		path = cfg.JournalPath()
	}
	return path, nil
}

const maxTail = 10000

func (c *cli) auditTail(args []string) error {
	fs := flag.NewFlagSet("audit tail", flag.ContinueOnError)
	jf := addJournalFlags(fs)
	n := fs.Int("n", 20, "how many calls to show (with --json: rows); 0 with --follow shows only new ones")
	follow := fs.Bool("follow", false, "keep showing new calls until interrupted")
	asJSON := fs.Bool("json", false, "print every row as one JSON object per line")
	const synopsis = "proxmox-mcp audit tail [--journal FILE | --state-dir DIR] [-n N] [--follow] [--json]"
	if _, err := parse(fs, args, 0, synopsis); err != nil {
		return err
	}
	if *n < 0 || *n > maxTail || (*n == 0 && !*follow) {
		return usagef("-n %d: want 1 to %d (0 only with --follow) (usage: %s)", *n, maxTail, synopsis)
	}
	j, err := jf.open(c.ctx)
	if err != nil {
		return err
	}
	defer j.Close()
	out := bufio.NewWriter(c.stdout)
	defer out.Flush()
	p := &tailPrinter{w: out, json: *asJSON}

	last, _, err := j.Head(c.ctx)
	if err != nil {
		return err
	}
	if *n > 0 {
		if *asJSON {
			evs, err := j.Tail(c.ctx, *n)
			if err != nil {
				return err
			}
			for _, ev := range evs {
				if err := p.event(ev); err != nil {
					return err
				}
			}
			if len(evs) > 0 {
				last = evs[len(evs)-1].ID
			}
		} else if last, err = p.lastCalls(c.ctx, j, *n); err != nil {
			return err
		}
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if !*follow {
		return nil
	}
	return p.follow(c.ctx, j, last)
}

// tailPrinter writes rows as JSON lines or as one line per call.
type tailPrinter struct {
	w    *bufio.Writer
	json bool
}

// event writes one row as JSON.
func (p *tailPrinter) event(ev journal.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	p.w.Write(b)
	return p.w.WriteByte('\n')
}

// lastCalls prints the last n calls, one line each: call rows, receipts,
// and intents that have no receipt (yet). An intent whose receipt exists
// is not printed: the receipt's line stands for the whole write. It
// returns the id of the last row read.
func (p *tailPrinter) lastCalls(ctx context.Context, j *journal.Journal, n int) (int64, error) {
	// Each call is at most two rows, so 2n rows hold n calls.
	evs, err := j.Tail(ctx, min(2*n, maxTail))
	if err != nil {
		return 0, err
	}
	var lines []string
	for _, ev := range evs {
		if ev.Kind == journal.KindIntent {
			rows, err := j.CallEvents(ctx, ev.CallID)
			if err != nil {
				return 0, err
			}
			if len(rows) > 1 {
				continue
			}
		}
		lines = append(lines, callLine(ev))
	}
	for _, l := range lines[max(0, len(lines)-n):] {
		p.w.WriteString(l)
	}
	if len(evs) == 0 {
		return 0, nil
	}
	return evs[len(evs)-1].ID, nil
}

// holdIntent is how long a followed intent waits for its receipt before it
// is shown as pending: a quick write shows as one line, a slow one shows
// that it is under way.
const holdIntent = 2 * time.Second

// follow prints every row after last until the context ends.
func (p *tailPrinter) follow(ctx context.Context, j *journal.Journal, last int64) error {
	f := j.Follow(ctx, last)
	tick := time.NewTicker(holdIntent / 4)
	defer tick.Stop()
	type held struct {
		ev   journal.Event
		seen time.Time
	}
	pending := map[string]held{}
	for {
		select {
		case ev, ok := <-f.C:
			if !ok {
				return f.Err()
			}
			switch {
			case p.json:
				if err := p.event(ev); err != nil {
					return err
				}
			case ev.Kind == journal.KindIntent:
				pending[ev.CallID] = held{ev, time.Now()}
				continue
			case ev.Kind == journal.KindReceipt:
				delete(pending, ev.CallID)
				p.w.WriteString(callLine(ev))
			default:
				p.w.WriteString(callLine(ev))
			}
		case now := <-tick.C:
			for id, h := range pending {
				if now.Sub(h.seen) >= holdIntent {
					p.w.WriteString(callLine(h.ev))
					delete(pending, id)
				}
			}
		}
		if err := p.w.Flush(); err != nil {
			return err
		}
	}
}

// callLine is the human form of a row: time, row id, key name, tool,
// decision, outcome and duration in columns, then the method and path, the
// UPID, and the first line of the error or the denial's first reason.
//
//	2026-11-30T10:00:04.000Z #4     alice        proxmox_api_call       allow      ok              41ms  POST /nodes/pve1/qemu/100/status/start UPID:…
func callLine(ev journal.Event) string {
	dur := "-"
	if ev.Kind != journal.KindIntent {
		dur = formatDuration(ev.Duration())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%-5d %-12s %-22s %-10s %-12s %8s ", ev.Time.UTC().Format("2006-01-02T15:04:05.000Z"), ev.ID,
		or(ev.Principal.KeyName, ev.Principal.KeyID), ev.Tool, or(ev.Decision.Effect, "-"), ev.Outcome, dur)
	if ev.Method != "" {
		fmt.Fprintf(&b, " %s %s", ev.Method, ev.Path)
	}
	if ev.UPID != "" {
		fmt.Fprintf(&b, " %s", ev.UPID)
	}
	if ev.Error != "" {
		msg := ev.Error
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i] + " …"
		}
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		fmt.Fprintf(&b, " error %s", strconv.Quote(strings.ToValidUTF8(msg, "?")))
	} else if ev.Outcome == journal.OutcomeDenied && len(ev.Decision.Reasons) > 0 {
		fmt.Fprintf(&b, " reason %s", strconv.Quote(ev.Decision.Reasons[0]))
	}
	return strings.TrimRight(b.String(), " ") + "\n"
}

func formatDuration(d time.Duration) string {
	if d >= time.Millisecond {
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func (c *cli) auditVerify(args []string) error {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	jf := addJournalFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if _, err := parse(fs, args, 0, "proxmox-mcp audit verify [--journal FILE | --state-dir DIR] [--json]"); err != nil {
		return err
	}
	j, err := jf.open(c.ctx)
	if err != nil {
		return err
	}
	defer j.Close()
	rep, err := j.Verify(c.ctx)
	var ce *journal.ChainError
	if err != nil && !errors.As(err, &ce) {
		return err
	}
	if *asJSON {
		out := map[string]any{"path": j.Path(), "intact": ce == nil, "rows": rep.Rows, "head_id": rep.HeadID,
			"head": rep.Head, "open_intents": rep.OpenIntents, "broken_at": nil, "reason": nil}
		if ce != nil {
			out["broken_at"], out["reason"] = ce.ID, ce.Reason
			out["open_intents"] = nil
		}
		if err := writeJSON(c, out); err != nil {
			return err
		}
	} else if ce == nil {
		fmt.Fprintf(c.stdout, "%s: chain intact, %d rows, head #%d %s, open intents: %d\n", j.Path(), rep.Rows, rep.HeadID, rep.Head, rep.OpenIntents)
	}
	if ce != nil {
		return fmt.Errorf("%s: %w (%d rows before it verified)", j.Path(), err, rep.Rows)
	}
	return nil
}

func (c *cli) auditIntents(args []string) error {
	fs := flag.NewFlagSet("audit intents", flag.ContinueOnError)
	jf := addJournalFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	if _, err := parse(fs, args, 0, "proxmox-mcp audit intents [--journal FILE | --state-dir DIR] [--json]"); err != nil {
		return err
	}
	j, err := jf.open(c.ctx)
	if err != nil {
		return err
	}
	defer j.Close()
	evs, err := j.OpenIntents(c.ctx, time.Time{})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(c.stdout)
	defer out.Flush()
	p := &tailPrinter{w: out, json: *asJSON}
	for _, ev := range evs {
		if *asJSON {
			if err := p.event(ev); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(out, "%s call %s\n", strings.TrimSuffix(callLine(ev), "\n"), ev.CallID)
	}
	if !*asJSON && len(evs) == 0 {
		fmt.Fprintln(out, "no open intents")
	}
	return nil
}

func (c *cli) auditExport(args []string) error {
	fs := flag.NewFlagSet("audit export", flag.ContinueOnError)
	jf := addJournalFlags(fs)
	format := fs.String("format", string(journal.FormatJSONL), "export format (jsonl)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, 1, "proxmox-mcp audit export DEST [--journal FILE | --state-dir DIR] [--format jsonl] [--json]")
	if err != nil {
		return err
	}
	j, err := jf.open(c.ctx)
	if err != nil {
		return err
	}
	defer j.Close()
	art, err := j.Export(c.ctx, pos[0], journal.Format(*format))
	if err != nil {
		return err
	}
	return printArtifact(c, "exported", art, *asJSON)
}

func (c *cli) auditBackup(args []string) error {
	fs := flag.NewFlagSet("audit backup", flag.ContinueOnError)
	jf := addJournalFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, 1, "proxmox-mcp audit backup DEST [--journal FILE | --state-dir DIR] [--json]")
	if err != nil {
		return err
	}
	j, err := jf.open(c.ctx)
	if err != nil {
		return err
	}
	defer j.Close()
	art, err := j.Backup(c.ctx, pos[0])
	if err != nil && !errors.Is(err, journal.ErrTampered) {
		return err
	}
	if perr := printArtifact(c, "backed up", art, *asJSON); perr != nil {
		return perr
	}
	return err
}

func printArtifact(c *cli, verb string, art journal.Artifact, asJSON bool) error {
	if asJSON {
		return writeJSON(c, art)
	}
	_, err := fmt.Fprintf(c.stdout, "%s %d rows (head #%d %s) to %s\n  sha256 %s in %s\n", verb, art.Rows, art.HeadID, art.Head, art.Path, art.SHA256, art.Sidecar)
	return err
}
