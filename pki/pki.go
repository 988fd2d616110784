package pki

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// The files of the PKI directory.
const (
	CAFile        = "ca.pem"
	CAKeyFile     = "ca-key.pem"
	ServerFile    = "server.pem"
	ServerKeyFile = "server-key.pem"
	lockFileName  = ".lock"
)

// File modes.
const (
	certMode         os.FileMode = 0o644
	caKeyMode        os.FileMode = 0o600
	serverKeyShared  os.FileMode = 0o640
	serverKeyPrivate os.FileMode = 0o600
	dirMode          os.FileMode = 0o755
)

// OwnerOnly keeps server-key.pem readable by its owner alone (0600).
const OwnerOnly = -1

// ErrNoCA is returned when the directory holds no CA yet.
var ErrNoCA = errors.New("no CA: run `proxmox-mcp pki init` (as root) first")

// ErrCAExists is returned by Init when a CA exists and force is not set.
var ErrCAExists = errors.New("a CA already exists")

// Options configure a PKI directory.
type Options struct {
	// Dir is pki.dir; an absolute path.
	Dir string
	// Hostname names the host in the CA's subject.
	Hostname string
	// KeyGroup is the group given read access to server-key.pem (mode
	// 0640), so that the daemon's user can read it: the state directory's
	// group (see KeyGroupFor). OwnerOnly makes it 0600.
	KeyGroup int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// PKI is the local CA and the server certificate in one directory.
type PKI struct {
	dir      string
	hostname string
	keyGroup int
	now      func() time.Time
}

// New returns the PKI of a directory; nothing is read or written yet.
func New(o Options) (*PKI, error) {
	if !filepath.IsAbs(o.Dir) || filepath.Clean(o.Dir) != o.Dir {
		return nil, fmt.Errorf("field \"pki.dir\": %q must be an absolute, clean path", o.Dir)
	}
	if o.KeyGroup < OwnerOnly {
		return nil, fmt.Errorf("pki: key group %d is not a group id (or OwnerOnly)", o.KeyGroup)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &PKI{dir: o.Dir, hostname: o.Hostname, keyGroup: o.KeyGroup, now: o.Now}, nil
}

// KeyGroupFor is the group that should read server-key.pem: the state
// directory's group when this process runs as root (the daemon runs as the
// state directory's owner), OwnerOnly otherwise.
func KeyGroupFor(stateDir string) (int, error) {
	if os.Geteuid() != 0 {
		return OwnerOnly, nil
	}
	fi, err := os.Stat(stateDir)
	if err != nil {
		return 0, fmt.Errorf("state directory (state_dir): %w: server-key.pem is given to its group so that the daemon can read it; "+
			"create it first (the installer does) or name it with --state-dir", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return OwnerOnly, nil
	}
	return int(st.Gid), nil
}

// Dir is the directory.
func (p *PKI) Dir() string { return p.dir }

// Path is the path of one of the directory's files.
func (p *PKI) Path(name string) string { return filepath.Join(p.dir, name) }

// InitResult says what Init made.
type InitResult struct {
	CA     *x509.Certificate
	Server *x509.Certificate
	// ReplacedCA is the fingerprint of the CA that --force replaced, or "".
	ReplacedCA string
}

// Init creates the CA and issues the server certificate for names. An
// existing CA (even part of one) is an error wrapping ErrCAExists unless
// force is set, in which case it is replaced and every client must trust
// the new one.
func (p *PKI) Init(ctx context.Context, names Names, force bool) (InitResult, error) {
	names = names.sorted()
	if len(names.DNS) == 0 || len(names.IPs) == 0 {
		return InitResult{}, errors.New("pki: the server certificate needs at least one DNS name and one address")
	}
	d, err := atomicfile.MkdirAll(p.dir, dirMode)
	if err != nil {
		return InitResult{}, fmt.Errorf("field \"pki.dir\": %w", err)
	}
	defer d.Close()
	unlock, err := p.lock(ctx, d)
	if err != nil {
		return InitResult{}, err
	}
	defer unlock()
	var res InitResult
	existing := p.existingCA(d)
	if len(existing) > 0 {
		old, _ := p.readCA()
		if !force {
			what := fmt.Sprintf("%s holds %v", p.dir, existing)
			if old != nil {
				what = fmt.Sprintf("%s holds the CA %s (SHA-256 %s)", p.dir, old.Subject.CommonName, Fingerprint(old))
			}
			return InitResult{}, fmt.Errorf("%w: %s; `proxmox-mcp pki renew` re-issues the server certificate with it, "+
				"and `proxmox-mcp pki init --force` replaces it (every client must then trust the new ca.pem)", ErrCAExists, what)
		}
		res.ReplacedCA = "unreadable"
		if old != nil {
			res.ReplacedCA = Fingerprint(old)
		}
	}
	if err := ctx.Err(); err != nil {
		return InitResult{}, err
	}
	now := p.now()
	ca, err := newCA(names, p.hostname, now)
	if err != nil {
		return InitResult{}, err
	}
	server, err := newServer(ca, names, now)
	if err != nil {
		return InitResult{}, err
	}
	// The key first: a ca.pem on disk always has its key beside it.
	if err := p.write(d, CAKeyFile, ca.keyPEM, caKeyMode, OwnerOnly); err != nil {
		return InitResult{}, err
	}
	if err := p.write(d, CAFile, ca.certPEM, certMode, OwnerOnly); err != nil {
		return InitResult{}, err
	}
	if err := p.writeServer(d, server); err != nil {
		return InitResult{}, err
	}
	res.CA, res.Server = ca.cert, server.cert
	return res, nil
}

// RenewResult says what Renew did.
type RenewResult struct {
	CA     *x509.Certificate
	Server *x509.Certificate
	// Renewed is true when a new server certificate was written, for
	// Reason.
	Renewed bool
	Reason  string
}

// Renew re-issues the server certificate when it is due (see DueReason),
// or when its key is missing or does not match it. Otherwise it changes
// nothing. It needs the CA key, so it runs as root.
func (p *PKI) Renew(ctx context.Context, names Names) (RenewResult, error) {
	names = names.sorted()
	if len(names.DNS) == 0 || len(names.IPs) == 0 {
		return RenewResult{}, errors.New("pki: the server certificate needs at least one DNS name and one address")
	}
	d, err := atomicfile.OpenDir(p.dir)
	if err != nil {
		return RenewResult{}, fmt.Errorf("field \"pki.dir\": %w", err)
	}
	defer d.Close()
	unlock, err := p.lock(ctx, d)
	if err != nil {
		return RenewResult{}, err
	}
	defer unlock()
	ca, err := p.readCAPair()
	if err != nil {
		return RenewResult{}, err
	}
	now := p.now()
	if !now.Before(ca.cert.NotAfter) {
		return RenewResult{}, fmt.Errorf("pki: the CA expired on %s: replace it with `proxmox-mcp pki init --force` and trust the new one on each client",
			ca.cert.NotAfter.Format(time.RFC3339))
	}
	server, reason, err := p.currentServer(ca.cert, names, now)
	if err != nil {
		return RenewResult{}, err
	}
	if reason == "" {
		return RenewResult{CA: ca.cert, Server: server}, nil
	}
	if err := ctx.Err(); err != nil {
		return RenewResult{}, err
	}
	next, err := newServer(ca, names, now)
	if err != nil {
		return RenewResult{}, err
	}
	if err := p.writeServer(d, next); err != nil {
		return RenewResult{}, err
	}
	return RenewResult{CA: ca.cert, Server: next.cert, Renewed: true, Reason: reason}, nil
}

// currentServer reads the server certificate and its key and says why
// they must be replaced, or "".
func (p *PKI) currentServer(ca *x509.Certificate, names Names, now time.Time) (*x509.Certificate, string, error) {
	certPEM, err := p.readFile(ServerFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "there is no server certificate", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("pki: %w", err)
	}
	server, err := parseCert(ServerFile, certPEM)
	if err != nil {
		return nil, err.Error(), nil
	}
	keyPEM, err := p.readFile(ServerKeyFile)
	if errors.Is(err, fs.ErrNotExist) {
		return server, "there is no server key (" + ServerKeyFile + ")", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("pki: %w", err)
	}
	key, err := parseKey(ServerKeyFile, keyPEM)
	if err != nil {
		return server, err.Error(), nil
	}
	if !matches(server, key) {
		return server, ServerKeyFile + " is not the key of " + ServerFile, nil
	}
	return server, DueReason(ca, server, names, now), nil
}

// readFile reads one of the directory's files, never through a symbolic
// link in a directory someone else can write (atomicfile).
func (p *PKI) readFile(name string) ([]byte, error) {
	return atomicfile.ReadFile(p.Path(name))
}

// existingCA lists the CA files present in the open directory.
func (p *PKI) existingCA(d *atomicfile.Dir) []string {
	var out []string
	for _, f := range []string{CAFile, CAKeyFile} {
		if _, err := d.Lstat(f); err == nil || !errors.Is(err, fs.ErrNotExist) {
			out = append(out, f)
		}
	}
	return out
}

// readCA reads the CA certificate.
func (p *PKI) readCA() (*x509.Certificate, error) {
	b, err := p.readFile(CAFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p.dir, ErrNoCA)
	}
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	c, err := parseCert(p.Path(CAFile), b)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if !c.IsCA {
		return nil, fmt.Errorf("pki: %s is not a CA certificate", p.Path(CAFile))
	}
	return c, nil
}

// readCAPair reads the CA certificate and key and checks they belong
// together.
func (p *PKI) readCAPair() (*keyPair, error) {
	c, err := p.readCA()
	if err != nil {
		return nil, err
	}
	b, err := p.readFile(CAKeyFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pki: %s has no key beside it (%s): re-issuing needs it; `proxmox-mcp pki init --force` makes a new CA", p.Path(CAFile), CAKeyFile)
		}
		return nil, fmt.Errorf("pki: the CA key (root only): %w", err)
	}
	k, err := parseKey(p.Path(CAKeyFile), b)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if !matches(c, k) {
		return nil, fmt.Errorf("pki: %s is not the key of %s", p.Path(CAKeyFile), p.Path(CAFile))
	}
	return &keyPair{cert: c, key: k}, nil
}

// writeServer writes the server key, then its certificate. A reader that
// looks between the two sees a key that does not match the certificate and
// keeps what it had.
func (p *PKI) writeServer(d *atomicfile.Dir, kp *keyPair) error {
	mode := serverKeyShared
	if p.keyGroup == OwnerOnly {
		mode = serverKeyPrivate
	}
	if err := p.write(d, ServerKeyFile, kp.keyPEM, mode, p.keyGroup); err != nil {
		return err
	}
	return p.write(d, ServerFile, kp.certPEM, certMode, OwnerOnly)
}

// write replaces one file of the open directory atomically, given to
// group (through its descriptor, before it has its mode and name) unless
// group is OwnerOnly.
func (p *PKI) write(d *atomicfile.Dir, name string, data []byte, mode os.FileMode, group int) error {
	var chown func(*os.File) error
	if group != OwnerOnly {
		chown = func(f *os.File) error {
			if err := f.Chown(-1, group); err != nil {
				return fmt.Errorf("give %s to group %d: %w", p.Path(name), group, err)
			}
			return nil
		}
	}
	if err := d.WriteFileFunc(name, data, mode, chown); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// lock takes an exclusive flock on the directory's lock file, so that two
// runs (a timer's renew and an operator's init) never interleave.
func (p *PKI) lock(ctx context.Context, d *atomicfile.Dir) (func(), error) {
	unlock, err := d.Lock(ctx, lockFileName)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return unlock, nil
}
