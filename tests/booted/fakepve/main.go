// Command fakepve stands in for the PVE programs proxmox-mcp install and
// doctor run, inside the booted test container where Proxmox VE itself
// cannot be installed. It is one binary installed under each program's
// name:
//
//   - pveversion prints a PVE 9.1 version line;
//   - pct exec VMID -- ARGV runs ARGV when the node has the container
//     (etc/lxc/VMID.conf), as pct does after lxc-attach into it; here
//     the "container" is the node itself, and the program is told its
//     VMID in PMCP_FAKEPVE_CT. No other pct subcommand exists;
//   - pveum manages users, API tokens, roles and ACLs as PVE 9's pveum
//     does (the subcommands, options, JSON output and error messages of
//     what install, doctor and uninstall use), by reading and writing the
//     node's /etc/pve/user.cfg and /etc/pve/priv/token.cfg in PVE's own
//     format under a lock.
//
// `proxmox-mcp sim --node-dir /etc/pve`, the container's pveproxy, reads
// the same files, so the tokens install creates are the ones the
// simulated API accepts. It is test infrastructure, never shipped.
package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/proxmox-mcp/proxmox-mcp/pve/sim"
)

// Version is what pveversion prints: a PVE 9.1 node.
const Version = "pve-manager/9.1.1/42db4a6cf33dac83 (running kernel: 6.17.2-1-pve)"

func main() {
	etc := os.Getenv("PMCP_FAKEPVE_ETC")
	if etc == "" {
		etc = "/etc/pve"
	}
	os.Exit(run(filepath.Base(os.Args[0]), os.Args[1:], etc, os.Stdout, os.Stderr))
}

// run executes one program call and returns its exit status: 0, or 255
// with the message on stderr, as PVE's CLI tools do.
func run(prog string, args []string, etc string, stdout, stderr io.Writer) int {
	var err error
	switch prog {
	case "pveversion":
		fmt.Fprintln(stdout, Version)
		return 0
	case "pveum":
		err = pveum(args, etc, stdout)
	case "pct":
		err = pct(args, etc)
	default:
		err = fmt.Errorf("fakepve: called as %q; install it as pveum, pveversion or pct", prog)
	}
	if err != nil {
		fmt.Fprintln(stderr, strings.TrimRight(err.Error(), "\n"))
		return 255
	}
	return 0
}

// parsed is a command line split into words and --options.
type parsed struct {
	words []string
	opts  map[string]string
	json  bool
}

func parseArgs(args []string) (parsed, error) {
	p := parsed{opts: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			p.words = append(p.words, a)
			continue
		}
		val := ""
		if n, v, has := strings.Cut(name, "="); has {
			name, val = n, v
		} else {
			if i+1 >= len(args) {
				return p, fmt.Errorf("400 Parameter verification failed.\n%s: missing value", name)
			}
			i++
			val = args[i]
		}
		if name == "output-format" {
			if val != "json" && val != "json-pretty" && val != "text" && val != "yaml" {
				return p, fmt.Errorf("400 Parameter verification failed.\noutput-format: value '%s' does not have a value in the enumeration 'text, json, json-pretty, yaml'", val)
			}
			p.json = strings.HasPrefix(val, "json")
			continue
		}
		p.opts[name] = val
	}
	return p, nil
}

// store is the node's access files under their lock.
type store struct {
	etc     string
	lock    *os.File
	cfg     *sim.UserConfig
	secrets map[string]string
}

