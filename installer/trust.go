package installer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// The daemon runs as an unprivileged user and cannot read /etc/pve (the
// cluster file system serves every file root:www-data 0640), so it cannot
// use the host's certificate files directly. Install therefore:
//
//   - copies the cluster CA, /etc/pve/pve-root-ca.pem, to
//     /etc/proxmox-mcp/pve-root-ca.pem and sets pve.ca_file: pveproxy's
//     default certificate (pve-ssl.pem) is signed by it and names 127.0.0.1
//     and localhost, and it stays trusted when the node certificate is
//     renewed (pvecm updatecerts), because the CA does not change;
//   - when a custom or ACME certificate is installed
//     (/etc/pve/local/pveproxy-ssl.pem), which pveproxy serves instead and
//     which a public CA signs for public names only, pins its SHA-256
//     fingerprint in pve.fingerprint. Such a certificate changes on every
//     renewal: doctor reports a pin that no longer matches, and re-running
//     install pins the new one.

// pemCerts parses the certificates of a PEM file.
func pemCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate in it")
	}
	return out, nil
}

// fingerprint is a certificate's SHA-256 as PVE prints it (AA:BB:...).
func fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

// sameFingerprint compares fingerprints written with or without colons.
func sameFingerprint(a, b string) bool {
	norm := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, ":", "")) }
	return norm(a) == norm(b)
}

// proxyPin is the fingerprint of the custom certificate pveproxy serves,
// or "" when there is none.
func (r *run) proxyPin() (string, error) {
	data, err := r.sys.readFile(pveProxyCert)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", pveProxyCert, err)
	}
	certs, err := pemCerts(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", pveProxyCert, err)
	}
	return fingerprint(certs[0]), nil
}

func applyTrust(_ context.Context, r *run) error {
	ca, err := r.sys.readFile(pveRootCA)
	if err != nil {
		return fmt.Errorf("read PVE's cluster CA: %w", err)
	}
	if _, err := pemCerts(ca); err != nil {
		return fmt.Errorf("%s: %w", pveRootCA, err)
	}
	c, err := r.sys.writeFile(PVECAFile, ca, 0o644, rootOwner)
	if err != nil {
		return err
	}
	r.report(c, PVECAFile+" (root:root 0644), a copy of "+pveRootCA+": pve.ca_file")
	if c == created {
		if err := r.createdFile(PVECAFile); err != nil {
			return err
		}
	}
	r.caFile = PVECAFile
	pin, err := r.proxyPin()
	if err != nil {
		return err
	}
	r.fingerprint = pin
	if pin != "" {
		r.say("  pveproxy serves a custom certificate (%s): pinned its SHA-256 %s in pve.fingerprint; re-run install after it is renewed (doctor tells)", pveProxyCert, pin)
	}
	return nil
}

func checkTrust(_ context.Context, r *run) []Problem {
	var probs []Problem
	src, err := r.sys.readFile(pveRootCA)
	if err != nil {
		return []Problem{{What: "cannot read " + pveRootCA + ": " + err.Error(), Fix: "run doctor as root, with the cluster file system mounted (systemctl status pve-cluster)"}}
	}
	cp, err := r.sys.readFile(PVECAFile)
	switch {
	case err != nil:
		probs = append(probs, Problem{What: PVECAFile + " is missing", Fix: "proxmox-mcp install (copies " + pveRootCA + ")"})
	case !bytes.Equal(src, cp):
		probs = append(probs, Problem{What: PVECAFile + " differs from " + pveRootCA + " (the cluster CA changed)", Fix: "proxmox-mcp install (copies it again)"})
	default:
		probs = append(probs, r.sys.checkAttrs(PVECAFile, false, 0o644, rootOwner, "proxmox-mcp install")...)
	}
	cfg := r.currentConfig()
	if cfg == nil {
		return probs
	}
	if cfg.PVE.CAFile != PVECAFile && cfg.PVE.CertFile == "" && cfg.PVE.Fingerprint == "" {
		probs = append(probs, Problem{What: fmt.Sprintf("pve.ca_file is %q, not %s", cfg.PVE.CAFile, PVECAFile), Fix: "proxmox-mcp install"})
	}
	pin, err := r.proxyPin()
	switch {
	case err != nil:
		probs = append(probs, Problem{What: err.Error(), Fix: "check pveproxy's certificate (pvenode cert info)"})
	case pin != "" && !sameFingerprint(pin, cfg.PVE.Fingerprint):
		what := fmt.Sprintf("pveproxy serves a custom certificate (SHA-256 %s) that pve.fingerprint does not pin", pin)
		if cfg.PVE.Fingerprint != "" {
			what = fmt.Sprintf("pveproxy's certificate changed (renewed?): it is %s, pve.fingerprint pins %s; the daemon cannot reach PVE", pin, cfg.PVE.Fingerprint)
		}
		probs = append(probs, Problem{What: what, Fix: "proxmox-mcp install (pins the current certificate and restarts the daemon)"})
	}
	return probs
}
