package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// privGroups mirrors pve-access-control's privilege groups: roles are
// built from them exactly as PVE builds its built-in roles.
type privGroup struct{ root, admin, user, audit []string }

func privGroups() map[string]privGroup {
	return map[string]privGroup{
		"VM": {
			admin: []string{"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType",
				"VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.Migrate", "VM.Snapshot", "VM.Snapshot.Rollback",
				"VM.GuestAgent.FileRead", "VM.GuestAgent.FileWrite", "VM.GuestAgent.Unrestricted"},
			user:  []string{"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.PowerMgmt", "VM.GuestAgent.Audit", "VM.GuestAgent.FileSystemMgmt"},
			audit: []string{"VM.Audit"},
		},
		"Sys": {
			root:  []string{"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming"},
			admin: []string{"Sys.Console", "Sys.Syslog", "Sys.AccessNetwork"},
			audit: []string{"Sys.Audit"},
		},
		"Datastore": {
			admin: []string{"Datastore.Allocate", "Datastore.AllocateTemplate"},
			user:  []string{"Datastore.AllocateSpace"},
			audit: []string{"Datastore.Audit"},
		},
		"SDN": {
			admin: []string{"SDN.Allocate", "SDN.Audit"},
			user:  []string{"SDN.Use"},
			audit: []string{"SDN.Audit"},
		},
		"User": {
			root:  []string{"Realm.Allocate"},
			admin: []string{"User.Modify", "Group.Allocate", "Realm.AllocateUser"},
		},
		"Pool": {
			admin: []string{"Pool.Allocate"},
			user:  []string{"Pool.Audit"},
			audit: []string{"Pool.Audit"},
		},
		"Mapping": {
			admin: []string{"Mapping.Modify"},
			user:  []string{"Mapping.Use"},
			audit: []string{"Mapping.Audit"},
		},
	}
}

// builtinRoles builds PVE's special roles: PVE<Cat>Admin, PVE<Cat>User,
// PVEAdmin, PVEAuditor, PVETemplateUser, Administrator and NoAccess.
func builtinRoles() map[string]map[string]bool {
	roles := map[string]map[string]bool{"NoAccess": {}, "Administrator": {"Permissions.Modify": true}}
	add := func(role string, privs ...string) {
		if roles[role] == nil {
			roles[role] = map[string]bool{}
		}
		for _, p := range privs {
			roles[role][p] = true
		}
	}
	for cat, g := range privGroups() {
		add("Administrator", g.root...)
		add("Administrator", g.admin...)
		add("Administrator", g.user...)
		add("Administrator", g.audit...)
		for _, role := range []string{"PVE" + cat + "Admin", "PVEAdmin"} {
			add(role, g.admin...)
			add(role, g.user...)
			add(role, g.audit...)
		}
		if len(g.user) > 0 {
			add("PVE"+cat+"User", g.user...)
			add("PVE"+cat+"User", g.audit...)
		}
		add("PVEAuditor", g.audit...)
	}
	delete(roles["PVEAdmin"], "Mapping.Modify")
	roles["PVETemplateUser"] = map[string]bool{"VM.Clone": true, "VM.Audit": true}
	return roles
}

// user is a PVE user with its API tokens.
type user struct {
	id      string
	enabled bool
	tokens  map[string]*apiToken
	groups  []string
}

type apiToken struct {
	name    string
	secret  string
	privsep bool
	expire  int64 // Unix seconds; 0 never
}

// aclEntry grants a role on a path to a user, @group or user@realm!token.
type aclEntry struct {
	path      string
	ugid      string
	role      string
	propagate bool
}

// principal is who is calling: a token, and the user it belongs to.
type principal struct {
	userid  string
	tokenid string // user@realm!name
	privsep bool
}

// tokenHeader is PVE's header pattern (pve-http-server Formatter.pm).
var tokenHeader = regexp.MustCompile(`(?:^|\s)PVEAPIToken(?:=| )([^;]*)`)

