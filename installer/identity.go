package installer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// TierRole is the PVE roles one tier's token holds on /, propagated.
type TierRole struct {
	Tier  string
	Roles []string
}

// TierRoles are the narrowest PVE roles each tier needs. A
// privilege-separated token has the intersection of its own ACLs and its
// user's, so PVE itself refuses what the tier's profile never allows, and
// PVE's task log names the tier's token.
//
//   - read-only: PVEAuditor, the .Audit privilege of every category (VM,
//     Sys, Datastore, SDN, Pool, Mapping): reads, nothing else.
//   - operator: PVEAuditor for the same reads, plus PMCPOperator:
//     VM.PowerMgmt (start, stop, reboot, suspend), VM.Snapshot and
//     VM.Snapshot.Rollback, VM.Backup and Datastore.AllocateSpace (vzdump
//     writes the backup to a storage), and VM.GuestAgent.Unrestricted, which
//     PVE 9 asks of the guest agent's exec and exec-status
//     (proxmox_guest_exec, which the profile allows with confirmation; the
//     profile refuses the agent's other calls through the API). PVE's
//     PVEVMUser would add consoles, CD-ROM and cloud-init changes and
//     guest-agent file access the profile refuses, and lacks snapshots,
//     which it allows.
//   - admin: Administrator. The admin profile allows every API call (node
//     power, network, packages, certificates, permissions), so a narrower
//     role such as PVEAdmin (no Sys.Modify, Sys.PowerMgmt or
//     Permissions.Modify) would make PVE refuse calls the policy allowed.
//     What separates admin from root is in the policy (no host shell, no
//     break-glass), and PVE's own boundary for both is the token: no
//     root@pam-only endpoint, and the task log names the tier.
//   - root: Administrator, every privilege.
func TierRoles() []TierRole {
	return []TierRole{
		{"read-only", []string{"PVEAuditor"}},
		{"operator", []string{"PVEAuditor", OperatorRole}},
		{"admin", []string{"Administrator"}},
		{"root", []string{"Administrator"}},
	}
}

// OperatorPrivileges are the privileges of the PMCPOperator role.
func OperatorPrivileges() []string {
	return []string{"Datastore.AllocateSpace", "VM.Backup", "VM.GuestAgent.Unrestricted", "VM.PowerMgmt", "VM.Snapshot", "VM.Snapshot.Rollback"}
}

// userRole is the PVE user's own role on /: the ceiling of its tokens,
// which must reach the root tier's Administrator. The user has no password
// and is used through its tokens only.
const userRole = "Administrator"

const pveUserComment = "proxmox-mcp daemon: API tokens only (managed by proxmox-mcp install)"

// flexBool reads PVE's booleans, which pveum prints as 0/1, "0"/"1" or
// true/false depending on the field.
type flexBool bool

func (b *flexBool) UnmarshalJSON(data []byte) error {
	switch strings.Trim(string(data), `"`) {
	case "1", "true":
		*b = true
	case "0", "false", "", "null":
		*b = false
	default:
		return fmt.Errorf("%s is not a PVE boolean", data)
	}
	return nil
}

type pveUserEntry struct {
	UserID string `json:"userid"`
}

type pveRoleEntry struct {
	RoleID string `json:"roleid"`
	Privs  string `json:"privs"`
}

type pveACLEntry struct {
	Path      string    `json:"path"`
	RoleID    string    `json:"roleid"`
	Type      string    `json:"type"`
	UGID      string    `json:"ugid"`
	Propagate *flexBool `json:"propagate"`
}

type pveTokenEntry struct {
	TokenID string   `json:"tokenid"`
	Privsep flexBool `json:"privsep"`
}

type pveNewToken struct {
	FullTokenID string `json:"full-tokenid"`
	Value       string `json:"value"`
}

// pveum runs pveum and decodes its JSON output into v.
func (r *run) pveumJSON(ctx context.Context, v any, args ...string) error {
	out, err := r.sys.run(ctx, Cmd{Name: "pveum", Args: append(args, "--output-format", "json")})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), v); err != nil {
		return fmt.Errorf("pveum %s: unexpected output: %w", strings.Join(args, " "), err)
	}
	return nil
}

func (r *run) pveum(ctx context.Context, args ...string) error {
	_, err := r.sys.run(ctx, Cmd{Name: "pveum", Args: args})
	return err
}

