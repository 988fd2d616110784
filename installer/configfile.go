package installer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/proxmox-mcp/proxmox-mcp/config"
)

// The configuration install writes is the operator's to edit. A re-run
// changes only the fields install owns, and only when they differ from
// what it would write: pve.tokens (its tokens), pve.ca_file and
// pve.fingerprint (how the daemon trusts pveproxy), and listen.lan and
// listen.tailnet when the mode or the listener options change. Comments
// and every other field are kept; the old file is kept beside it as
// config.hujson.bak-<UTC time>, and each change is shown.

// managed are the values install wants for the fields it owns.
type managed struct {
	caFile      string
	fingerprint string
	tokens      map[string]config.Token
	lan         *config.LAN // nil: no LAN listener
	lanExplicit bool
	tailnet     *config.Tailnet // nil: no Tailnet node
	tsExplicit  bool
}

// wanted is what install wants in the configuration.
func (r *run) wanted() managed {
	p := r.plan
	m := managed{caFile: r.caFile, fingerprint: r.fingerprint, tokens: map[string]config.Token{},
		lanExplicit: p.lanExplicit, tsExplicit: p.tsExplicit}
	for _, tr := range TierRoles() {
		m.tokens[tr.Tier] = config.Token{ID: tokenID(tr.Tier), SecretFile: tokenFile(tr.Tier)}
	}
	if p.mode.LAN() {
		m.lan = &config.LAN{Address: p.lanAddress, Names: p.lanNames}
	}
	if p.mode.Tailnet() {
		m.tailnet = &config.Tailnet{Hostname: p.tsHostname}
		if p.authKey != nil || r.sys.exists(AuthKeyFile) {
			m.tailnet.AuthKeyFile = AuthKeyFile
		}
	}
	return m
}

// freshConfig is the configuration of a new installation.
func (r *run) freshConfig(m managed) []byte {
	p := r.plan
	q := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("// proxmox-mcp on %s, written by `proxmox-mcp install` (mode %s).", p.hostname, p.mode)
	w("// Edit it freely: re-running install keeps it, changing only pve.tokens,")
	w("// pve.ca_file and pve.fingerprint, and listen when the mode or the listener")
	w("// options change (the old file is then kept as config.hujson.bak-<time>).")
	w("// Check it with: proxmox-mcp config validate %s", p.configFile)
	w("// Every field: docs/configuration.md")
	w("{")
	w(`  "version": 1,`)
	w(`  "state_dir": %s,`, q(p.stateDir))
	w("")
	w("  // A fresh install only reads. Once keys and policies are in place, set")
	w("  // allow_mutations to true and run `systemctl reload proxmox-mcp`.")
	w(`  "read_only": false,`)
	w(`  "allow_mutations": false,`)
	w("")
	w(`  "pve": {`)
	w(`    "url": "https://127.0.0.1:8006/api2/json",`)
	w("    // PVE's cluster CA, copied from %s (the daemon cannot read /etc/pve).", pveRootCA)
	w(`    "ca_file": %s,`, q(m.caFile))
	if m.fingerprint != "" {
		w("    // The custom certificate pveproxy serves, pinned: re-run install after it is renewed.")
		w(`    "fingerprint": %s,`, q(m.fingerprint))
	}
	w("    // One privilege-separated token per tier, each with its tier's PVE role.")
	w(`    "tokens": {`)
	for _, tr := range TierRoles() {
		t := m.tokens[tr.Tier]
		w(`      %s: {"id": %s, "secret_file": %s},`, q(tr.Tier), q(t.ID), q(t.SecretFile))
	}
	w("    },")
	w("  },")
	w("")
	w(`  "listen": {`)
	w(`    "loopback": {"address": %s},`, q(p.loopback))
	if m.lan != nil {
		w("    // TLS on a private address, certified by the local CA in pki.dir (docs/lan.md).")
		w(`    "lan": [%s],`, lanLiteral(*m.lan))
	}
	if m.tailnet != nil {
		w("    // The embedded Tailscale node (docs/exposure.md).")
		w(`    "tailnet": %s,`, tailnetLiteral(*m.tailnet))
	}
	w("  },")
	w(`  "pki": {"dir": %s},`, q(p.pkiDir))
	w(`  "log": {"level": "info"},`)
	w("}")
	// Formatted as every later patch formats it, so that a re-run changes
	// only what it changes.
	v, err := hujson.Parse([]byte(b.String()))
	if err != nil {
		return []byte(b.String()) // config.Parse reports it
	}
	v.Format()
	return v.Pack()
}

