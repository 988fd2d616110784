package installer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/keys"
)

// fakeHost is a PVE 9 node in a temporary directory: the files install
// reads (/etc/pve, apidoc.js, /etc/passwd), and fakes of the commands it
// runs that keep state as the real ones do: pveum (users, roles, tokens,
// ACLs, with PVE's error messages), systemctl (unit files, daemon-reload,
// enabled and active units), systemd-sysusers, userdel, groupdel,
// pveversion and journalctl. Every command is recorded.
type fakeHost struct {
	t    *testing.T
	root string

	mu   sync.Mutex
	cmds []string

	pveVersion string // "" makes pveversion missing
	users      map[string]*fakePVEUser
	roles      map[string]string // custom role -> privs
	acl        []pveACLEntry
	tokenSeq   int

	loaded     map[string][32]byte // unit files as of the last daemon-reload
	enabled    map[string]bool
	active     map[string]bool
	statusText string
	journal    string
	// dpkgOwned are the paths the Debian package owns (dpkg-query -S).
	dpkgOwned map[string]bool

	fails []*failRule
	busy  map[string]error // addresses PortFree refuses
	free  uint64

	owners *fakeOwners
	rand   *mrand.ChaCha8 // key ids and secrets, the same in every run
	now    time.Time
	euid   int
}

type fakePVEUser struct {
	comment string
	tokens  map[string]bool // name -> privsep
}

// failRule makes the commands whose line contains match fail, times times,
// after running before (another process acting in between).
type failRule struct {
	match  string
	code   int
	stderr string
	times  int
	before func()
}

// builtinRoles are PVE's special roles (pveum role list marks them).
var builtinRoles = []string{"Administrator", "NoAccess", "PVEAdmin", "PVEAuditor", "PVEDatastoreAdmin", "PVEDatastoreUser",
	"PVEMappingAdmin", "PVEMappingUser", "PVEPoolAdmin", "PVEPoolUser", "PVESDNAdmin", "PVESDNUser", "PVESysAdmin",
	"PVETemplateUser", "PVEUserAdmin", "PVEVMAdmin", "PVEVMUser"}

var testNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// newFakeHost lays out a PVE 9.1 node named pve1.
func newFakeHost(t *testing.T) *fakeHost {
	t.Helper()
	h := &fakeHost{
		t: t, root: t.TempDir(), pveVersion: "pve-manager/9.1.1/42db4a6cf33dac83 (running kernel: 6.17.2-1-pve)",
		users:   map[string]*fakePVEUser{"root@pam": {tokens: map[string]bool{}}},
		roles:   map[string]string{},
		loaded:  map[string][32]byte{},
		enabled: map[string]bool{}, active: map[string]bool{},
		busy: map[string]error{}, free: 10 << 30,
		owners: &fakeOwners{m: map[ownerKey][2]int{}},
		now:    testNow,
		rand:   mrand.NewChaCha8([32]byte{1}),
		journal: "Mar 10 12:00:01 pve1 proxmox-mcp[4242]: level=INFO msg=\"daemon: starting\"\n" +
			"Mar 10 12:00:01 pve1 proxmox-mcp[4242]: level=ERROR msg=\"daemon: start failed\" error=\"field \\\"schema.path\\\": open /usr/share/pve-docs/api-viewer/apidoc.js: permission denied\"\n",
	}
	h.acl = []pveACLEntry{{Path: "/", RoleID: "Administrator", Type: "user", UGID: "root@pam", Propagate: ptr(flexBool(true))}}
	h.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nwww-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n", 0o644)
	h.write("/etc/group", "root:x:0:\ndaemon:x:1:\nwww-data:x:33:\n", 0o644)
	h.write(APIDoc, "const apiSchema = [];\n", 0o644)
	caPEM, caCert, caKey := selfSigned(t, "Proxmox Virtual Environment", true, nil, nil)
	h.write(pveRootCA, string(caPEM), 0o640)
	nodePEM, _, _ := selfSigned(t, "pve1.home.arpa", false, caCert, caKey)
	h.write("/etc/pve/local/pve-ssl.pem", string(nodePEM), 0o640)
	h.write("/etc/pve/priv/token.cfg", "", 0o600)
	h.mkdir("/root", 0o700)
	h.mkdir("/var/lib", 0o755)
	h.mkdir("/run", 0o755)
	h.mkdir("/etc/systemd/system", 0o755)
	h.mkdir("/usr/lib/sysusers.d", 0o755)
	h.mkdir("/usr/local/bin", 0o755)
	h.write("/tmp/proxmox-mcp", "#!proxmox-mcp test binary v1\n", 0o755)
	return h
}

