package installer

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
)

// pkiFiles are the PKI directory's files with the owner and mode the
// daemon and `pki renew` (run as root by the timer) expect: the CA key
// root's alone, the server key readable by the daemon's group.
var pkiFiles = []struct {
	name  string
	mode  fs.FileMode
	owner Owner
}{
	{pki.CAFile, 0o644, rootOwner},
	{pki.CAKeyFile, 0o600, rootOwner},
	{pki.ServerFile, 0o644, rootOwner},
	{pki.ServerKeyFile, 0o640, confOwner},
}

// openPKI opens the PKI directory under the root. The package writes
// server-key.pem 0600 (OwnerOnly) and install then gives it to the
// daemon's group through the ownership seam, as `pki renew` run by root
// does by itself.
func (r *run) openPKI() (*pki.PKI, error) {
	return pki.New(pki.Options{Dir: r.sys.path(r.plan.pkiDir), Hostname: r.plan.hostname, KeyGroup: pki.OwnerOnly, Now: r.sys.Now})
}

// lanNames are the names the LAN certificate must carry.
func (r *run) lanNames(cfg *config.Config) (pki.Names, error) {
	return pki.NamesFor(cfg.Listen.LAN, r.plan.hostname)
}

func applyExposure(ctx context.Context, r *run) error {
	p := r.plan
	cfg := p.existing
	r.say("  loopback http://%s/mcp", p.loopback)
	if p.mode.LAN() {
		if err := r.applyLAN(ctx, cfg); err != nil {
			return err
		}
	} else if r.sys.exists(p.pkiDir + "/" + pki.CAFile) {
		r.say("  kept the LAN CA in %s: mode %s serves no LAN listener, but clients that trust the CA keep trusting it if LAN comes back", p.pkiDir, p.mode)
	}
	if p.mode.Tailnet() {
		if p.authKey != nil {
			c, err := r.sys.writeFile(AuthKeyFile, p.authKey, 0o600, svcOwner)
			if err != nil {
				return err
			}
			r.report(c, AuthKeyFile+" ("+svcOwner.String()+" 0600), the Tailscale auth key: used for the node's first login")
			if err := r.createdFile(AuthKeyFile); err != nil {
				return err
			}
		}
		how := "the node logs in with the auth key in " + AuthKeyFile
		if cfg.Listen.Tailnet.AuthKeyFile == "" {
			how = "the node needs a login: its URL is shown once the daemon runs"
		}
		r.say("  Tailnet node %q: %s", cfg.Listen.Tailnet.Hostname, how)
	} else if removed, err := r.remove(AuthKeyFile); err != nil {
		return err
	} else if removed {
		r.say("  removed %s: mode %s has no Tailnet node", AuthKeyFile, p.mode)
	}
	return nil
}

// applyLAN creates the local CA and the server certificate, or re-issues
// the certificate when its names changed or it is due, and prints the
// CA's fingerprint.
func (r *run) applyLAN(ctx context.Context, cfg *config.Config) error {
	names, err := r.lanNames(cfg)
	if err != nil {
		return err
	}
	pk, err := r.openPKI()
	if err != nil {
		return err
	}
	hadDir := r.sys.exists(r.plan.pkiDir)
	var ca *pkiResult
	if r.sys.exists(r.plan.pkiDir + "/" + pki.CAFile) {
		res, err := pk.Renew(ctx, names)
		if err != nil {
			return err
		}
		ca = &pkiResult{fingerprint: pki.Fingerprint(res.CA), notAfter: res.CA.NotAfter}
		if res.Renewed {
			r.say("  re-issued the LAN server certificate (%s) for %s", res.Reason, names)
		} else {
			r.say("  kept the LAN CA and server certificate (%s)", names)
		}
	} else {
		res, err := pk.Init(ctx, names, false)
		if err != nil {
			return err
		}
		ca = &pkiResult{fingerprint: pki.Fingerprint(res.CA), notAfter: res.CA.NotAfter}
		r.say("  created the LAN CA in %s and a server certificate for %s", r.plan.pkiDir, names)
	}
	if !hadDir {
		if err := r.created(func(c *Created) { c.Dirs = addUnique(c.Dirs, r.plan.pkiDir) }); err != nil {
			return err
		}
	}
	if _, err := r.sys.ensureAttrs(r.plan.pkiDir, 0o755, rootOwner); err != nil {
		return err
	}
	for _, f := range pkiFiles {
		if _, err := r.sys.ensureAttrs(r.plan.pkiDir+"/"+f.name, f.mode, f.owner); err != nil {
			return err
		}
	}
	r.caFingerprint = ca.fingerprint
	r.say("  CA SHA-256 fingerprint: %s (valid until %s)", ca.fingerprint, ca.notAfter.UTC().Format(time.DateOnly))
	return nil
}