// quote is a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// lanLiteral and tailnetLiteral write the listener objects on one line,
// as a person would.
func lanLiteral(l config.LAN) string {
	s := `{"address": ` + quote(l.Address)
	if len(l.Names) > 0 {
		var names []string
		for _, n := range l.Names {
			names = append(names, quote(n))
		}
		s += `, "names": [` + strings.Join(names, ", ") + `]`
	}
	return s + "}"
}

func tailnetLiteral(t config.Tailnet) string {
	s := `{"hostname": ` + quote(t.Hostname)
	if t.AuthKeyFile != "" {
		s += `, "auth_key_file": ` + quote(t.AuthKeyFile)
	}
	return s + "}"
}

// lanJSON and tailnetJSON are the listener objects install writes.
func lanJSON(l config.LAN) json.RawMessage {
	v := map[string]any{"address": l.Address}
	if len(l.Names) > 0 {
		v["names"] = l.Names
	}
	b, _ := json.Marshal(v)
	return b
}

func tailnetJSON(t config.Tailnet) json.RawMessage {
	v := map[string]any{"hostname": t.Hostname}
	if t.AuthKeyFile != "" {
		v["auth_key_file"] = t.AuthKeyFile
	}
	b, _ := json.Marshal(v)
	return b
}

// patchOp is one RFC 6902 operation, with the change it makes in words.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
	says  string
}

