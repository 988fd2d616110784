package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The state's owner in TestLocalGivesUpRoot: uids with no account on the
// machine, so nothing else of theirs exists to be reached.
const (
	stateUID = 61234
	otherUID = 61235
)

// TestLocalGivesUpRoot: run as root on a state directory that another
// user owns (the daemon's user on a real host), stdio and tools call act
// as that user before they open anything there, as seen from outside:
// /proc/PID/status while stdio serves, and the owner of the journal and
// SQLite's -wal and -shm files it created. Ownership that does not say
// whose the state is is refused with the path and the rule.
func TestLocalGivesUpRoot(t *testing.T) {
	// The state's owner must reach its files: let it traverse the test's
	// directories, as /var/lib lets the daemon's user.
	work := rootWork(t, "it models root running the CLI on the service user's state directory", 0o711)
	cfgPath := filepath.Join(work, "cfg.hujson")
	if _, err := simulatorConfig(work, cfgPath, t.Cleanup); err != nil {
		t.Fatal(err)
	}
	// The tier tokens are readable by the daemon's user on a host.
	chownAll(t, filepath.Join(work, "tokens"), stateUID, stateUID)
	state := filepath.Join(work, "state")
	if err := os.Mkdir(state, 0o750); err != nil {
		t.Fatal(err)
	}
	chownAll(t, state, stateUID, stateUID)
	bin := commandLink(t)

	t.Run("stdio", func(t *testing.T) {
		s := startStdio(t, bin, "--config", cfgPath, "--local-root")
		s.call(t, "proxmox_guest_status", map[string]any{"vmid": 100})
		// Still serving: the process, the journal and its WAL are the
		// state owner's.
		uid, gid := procIDs(t, s.cmd.Process.Pid)
		if uid != strconv.Itoa(stateUID) || gid != strconv.Itoa(stateUID) {
			t.Errorf("stdio serves as Uid %s Gid %s (/proc/%d/status), want the state directory's owner %d", uid, gid, s.cmd.Process.Pid, stateUID)
		}
		for _, name := range []string{"journal.db", "journal.db-wal", "journal.db-shm"} {
			wantOwner(t, filepath.Join(state, name), stateUID)
		}
		s.close(t)
		ownedBy(t, state, stateUID)
	})

	t.Run("tools call", func(t *testing.T) {
		out, err := runCLI(bin, "tools", "call", "proxmox_guest_status", "--arg", "vmid=100", "--config", cfgPath)
		if err != nil {
			t.Fatalf("tools call: %v\n%s", err, out)
		}
		ownedBy(t, state, stateUID)
	})

	// Each refusal names the path and the rule, for stdio and tools call,
	// and leaves nothing behind.
	journalPath := filepath.Join(state, "journal.db")
	usersDir := filepath.Join(work, "users")
	if err := os.Mkdir(usersDir, 0o755); err != nil {
		t.Fatal(err)
	}
	chown(t, usersDir, stateUID, stateUID)
	rootsInUsers := filepath.Join(usersDir, "state")
	for _, c := range []struct {
		name      string
		set, undo func(t *testing.T)
		want      string
		stateDir  string // --state-dir, when not the configuration's
	}{
		{
			name: "root's group",
			set:  func(t *testing.T) { chown(t, state, stateUID, 0) },
			undo: func(t *testing.T) { chown(t, state, stateUID, stateUID) },
			want: "state directory " + state + " is uid 61234's with root's group (gid 0): root does not hand its group",
		},
		{
			name: "journal of another user",
			set:  func(t *testing.T) { chown(t, journalPath, otherUID, otherUID) },
			undo: func(t *testing.T) { chown(t, journalPath, stateUID, stateUID) },
			want: "journal " + journalPath + " is uid 61235's but its state directory is uid 61234's: the state is one user's",
		},
		{
			name: "root's journal in the user's directory",
			set:  func(t *testing.T) { chown(t, journalPath, 0, 0) },
			undo: func(t *testing.T) { chown(t, journalPath, stateUID, stateUID) },
			want: "journal " + journalPath + " is root's, in a directory another user can write",
		},
		{
			name: "root's directory that others can write",
			set: func(t *testing.T) {
				chownAll(t, state, 0, 0)
				if err := os.Chmod(state, 0o777); err != nil {
					t.Fatal(err)
				}
			},
			undo: func(t *testing.T) {
				if err := os.Chmod(state, 0o750); err != nil {
					t.Fatal(err)
				}
				chownAll(t, state, stateUID, stateUID)
			},
			want: "state directory " + state + " is root's but others can write it (mode -rwxrwxrwx): root works only in a directory nobody else can write",
		},
		{
			name: "root's directory in the user's",
			set: func(t *testing.T) {
				if err := os.Mkdir(rootsInUsers, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			undo:     func(t *testing.T) { os.Remove(rootsInUsers) },
			stateDir: rootsInUsers,
			want:     "state directory " + rootsInUsers + " is root's, but " + usersDir + ", above it, has owner uid 61234 and mode -rwxr-xr-x: another user could put a directory of theirs in its place",
		},
		{
			name:     "missing, in the user's directory",
			set:      func(t *testing.T) {},
			undo:     func(t *testing.T) {},
			stateDir: filepath.Join(usersDir, "missing"),
			want:     "state directory " + filepath.Join(usersDir, "missing") + " does not exist and root would make it in " + usersDir + ", which another user can write (owner uid 61234, mode -rwxr-xr-x)",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.set(t)
			defer c.undo(t)
			before := listing(t, state) + listing(t, usersDir)
			for _, args := range [][]string{
				{"stdio", "--config", cfgPath, "--local-root"},
				{"tools", "call", "proxmox_guest_status", "--arg", "vmid=100", "--config", cfgPath},
			} {
				if c.stateDir != "" {
					args = append(args, "--state-dir", c.stateDir)
				}
				out, err := runCLI(bin, args...)
				if err == nil || !strings.Contains(string(out), c.want) {
					t.Errorf("%s: want a refusal saying %q; got %v:\n%s", args[0], c.want, err, out)
				}
			}
			if after := listing(t, state) + listing(t, usersDir); after != before {
				t.Errorf("a refused command changed a state directory:\nbefore:\n%safter:\n%s", before, after)
			}
		})
	}
}

// commandLink is the test binary under the name testscript.Main runs as
// main (proxmox-mcp).
func commandLink(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "proxmox-mcp")
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// runCLI runs the command with an empty stdin (stdio ends at once) and no
// $PMCP_KEY, and returns its stdout and stderr together.
func runCLI(bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cliEnv()
	return cmd.CombinedOutput()
}

func cliEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PMCP_KEY=") {
			env = append(env, e)
		}
	}
	return env
}

