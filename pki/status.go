package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// Status is what `pki show` reports: the CA, the server certificate, the
// files and their modes, and anything that needs the operator.
type Status struct {
	Dir    string    `json:"dir"`
	CA     CertInfo  `json:"ca"`
	Server *CertInfo `json:"server"`
	// Renewal is set when the configured names are known.
	Renewal  *Renewal   `json:"renewal,omitempty"`
	Files    []FileInfo `json:"files"`
	Warnings []string   `json:"warnings,omitempty"`
}

// CertInfo describes one certificate.
type CertInfo struct {
	File        string    `json:"file"`
	Subject     string    `json:"subject"`
	Issuer      string    `json:"issuer"`
	Serial      string    `json:"serial"`
	Fingerprint string    `json:"sha256_fingerprint"`
	NotBefore   time.Time `json:"not_before"`
	NotAfter    time.Time `json:"not_after"`
	// NameConstraints are the CA's.
	NameConstraints *NameConstraints `json:"name_constraints,omitempty"`
	// DNSNames and IPAddresses are the server certificate's SANs.
	DNSNames    []string `json:"dns_names,omitempty"`
	IPAddresses []string `json:"ip_addresses,omitempty"`
	// RenewAfter is when `pki renew` re-issues the server certificate.
	RenewAfter *time.Time `json:"renew_after,omitempty"`
}

// NameConstraints are what the CA may certify.
type NameConstraints struct {
	Critical     bool     `json:"critical"`
	PermittedDNS []string `json:"permitted_dns"`
	PermittedIP  []string `json:"permitted_ip"`
}

// Renewal says whether `pki renew` would re-issue the server certificate
// now, and why.
type Renewal struct {
	Due    bool   `json:"due"`
	Reason string `json:"reason,omitempty"`
}

// FileInfo is one file of the directory and its mode.
type FileInfo struct {
	Name    string `json:"name"`
	Present bool   `json:"present"`
	Mode    string `json:"mode,omitempty"`
	Group   *int   `json:"gid,omitempty"`
	Want    string `json:"want_mode"`
}

// Inspect reads the CA and server certificates (never a key) and the
// files' modes. names, when not nil, are the configured names, for the
// renewal check. A missing CA is an error wrapping ErrNoCA.
func (p *PKI) Inspect(names *Names) (*Status, error) {
	if fi, err := os.Stat(p.dir); err != nil {
		return nil, fmt.Errorf("field \"pki.dir\": %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("field \"pki.dir\": %s is not a directory", p.dir)
	}
	ca, err := p.readCA()
	if err != nil {
		return nil, err
	}
	now := p.now()
	st := &Status{Dir: p.dir, CA: certInfo(p.Path(CAFile), ca)}
	st.CA.NameConstraints = &NameConstraints{
		Critical:     ca.PermittedDNSDomainsCritical,
		PermittedDNS: ca.PermittedDNSDomains,
		PermittedIP:  ipRangeStrings(ca),
	}
	if len(ca.PermittedDNSDomains) == 0 || len(ca.PermittedIPRanges) == 0 {
		st.Warnings = append(st.Warnings, "the CA has no name constraints: a client that trusts it trusts it for every name; replace it with `proxmox-mcp pki init --force`")
	}
	switch left := ca.NotAfter.Sub(now); {
	case left <= 0:
		st.Warnings = append(st.Warnings, "the CA has expired: replace it with `proxmox-mcp pki init --force` and trust the new one on each client")
	case left < ServerLifetime:
		st.Warnings = append(st.Warnings, fmt.Sprintf("the CA expires on %s, within one server certificate's life: replace it soon with `proxmox-mcp pki init --force`",
			ca.NotAfter.Format(time.DateOnly)))
	}
	var server *x509.Certificate
	if b, err := p.readFile(ServerFile); err == nil {
		if server, err = parseCert(p.Path(ServerFile), b); err != nil {
			st.Warnings = append(st.Warnings, err.Error()+": run `proxmox-mcp pki renew`")
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if server != nil {
		info := certInfo(p.Path(ServerFile), server)
		n := NamesOf(server)
		info.DNSNames = n.DNS
		for _, ip := range n.IPs {
			info.IPAddresses = append(info.IPAddresses, ip.String())
		}
		ra := RenewAfter(server)
		info.RenewAfter = &ra
		st.Server = &info
		if server.CheckSignatureFrom(ca) != nil {
			st.Warnings = append(st.Warnings, "the server certificate was not issued by this CA: run `proxmox-mcp pki renew`")
		}
		if !now.Before(server.NotAfter) {
			st.Warnings = append(st.Warnings, "the server certificate has expired: run `proxmox-mcp pki renew`")
		}
	} else {
		st.Warnings = append(st.Warnings, "there is no server certificate: run `proxmox-mcp pki renew`")
	}
	if names != nil {
		reason := DueReason(ca, server, names.sorted(), now)
		st.Renewal = &Renewal{Due: reason != "", Reason: reason}
	}
	st.Files, st.Warnings = p.fileModes(st.Warnings)
	return st, nil
}

// fileModes lists the files with their modes and warns of keys others can
// read.
func (p *PKI) fileModes(warnings []string) ([]FileInfo, []string) {
	files := []struct {
		name string
		want string
		// forbidden are mode bits the file must not have.
		forbidden os.FileMode
	}{
		{CAFile, "0644", 0o022},
		{CAKeyFile, "0600", 0o077},
		{ServerFile, "0644", 0o022},
		{ServerKeyFile, "0640 (0600 when not made by root)", 0o037},
	}
	var out []FileInfo
	for _, f := range files {
		fi := FileInfo{Name: f.name, Want: f.want}
		st, err := os.Lstat(p.Path(f.name))
		if err != nil {
			if f.name == CAKeyFile {
				warnings = append(warnings, "ca-key.pem is not here: `pki renew` cannot re-issue the server certificate without it")
			}
			out = append(out, fi)
			continue
		}
		fi.Present = true
		fi.Mode = fmt.Sprintf("%04o", st.Mode().Perm())
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			gid := int(sys.Gid)
			fi.Group = &gid
		}
		if !st.Mode().IsRegular() {
			warnings = append(warnings, fmt.Sprintf("%s is not a regular file", f.name))
		} else if bad := st.Mode().Perm() & f.forbidden; bad != 0 {
			what := "others can change it"
			if strings.HasSuffix(f.name, "-key.pem") {
				what = "the key is readable or writable beyond its owner"
				if f.name == CAKeyFile {
					what = "whoever can read it can mint certificates clients trust"
				}
			}
			warnings = append(warnings, fmt.Sprintf("%s is mode %s (want %s): %s; chmod it", f.name, fi.Mode, f.want, what))
		}
		out = append(out, fi)
	}
	return out, warnings
}

func certInfo(path string, c *x509.Certificate) CertInfo {
	return CertInfo{
		File:        path,
		Subject:     c.Subject.String(),
		Issuer:      c.Issuer.String(),
		Serial:      fmt.Sprintf("%X", c.SerialNumber),
		Fingerprint: Fingerprint(c),
		NotBefore:   c.NotBefore.UTC(),
		NotAfter:    c.NotAfter.UTC(),
	}
}