// diffConfig lists the operations that bring an existing configuration to
// what install wants.
func diffConfig(doc map[string]any, m managed) []patchOp {
	var ops []patchOp
	get := func(obj map[string]any, key string) (any, bool) {
		if obj == nil {
			return nil, false
		}
		v, ok := obj[key]
		return v, ok
	}
	asObj := func(v any) map[string]any { o, _ := v.(map[string]any); return o }
	show := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	set := func(path string, obj map[string]any, key string, want any) {
		have, ok := get(obj, key)
		wantJSON, _ := json.Marshal(want)
		var wantAny any
		_ = json.Unmarshal(wantJSON, &wantAny)
		if ok && reflect.DeepEqual(have, wantAny) {
			return
		}
		was := "(absent)"
		if ok {
			was = show(have)
		}
		ops = append(ops, patchOp{Op: "add", Path: path, Value: json.RawMessage(wantJSON),
			says: fmt.Sprintf("%s: %s -> %s", dotted(path), was, string(wantJSON))})
	}
	del := func(path string, obj map[string]any, key, why string) {
		if have, ok := get(obj, key); ok {
			ops = append(ops, patchOp{Op: "remove", Path: path, says: fmt.Sprintf("%s: %s removed (%s)", dotted(path), show(have), why)})
		}
	}
	pveV, hasPVE := get(doc, "pve")
	pve := asObj(pveV)
	if !hasPVE {
		ops = append(ops, patchOp{Op: "add", Path: "/pve", Value: json.RawMessage(`{}`), says: "pve: added"})
	}
	set("/pve/ca_file", pve, "ca_file", m.caFile)
	if m.fingerprint != "" {
		set("/pve/fingerprint", pve, "fingerprint", m.fingerprint)
	} else {
		del("/pve/fingerprint", pve, "fingerprint", "pveproxy serves no custom certificate: pve.ca_file verifies it")
	}
	if cf, _ := get(pve, "cert_file"); cf != nil {
		if s, _ := cf.(string); strings.HasPrefix(s, "/etc/pve/") {
			del("/pve/cert_file", pve, "cert_file", "the daemon's user cannot read /etc/pve; pve.ca_file verifies pveproxy")
		}
	}
	tokens := map[string]any{}
	for tier, t := range m.tokens {
		tokens[tier] = map[string]any{"id": t.ID, "secret_file": t.SecretFile}
	}
	set("/pve/tokens", pve, "tokens", tokens)

	listenV, hasListen := get(doc, "listen")
	listen := asObj(listenV)
	if !hasListen && (m.lan != nil || m.tailnet != nil) {
		ops = append(ops, patchOp{Op: "add", Path: "/listen", Value: json.RawMessage(`{}`), says: "listen: added"})
	}
	lanV, hasLAN := get(listen, "lan")
	lans, _ := lanV.([]any)
	switch {
	case m.lan == nil:
		del("/listen/lan", listen, "lan", "the mode has no LAN listener")
	case !hasLAN || len(lans) == 0:
		set("/listen/lan", listen, "lan", []json.RawMessage{lanJSON(*m.lan)})
	case m.lanExplicit:
		first := asObj(lans[0])
		set("/listen/lan/0/address", first, "address", m.lan.Address)
		if len(m.lan.Names) > 0 {
			set("/listen/lan/0/names", first, "names", m.lan.Names)
		}
	}
	tnV, hasTN := get(listen, "tailnet")
	tn := asObj(tnV)
	switch {
	case m.tailnet == nil:
		del("/listen/tailnet", listen, "tailnet", "the mode has no Tailnet node")
	case !hasTN:
		set("/listen/tailnet", listen, "tailnet", tailnetJSON(*m.tailnet))
	default:
		if m.tsExplicit {
			set("/listen/tailnet/hostname", tn, "hostname", m.tailnet.Hostname)
		}
		if have, _ := get(tn, "auth_key_file"); m.tailnet.AuthKeyFile != "" && (have == nil || have == AuthKeyFile) {
			set("/listen/tailnet/auth_key_file", tn, "auth_key_file", m.tailnet.AuthKeyFile)
		}
	}
	return ops
}