// alreadyExists is pveum's answer to creating what exists.
func alreadyExists(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

// pveIdentity is what PVE has of the daemon's identity.
type pveIdentity struct {
	userExists bool
	role       *pveRoleEntry
	tokens     map[string]pveTokenEntry
	acl        []pveACLEntry
}

// readIdentity asks pveum about the user, the role, the tokens and the
// ACLs.
func (r *run) readIdentity(ctx context.Context) (*pveIdentity, error) {
	id := &pveIdentity{tokens: map[string]pveTokenEntry{}}
	var users []pveUserEntry
	if err := r.pveumJSON(ctx, &users, "user", "list"); err != nil {
		return nil, err
	}
	id.userExists = slices.ContainsFunc(users, func(u pveUserEntry) bool { return u.UserID == PVEUser })
	var roles []pveRoleEntry
	if err := r.pveumJSON(ctx, &roles, "role", "list"); err != nil {
		return nil, err
	}
	for i := range roles {
		if roles[i].RoleID == OperatorRole {
			id.role = &roles[i]
		}
	}
	if id.userExists {
		var toks []pveTokenEntry
		if err := r.pveumJSON(ctx, &toks, "user", "token", "list", PVEUser); err != nil {
			return nil, err
		}
		for _, t := range toks {
			id.tokens[t.TokenID] = t
		}
	}
	if err := r.pveumJSON(ctx, &id.acl, "acl", "list"); err != nil {
		return nil, err
	}
	return id, nil
}

// privList is a role's privileges, sorted, as pveum takes them.
func privList(s string) []string {
	out := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
	slices.Sort(out)
	return out
}

// rolesOn are the roles a subject holds on /, with propagation.
func (id *pveIdentity) rolesOn(ugid string) []string {
	var out []string
	for _, e := range id.acl {
		if e.Path == "/" && e.UGID == ugid && (e.Propagate == nil || bool(*e.Propagate)) {
			out = append(out, e.RoleID)
		}
	}
	slices.Sort(out)
	return out
}

// secretPresent says whether a token's secret file holds something.
func (r *run) secretPresent(tier string) bool {
	data, err := r.sys.readFile(tokenFile(tier))
	return err == nil && len(bytes.TrimSpace(data)) > 0
}

func applyIdentity(ctx context.Context, r *run) error {
	id, err := r.readIdentity(ctx)
	if err != nil {
		return err
	}
	if !id.userExists {
		err := r.pveum(ctx, "user", "add", PVEUser, "--comment", pveUserComment)
		switch {
		case alreadyExists(err):
		case err != nil:
			return err
		default:
			r.say("  created the PVE user %s (no password: it is used through its tokens only)", PVEUser)
			if err := r.created(func(c *Created) { c.PVEUser = PVEUser }); err != nil {
				return err
			}
		}
	}
	privs := strings.Join(OperatorPrivileges(), ",")
	switch {
	case id.role == nil:
		err := r.pveum(ctx, "role", "add", OperatorRole, "--privs", privs)
		switch {
		case alreadyExists(err):
		case err != nil:
			return err
		default:
			r.say("  created the PVE role %s (%s)", OperatorRole, privs)
			if err := r.created(func(c *Created) { c.PVERole = OperatorRole }); err != nil {
				return err
			}
		}
	case !slices.Equal(privList(id.role.Privs), OperatorPrivileges()):
		if err := r.pveum(ctx, "role", "modify", OperatorRole, "--privs", privs); err != nil {
			return err
		}
		r.say("  updated the PVE role %s: %s (it was %s)", OperatorRole, privs, id.role.Privs)
	}
	for _, tr := range TierRoles() {
		if err := r.ensureToken(ctx, id, tr.Tier); err != nil {
			return err
		}
	}
	// The ACLs are read again: removing a token may have dropped its own.
	if err := r.pveumJSON(ctx, &id.acl, "acl", "list"); err != nil {
		return err
	}
	if err := r.ensureACL(ctx, id, "--users", PVEUser, []string{userRole}); err != nil {
		return err
	}
	for _, tr := range TierRoles() {
		if err := r.ensureACL(ctx, id, "--tokens", tokenID(tr.Tier), tr.Roles); err != nil {
			return err
		}
	}
	return nil
}

// ensureToken keeps a tier's token when its secret is on disk, and
// otherwise creates it (again) and stores the secret at once: PVE shows a
// token's secret only when it is created.
func (r *run) ensureToken(ctx context.Context, id *pveIdentity, tier string) error {
	file := tokenFile(tier)
	tok, exists := id.tokens[tier]
	present := r.secretPresent(tier)
	switch {
	case exists && present && bool(tok.Privsep):
		if _, err := r.sys.ensureAttrs(file, 0o600, svcOwner); err != nil {
			return err
		}
		r.say("  kept the token %s (its secret is in %s)", tokenID(tier), file)
		return nil
	case exists:
		why := "its secret file " + file + " is gone, and PVE shows a secret only once"
		if !tok.Privsep {
			why = "it is not privilege-separated, so it would have all of " + PVEUser + "'s privileges"
		}
		if err := r.pveum(ctx, "user", "token", "remove", PVEUser, tier); err != nil {
			return err
		}
		r.say("  removed the token %s: %s; creating it again", tokenID(tier), why)
	}
	out, err := r.sys.run(ctx, Cmd{
		Name: "pveum", SecretOutput: true,
		Args: []string{"user", "token", "add", PVEUser, tier, "--privsep", "1", "--comment", "proxmox-mcp " + tier + " tier", "--output-format", "json"},
	})
	if err != nil {
		return err
	}
	var nt pveNewToken
	if err := json.Unmarshal(bytes.TrimSpace(out), &nt); err != nil || nt.Value == "" {
		return fmt.Errorf("pveum user token add %s %s: the output holds no token value; remove the token (pveum user token remove %s %s) and re-run",
			PVEUser, tier, PVEUser, tier)
	}
	if _, err := r.sys.writeFile(file, []byte(nt.Value+"\n"), 0o600, svcOwner); err != nil {
		return fmt.Errorf("the token %s was created but its secret could not be stored (%w); re-run install: it removes the token and creates it again",
			tokenID(tier), err)
	}
	r.say("  created the token %s (privilege-separated); its secret is in %s (%s 0600)", tokenID(tier), file, svcOwner)
	return r.created(func(c *Created) { c.PVETokens = addUnique(c.PVETokens, tier) })
}

// ensureACL gives a subject exactly its roles on /, propagated: missing
// ones are added, others it holds on / are removed (these tokens and this
// user are install's own).
func (r *run) ensureACL(ctx context.Context, id *pveIdentity, kind, subject string, roles []string) error {
	have := id.rolesOn(subject)
	var missing []string
	for _, role := range roles {
		if !slices.Contains(have, role) {
			missing = append(missing, role)
		}
	}
	if len(missing) > 0 {
		if err := r.pveum(ctx, "acl", "modify", "/", kind, subject, "--roles", strings.Join(missing, ","), "--propagate", "1"); err != nil {
			return err
		}
		r.say("  granted %s the role %s on /", subject, strings.Join(missing, ", "))
	}
	var extra []string
	for _, e := range id.acl {
		if e.Path == "/" && e.UGID == subject && !slices.Contains(roles, e.RoleID) && !slices.Contains(extra, e.RoleID) {
			extra = append(extra, e.RoleID)
		}
	}
	if len(extra) > 0 {
		if err := r.pveum(ctx, "acl", "delete", "/", kind, subject, "--roles", strings.Join(extra, ",")); err != nil {
			return err
		}
		r.say("  removed the role %s on / from %s (not its tier's)", strings.Join(extra, ", "), subject)
	}
	return nil
}

func checkIdentity(ctx context.Context, r *run) []Problem {
	const fix = "proxmox-mcp install"
	id, err := r.readIdentity(ctx)
	if err != nil {
		return []Problem{{What: "cannot read PVE's users, roles and ACLs: " + err.Error(), Fix: "run doctor as root on the PVE node (pveum must work)"}}
	}
	var probs []Problem
	if !id.userExists {
		return []Problem{{What: "the PVE user " + PVEUser + " does not exist", Fix: fix + " (creates it with its tokens)"}}
	}
	if id.role == nil {
		probs = append(probs, Problem{What: "the PVE role " + OperatorRole + " does not exist", Fix: fix})
	} else if !slices.Equal(privList(id.role.Privs), OperatorPrivileges()) {
		probs = append(probs, Problem{
			What: fmt.Sprintf("the PVE role %s has %s, want %s", OperatorRole, id.role.Privs, strings.Join(OperatorPrivileges(), ",")),
			Fix:  fix,
		})
	}
	if have := id.rolesOn(PVEUser); !slices.Equal(have, []string{userRole}) {
		probs = append(probs, Problem{What: fmt.Sprintf("%s holds %v on /, want [%s]", PVEUser, have, userRole), Fix: fix})
	}
	stored := r.storedTokenSecrets()
	for _, tr := range TierRoles() {
		tid := tokenID(tr.Tier)
		tok, ok := id.tokens[tr.Tier]
		switch {
		case !ok:
			probs = append(probs, Problem{What: "the PVE token " + tid + " does not exist", Fix: fix + " (creates it and stores its secret)"})
			continue
		case !bool(tok.Privsep):
			probs = append(probs, Problem{What: "the PVE token " + tid + " is not privilege-separated: it has all of " + PVEUser + "'s privileges", Fix: fix + " (creates it again, separated)"})
		}
		want := slices.Sorted(slices.Values(tr.Roles))
		if have := id.rolesOn(tid); !slices.Equal(have, want) {
			probs = append(probs, Problem{What: fmt.Sprintf("the token %s holds %v on /, want %v", tid, have, want), Fix: fix})
		}
		file := tokenFile(tr.Tier)
		if !r.secretPresent(tr.Tier) {
			probs = append(probs, Problem{What: "the secret of " + tid + " (" + file + ") is missing or empty", Fix: fix + " (removes the token and creates it again)"})
			continue
		}
		probs = append(probs, r.sys.checkAttrs(file, false, 0o600, svcOwner, fix)...)
		if want, ok := stored[tid]; ok {
			data, _ := r.sys.readFile(file)
			if strings.TrimSpace(string(data)) != want {
				probs = append(probs, Problem{
					What: fmt.Sprintf("%s does not hold the secret of %s (PVE has another): the daemon's calls with it fail with 401", file, tid),
					Fix:  "rm " + file + " && proxmox-mcp install (creates the token again)",
				})
			}
		}
	}
	return probs
}

// storedTokenSecrets reads PVE's token secrets (/etc/pve/priv/token.cfg,
// root-only: "user@realm!name secret" per line), to tell whether the
// secret files still match; nil when it cannot be read.
func (r *run) storedTokenSecrets() map[string]string {
	data, err := r.sys.readFile(pveTokenStore)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.HasPrefix(f[0], PVEUser+"!") {
			out[f[0]] = f[1]
		}
	}
	return out
}