type pkiResult struct {
	fingerprint string
	notAfter    time.Time
}

func checkExposure(_ context.Context, r *run) []Problem {
	cfg := r.currentConfig()
	if cfg == nil {
		return nil // the config step reports it
	}
	var probs []Problem
	if len(cfg.Listen.LAN) > 0 {
		probs = append(probs, r.checkLAN(cfg)...)
	}
	if t := cfg.Listen.Tailnet; t != nil && t.AuthKeyFile != "" {
		owner, mode := svcOwner, fs.FileMode(0o600)
		probs = append(probs, r.sys.checkAttrs(t.AuthKeyFile, false, mode, owner, "put the auth key there again and re-run install with --tailscale-authkey-file")...)
	}
	return probs
}

// checkLAN checks the CA and the server certificate: present, the files'
// owners and modes, and not due for renewal.
func (r *run) checkLAN(cfg *config.Config) []Problem {
	dir := cfg.PKIDir()
	pk, err := pki.New(pki.Options{Dir: r.sys.path(dir), Hostname: r.plan.hostname, KeyGroup: pki.OwnerOnly, Now: r.sys.Now})
	if err != nil {
		return []Problem{{What: err.Error(), Fix: "fix pki.dir"}}
	}
	names, err := r.lanNames(cfg)
	if err != nil {
		return []Problem{{What: err.Error(), Fix: "fix listen.lan in " + r.plan.configFile}}
	}
	st, err := pk.Inspect(&names)
	if errors.Is(err, pki.ErrNoCA) || (err != nil && !r.sys.exists(dir)) {
		return []Problem{{What: "there is no LAN CA in " + dir, Fix: "proxmox-mcp install (runs pki init)"}}
	}
	if err != nil {
		return []Problem{{What: "the LAN CA cannot be read: " + err.Error(), Fix: "proxmox-mcp pki show; replace it with proxmox-mcp pki init --force if it is broken"}}
	}
	var probs []Problem
	if st.Server == nil {
		probs = append(probs, Problem{What: "there is no LAN server certificate in " + dir, Fix: "proxmox-mcp pki renew"})
	} else if st.Renewal != nil && st.Renewal.Due {
		probs = append(probs, Problem{
			What: "the LAN server certificate is due for renewal: " + st.Renewal.Reason,
			Fix:  "proxmox-mcp pki renew (the proxmox-mcp-pki-renew.timer runs it daily: check systemctl status proxmox-mcp-pki-renew.timer)",
		})
	}
	for _, f := range pkiFiles {
		path := dir + "/" + f.name
		if f.name == pki.ServerFile && st.Server == nil {
			continue
		}
		probs = append(probs, r.sys.checkAttrs(path, false, f.mode, f.owner, "proxmox-mcp install")...)
	}
	for _, w := range st.Warnings {
		// Missing files and modes are checked above, with their owners.
		if strings.Contains(w, " is mode ") || strings.Contains(w, "is not here") || strings.HasPrefix(w, "there is no server certificate") {
			continue
		}
		probs = append(probs, Problem{What: "LAN CA: " + w, Fix: "see proxmox-mcp pki show"})
	}
	return probs
}
