package main

import (
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/pki"
)

func pkiCommands() map[string]command {
	return map[string]command{
		"pki init":  {"create the local CA and the LAN server certificate (as root)", (*cli).pkiInit},
		"pki show":  {"show the CA fingerprint, the server certificate and how to trust the CA", (*cli).pkiShow},
		"pki renew": {"re-issue the LAN server certificate when it is due or its names changed (as root)", (*cli).pkiRenew},
	}
}

// pkiFlags are the flags of every pki command.
type pkiFlags struct {
	stateFlags
	json     *bool
	hostname *string
}

func addPKIFlags(fs *flag.FlagSet) pkiFlags {
	return pkiFlags{
		stateFlags: addStateFlags(fs),
		json:       fs.Bool("json", false, "print one JSON object"),
		hostname:   fs.String("hostname", "", "the host's name in the certificate (default: the system's host name)"),
	}
}

// pkiContext is what a pki command works on: the configuration, the PKI
// directory and the names the LAN listeners need.
type pkiContext struct {
	cfg      *config.Config
	file     string // the configuration file, for messages
	pki      *pki.PKI
	hostname string
	// names are the configured names; nil without a LAN listener.
	names *pki.Names
}

// open reads the configuration; init is set for `pki init`, which may
// create the directory.
func (f pkiFlags) open(init bool) (*pkiContext, error) {
	cfg, err := f.resolve()
	if err != nil {
		return nil, err
	}
	hostname := *f.hostname
	if hostname == "" {
		if hostname, err = os.Hostname(); err != nil {
			return nil, fmt.Errorf("the host name is unknown (%w): give --hostname", err)
		}
	}
	group, err := pki.KeyGroupFor(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	p, err := pki.New(pki.Options{Dir: cfg.PKIDir(), Hostname: hostname, KeyGroup: group})
	if err != nil {
		return nil, err
	}
	file := *f.config
	if file == "" {
		file = config.DefaultFile
	}
	pc := &pkiContext{cfg: cfg, file: file, pki: p, hostname: hostname}
	if _, err := os.Stat(p.Dir()); errors.Is(err, fs.ErrNotExist) && !init {
		return nil, fmt.Errorf("%w: %s (pki.dir) does not exist", pki.ErrNoCA, p.Dir())
	}
	names, err := pki.NamesFor(cfg.Listen.LAN, hostname)
	switch {
	case errors.Is(err, pki.ErrNoLAN):
	case err != nil:
		return nil, err
	default:
		pc.names = &names
	}
	return pc, nil
}

// needNames is the error of init and renew without a LAN listener.
func (pc *pkiContext) needNames() (pki.Names, error) {
	if pc.names == nil {
		return pki.Names{}, fmt.Errorf("%w: add {\"address\": \"<private IP>:8443\", \"names\": [\"<name clients use>\"]} to listen.lan in %s", pki.ErrNoLAN, pc.file)
	}
	return *pc.names, nil
}

// trustFor names the CA and the first LAN listener for pki.TrustSteps.
func (pc *pkiContext) trustFor(fingerprint string) pki.TrustFor {
	t := pki.TrustFor{Host: pc.hostname, CAPath: pc.pki.Path(pki.CAFile), Fingerprint: fingerprint}
	if lans := pc.cfg.Listen.LAN; len(lans) > 0 {
		host := pc.hostname
		if len(lans[0].Names) > 0 {
			host = lans[0].Names[0]
		}
		if ap, err := netip.ParseAddrPort(lans[0].Address); err == nil {
			t.URL = "https://" + net.JoinHostPort(host, fmt.Sprint(ap.Port()))
		}
	}
	return t
}

func (c *cli) pkiInit(args []string) error {
	fs := flag.NewFlagSet("pki init", flag.ContinueOnError)
	f := addPKIFlags(fs)
	force := fs.Bool("force", false, "replace an existing CA (every client must then trust the new one)")
	const synopsis = "proxmox-mcp pki init [--force] [--hostname NAME] [--json]"
	if _, err := parse(fs, args, 0, synopsis); err != nil {
		return err
	}
	pc, err := f.open(true)
	if err != nil {
		return err
	}
	names, err := pc.needNames()
	if err != nil {
		return err
	}
	res, err := pc.pki.Init(c.ctx, names, *force)
	if err != nil {
		return err
	}
	out := certsOutput{
		Dir: pc.pki.Dir(), CA: certSummary(res.CA), Server: certSummary(res.Server),
		ReplacedCA: res.ReplacedCA, Trust: pki.TrustSteps(pc.trustFor(pki.Fingerprint(res.CA))),
	}
	if *f.json {
		return writeJSON(c, out)
	}
	fmt.Fprintf(c.stdout, "created the CA in %s\n", out.Dir)
	if out.ReplacedCA != "" {
		fmt.Fprintf(c.stdout, "replaced the CA with SHA-256 %s: clients that trusted it must trust the new one\n", out.ReplacedCA)
	}
	c.printCerts(out)
	c.printTrust(out.Trust)
	return nil
}

func (c *cli) pkiRenew(args []string) error {
	fs := flag.NewFlagSet("pki renew", flag.ContinueOnError)
	f := addPKIFlags(fs)
	const synopsis = "proxmox-mcp pki renew [--hostname NAME] [--json]"
	if _, err := parse(fs, args, 0, synopsis); err != nil {
		return err
	}
	pc, err := f.open(false)
	if err != nil {
		return err
	}
	names, err := pc.needNames()
	if err != nil {
		return err
	}
	res, err := pc.pki.Renew(c.ctx, names)
	if err != nil {
		return err
	}
	out := renewOutput{Renewed: res.Renewed, Reason: res.Reason, CA: certSummary(res.CA), Server: certSummary(res.Server)}
	if *f.json {
		return writeJSON(c, out)
	}
	if res.Renewed {
		fmt.Fprintf(c.stdout, "renewed the server certificate: %s; the daemon serves it within seconds, without a restart\n", res.Reason)
	} else {
		fmt.Fprintf(c.stdout, "the server certificate is current; renewal is due after %s\n", out.Server.RenewAfter.Format(time.RFC3339))
	}
	c.printCerts(certsOutput{CA: out.CA, Server: out.Server})
	return nil
}

func (c *cli) pkiShow(args []string) error {
	fs := flag.NewFlagSet("pki show", flag.ContinueOnError)
	f := addPKIFlags(fs)
	const synopsis = "proxmox-mcp pki show [--hostname NAME] [--json]"
	if _, err := parse(fs, args, 0, synopsis); err != nil {
		return err
	}
	pc, err := f.open(false)
	if err != nil {
		return err
	}
	st, err := pc.pki.Inspect(pc.names)
	if err != nil {
		return err
	}
	out := showOutput{Status: st, Trust: pki.TrustSteps(pc.trustFor(st.CA.Fingerprint))}
	if *f.json {
		return writeJSON(c, out)
	}
	fmt.Fprintf(c.stdout, "CA          %s\n", st.CA.Subject)
	fmt.Fprintf(c.stdout, "  SHA-256   %s\n", st.CA.Fingerprint)
	fmt.Fprintf(c.stdout, "  valid     %s to %s\n", st.CA.NotBefore.Format(time.DateOnly), st.CA.NotAfter.Format(time.DateOnly))
	if nc := st.CA.NameConstraints; nc != nil {
		fmt.Fprintf(c.stdout, "  permits   names %s; addresses %s\n", strings.Join(nc.PermittedDNS, ", "), strings.Join(nc.PermittedIP, ", "))
	}
	if s := st.Server; s != nil {
		fmt.Fprintf(c.stdout, "server      %s\n", s.Subject)
		fmt.Fprintf(c.stdout, "  names     %s\n", strings.Join(append(append([]string{}, s.DNSNames...), s.IPAddresses...), ", "))
		fmt.Fprintf(c.stdout, "  valid     %s to %s\n", s.NotBefore.Format(time.RFC3339), s.NotAfter.Format(time.RFC3339))
		if s.RenewAfter != nil {
			fmt.Fprintf(c.stdout, "  renew     after %s\n", s.RenewAfter.Format(time.RFC3339))
		}
	}
	if r := st.Renewal; r != nil && r.Due {
		fmt.Fprintf(c.stdout, "renewal due: %s: run `proxmox-mcp pki renew` as root\n", r.Reason)
	}
	for _, fi := range st.Files {
		mode := "missing"
		if fi.Present {
			mode = fi.Mode
		}
		fmt.Fprintf(c.stdout, "file        %-15s %s (want %s)\n", fi.Name, mode, fi.Want)
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(c.stdout, "warning: %s\n", w)
	}
	c.printTrust(out.Trust)
	return nil
}

// certBrief is one certificate in the output of init and renew.
type certBrief struct {
	Subject     string    `json:"subject"`
	Fingerprint string    `json:"sha256_fingerprint"`
	NotAfter    time.Time `json:"not_after"`
	RenewAfter  time.Time `json:"renew_after"`
	Names       []string  `json:"names,omitempty"`
}

func certSummary(c *x509.Certificate) certBrief {
	if c == nil {
		return certBrief{}
	}
	b := certBrief{Subject: c.Subject.String(), Fingerprint: pki.Fingerprint(c), NotAfter: c.NotAfter.UTC(), RenewAfter: pki.RenewAfter(c).UTC()}
	if !c.IsCA {
		b.Names = pki.NamesOf(c).Strings()
	}
	return b
}

type certsOutput struct {
	Dir        string     `json:"dir"`
	CA         certBrief  `json:"ca"`
	Server     certBrief  `json:"server"`
	ReplacedCA string     `json:"replaced_ca,omitempty"`
	Trust      []pki.Step `json:"trust"`
}

type renewOutput struct {
	Renewed bool      `json:"renewed"`
	Reason  string    `json:"reason,omitempty"`
	CA      certBrief `json:"ca"`
	Server  certBrief `json:"server"`
}

type showOutput struct {
	*pki.Status
	Trust []pki.Step `json:"trust"`
}

func (c *cli) printCerts(o certsOutput) {
	fmt.Fprintf(c.stdout, "CA SHA-256 fingerprint: %s (valid until %s)\n", o.CA.Fingerprint, o.CA.NotAfter.Format(time.DateOnly))
	fmt.Fprintf(c.stdout, "server certificate for %s, valid until %s\n", strings.Join(o.Server.Names, ", "), o.Server.NotAfter.Format(time.RFC3339))
}

func (c *cli) printTrust(steps []pki.Step) {
	fmt.Fprintln(c.stdout, "\nTo trust the CA on a client:")
	for _, s := range steps {
		fmt.Fprintf(c.stdout, "  %s:\n", s.For)
		for _, cmd := range s.Commands {
			fmt.Fprintf(c.stdout, "    %s\n", cmd)
		}
		if s.Note != "" {
			fmt.Fprintf(c.stdout, "    (%s)\n", s.Note)
		}
	}
}
