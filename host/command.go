package host

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Commands: argv only, never a shell. The executable is resolved by the
// helper to a canonical absolute path (symbolic links resolved) found in
// a fixed search path, in directories only root can write; the policy
// sees that path, the argument vector, and the command's class (whether
// it runs other programs).

// SearchPath is where an executable named without a slash is looked for,
// in this order (the caller's PATH is never used).
var SearchPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// Argument limits of a command.
const (
	MaxArgs     = 256
	MaxArgBytes = 4096
	MaxArgvSize = 128 << 10
)

// CheckArgv refuses an argument vector that breaks the rules: 1 to
// MaxArgs arguments, each at most MaxArgBytes with no NUL, MaxArgvSize in
// all, and a non-empty argv[0] without control characters.
func CheckArgv(field string, argv []string) error {
	bad := func(rule string, args ...any) error {
		return &PathError{Field: field, Path: strings.Join(argv, " "), Rule: fmt.Sprintf(rule, args...)}
	}
	switch {
	case len(argv) == 0:
		return &PathError{Field: field, Rule: "must hold at least the program to run"}
	case len(argv) > MaxArgs:
		return bad("holds %d arguments; at most %d", len(argv), MaxArgs)
	case argv[0] == "":
		return &PathError{Field: field + "[0]", Rule: "must name the program to run"}
	}
	size := 0
	for i, a := range argv {
		size += len(a)
		switch {
		case len(a) > MaxArgBytes:
			return &PathError{Field: fmt.Sprintf("%s[%d]", field, i), Rule: fmt.Sprintf("is %d bytes; at most %d", len(a), MaxArgBytes)}
		case strings.IndexByte(a, 0) >= 0:
			return &PathError{Field: fmt.Sprintf("%s[%d]", field, i), Rule: "holds a NUL byte"}
		}
	}
	if size > MaxArgvSize {
		return bad("is %d bytes in all; at most %d", size, MaxArgvSize)
	}
	if c := badChars(argv[0]); c != "" {
		return &PathError{Field: field + "[0]", Path: argv[0], Rule: "holds " + c}
	}
	return nil
}

// ResolveExecutable finds the program argv[0] names: a canonical absolute
// path as given, or the first of SearchPath that holds it; then its real
// path (symbolic links resolved), which must be a regular, executable
// file. When trusted is set (the helper, as root), the real path and the
// directory it was found in must be root's all the way up and writable by
// nobody else, so that what the policy saw is what runs. The daemon
// resolves without that check (in its sandbox, root's files belong to
// nobody), for its early decision only.
func ResolveExecutable(field, name string, trusted bool) (string, error) {
	var candidates []string
	if strings.Contains(name, "/") {
		p, err := CleanPath(field, name)
		if err != nil {
			return "", err
		}
		candidates = []string{p}
	} else {
		if name == "." || name == ".." {
			return "", &PathError{Field: field, Path: name, Rule: "is not a program name"}
		}
		for _, d := range SearchPath {
			candidates = append(candidates, d+"/"+name)
		}
	}
	for _, c := range candidates {
		real, err := filepath.EvalSymlinks(c)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			return "", &PathError{Field: field, Path: name, Rule: "cannot be resolved: " + err.Error()}
		}
		var st unix.Stat_t
		if err := unix.Stat(real, &st); err != nil {
			return "", &PathError{Field: field, Path: name, Rule: "cannot be resolved: " + err.Error()}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
			return "", &PathError{Field: field, Path: name, Rule: fmt.Sprintf("is %s, not an executable file", real)}
		}
		if trusted {
			for _, p := range []string{filepath.Dir(c), real} {
				if err := rootsAlone(p); err != nil {
					return "", &PathError{Field: field, Path: name, Rule: err.Error()}
				}
			}
		}
		return real, nil
	}
	return "", &PathError{Field: field, Path: name, Rule: "is not an executable in " + strings.Join(SearchPath, ":") + " (name a program there, or give its absolute path)"}
}

// rootsAlone refuses p unless p and every directory above it belong to
// root and no one else may write them.
func rootsAlone(p string) error {
	for q := p; ; q = filepath.Dir(q) {
		var st unix.Stat_t
		if err := unix.Lstat(q, &st); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		if st.Uid != 0 || st.Mode&0o022 != 0 && st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return fmt.Errorf("is reached through %s, which someone other than root may change (owner %d, mode %04o); such a program is refused", q, st.Uid, st.Mode&0o7777)
		}
		if q == "/" {
			return nil
		}
	}
}

// VisibilityProbes are commands the daemon asks a key's policy about to
// decide whether it shows proxmox_host_exec: the reviewed diagnostics of
// the built-in profiles and a few of the system's plain programs.
var VisibilityProbes = [][]string{
	{"pveversion", "-v"}, {"zpool", "status"}, {"df", "-h"}, {"lsblk", "-J"}, {"ip", "-j", "addr"},
	{"uptime"}, {"true"}, {"ls", "/"},
}

// Command classes (policy.Command.Class).
const (
	ClassShell       = "shell"
	ClassInterpreter = "interpreter"
	ClassLauncher    = "launcher"
)