func openStore(etc string) (*store, error) {
	if err := os.MkdirAll(filepath.Join(etc, "priv"), 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(etc, "priv", "lock.fakepve"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, fmt.Errorf("cfs-lock 'file-user_cfg' error: %w", err)
	}
	s := &store{etc: etc, lock: lock, cfg: sim.NewUserConfig(), secrets: map[string]string{}}
	if data, err := os.ReadFile(filepath.Join(etc, sim.UserCfg)); err == nil {
		if s.cfg, err = sim.ParseUserConfig(data); err != nil {
			s.close()
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		s.close()
		return nil, err
	}
	if data, err := os.ReadFile(filepath.Join(etc, sim.TokenCfg)); err == nil {
		if s.secrets, err = sim.ParseTokenConfig(data); err != nil {
			s.close()
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *store) close() { s.lock.Close() }

// writeFile replaces a file atomically, as pmxcfs does.
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp." + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (s *store) saveUsers() error {
	return writeFile(filepath.Join(s.etc, sim.UserCfg), s.cfg.Marshal(), 0o640)
}

func (s *store) saveTokens() error {
	return writeFile(filepath.Join(s.etc, sim.TokenCfg), sim.MarshalTokenConfig(s.secrets), 0o600)
}

func uuid() string {
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand never fails on Linux
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func boolOpt(p parsed, name string, def bool) bool {
	v, ok := p.opts[name]
	if !ok {
		return def
	}
	return v == "1" || v == "true" || v == "yes"
}

func want(p parsed, n int, usage string) error {
	if len(p.words) != n {
		return fmt.Errorf("400 wrong number of arguments\npveum %s", usage)
	}
	return nil
}

// pveum runs one pveum command.
func pveum(args []string, etc string, stdout io.Writer) error {
	p, err := parseArgs(args)
	if err != nil {
		return err
	}
	s, err := openStore(etc)
	if err != nil {
		return err
	}
	defer s.close()
	cmd := strings.Join(p.words[:min(2, len(p.words))], " ")
	if cmd == "user token" && len(p.words) >= 3 {
		cmd = "user token " + p.words[2]
		p.words = p.words[1:]
	}
	out := func(v any) error {
		if !p.json {
			// The installer reads only JSON; text is for a person.
			b, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(stdout, string(b))
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	switch cmd {
	case "user list":
		list := []map[string]any{}
		for _, id := range slices.Sorted(maps.Keys(s.cfg.Users)) {
			u := s.cfg.Users[id]
			e := map[string]any{"userid": id, "enable": boolInt(u.Enable), "expire": u.Expire}
			for k, v := range map[string]string{"comment": u.Comment, "email": u.Email, "firstname": u.Firstname, "lastname": u.Lastname} {
				if v != "" {
					e[k] = v
				}
			}
			list = append(list, e)
		}
		return out(list)
	case "user add":
		if err := want(p, 3, "user add <userid> [OPTIONS]"); err != nil {
			return err
		}
		id := p.words[2]
		if !strings.Contains(id, "@") || strings.Contains(id, "!") {
			return fmt.Errorf("400 Parameter verification failed.\nuserid: value does not match the regex pattern")
		}
		if s.cfg.Users[id] != nil {
			return fmt.Errorf("create user failed: user '%s' already exists", id)
		}
		s.cfg.Users[id] = &sim.ConfigUser{Enable: boolOpt(p, "enable", true), Comment: p.opts["comment"], Email: p.opts["email"], Tokens: map[string]*sim.ConfigToken{}}
		return s.saveUsers()
	case "user delete":
		if err := want(p, 3, "user delete <userid>"); err != nil {
			return err
		}
		id := p.words[2]
		if s.cfg.Users[id] == nil {
			return fmt.Errorf("delete user failed: no such user ('%s')", id)
		}
		// As API2/User.pm delete_user: the user with its tokens, its group
		// memberships and its own ACL entries; token.cfg is left as it is.
		delete(s.cfg.Users, id)
		for _, g := range s.cfg.Groups {
			g.Users = slices.DeleteFunc(g.Users, func(m string) bool { return m == id })
		}
		s.cfg.ACL = slices.DeleteFunc(s.cfg.ACL, func(e sim.ACLEntry) bool { return e.UGID == id })
		return s.saveUsers()
	case "user token list":
		if err := want(p, 3, "user token list <userid>"); err != nil {
			return err
		}
		u := s.cfg.Users[p.words[2]]
		if u == nil {
			return fmt.Errorf("no such user ('%s')", p.words[2])
		}
		list := []map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(u.Tokens)) {
			t := u.Tokens[name]
			e := map[string]any{"tokenid": name, "privsep": boolInt(t.Privsep), "expire": t.Expire}
			if t.Comment != "" {
				e["comment"] = t.Comment
			}
			list = append(list, e)
		}
		return out(list)
	case "user token add":
		if err := want(p, 4, "user token add <userid> <tokenid> [OPTIONS]"); err != nil {
			return err
		}
		userid, name := p.words[2], p.words[3]
		u := s.cfg.Users[userid]
		if u == nil {
			return fmt.Errorf("no such user ('%s')", userid)
		}
		if u.Tokens[name] != nil {
			return errors.New("400 Parameter verification failed.\ntokenid: Token already exists.\npveum user token add <userid> <tokenid> [OPTIONS] [FORMAT_OPTIONS]")
		}
		expire, _ := strconv.ParseInt(p.opts["expire"], 10, 64)
		t := &sim.ConfigToken{Privsep: boolOpt(p, "privsep", true), Comment: p.opts["comment"], Expire: expire}
		full := userid + "!" + name
		value := uuid()
		// generate_token writes token.cfg first, then user.cfg.
		s.secrets[full] = value
		if err := s.saveTokens(); err != nil {
			return fmt.Errorf("generating token failed: %w", err)
		}
		u.Tokens[name] = t
		if err := s.saveUsers(); err != nil {
			return fmt.Errorf("generating token failed: %w", err)
		}
		info := map[string]any{"privsep": boolInt(t.Privsep)}
		if t.Comment != "" {
			info["comment"] = t.Comment
		}
		if t.Expire != 0 {
			info["expire"] = t.Expire
		}
		return out(map[string]any{"full-tokenid": full, "info": info, "value": value})
	case "user token remove":
		if err := want(p, 4, "user token remove <userid> <tokenid>"); err != nil {
			return err
		}
		userid, name := p.words[2], p.words[3]
		u := s.cfg.Users[userid]
		if u == nil {
			return fmt.Errorf("no such user ('%s')", userid)
		}
		if u.Tokens[name] == nil {
			return fmt.Errorf("no such token '%s' for user '%s'", name, userid)
		}
		delete(s.secrets, userid+"!"+name)
		if err := s.saveTokens(); err != nil {
			return fmt.Errorf("deleting token failed: %w", err)
		}
		delete(u.Tokens, name)
		return s.saveUsers()
	case "role list":
		list := []map[string]any{}
		builtin := sim.BuiltinRoles()
		for _, name := range slices.Sorted(maps.Keys(builtin)) {
			list = append(list, map[string]any{"roleid": name, "privs": strings.Join(builtin[name], ","), "special": 1})
		}
		for _, name := range slices.Sorted(maps.Keys(s.cfg.Roles)) {
			if builtin[name] == nil {
				list = append(list, map[string]any{"roleid": name, "privs": strings.Join(s.cfg.Roles[name], ","), "special": 0})
			}
		}
		return out(list)
	case "role add", "role modify":
		if err := want(p, 3, cmd+" <roleid> [OPTIONS]"); err != nil {
			return err
		}
		role := p.words[2]
		if sim.BuiltinRoles()[role] != nil {
			return fmt.Errorf("auto-generated role '%s' cannot be modified", role)
		}
		_, exists := s.cfg.Roles[role]
		if cmd == "role add" && exists {
			return fmt.Errorf("create role failed: role '%s' already exists", role)
		}
		if cmd == "role modify" && !exists {
			return fmt.Errorf("update role failed: role '%s' does not exist", role)
		}
		privs, err := checkPrivs(p.opts["privs"])
		if err != nil {
			return err
		}
		if cmd == "role modify" && boolOpt(p, "append", false) {
			privs = append(privs, s.cfg.Roles[role]...)
			slices.Sort(privs)
			privs = slices.Compact(privs)
		}
		s.cfg.Roles[role] = privs
		return s.saveUsers()
	case "role delete":
		if err := want(p, 3, "role delete <roleid>"); err != nil {
			return err
		}
		role := p.words[2]
		if _, ok := s.cfg.Roles[role]; !ok {
			return fmt.Errorf("delete role failed: role '%s' does not exist", role)
		}
		delete(s.cfg.Roles, role)
		s.cfg.ACL = slices.DeleteFunc(s.cfg.ACL, func(e sim.ACLEntry) bool { return e.Role == role })
		return s.saveUsers()
	case "acl list":
		list := []map[string]any{}
		for _, e := range s.cfg.ACL {
			list = append(list, map[string]any{"path": e.Path, "type": e.Type(), "ugid": strings.TrimPrefix(e.UGID, "@"), "roleid": e.Role, "propagate": boolInt(e.Propagate)})
		}
		return out(list)
	case "acl modify", "acl delete":
		if err := want(p, 3, cmd+" <path> --roles <string> [OPTIONS]"); err != nil {
			return err
		}
		return s.updateACL(p, cmd == "acl delete")
	}
	return fmt.Errorf("unknown command 'pveum %s'", strings.Join(p.words, " "))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkPrivs refuses privileges PVE does not know.
func checkPrivs(list string) ([]string, error) {
	known := map[string]bool{}
	for _, privs := range sim.BuiltinRoles() {
		for _, p := range privs {
			known[p] = true
		}
	}
	var out []string
	for p := range strings.FieldsFuncSeq(list, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		if !known[p] {
			return nil, fmt.Errorf("400 Parameter verification failed.\nprivs: invalid privilege '%s'", p)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// updateACL is API2/ACL.pm update_acl: each role for each user, group or
// token, on the path.
func (s *store) updateACL(p parsed, remove bool) error {
	path := p.words[2]
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("400 Parameter verification failed.\npath: invalid ACL path '%s'", path)
	}
	roles := strings.Split(p.opts["roles"], ",")
	if p.opts["roles"] == "" {
		return errors.New("400 Parameter verification failed.\nroles: property is missing and it is not optional")
	}
	var members []string
	for _, kind := range []string{"users", "groups", "tokens"} {
		for m := range strings.SplitSeq(p.opts[kind], ",") {
			if m == "" {
				continue
			}
			switch kind {
			case "groups":
				if s.cfg.Groups[m] == nil {
					return fmt.Errorf("group '%s' does not exist", m)
				}
				m = "@" + m
			case "users":
				if s.cfg.Users[m] == nil {
					return fmt.Errorf("user '%s' does not exist", m)
				}
			case "tokens":
				userid, name, _ := strings.Cut(m, "!")
				if u := s.cfg.Users[userid]; u == nil || u.Tokens[name] == nil {
					return fmt.Errorf("no such token '%s' for user '%s'", name, userid)
				}
			}
			members = append(members, m)
		}
	}
	builtin := sim.BuiltinRoles()
	propagate := boolOpt(p, "propagate", true)
	for _, role := range roles {
		if _, ok := s.cfg.Roles[role]; !ok && builtin[role] == nil {
			return fmt.Errorf("role '%s' does not exist", role)
		}
		for _, m := range members {
			s.cfg.ACL = slices.DeleteFunc(s.cfg.ACL, func(e sim.ACLEntry) bool { return e.Path == path && e.UGID == m && e.Role == role })
			if !remove {
				s.cfg.ACL = append(s.cfg.ACL, sim.ACLEntry{Path: path, UGID: m, Role: role, Propagate: propagate})
			}
		}
	}
	return s.saveUsers()
}

// pct runs `pct exec VMID -- ARGV`: ARGV in place of this process, found
// by PATH as inside a container, after checking the container's
// configuration exists as pct does ("Configuration file
// 'nodes/pve1/lxc/VMID.conf' does not exist").
func pct(args []string, etc string) error {
	if len(args) < 4 || args[0] != "exec" || args[2] != "--" {
		return errors.New("fakepve: pct: only pct exec VMID -- ARGV is known")
	}
	vmid := args[1]
	if _, err := os.Stat(filepath.Join(etc, "lxc", vmid+".conf")); err != nil {
		//lint:ignore ST1005 pct's own message, as PVE prints it
		return fmt.Errorf("Configuration file 'nodes/localhost/lxc/%s.conf' does not exist", vmid)
	}
	path, err := exec.LookPath(args[3])
	if err != nil {
		return fmt.Errorf("lxc-attach: %s: failed to exec %q: %w", vmid, args[3], err)
	}
	return syscall.Exec(path, args[3:], append(os.Environ(), "PMCP_FAKEPVE_CT="+vmid))
}
