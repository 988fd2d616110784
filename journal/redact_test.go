package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

func testRedactor(t testing.TB) *Redactor {
	t.Helper()
	r, err := NewRedactor([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const (
	pmcpKey    = "pmcp_abcdefghijklmnop_Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg"
	tokenUUID  = "5f0c3c3e-2a4b-4f7e-9c1d-0a1b2c3d4e5f"
	pveTicket  = "PVE:root@pam:6740A1B2::dGhpcyBpcyBhIHNpZ25hdHVyZSBvZiB0aGUgdGlja2V0Cg=="
	privateKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----"
)

var marker = regexp.MustCompile(`^\[redacted hmac:[0-9a-f]{12}\]$`)

func TestSecretParam(t *testing.T) {
	cases := []struct {
		path, name string
		secret     bool
	}{
		{"", "password", true},
		{"", "cipassword", true},
		{"", "confirmation-password", true},
		{"", "Password", true},
		{"", "smtp_password", true},
		{"", "bind-passwd", true},
		{"", "secret", true},
		{"", "client-secret", true},
		{"", "token", true},
		{"", "lock-token", true},
		{"", "key", true},
		{"", "keyring", true},
		{"", "encryption-key", true},
		{"", "client-key", true},
		{"", "eab-hmac-key", true},
		{"", "otp", true},
		{"", "totp", true},
		{"", "tfa-challenge", true},
		{"", "private-key", true},
		{"", "generate-password", true},
		{"/access/tfa/{userid}", "value", true},
		{"/access/tfa", "value", true},
		{"/cluster/acme/plugins", "data", true},
		{"/cluster/acme/plugins/{id}", "data", true},
		// Kept.
		{"/cluster/ceph/flags/{flag}", "value", false},
		{"/nodes/{node}/hosts", "data", false},
		{"", "sshkeys", false},
		{"", "ssh-public-keys", false},
		{"", "master-pubkey", false},
		{"", "public-key-type", false},
		{"", "tokenid", false},
		{"", "full-tokenid", false},
		{"", "tokens", false},
		{"", "keys", false},
		{"", "certkey", false},
		{"", "privs", false},
		{"", "privsep", false},
		{"", "keyboard", false},
		{"", "memory", false},
		{"", "digest", false},
	}
	for _, tc := range cases {
		if got := SecretParam(tc.path, tc.name); got != tc.secret {
			t.Errorf("SecretParam(%q, %q) = %v, want %v", tc.path, tc.name, got, tc.secret)
		}
	}
}

func TestRedactText(t *testing.T) {
	r := testRedactor(t)
	cases := []struct {
		name, in string
		keep     []string // must survive
		gone     []string // must not
	}{
		{"our key", "Authorization: Bearer " + pmcpKey, []string{"Bearer pmcp_abcdefghijklmnop_[redacted hmac:"}, []string{"Zm9vYmFy"}},
		{"a PVE token header", "PVEAPIToken=pmcp@pve!operator=" + tokenUUID, []string{"PVEAPIToken=pmcp@pve!operator=[redacted hmac:"}, []string{tokenUUID}},
		{"a PVE token with a colon", "token root@pam!ci:" + tokenUUID + " refused", []string{"root@pam!ci:[redacted hmac:", " refused"}, []string{tokenUUID}},
		{"a UUID named as a token", "401 token " + tokenUUID + ", secret: " + tokenUUID, []string{"401 token [redacted hmac:", ", secret: [redacted hmac:"}, []string{tokenUUID}},
		{"a plain UUID is kept", "vmgenid " + tokenUUID, []string{tokenUUID}, nil},
		{"a PVE ticket", "PVEAuthCookie=" + pveTicket + "; path=/", []string{"PVEAuthCookie=[redacted hmac:", "; path=/"}, []string{"dGhpcyBp"}},
		{"an otpauth URI", "totp otpauth://totp/pve:alice?secret=JBSWY3DPEHPK3PXP&issuer=pve", []string{"totp [redacted hmac:"}, []string{"JBSWY3DP"}},
		{"a PEM private key", "key:\n" + privateKey + "\nend", []string{"key:\n[redacted hmac:", "\nend"}, []string{"b3BlbnNz"}},
		{"a URL-encoded private key", "ssh-ed25519 AAAA%0A-----BEGIN%20OPENSSH%20PRIVATE%20KEY-----%0Ab3BlbnNz%0A-----END%20OPENSSH%20PRIVATE%20KEY-----",
			[]string{"ssh-ed25519 AAAA%0A[redacted hmac:"}, []string{"b3BlbnNz"}},
		{"a truncated PEM key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow", []string{"[redacted hmac:"}, []string{"MIIEow"}},
		{"a property string", "name=hook,password=s3cret,url=https://x", []string{"name=hook,password=[redacted hmac:", ",url=https://x"}, []string{"s3cret"}},
		{"a query string", "user=a&client-secret=abc123&x=1", []string{"user=a&client-secret=[redacted hmac:", "&x=1"}, []string{"abc123"}},
		{"a harmless property string", "virtio=BC:24:11:00:00:01,bridge=vmbr0", []string{"virtio=BC:24:11:00:00:01,bridge=vmbr0"}, nil},
		{"plain text", "storage 'local' does not exist", []string{"storage 'local' does not exist"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Text(tc.in)
			for _, k := range tc.keep {
				if !strings.Contains(got, k) {
					t.Errorf("Text(%q) = %q, lost %q", tc.in, got, k)
				}
			}
			for _, g := range tc.gone {
				if strings.Contains(got, g) {
					t.Errorf("Text(%q) = %q, kept %q", tc.in, got, g)
				}
			}
		})
	}
}

func TestRedactArguments(t *testing.T) {
	r := testRedactor(t)
	args := map[string]any{
		"method": "POST",
		"path":   "/nodes/pve1/qemu/100/config",
		"params": map[string]any{
			"cipassword":   "hunter2",
			"sshkeys":      "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAI%20alice%40laptop",
			"memory":       4096,
			"net0":         "virtio,bridge=vmbr0",
			"nested":       []any{map[string]any{"token": "t0k3n", "name": "n"}, "Bearer " + pmcpKey},
			"description":  `{"password":"inner","note":"keep"}`,
			"empty-secret": "",
			"secret":       map[string]any{"a": 1},
			"flag-secret":  true,
		},
	}
	orig, _ := json.Marshal(args)
	out, err := r.JSON("/nodes/{node}/qemu/{vmid}/config", args)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(args); !bytes.Equal(orig, after) {
		t.Errorf("the caller's arguments were modified")
	}
	for _, s := range []string{"hunter2", "t0k3n", "Zm9vYmFy", "inner"} {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("%q survived: %s", s, out)
		}
	}
	var got struct {
		Method string
		Params map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Params
	for _, k := range []string{"cipassword", "secret"} {
		if s, _ := p[k].(string); !marker.MatchString(s) {
			t.Errorf("%s = %v, want a marker", k, p[k])
		}
	}
	if p["sshkeys"] != "ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAI%20alice%40laptop" || p["memory"] != float64(4096) ||
		p["net0"] != "virtio,bridge=vmbr0" || p["empty-secret"] != "" || p["flag-secret"] != true || got.Method != "POST" {
		t.Errorf("kept values changed: %s", out)
	}
	nested := p["nested"].([]any)
	if s := nested[0].(map[string]any)["token"].(string); !marker.MatchString(s) || nested[0].(map[string]any)["name"] != "n" {
		t.Errorf("nested = %v", nested)
	}
	if s := nested[1].(string); !strings.HasPrefix(s, "Bearer pmcp_abcdefghijklmnop_[redacted hmac:") {
		t.Errorf("nested key = %q", s)
	}
	if d := p["description"].(string); !strings.Contains(d, `"note":"keep"`) || !strings.Contains(d, `"password":"[redacted hmac:`) {
		t.Errorf("JSON inside a string = %q", d)
	}
	// Numbers keep their exact text.
	out, err = r.JSON("", json.RawMessage(`{"vmid": 12345678901234567890, "ratio": 0.10}`))
	if err != nil || string(out) != `{"ratio":0.10,"vmid":12345678901234567890}` {
		t.Errorf("numbers = %s, %v", out, err)
	}
}

// The same secret gives the same marker (calls can be correlated); another
// secret, or another journal's salt, gives another.
func TestMarkers(t *testing.T) {
	r := testRedactor(t)
	other, err := NewRedactor([]byte("another salt, 32 bytes long....."))
	if err != nil {
		t.Fatal(err)
	}
	a, b := r.Marker("hunter2"), r.Marker("hunter2")
	if a != b || !marker.MatchString(a) {
		t.Errorf("markers %q %q", a, b)
	}
	if r.Marker("hunter3") == a || other.Marker("hunter2") == a {
		t.Errorf("markers collide")
	}
	if _, err := NewRedactor([]byte("short")); err == nil {
		t.Error("a 5-byte salt was accepted")
	}
}

// Nothing secret reaches the database file, its WAL, an export or a
// backup, wherever the secret was put.
func TestSecretsNeverReachTheFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	j, err := Open(ctx, path, Options{Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	secrets := []string{"hunter2-cipassword", "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg", tokenUUID,
		"dGhpcyBpcyBhIHNpZ25hdHVyZSBvZiB0aGUgdGlja2V0Cg", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
		"JBSWY3DPEHPK3PXP", "webhook-s3cret", "json-inner-secret", "nested-token-value"}
	c := writeCall()
	c.Path = "/nodes/pve1/qemu/100/config/" + pmcpKey
	c.Args = map[string]any{"params": map[string]any{
		"cipassword": "hunter2-cipassword", "description": "Bearer " + pmcpKey,
		"hookscript": "PVEAPIToken=root@pam!x=" + tokenUUID, "args": pveTicket,
		"totp-uri": "otpauth://totp/pve:alice?secret=JBSWY3DPEHPK3PXP",
		"endpoint": "name=hook,secret=webhook-s3cret",
		"body":     `{"auth":{"password":"json-inner-secret"}}`,
		"list":     []any{map[string]any{"api-token": "nested-token-value"}},
	}}
	c.Decision.Reasons = []string{"allowed for " + pmcpKey}
	c.PriorConfig = map[string]any{"key": privateKey}
	in, err := j.Intent(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Receipt(ctx, in.CallID, Result{Outcome: OutcomeError, Error: "401 token " + tokenUUID + " with " + pmcpKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Export(ctx, filepath.Join(dir, "export.jsonl"), FormatJSONL); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Backup(ctx, filepath.Join(dir, "backup.db")); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) < 5 {
		t.Fatalf("files: %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q", filepath.Base(f), s)
			}
		}
	}
}

// The journal accepts every effect the policy engine decides.
func TestEffectsMatchPolicy(t *testing.T) {
	for _, e := range []policy.Effect{policy.Allow, policy.Deny, policy.Confirm, policy.DryRun, policy.Breakglass} {
		if !knownEffect(string(e)) {
			t.Errorf("policy effect %q is refused by the journal", e)
		}
	}
	if len(effects) != 5 {
		t.Errorf("the journal knows %d effects, the policy engine 5", len(effects))
	}
}

// FuzzRedactText: whatever surrounds a key, its secret does not survive,
// and redacting twice changes nothing more.
func FuzzRedactText(f *testing.F) {
	for _, s := range []string{"", "Bearer ", "a=1,password=", "PVEAPIToken=root@pam!x=", "{\"k\":\"", "-----BEGIN PRIVATE KEY-----", "token: ", "otpauth://"} {
		f.Add(s, "")
	}
	r, err := NewRedactor([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, before, after string) {
		in := before + pmcpKey + after
		out := r.Text(in)
		if strings.Contains(out, "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg") {
			t.Fatalf("Text(%q) = %q keeps the key's secret", in, out)
		}
		if again := r.Text(out); again != out {
			t.Fatalf("Text is not idempotent on %q: %q, then %q", in, out, again)
		}
	})
}