func ptr[T any](v T) *T { return &v }

// selfSigned makes a certificate: a CA, or a leaf for 127.0.0.1 signed by
// parent.
func selfSigned(t *testing.T, cn string, isCA bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) ([]byte, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: testNow.Add(-time.Hour), NotAfter: testNow.AddDate(2, 0, 0),
		IsCA: isCA, BasicConstraintsValid: true,
	}
	if !isCA {
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost", cn}
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), c, key
}

func (h *fakeHost) hostPath(p string) string { return filepath.Join(h.root, p) }

func (h *fakeHost) write(p, data string, mode os.FileMode) {
	h.t.Helper()
	hp := h.hostPath(p)
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(hp, []byte(data), mode); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Chmod(hp, mode); err != nil {
		h.t.Fatal(err)
	}
}

func (h *fakeHost) read(p string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.hostPath(p))
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

func (h *fakeHost) mkdir(p string, mode os.FileMode) {
	h.t.Helper()
	if err := os.MkdirAll(h.hostPath(p), mode); err != nil {
		h.t.Fatal(err)
	}
}

// system is the System of the fake host.
func (h *fakeHost) system() *System {
	return &System{
		Root: h.root, Run: h, Owners: h.owners, Euid: h.euid,
		FreeBytes: func(path string) (uint64, error) {
			if !strings.HasPrefix(path, h.root) {
				h.t.Errorf("FreeBytes(%s) outside the fake root", path)
			}
			return h.free, nil
		},
		PortFree: func(_ context.Context, addr string) error { return h.busy[addr] },
		Hostname: func() (string, error) { return "pve1", nil },
		Now:      func() time.Time { return h.now },
		Rand:     h.rand,
		// Cheap hashes: the tests make many keys, and keys' own tests
		// cover the real parameters.
		KeyParams: keys.Params{N: 1 << 10, R: 8, P: 1},
	}
}

// failNext makes the next times commands containing match fail.
func (h *fakeHost) failNext(match string, times int, code int, stderr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fails = append(h.fails, &failRule{match: match, times: times, code: code, stderr: stderr})
}

// takeCommands returns the commands run since the last call.
func (h *fakeHost) takeCommands() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.cmds
	h.cmds = nil
	return out
}

func (h *fakeHost) count(prefix string) int {
	n := 0
	for _, c := range h.cmds {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// Run is the Runner.
func (h *fakeHost) Run(_ context.Context, c Cmd) ([]byte, []byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := c.String()
	h.cmds = append(h.cmds, line)
	for _, f := range h.fails {
		if f.times > 0 && strings.Contains(line, f.match) {
			f.times--
			if f.before != nil {
				f.before()
			}
			return nil, []byte(f.stderr), &CommandError{Cmd: line, Code: f.code, Stderr: f.stderr}
		}
	}
	var out string
	var err error
	switch c.Name {
	case "pveversion":
		if h.pveVersion == "" {
			return nil, nil, &CommandError{Cmd: line, Code: -1, Err: ErrNotFound}
		}
		out = h.pveVersion + "\n"
	case "pveum":
		out, err = h.pveum(c.Args)
	case "systemctl":
		out, err = h.systemctl(c.Args)
	case "systemd-sysusers":
		err = h.sysusers(c.Args)
	case "userdel":
		err = h.userdel(c.Args)
	case "groupdel":
		err = h.groupdel(c.Args)
	case "journalctl":
		out = h.journal
	case "dpkg-query":
		if len(c.Args) != 2 || c.Args[0] != "-S" {
			h.t.Errorf("unexpected dpkg-query %s", line)
		}
		if !h.dpkgOwned[c.Args[1]] {
			return nil, []byte("dpkg-query: no path found matching pattern " + c.Args[1] + "\n"),
				&CommandError{Cmd: line, Code: 1, Stderr: "dpkg-query: no path found matching pattern " + c.Args[1]}
		}
		out = "proxmox-mcp: " + c.Args[1] + "\n"
	default:
		h.t.Errorf("unexpected command %s", line)
		return nil, nil, &CommandError{Cmd: line, Code: -1, Err: ErrNotFound}
	}
	if err != nil {
		ce := err.(*CommandError)
		ce.Cmd = line
		return []byte(out), []byte(ce.Stderr), ce
	}
	return []byte(out), nil, nil
}

func fail(code int, format string, args ...any) error {
	return &CommandError{Code: code, Stderr: fmt.Sprintf(format, args...) + "\n"}
}

// flags splits pveum arguments into positional ones and --options.
func flags(args []string) ([]string, map[string]string) {
	var pos []string
	opts := map[string]string{}
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "--") && i+1 < len(args) {
			opts[args[i][2:]] = args[i+1]
			i++
			continue
		}
		pos = append(pos, args[i])
	}
	return pos, opts
}

