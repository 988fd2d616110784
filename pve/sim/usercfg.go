package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// UserConfig is a node's /etc/pve/user.cfg: users with their API tokens,
// groups, custom roles and the ACL, in the format pve-access-control reads
// and writes (PVE::AccessControl::parse_user_config and
// write_user_config). Pools are kept as their lines, unchanged.
type UserConfig struct {
	Users  map[string]*ConfigUser
	Groups map[string]*ConfigGroup
	// Roles are the custom roles and their privileges; the built-in roles
	// (BuiltinRoles) are never written.
	Roles map[string][]string
	ACL   []ACLEntry
	// Pools are the pool: lines, as read.
	Pools []string
}

// ConfigUser is a user: line and the token: lines of its tokens.
type ConfigUser struct {
	Enable                                    bool
	Expire                                    int64
	Firstname, Lastname, Email, Comment, Keys string
	Tokens                                    map[string]*ConfigToken
}

// ConfigToken is a token: line (the secret is in priv/token.cfg).
type ConfigToken struct {
	Expire  int64
	Privsep bool
	Comment string
}

// ConfigGroup is a group: line.
type ConfigGroup struct {
	Users   []string
	Comment string
}

// ACLEntry grants Role on Path to UGID: a user (user@realm), a group
// (@name) or a token (user@realm!name).
type ACLEntry struct {
	Path      string
	UGID      string
	Role      string
	Propagate bool
}

// Type is the ACL entry's kind as the API lists it: user, group or token.
func (e ACLEntry) Type() string {
	switch {
	case strings.HasPrefix(e.UGID, "@"):
		return "group"
	case strings.Contains(e.UGID, "!"):
		return "token"
	}
	return "user"
}

// NewUserConfig is the user.cfg of a fresh node: root@pam alone.
func NewUserConfig() *UserConfig {
	c := &UserConfig{Users: map[string]*ConfigUser{}, Groups: map[string]*ConfigGroup{}, Roles: map[string][]string{}}
	c.forceDefaults()
	return c
}

// forceDefaults adds root@pam, as userconfig_force_defaults does.
func (c *UserConfig) forceDefaults() {
	if c.Users["root@pam"] == nil {
		c.Users["root@pam"] = &ConfigUser{Enable: true, Tokens: map[string]*ConfigToken{}}
	}
}

// BuiltinRoles are PVE's special roles and their privileges, sorted.
func BuiltinRoles() map[string][]string {
	out := map[string][]string{}
	for name, privs := range builtinRoles() {
		out[name] = slices.Sorted(maps.Keys(privs))
	}
	return out
}

// encodeText escapes what PVE's encode_text escapes in comments and
// names: control and non-ASCII bytes, ':' and '%'.
func encodeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == ':' || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func decodeText(s string) string {
	out, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return out
}

func parseInt(field, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q is not a non-negative integer", field, s)
	}
	return n, nil
}

// ParseUserConfig reads user.cfg. A line PVE would ignore (an unknown
// kind, a token of a user not defined before it) is an error here,
// naming the line: the files the simulator reads are written by tools.
func ParseUserConfig(data []byte) (*UserConfig, error) {
	c := &UserConfig{Users: map[string]*ConfigUser{}, Groups: map[string]*ConfigGroup{}, Roles: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, ":")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		at := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("user.cfg line %d: %s", n, fmt.Sprintf(format, args...))
		}
		switch f[0] {
		case "user":
			id := at(1)
			if !strings.Contains(id, "@") || strings.Contains(id, "!") {
				return nil, bad("user %q is not user@realm", id)
			}
			exp, err := parseInt("expire", at(3))
			if err != nil {
				return nil, bad("user %s: %v", id, err)
			}
			c.Users[id] = &ConfigUser{
				Enable: at(2) != "" && at(2) != "0", Expire: exp,
				Firstname: decodeText(at(4)), Lastname: decodeText(at(5)), Email: at(6),
				Comment: decodeText(at(7)), Keys: at(8), Tokens: map[string]*ConfigToken{},
			}
		case "token":
			userid, name, ok := strings.Cut(at(1), "!")
			if !ok || name == "" {
				return nil, bad("token %q is not user@realm!name", at(1))
			}
			u := c.Users[userid]
			if u == nil {
				return nil, bad("token %s: user %s is not defined before it", at(1), userid)
			}
			exp, err := parseInt("expire", at(2))
			if err != nil {
				return nil, bad("token %s: %v", at(1), err)
			}
			u.Tokens[name] = &ConfigToken{Expire: exp, Privsep: at(3) != "" && at(3) != "0", Comment: decodeText(at(4))}
		case "group":
			g := &ConfigGroup{Users: splitList(at(2)), Comment: decodeText(at(3))}
			slices.Sort(g.Users)
			c.Groups[at(1)] = g
		case "role":
			if at(1) == "" {
				return nil, bad("a role without a name")
			}
			privs := splitList(at(2))
			slices.Sort(privs)
			c.Roles[at(1)] = privs
		case "acl":
			path := normalizePath(at(2))
			if path == "" {
				return nil, bad("ACL path %q is not a valid path", at(2))
			}
			for _, role := range splitList(at(4)) {
				for _, ug := range splitList(at(3)) {
					c.ACL = append(c.ACL, ACLEntry{Path: path, UGID: ug, Role: role, Propagate: at(1) != "" && at(1) != "0"})
				}
			}
		case "pool":
			c.Pools = append(c.Pools, line)
		default:
			return nil, bad("unknown kind %q", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("user.cfg: %w", err)
	}
	c.forceDefaults()
	return c, nil
}

