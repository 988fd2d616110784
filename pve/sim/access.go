package sim

import (
	"encoding/json"
	"errors"
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
	// unknown is a token that does not exist: it holds nothing.
	unknown bool
}

// principalOf is the subject an ID names, a user or a token, as
// RPCEnvironment::permissions resolves it.
func (st *state) principalOf(id string) *principal {
	userid, name, isToken := strings.Cut(id, "!")
	if !isToken {
		return &principal{userid: id}
	}
	p := &principal{userid: userid, tokenid: id, privsep: true, unknown: true}
	if u := st.users[userid]; u != nil {
		if tok := u.tokens[name]; tok != nil {
			p.privsep, p.unknown = tok.privsep, false
		}
	}
	return p
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
	if p.unknown || path == "" {
		return map[string]bool{}
	}
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

// checkPermission is RPCEnvironment::check_api2_permissions: "user":
// "world" or "all" admits any caller (world endpoints do not even need
// one), no permission object means root@pam only, a check expression is
// evaluated with the call's parameters filled into its paths, and anything
// else (a description alone) is refused. root@pam passes every check; an
// API token of root@pam is not root@pam, as in PVE, where the token ID is
// the authenticated user.
func (s *Sim) checkPermission(p *principal, perms json.RawMessage, vars map[string]string) *apiError {
	if p.isRoot() {
		return nil
	}
	if len(perms) == 0 {
		return permError("user != root@pam")
	}
	var obj struct {
		Check json.RawMessage `json:"check"`
		User  string          `json:"user"`
	}
	if err := json.Unmarshal(perms, &obj); err != nil {
		return fail("internal error: permissions: %v", err)
	}
	if obj.User == "all" || obj.User == "world" {
		return nil // the handler filters or checks in code
	}
	if len(obj.Check) == 0 {
		return permError("")
	}
	var expr []any
	if err := json.Unmarshal(obj.Check, &expr); err != nil {
		return fail("internal error: check: %v", err)
	}
	var ae *apiError
	if err := s.evalCheck(p, expr, vars); errors.As(err, &ae) {
		return ae
	} else if err != nil {
		return fail("%v", err)
	}
	return nil
}

// permError is raise_perm_exc: 403 "Permission check failed", followed by
// what failed in parentheses when PVE names it.
func permError(what string) *apiError {
	if what == "" {
		return failStatus(http.StatusForbidden, "Permission check failed")
	}
	return failStatus(http.StatusForbidden, "Permission check failed (%s)", what)
}

// isRoot is PVE's $authuser eq 'root@pam': only the user itself, never one
// of its tokens (every caller of the simulator is a token).
func (p *principal) isRoot() bool { return p.tokenid == "" && p.userid == "root@pam" }

// id is the authenticated user as PVE's RPC environment holds it: the
// token ID (user@realm!name) for a token.
func (p *principal) id() string {
	if p.tokenid != "" {
		return p.tokenid
	}
	return p.userid
}

// checkFull is RPCEnvironment::check_full: with any, one of the privileges
// (check_any, whose 403 names the path and all of them joined by "|");
// otherwise every one (check, whose 403 names the first missing). A path
// normalize_path refuses has no privileges at all.
func (st *state) checkFull(p *principal, path string, privs []string, any bool) error {
	have := st.privs(p, path)
	if any {
		for _, priv := range privs {
			if have[priv] {
				return nil
			}
		}
		return permError(path + ", " + strings.Join(privs, "|"))
	}
	for _, priv := range privs {
		if !have[priv] {
			return permError(path + ", " + priv)
		}
	}
	return nil
}

// evalCheck is RPCEnvironment::exec_api2_perm_check over ["perm", path,
// [privs], options…] (options any and require_param), ["and", …] (the
// first failing check answers), ["or", …] (a bare "Permission check
// failed" when none passes), ["userid-param", "self" | "Realm.AllocateUser"],
// ["userid-group", [privs], options…] and ["perm-modify", path]. It returns
// nil when the check passes.
func (s *Sim) evalCheck(p *principal, expr []any, vars map[string]string) error {
	if len(expr) == 0 {
		return errors.New("no permission test specified")
	}
	op, _ := expr[0].(string)
	switch op {
	case "and":
		for _, sub := range expr[1:] {
			e, _ := sub.([]any)
			if err := s.evalCheck(p, e, vars); err != nil {
				return err
			}
		}
		return nil
	case "or":
		for _, sub := range expr[1:] {
			e, _ := sub.([]any)
			if s.evalCheck(p, e, vars) == nil {
				return nil
			}
		}
		return permError("")
	case "perm":
		opts := checkOptions(expr, 3)
		if rp := opts["require_param"]; rp != "" && vars[rp] == "" {
			return permError("")
		}
		path := normalizePath(fill(asString(expr, 1), vars))
		return s.st.checkFull(p, path, asStrings(expr, 2), opts["any"] != "" && opts["any"] != "0")
	case "userid-param":
		userid := vars["userid"]
		switch asString(expr, 1) {
		case "self":
			if s.st.users[userid] == nil {
				return fail("no such user ('%s')", userid)
			}
			if p.id() == userid {
				return nil
			}
			return permError("")
		case "Realm.AllocateUser":
			return s.st.checkFull(p, "/access/realm/"+realmOf(userid), []string{"Realm.AllocateUser"}, false)
		}
		return fmt.Errorf("unknown userid-param test %q", asString(expr, 1))
	case "userid-group":
		return s.checkUseridGroup(p, asStrings(expr, 1), checkOptions(expr, 2), vars)
	case "perm-modify":
		path := normalizePath(fill(asString(expr, 1), vars))
		return s.st.checkPermModify(p, path)
	}
	return fmt.Errorf("unknown permission test %q", op)
}

// checkOptions reads the key, value pairs after a check's fixed elements
// (any => 1, require_param => 'pool', groups_param => 'create').
func checkOptions(expr []any, from int) map[string]string {
	out := map[string]string{}
	for i := from; i+1 < len(expr); i += 2 {
		k, _ := expr[i].(string)
		out[k] = fmt.Sprint(expr[i+1])
	}
	return out
}

// checkUseridGroup is the userid-group test: any of privs on
// /access/groups admits everything; otherwise each group named in the
// groups parameter (groups_param) must be one the caller holds a privilege
// on, and an existing user (unless groups_param is create) must be a
// member of such a group.
func (s *Sim) checkUseridGroup(p *principal, privs []string, opts map[string]string, vars map[string]string) error {
	userid := vars["userid"]
	checkExisting := opts["groups_param"] != "create"
	if checkExisting && s.st.users[userid] == nil {
		return fail("no such user ('%s')", userid)
	}
	if s.st.checkFull(p, "/access/groups", privs, true) == nil {
		return nil
	}
	allowed := map[string]bool{}
	for _, u := range s.st.users {
		for _, g := range u.groups {
			if s.st.checkFull(p, "/access/groups/"+g, privs, true) == nil {
				allowed[g] = true
			}
		}
	}
	if opts["groups_param"] != "" {
		named := splitList(vars["groups"])
		if len(named) == 0 {
			return permError("/access/groups, " + strings.Join(privs, "|"))
		}
		for _, g := range named {
			if !allowed[g] {
				return permError("/access/groups/" + g + ", " + strings.Join(privs, "|"))
			}
		}
	}
	if checkExisting {
		for _, g := range s.st.users[userid].groups {
			if allowed[g] {
				return nil
			}
		}
		return permError("")
	}
	return nil
}

// checkPermModify is RPCEnvironment::check_perm_modify: Permissions.Modify
// on /access without a path; on a path, Permissions.Modify or the
// allocation privilege of what the path names.
func (st *state) checkPermModify(p *principal, path string) error {
	if path == "" {
		return st.checkFull(p, "/access", []string{"Permissions.Modify"}, false)
	}
	privs := []string{"Permissions.Modify"}
	switch {
	case strings.HasPrefix(path, "/storage/"):
		privs = append(privs, "Datastore.Allocate")
	case strings.HasPrefix(path, "/vms/"):
		privs = append(privs, "VM.Allocate")
	case strings.HasPrefix(path, "/pool/"):
		privs = append(privs, "Pool.Allocate")
	}
	return st.checkFull(p, path, privs, true)
}

// normalizePath is AccessControl::normalize_path: repeated slashes
// collapse, a trailing one goes, and a path with other characters than
// letters, digits, '.', '-', '_' and '/' is no path ("").
func normalizePath(path string) string {
	if path == "" {
		return ""
	}
	for strings.Contains(path, "//") {
		path = strings.ReplaceAll(path, "//", "/")
	}
	path = strings.TrimSuffix(path, "/")
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	for _, c := range path {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("./-_", c)) {
			return ""
		}
	}
	return path
}

func realmOf(userid string) string {
	_, realm, _ := strings.Cut(userid, "@")
	return realm
}

var templateVar = regexp.MustCompile(`\{([^}]+)\}`)

// fill is Tools::template_replace: {param} becomes the call's value, or
// "-" when the call has none (or Perl's false, "0").
func fill(path string, vars map[string]string) string {
	return templateVar.ReplaceAllStringFunc(path, func(m string) string {
		if v := vars[m[1:len(m)-1]]; v != "" && v != "0" {
			return v
		}
		return "-"
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

// permissionsOf answers GET /access/permissions for a subject: for every
// ACL path where it holds something (or the given path) the privileges and
// whether they propagate.
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
		if len(privs) == 0 && path == "" {
			continue // an explicit path is answered even when empty
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