var (
	shells = []string{"sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "lksh", "csh", "tcsh", "fish", "ash", "rbash", "yash", "busybox", "screen", "tmux", "script", "elvish", "nu", "xonsh"}
	// interpreterName matches interpreters of code given as an argument or
	// on stdin, with their version suffixes (python3.13, perl5.40.1).
	interpreterName = regexp.MustCompile(`^(python|pypy|perl|ruby|irb|lua|luajit|php|tclsh|wish|node|nodejs|deno|bun|guile|julia|Rscript|R|ocaml|gawk|mawk|nawk|awk|sed|gsed|gdb|expect|bc|dc|m4|openssl)[0-9.]*$`)
	launchers       = []string{
		"env", "xargs", "nice", "nohup", "timeout", "stdbuf", "setsid", "flock", "chroot", "unshare", "nsenter",
		"systemd-run", "systemd-nspawn", "systemctl", "busctl", "dbus-send", "gdbus", "sudo", "su", "runuser", "setpriv",
		"capsh", "strace", "ltrace", "taskset", "chrt", "ionice", "watch", "time", "chpst", "start-stop-daemon",
		"run-parts", "parallel", "lxc-attach", "lxc-execute", "ssh", "sshpass", "at", "batch", "crontab", "prlimit",
		"numactl", "firejail", "bwrap", "newgrp", "sg", "doas", "pkexec", "cpulimit", "faketime", "pvesh", "ip-netns",
		"rlwrap", "socat", "nc", "ncat", "netcat",
	}
	findActions = []string{"-exec", "-execdir", "-ok", "-okdir"}
	tarRunners  = []string{"--to-command", "--use-compress-program", "-I", "--checkpoint-action", "--rsh-command", "--info-script", "--new-volume-script", "-F", "--rmt-command"}
)

// Classify says whether a command runs other programs or code, by the
// names of its executable (the real one, and argv[0] as written: a
// multi-call binary is what argv[0] says) and, for programs that run
// others only with some arguments, by those arguments: find -exec, tar
// --to-command, ip netns exec, pct exec, qm terminal and the like.
func Classify(path string, argv []string) string {
	names := []string{filepath.Base(path)}
	if len(argv) > 0 {
		names = append(names, filepath.Base(argv[0]))
	}
	args := argv[min(1, len(argv)):]
	for _, n := range names {
		switch {
		case slices.Contains(shells, n):
			return ClassShell
		case interpreterName.MatchString(n):
			return ClassInterpreter
		case slices.Contains(launchers, n):
			return ClassLauncher
		}
	}
	base := names[0]
	has := func(set []string) bool {
		return slices.ContainsFunc(args, func(a string) bool {
			return slices.ContainsFunc(set, func(s string) bool { return a == s || strings.HasPrefix(a, s+"=") })
		})
	}
	sub := func(words ...string) bool {
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				continue
			}
			return slices.Contains(words, a)
		}
		return false
	}
	switch base {
	case "find":
		if has(findActions) {
			return ClassLauncher
		}
	case "tar":
		if has(tarRunners) {
			return ClassLauncher
		}
	case "rsync":
		if has([]string{"-e", "--rsh", "--rsync-path"}) {
			return ClassLauncher
		}
	case "ip":
		if slices.Contains(args, "netns") && slices.Contains(args, "exec") || has([]string{"-b", "-batch", "--batch"}) {
			return ClassLauncher
		}
	case "pct":
		if sub("exec", "enter", "console", "push", "pull") {
			return ClassLauncher
		}
	case "qm":
		if sub("terminal", "monitor", "guest", "mtunnel", "vncproxy") {
			return ClassLauncher
		}
	case "git":
		if has([]string{"-c", "--exec-path", "--config-env"}) {
			return ClassLauncher
		}
	}
	return ""
}

// cleanCwd is a command's working directory: "/" when none is asked,
// else a canonical path beneath an allowed root, a directory, reached
// without a symbolic link, not refused.
func (t *Tree) cleanCwd(field, p string) (string, error) {
	if p == "" || p == "/" {
		return "/", nil
	}
	o, err := t.open(field, p, accessDir)
	if err != nil {
		return "", err
	}
	o.f.Close()
	return o.path, nil
}

// cleanWritable checks a path a command asks to write: canonical, beneath
// a root that allows writes, not refused, existing, and not a symbolic
// link.
func (t *Tree) cleanWritable(field, p string) (string, error) {
	if _, err := t.precheck(field, p, true); err != nil {
		return "", err
	}
	o, err := t.open(field, p, accessStat)
	if err != nil {
		return "", err
	}
	defer o.f.Close()
	if o.st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return "", &PathError{Field: field, Path: p, Rule: "is a symbolic link; name the real path"}
	}
	return o.path, nil
}

// InaccessiblePaths are the refused directories and files as they exist
// now (the file patterns expanded), for a command's sandbox: each is
// prefixed with "-" so that systemd skips one removed meanwhile.
func (t *Tree) InaccessiblePaths() []string {
	var out []string
	for _, d := range t.refused.Dirs {
		out = append(out, "-"+d)
	}
	for _, pat := range t.refused.Files {
		matches, _ := filepath.Glob(pat)
		for _, m := range matches {
			out = append(out, "-"+m)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