// Marshal writes user.cfg as write_user_config does: users (each followed
// by its tokens), groups, pools, custom roles and the ACL, each sorted,
// entries of one path, propagation and role list joined on one line.
func (c *UserConfig) Marshal() []byte {
	var b bytes.Buffer
	for _, id := range slices.Sorted(maps.Keys(c.Users)) {
		u := c.Users[id]
		fmt.Fprintf(&b, "user:%s:%d:%d:%s:%s:%s:%s:%s:\n", id, boolInt(u.Enable), u.Expire,
			encodeText(u.Firstname), encodeText(u.Lastname), u.Email, encodeText(u.Comment), u.Keys)
		for _, name := range slices.Sorted(maps.Keys(u.Tokens)) {
			t := u.Tokens[name]
			fmt.Fprintf(&b, "token:%s!%s:%d:%d:%s:\n", id, name, t.Expire, boolInt(t.Privsep), encodeText(t.Comment))
		}
	}
	b.WriteString("\n")
	for _, name := range slices.Sorted(maps.Keys(c.Groups)) {
		g := c.Groups[name]
		fmt.Fprintf(&b, "group:%s:%s:%s:\n", name, strings.Join(g.Users, ","), encodeText(g.Comment))
	}
	b.WriteString("\n")
	for _, p := range c.Pools {
		b.WriteString(p + "\n")
	}
	b.WriteString("\n")
	builtin := builtinRoles()
	for _, name := range slices.Sorted(maps.Keys(c.Roles)) {
		if builtin[name] != nil {
			continue
		}
		fmt.Fprintf(&b, "role:%s:%s:\n", name, strings.Join(c.Roles[name], ","))
	}
	b.WriteString("\n")
	// path -> propagate -> member -> roles
	type key struct {
		path      string
		propagate bool
	}
	members := map[key]map[string][]string{}
	for _, e := range c.ACL {
		if e.UGID == "root@pam" {
			continue // always Administrator; PVE never writes it
		}
		k := key{e.path(), e.Propagate}
		if members[k] == nil {
			members[k] = map[string][]string{}
		}
		if !slices.Contains(members[k][e.UGID], e.Role) {
			members[k][e.UGID] = append(members[k][e.UGID], e.Role)
		}
	}
	keys := slices.SortedFunc(maps.Keys(members), func(a, b key) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return boolInt(a.propagate) - boolInt(b.propagate)
	})
	for _, k := range keys {
		byRoles := map[string][]string{}
		for member, roles := range members[k] {
			slices.Sort(roles)
			rl := strings.Join(roles, ",")
			byRoles[rl] = append(byRoles[rl], member)
		}
		for _, rl := range slices.Sorted(maps.Keys(byRoles)) {
			ms := byRoles[rl]
			slices.Sort(ms)
			fmt.Fprintf(&b, "acl:%d:%s:%s:%s:\n", boolInt(k.propagate), k.path, strings.Join(ms, ","), rl)
		}
	}
	return b.Bytes()
}

func (e ACLEntry) path() string { return normalizePath(e.Path) }

// ParseTokenConfig reads priv/token.cfg: "user@realm!name secret" per
// line, as PVE::TokenConfig does.
func ParseTokenConfig(data []byte) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, " ")
		if len(f) != 2 || !strings.Contains(f[0], "!") || f[1] == "" {
			return nil, fmt.Errorf("token.cfg line %d: not \"user@realm!name secret\"", i+1)
		}
		out[f[0]] = f[1]
	}
	return out, nil
}

// MarshalTokenConfig writes priv/token.cfg, sorted.
func MarshalTokenConfig(secrets map[string]string) []byte {
	var b bytes.Buffer
	for _, id := range slices.Sorted(maps.Keys(secrets)) {
		fmt.Fprintf(&b, "%s %s\n", id, secrets[id])
	}
	return b.Bytes()
}

// SetAccess replaces the simulator's users, tokens, groups, custom roles
// and ACL with a node's user.cfg and the secrets of its priv/token.cfg, as
// pveproxy sees them once pveum has written them. root@pam stays root; a
// token without a secret exists but authenticates nothing; ACL entries of
// unknown roles or tokens are ignored, as PVE ignores them.
func (s *Sim) SetAccess(c *UserConfig, secrets map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.users = map[string]*user{}
	for id, cu := range c.Users {
		u := &user{id: id, enabled: cu.Enable, tokens: map[string]*apiToken{}}
		for name, ct := range cu.Tokens {
			secret, ok := secrets[id+"!"+name]
			if !ok {
				secret = "no-secret-" + st.secret() // nothing presents it
			}
			u.tokens[name] = &apiToken{name: name, secret: secret, privsep: ct.Privsep, expire: ct.Expire}
		}
		st.users[id] = u
	}
	if st.users["root@pam"] == nil {
		st.users["root@pam"] = &user{id: "root@pam", enabled: true, tokens: map[string]*apiToken{}}
	}
	st.groups = map[string][]string{}
	for name, g := range c.Groups {
		st.groups[name] = slices.Clone(g.Users)
		for _, m := range g.Users {
			if u := st.users[m]; u != nil {
				u.groups = append(u.groups, name)
			}
		}
	}
	st.roleDefs = builtinRoles()
	for name, privs := range c.Roles {
		if st.roleDefs[name] == nil {
			st.roleDefs[name] = privSet(privs...)
		}
	}
	st.acl = nil
	for _, e := range c.ACL {
		if e.Type() == "token" {
			userid, name, _ := strings.Cut(e.UGID, "!")
			if u := st.users[userid]; u == nil || u.tokens[name] == nil {
				continue
			}
		}
		st.grant(e.path(), e.UGID, e.Role, e.Propagate) //nolint:errcheck // an unknown role is ignored, as PVE ignores it
	}
}