func jsonOut(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b) + "\n", err
}

// pveum emulates PVE 9's pveum for what install uses, with its messages
// and exit status 255 on errors.
func (h *fakeHost) pveum(args []string) (string, error) {
	pos, opt := flags(args)
	if len(pos) < 2 {
		return "", fail(255, "ERROR: unknown command 'pveum %s'", strings.Join(args, " "))
	}
	cmd := strings.Join(pos[:2], " ")
	if pos[0] == "user" && pos[1] == "token" && len(pos) >= 3 {
		cmd = "user token " + pos[2]
		pos = pos[1:]
	}
	switch cmd {
	case "user list":
		var out []map[string]any
		for _, id := range slices.Sorted(mapKeys(h.users)) {
			out = append(out, map[string]any{"userid": id, "enable": 1, "expire": 0, "comment": h.users[id].comment})
		}
		return jsonOut(out)
	case "user add":
		id := pos[2]
		if h.users[id] != nil {
			return "", fail(255, "create user failed: user '%s' already exists", id)
		}
		h.users[id] = &fakePVEUser{comment: opt["comment"], tokens: map[string]bool{}}
		return "", nil
	case "user delete":
		id := pos[2]
		if h.users[id] == nil {
			return "", fail(255, "delete user failed: no such user ('%s')", id)
		}
		for name := range h.users[id].tokens {
			h.setTokenSecret(id+"!"+name, "")
		}
		delete(h.users, id)
		// PVE's delete_user_acl removes the user's own entries, not its
		// tokens'.
		h.acl = slices.DeleteFunc(h.acl, func(e pveACLEntry) bool { return e.UGID == id })
		return "", nil
	case "user token list":
		u := h.users[pos[2]]
		if u == nil {
			return "", fail(255, "no such user ('%s')", pos[2])
		}
		out := []map[string]any{}
		for _, name := range slices.Sorted(mapKeys(u.tokens)) {
			out = append(out, map[string]any{"tokenid": name, "privsep": boolInt(u.tokens[name]), "expire": 0})
		}
		return jsonOut(out)
	case "user token add":
		u := h.users[pos[2]]
		if u == nil {
			return "", fail(255, "no such user ('%s')", pos[2])
		}
		name := pos[3]
		if _, ok := u.tokens[name]; ok {
			return "", fail(255, "400 Parameter verification failed.\ntokenid: Token already exists.\npveum user token add <userid> <tokenid> [OPTIONS] [FORMAT_OPTIONS]")
		}
		privsep := opt["privsep"] != "0"
		u.tokens[name] = privsep
		h.tokenSeq++
		value := fmt.Sprintf("00000000-0000-4000-8000-%012d", h.tokenSeq)
		full := pos[2] + "!" + name
		h.setTokenSecret(full, value)
		return jsonOut(map[string]any{"full-tokenid": full, "info": map[string]any{"privsep": strconv.Itoa(boolInt(privsep)), "comment": opt["comment"]}, "value": value})
	case "user token remove":
		u := h.users[pos[2]]
		if u == nil {
			return "", fail(255, "no such user ('%s')", pos[2])
		}
		if _, ok := u.tokens[pos[3]]; !ok {
			return "", fail(255, "no such token '%s' for user '%s'", pos[3], pos[2])
		}
		delete(u.tokens, pos[3])
		h.setTokenSecret(pos[2]+"!"+pos[3], "")
		return "", nil
	case "role list":
		var out []map[string]any
		for _, r := range builtinRoles {
			out = append(out, map[string]any{"roleid": r, "privs": "", "special": 1})
		}
		for _, r := range slices.Sorted(mapKeys(h.roles)) {
			out = append(out, map[string]any{"roleid": r, "privs": h.roles[r], "special": 0})
		}
		return jsonOut(out)
	case "role add":
		if _, ok := h.roles[pos[2]]; ok || slices.Contains(builtinRoles, pos[2]) {
			return "", fail(255, "create role failed: role '%s' already exists", pos[2])
		}
		h.roles[pos[2]] = opt["privs"]
		return "", nil
	case "role modify":
		if _, ok := h.roles[pos[2]]; !ok {
			return "", fail(255, "update role failed: role '%s' does not exist", pos[2])
		}
		h.roles[pos[2]] = opt["privs"]
		return "", nil
	case "role delete":
		if _, ok := h.roles[pos[2]]; !ok {
			return "", fail(255, "delete role failed: role '%s' does not exist", pos[2])
		}
		delete(h.roles, pos[2])
		h.acl = slices.DeleteFunc(h.acl, func(e pveACLEntry) bool { return e.RoleID == pos[2] })
		return "", nil
	case "acl list":
		out := []map[string]any{}
		for _, e := range h.acl {
			out = append(out, map[string]any{"path": e.Path, "roleid": e.RoleID, "type": e.Type, "ugid": e.UGID, "propagate": boolInt(bool(*e.Propagate))})
		}
		return jsonOut(out)
	case "acl modify", "acl delete":
		path := pos[2]
		kind, subject := "user", opt["users"]
		if opt["tokens"] != "" {
			kind, subject = "token", opt["tokens"]
		}
		userid, tokname, isToken := strings.Cut(subject, "!")
		u := h.users[userid]
		switch {
		case u == nil:
			return "", fail(255, "update ACL failed: user '%s' does not exist", userid)
		case isToken && !mapHas(u.tokens, tokname):
			return "", fail(255, "update ACL failed: no such token '%s' for user '%s'", tokname, userid)
		}
		for _, role := range strings.Split(opt["roles"], ",") {
			if _, custom := h.roles[role]; !custom && !slices.Contains(builtinRoles, role) {
				return "", fail(255, "update ACL failed: role '%s' does not exist", role)
			}
			h.acl = slices.DeleteFunc(h.acl, func(e pveACLEntry) bool { return e.Path == path && e.UGID == subject && e.RoleID == role })
			if cmd == "acl modify" {
				h.acl = append(h.acl, pveACLEntry{Path: path, RoleID: role, Type: kind, UGID: subject, Propagate: ptr(flexBool(opt["propagate"] != "0"))})
			}
		}
		return "", nil
	}
	return "", fail(255, "ERROR: unknown command 'pveum %s'", strings.Join(args, " "))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func mapHas[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

// setTokenSecret keeps /etc/pve/priv/token.cfg as PVE does ("" removes).
func (h *fakeHost) setTokenSecret(full, value string) {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(h.read(pveTokenStore)), "\n") {
		if l != "" && !strings.HasPrefix(l, full+" ") {
			lines = append(lines, l)
		}
	}
	if value != "" {
		lines = append(lines, full+" "+value)
	}
	data := strings.Join(lines, "\n")
	if data != "" {
		data += "\n"
	}
	h.write(pveTokenStore, data, 0o600)
}

// systemctl emulates what install uses: units are known after a
// daemon-reload, enabling needs the unit file, starting a Type=notify
// service returns once it is ready.
func (h *fakeHost) systemctl(args []string) (string, error) {
	unitFile := func(u string) (string, bool) {
		data, err := os.ReadFile(h.hostPath("/etc/systemd/system/" + u))
		return string(data), err == nil
	}
	loaded := func(u string) error {
		data, ok := unitFile(u)
		sum, seen := h.loaded[u]
		switch {
		case !ok && !seen:
			return fail(5, "Failed to start %s: Unit %s not found.", u, u)
		case !seen || sum != sha256.Sum256([]byte(data)):
			// systemd runs the old unit and warns; the tests want none of it.
			h.t.Errorf("systemctl %s: %s changed on disk since the last daemon-reload", strings.Join(args, " "), u)
		}
		return nil
	}
	switch args[0] {
	case "daemon-reload":
		h.loaded = map[string][32]byte{}
		entries, _ := os.ReadDir(h.hostPath("/etc/systemd/system"))
		for _, e := range entries {
			data, _ := unitFile(e.Name())
			h.loaded[e.Name()] = sha256.Sum256([]byte(data))
		}
		return "", nil
	case "enable", "disable":
		now := slices.Contains(args, "--now")
		u := args[len(args)-1]
		if _, ok := unitFile(u); !ok {
			return "", fail(1, "Failed to %s unit: Unit file %s does not exist.", args[0], u)
		}
		if err := loaded(u); err != nil {
			return "", err
		}
		h.enabled[u] = args[0] == "enable"
		if now {
			h.active[u] = args[0] == "enable"
		}
		return "", nil
	case "start", "restart":
		u := args[1]
		if err := loaded(u); err != nil {
			return "", err
		}
		h.active[u] = true
		return "", nil
	case "stop":
		h.active[args[1]] = false
		return "", nil
	case "is-active":
		if h.active[args[1]] {
			return "active\n", nil
		}
		return "inactive\n", &CommandError{Code: 3}
	case "is-enabled":
		if _, ok := unitFile(args[1]); !ok {
			return "", fail(1, "Failed to get unit file state for %s: No such file or directory", args[1])
		}
		if h.enabled[args[1]] {
			return "enabled\n", nil
		}
		return "disabled\n", &CommandError{Code: 1}
	case "show":
		if h.active[args[len(args)-1]] {
			return h.statusText + "\n", nil
		}
		return "\n", nil
	}
	return "", fail(1, "Unknown command verb %s.", args[0])
}

// sysusers emulates systemd-sysusers for "u NAME - GECOS HOME SHELL":
// a system user and its group, with the next free id below 1000.
func (h *fakeHost) sysusers(args []string) error {
	data, err := os.ReadFile(h.hostPath(args[0]))
	if err != nil {
		return fail(1, "Failed to open '%s': No such file or directory", args[0])
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "u" {
			continue
		}
		name := f[1]
		passwd, group := h.read("/etc/passwd"), h.read("/etc/group")
		if strings.Contains(passwd, "\n"+name+":") {
			continue
		}
		id := 999
		for strings.Contains(passwd, ":"+strconv.Itoa(id)+":") || strings.Contains(group, ":"+strconv.Itoa(id)+":") {
			id--
		}
		gecos := strings.Trim(strings.Join(f[3:len(f)-2], " "), `"`)
		h.write("/etc/passwd", passwd+fmt.Sprintf("%s:x:%d:%d:%s:%s:%s\n", name, id, id, gecos, f[len(f)-2], f[len(f)-1]), 0o644)
		if !strings.Contains(group, "\n"+name+":") {
			h.write("/etc/group", group+fmt.Sprintf("%s:x:%d:\n", name, id), 0o644)
		}
	}
	return nil
}

// userdel removes a user and, as Debian's USERGROUPS_ENAB does, its
// group of the same name.
func (h *fakeHost) userdel(args []string) error {
	name := args[len(args)-1]
	if !h.dropLine("/etc/passwd", name) {
		return fail(6, "userdel: user '%s' does not exist", name)
	}
	h.dropLine("/etc/group", name)
	return nil
}

func (h *fakeHost) groupdel(args []string) error {
	if !h.dropLine("/etc/group", args[0]) {
		return fail(6, "groupdel: group '%s' does not exist", args[0])
	}
	return nil
}

func (h *fakeHost) dropLine(file, name string) bool {
	var keep []string
	found := false
	for _, l := range strings.Split(strings.TrimSuffix(h.read(file), "\n"), "\n") {
		if strings.HasPrefix(l, name+":") {
			found = true
			continue
		}
		keep = append(keep, l)
	}
	h.write(file, strings.Join(keep, "\n")+"\n", 0o644)
	return found
}

// fakeOwners records ownership per file (its inode and, for a file, its
// modification time, as the kernel keeps it with the inode): a file
// install never gave away belongs to root, as a file a root process writes
// does. Ownership is given through a descriptor, as the real one is, so
// it follows the file through the rename that puts it in place.
type fakeOwners struct {
	mu sync.Mutex
	m  map[ownerKey][2]int
}

type ownerKey struct {
	dev, ino uint64
	mtime    int64
}

func keyOf(fi os.FileInfo) ownerKey {
	st := fi.Sys().(*syscall.Stat_t)
	k := ownerKey{dev: st.Dev, ino: st.Ino}
	if !fi.IsDir() { // a directory's mtime changes with its entries
		k.mtime = fi.ModTime().UnixNano()
	}
	return k
}

func (o *fakeOwners) Chown(f *os.File, uid, gid int) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m[keyOf(fi)] = [2]int{uid, gid}
	return nil
}

func (o *fakeOwners) Owner(fi os.FileInfo) (int, int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ids := o.m[keyOf(fi)]
	return ids[0], ids[1], nil
}

// chown gives a host path to uid:gid in the fake's records.
func (h *fakeHost) chown(p string, uid, gid int) error {
	f, err := os.Open(h.hostPath(p))
	if err != nil {
		return err
	}
	defer f.Close()
	return h.owners.Chown(f, uid, gid)
}