// removeIdentity deletes what install created in PVE: its tokens' ACLs and
// tokens, the user (PVE removes the user's own ACLs with it) and the role.
func (r *run) removeIdentity(ctx context.Context, c *Created) error {
	if c.PVEUser == "" && c.PVERole == "" && len(c.PVETokens) == 0 {
		return nil
	}
	id, err := r.readIdentity(ctx)
	if err != nil {
		return err
	}
	for _, tier := range slices.Clone(c.PVETokens) {
		tid := tokenID(tier)
		if roles := id.rolesOn(tid); len(roles) > 0 {
			if err := r.pveum(ctx, "acl", "delete", "/", "--tokens", tid, "--roles", strings.Join(roles, ",")); err != nil {
				return err
			}
		}
		if _, ok := id.tokens[tier]; ok && c.PVEUser == "" {
			if err := r.pveum(ctx, "user", "token", "remove", PVEUser, tier); err != nil {
				return err
			}
			r.say("  removed the PVE token %s", tid)
		}
		c.PVETokens = removeValue(c.PVETokens, tier)
		if err := r.persist(); err != nil {
			return err
		}
	}
	if c.PVEUser != "" {
		if id.userExists {
			if err := r.pveum(ctx, "user", "delete", PVEUser); err != nil {
				return err
			}
			r.say("  removed the PVE user %s with its tokens", PVEUser)
		}
		c.PVEUser = ""
		if err := r.persist(); err != nil {
			return err
		}
	}
	if c.PVERole != "" {
		if id.role != nil {
			if err := r.pveum(ctx, "role", "delete", OperatorRole); err != nil {
				return err
			}
			r.say("  removed the PVE role %s", OperatorRole)
		}
		c.PVERole = ""
		if err := r.persist(); err != nil {
			return err
		}
	}
	return nil
}