// authenticate checks the Authorization header as pveproxy does: only API
// tokens (tickets are out of scope); 401 "No ticket" without credentials,
// 401 "Authentication failed!" with wrong ones.
func (s *Sim) authenticate(r *http.Request) (*principal, *apiError) {
	m := tokenHeader.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return nil, failStatus(http.StatusUnauthorized, "No ticket")
	}
	raw, err := url.QueryUnescape(m[1])
	if err != nil {
		raw = m[1]
	}
	at := strings.LastIndexByte(raw, '=')
	if at < 0 {
		return nil, failStatus(http.StatusUnauthorized, "Authentication failed!")
	}
	tokenID, secret := raw[:at], raw[at+1:]
	userid, name, ok := strings.Cut(tokenID, "!")
	if !ok {
		return nil, failStatus(http.StatusUnauthorized, "Authentication failed!")
	}
	u := s.st.users[userid]
	if u == nil || !u.enabled {
		return nil, failStatus(http.StatusUnauthorized, "Authentication failed!")
	}
	tok := u.tokens[name]
	if tok == nil || tok.secret != secret || (tok.expire != 0 && tok.expire < s.clock.Now().Unix()) {
		return nil, failStatus(http.StatusUnauthorized, "Authentication failed!")
	}
	return &principal{userid: userid, tokenid: tokenID, privsep: tok.privsep}, nil
}

// roles resolves the roles of a subject (user or token) on a path with
// PVE's rules: walk from / to the path; at each level a token's own entries
// win over the user's, a user's over its groups'; the deepest level with
// entries replaces what was inherited; entries apply at deeper levels only
// when they propagate; NoAccess wins.
func (st *state) roles(subject, path string) map[string]bool {
	if subject == "root@pam" {
		return map[string]bool{"Administrator": true}
	}
	isToken := strings.Contains(subject, "!")
	userid, _, _ := strings.Cut(subject, "!")
	u := st.users[userid]
	levels := aclLevels(path)
	roles := map[string]bool{}
	for i, level := range levels {
		final := i == len(levels)-1
		pick := func(match func(ugid string) bool) map[string]bool {
			var found map[string]bool
			for _, e := range st.acl {
				if e.path != level || !match(e.ugid) || (!final && !e.propagate) {
					continue
				}
				if found == nil {
					found = map[string]bool{}
				}
				found[e.role] = true
			}
			return found
		}
		if isToken {
			if found := pick(func(ugid string) bool { return ugid == subject }); found != nil {
				roles = found
			}
			continue
		}
		if found := pick(func(ugid string) bool { return ugid == userid }); found != nil {
			roles = found
			continue
		}
		if u != nil {
			if found := pick(func(ugid string) bool {
				g, isGroup := strings.CutPrefix(ugid, "@")
				return isGroup && slices.Contains(u.groups, g)
			}); found != nil {
				roles = found
			}
		}
	}
	if roles["NoAccess"] {
		return map[string]bool{"NoAccess": true}
	}
	return roles
}

// aclLevels lists /, /vms, /vms/100 for /vms/100.
func aclLevels(path string) []string {
	levels := []string{"/"}
	cur := ""
	for seg := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
		if seg == "" {
			continue
		}
		cur += "/" + seg
		levels = append(levels, cur)
	}
	return levels
}

// privs is the privilege set of a principal on a path. A privilege-separated
// token has its own ACL entries, limited to what its user has; any other
// token has its user's privileges. A guest in a pool also inherits the
// pool's ACL (/pool/<id>).
func (st *state) privs(p *principal, path string) map[string]bool {
	userPrivs := st.subjectPrivs(p.userid, path)
	if !p.privsep {
		return userPrivs
	}
	tokenPrivs := st.subjectPrivs(p.tokenid, path)
	out := map[string]bool{}
	for priv := range tokenPrivs {
		if userPrivs[priv] {
			out[priv] = true
		}
	}
	return out
}

func (st *state) subjectPrivs(subject, path string) map[string]bool {
	out := map[string]bool{}
	paths := []string{path}
	if vmid, ok := strings.CutPrefix(path, "/vms/"); ok {
		if g := st.guestByID(vmid); g != nil && g.pool != "" {
			paths = append(paths, "/pool/"+g.pool)
		}
	}
	for _, pth := range paths {
		for role := range st.roles(subject, pth) {
			for priv := range st.roleDefs[role] {
				out[priv] = true
			}
		}
	}
	return out
}

// checkPermission evaluates an endpoint's permission object for a call:
// "user": "all" admits any authenticated caller, no permission object means
// root@pam only, and a check expression is evaluated with the call's
// parameters filled into its paths.
func (s *Sim) checkPermission(p *principal, perms json.RawMessage, vars map[string]string) *apiError {
	if len(perms) == 0 {
		if p.userid == "root@pam" && !p.privsep {
			return nil
		}
		return failStatus(http.StatusForbidden, "Permission check failed (user != root@pam)")
	}
	var obj struct {
		Check json.RawMessage `json:"check"`
		User  string          `json:"user"`
	}
	if err := json.Unmarshal(perms, &obj); err != nil {
		return fail("internal error: permissions: %v", err)
	}
	if len(obj.Check) == 0 {
		return nil // "all", "world" or a description: the handler decides
	}
	var expr []any
	if err := json.Unmarshal(obj.Check, &expr); err != nil {
		return fail("internal error: check: %v", err)
	}
	ok, failPath, failPrivs := s.evalCheck(p, expr, vars)
	if ok {
		return nil
	}
	return failStatus(http.StatusForbidden, "Permission check failed (%s, %s)", failPath, strings.Join(failPrivs, "|"))
}