// dotted turns a JSON pointer into a field name: /listen/lan/0 is listen.lan[0].
func dotted(ptr string) string {
	var b strings.Builder
	for i, part := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if part != "" && strings.Trim(part, "0123456789") == "" {
			b.WriteString("[" + part + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}

// patchConfig applies ops to HuJSON text, keeping its comments.
func patchConfig(raw []byte, ops []patchOp) ([]byte, error) {
	// The value aliases its input and Format rewrites it: work on a copy.
	v, err := hujson.Parse(bytes.Clone(raw))
	if err != nil {
		return nil, err
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	if err := v.Patch(patch); err != nil {
		return nil, err
	}
	v.Format()
	return v.Pack(), nil
}

func applyConfig(_ context.Context, r *run) error {
	p := r.plan
	s := r.sys
	m := r.wanted()
	if p.existing == nil {
		data := r.freshConfig(m)
		// config.Parse standardizes its input in place: give it a copy.
		if _, err := config.Parse(p.configFile, bytes.Clone(data)); err != nil {
			return fmt.Errorf("installer: the configuration it would write is invalid (a bug): %w", err)
		}
		c, err := s.writeFile(p.configFile, data, 0o640, confOwner)
		if err != nil {
			return err
		}
		r.report(c, p.configFile+" (root:"+ServiceUser+" 0640)")
		if err := r.createdFile(p.configFile); err != nil {
			return err
		}
		p.existing, _ = config.Parse(p.configFile, bytes.Clone(data))
		p.existingRaw = data
		return nil
	}
	std, err := hujson.Standardize(bytes.Clone(p.existingRaw))
	if err != nil {
		return fmt.Errorf("%s: %w", p.configFile, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(std, &doc); err != nil {
		return fmt.Errorf("%s: %w", p.configFile, err)
	}
	ops := diffConfig(doc, m)
	if len(ops) == 0 {
		c, err := s.ensureAttrs(p.configFile, 0o640, confOwner)
		if err != nil {
			return err
		}
		r.report(c, p.configFile)
		r.say("  kept %s as it is", p.configFile)
		return nil
	}
	data, err := patchConfig(p.existingRaw, ops)
	if err != nil {
		return fmt.Errorf("%s: cannot apply install's changes (%w): move it away and re-run to get a fresh one", p.configFile, err)
	}
	cfg, err := config.Parse(p.configFile, bytes.Clone(data))
	if err != nil {
		return fmt.Errorf("%s: with install's changes it would not be valid (%w): fix it or move it away and re-run", p.configFile, err)
	}
	backup := p.configFile + ".bak-" + s.Now().UTC().Format("20060102T150405Z")
	if _, err := s.writeFile(backup, p.existingRaw, 0o640, confOwner); err != nil {
		return err
	}
	if err := r.createdFile(backup); err != nil {
		return err
	}
	if _, err := s.writeFile(p.configFile, data, 0o640, confOwner); err != nil {
		return err
	}
	r.say("  updated %s (the old one is %s):", p.configFile, filepath.Base(backup))
	for _, op := range ops {
		r.say("    %s", op.says)
	}
	p.existing, p.existingRaw = cfg, data
	return nil
}

// createdFile records a file install made, unless it is inside a
// directory install made (which goes as a whole).
func (r *run) createdFile(path string) error {
	if r.state == nil {
		return nil
	}
	for _, d := range r.state.Created.Dirs {
		if strings.HasPrefix(path, d+"/") {
			return nil
		}
	}
	return r.created(func(c *Created) { c.Files = addUnique(c.Files, path) })
}

// currentConfig reads the configuration as it is now, or nil.
func (r *run) currentConfig() *config.Config {
	data, err := r.sys.readFile(r.plan.configFile)
	if err != nil {
		return nil
	}
	c, err := config.Parse(r.plan.configFile, bytes.Clone(data))
	if err != nil {
		return nil
	}
	return c
}

func checkConfigFile(_ context.Context, r *run) []Problem {
	p := r.plan
	data, err := r.sys.readFile(p.configFile)
	if err != nil {
		return []Problem{{What: p.configFile + " is missing", Fix: "proxmox-mcp install (writes a fresh one)"}}
	}
	probs := r.sys.checkAttrs(p.configFile, false, 0o640, confOwner, "proxmox-mcp install")
	cfg, err := config.Parse(p.configFile, bytes.Clone(data))
	if err != nil {
		return append(probs, Problem{What: err.Error(), Fix: "fix the field it names (proxmox-mcp config validate " + p.configFile + ")"})
	}
	for _, tr := range TierRoles() {
		t, ok := cfg.PVE.Tokens[tr.Tier]
		if !ok || t.ID != tokenID(tr.Tier) || t.SecretFile != tokenFile(tr.Tier) {
			probs = append(probs, Problem{
				What: fmt.Sprintf("pve.tokens.%s is not install's token %s with %s", tr.Tier, tokenID(tr.Tier), tokenFile(tr.Tier)),
				Fix:  "proxmox-mcp install (sets it again, keeping the rest of the file)",
			})
		}
	}
	if have := modeOf(cfg); have != p.mode {
		probs = append(probs, Problem{
			What: fmt.Sprintf("the listeners in %s amount to mode %s, but the units were installed for mode %s (the units' network rules differ per mode)", p.configFile, have, p.mode),
			Fix:  fmt.Sprintf("proxmox-mcp install --mode %s", have),
		})
	}
	return probs
}