// stdioSession is proxmox-mcp stdio spoken to line by line.
type stdioSession struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	id     int
}

func startStdio(t *testing.T, bin string, args ...string) *stdioSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	s := &stdioSession{cmd: exec.CommandContext(ctx, bin, append([]string{"stdio"}, args...)...)}
	s.cmd.Env = cliEnv()
	s.cmd.Stderr = &s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.out = bufio.NewReader(out)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.in.Close()
		s.cmd.Wait() //nolint:errcheck // close reports the exit
	})
	s.request(t, "initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "local_test", "version": "0"},
	})
	s.send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return s
}

func (s *stdioSession) send(t *testing.T, msg map[string]any) {
	t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		t.Fatalf("write to stdio: %v (stderr: %s)", err, s.stderr.String())
	}
}

// request sends a request and returns its result, failing on an error.
func (s *stdioSession) request(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	s.id++
	s.send(t, map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: no answer: %v (stderr: %s)", method, err, s.stderr.String())
		}
		var resp struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatalf("%s: %v: %s", method, err, line)
		}
		if resp.ID == nil || *resp.ID != s.id {
			continue // a notification
		}
		if resp.Error != nil {
			t.Fatalf("%s: %s", method, resp.Error)
		}
		return resp.Result
	}
}

// call calls a tool and fails unless its result is a success.
func (s *stdioSession) call(t *testing.T, name string, args map[string]any) {
	t.Helper()
	res := s.request(t, "tools/call", map[string]any{"name": name, "arguments": args})
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.IsError {
		t.Fatalf("%s: %v %s", name, err, res)
	}
}

// close ends the input, as an MCP client does, and waits for exit 0.
func (s *stdioSession) close(t *testing.T) {
	t.Helper()
	s.in.Close()
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("stdio: %v\n%s", err, s.stderr.String())
	}
}

// procIDs are the real user and group ids /proc/PID/status shows (all
// four of each must agree).
func procIDs(t *testing.T, pid int) (uid, gid string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || (f[0] != "Uid:" && f[0] != "Gid:") {
			continue
		}
		v := f[1]
		for _, x := range f[2:] {
			if x != v {
				v = strings.Join(f[1:], " ")
			}
		}
		if f[0] == "Uid:" {
			uid = v
		} else {
			gid = v
		}
	}
	return uid, gid
}

func wantOwner(t *testing.T, path string, uid int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := fi.Sys().(*syscall.Stat_t).Uid; int(got) != uid {
		t.Errorf("%s is uid %d's, want %d's", path, got, uid)
	}
}

// ownedBy fails unless dir and everything under it is uid's.
func ownedBy(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			wantOwner(t, p, uid)
		}
		return err
	})
	if err != nil {
		t.Error(err)
	}
}

// listing is dir's entries with their owners, modes and sizes.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		size := fi.Size()
		if fi.IsDir() {
			size = 0
		}
		b.WriteString(p + " " + fi.Mode().String() + " " + strconv.Itoa(int(st.Uid)) + ":" + strconv.Itoa(int(st.Gid)) + " " + strconv.FormatInt(size, 10) + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func chown(t *testing.T, path string, uid, gid int) {
	t.Helper()
	if err := os.Lchown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// chownAll gives dir and everything under it to uid:gid.
func chownAll(t *testing.T, dir string, uid, gid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rootWork is a test directory for a test that runs as root (skipped
// otherwise, failed under PMCP_REQUIRE_E2E), it and its parent given mode
// so that the state directory's owner reaches what is below.
func rootWork(t *testing.T, why string, mode os.FileMode) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("PMCP_REQUIRE_E2E") == "1" {
			t.Fatal("needs root: " + why)
		}
		t.Skip("needs root: " + why)
	}
	work := t.TempDir()
	for _, p := range []string{work, filepath.Dir(work)} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	return work
}