// evalCheck evaluates ["perm", path, [privs], "any", 1], ["and", …],
// ["or", …], ["userid-param", …], ["userid-group", [privs], …] and
// ["perm-modify", path]. It returns the path and privileges of the failing
// check for the 403 message.
func (s *Sim) evalCheck(p *principal, expr []any, vars map[string]string) (bool, string, []string) {
	if len(expr) == 0 {
		return false, "/", nil
	}
	op, _ := expr[0].(string)
	switch op {
	case "perm":
		path := fill(asString(expr, 1), vars)
		privs := asStrings(expr, 2)
		anyOf := len(expr) >= 5 && asString(expr, 3) == "any"
		have := s.st.privs(p, path)
		for _, priv := range privs {
			if have[priv] && anyOf {
				return true, "", nil
			}
			if !have[priv] && !anyOf {
				return false, path, []string{priv}
			}
		}
		if anyOf {
			return false, path, privs
		}
		return true, "", nil
	case "and":
		for _, sub := range expr[1:] {
			if e, ok := sub.([]any); ok {
				if ok, fp, fprivs := s.evalCheck(p, e, vars); !ok {
					return false, fp, fprivs
				}
			}
		}
		return true, "", nil
	case "or":
		var fp string
		var fprivs []string
		for _, sub := range expr[1:] {
			if e, ok := sub.([]any); ok {
				ok, path, privs := s.evalCheck(p, e, vars)
				if ok {
					return true, "", nil
				}
				fp, fprivs = path, append(fprivs, privs...)
			}
		}
		return false, fp, fprivs
	case "userid-param":
		if asString(expr, 1) == "self" && vars["userid"] == p.userid {
			return true, "", nil
		}
		have := s.st.privs(p, "/access/realm/"+realmOf(vars["userid"]))
		if have["Realm.AllocateUser"] {
			return true, "", nil
		}
		return false, "/access/realm", []string{"Realm.AllocateUser"}
	case "userid-group":
		privs := asStrings(expr, 1)
		have := s.st.privs(p, "/access/groups")
		for _, priv := range privs {
			if have[priv] {
				return true, "", nil
			}
		}
		return false, "/access/groups", privs
	case "perm-modify":
		path := fill(asString(expr, 1), vars)
		have := s.st.privs(p, path)
		if have["Permissions.Modify"] {
			return true, "", nil
		}
		return false, path, []string{"Permissions.Modify"}
	}
	return false, "/", []string{op}
}

func realmOf(userid string) string {
	_, realm, _ := strings.Cut(userid, "@")
	return realm
}

var templateVar = regexp.MustCompile(`\{([^}]+)\}`)

// fill substitutes {param} in a permission path.
func fill(path string, vars map[string]string) string {
	return templateVar.ReplaceAllStringFunc(path, func(m string) string {
		return vars[m[1:len(m)-1]]
	})
}

func asString(expr []any, i int) string {
	if i < len(expr) {
		if s, ok := expr[i].(string); ok {
			return s
		}
	}
	return ""
}

func asStrings(expr []any, i int) []string {
	if i >= len(expr) {
		return nil
	}
	list, _ := expr[i].([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// permissionsOf answers GET /access/permissions for the caller: for every
// ACL path (or the given one) the privileges and whether they propagate.
func (s *Sim) permissionsOf(p *principal, path string) map[string]map[string]int {
	paths := map[string]bool{"/": true}
	if path != "" {
		paths = map[string]bool{path: true}
	} else {
		for _, e := range s.st.acl {
			paths[e.path] = true
		}
	}
	out := map[string]map[string]int{}
	for pth := range paths {
		privs := s.st.privs(p, pth)
		if len(privs) == 0 {
			continue
		}
		m := map[string]int{}
		for priv := range privs {
			m[priv] = 1
		}
		out[pth] = m
	}
	return out
}

// grant adds an ACL entry after checking the role and subject exist.
func (st *state) grant(path, ugid, role string, propagate bool) error {
	if st.roleDefs[role] == nil {
		return fmt.Errorf("role '%s' does not exist", role)
	}
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("invalid ACL path '%s'", path)
	}
	st.acl = append(st.acl, aclEntry{path: path, ugid: ugid, role: role, propagate: propagate})
	return nil
}
