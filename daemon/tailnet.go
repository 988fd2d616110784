package daemon

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tailscale.com/client/local"
	"tailscale.com/client/tailscale/apitype"
	"tailscale.com/envknob"
	"tailscale.com/ipn"
	"tailscale.com/ipn/ipnstate"
	"tailscale.com/logtail"
	"tailscale.com/tsnet"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
	"github.com/proxmox-mcp/proxmox-mcp/config"
	"github.com/proxmox-mcp/proxmox-mcp/policy"
	"github.com/proxmox-mcp/proxmox-mcp/transport"
)

// tailnetNode is the embedded Tailscale node of listen.tailnet (tsnet: a
// userspace node in this process, no host tailscaled).
//
// The daemon does not wait for the node to log in: Run starts it and
// serves loopback and LAN at once. Whether MCP is served over HTTPS or
// plain HTTP depends on whether the tailnet gives the node HTTPS
// certificates, which is known only once the node is up; so a goroutine
// follows the node's state and opens the listener when the node first
// runs: HTTPS (TLS with the tailnet's certificate, port 443 by default)
// on its tailnet name when the tailnet has certificates, plain HTTP (port
// 80 by default) otherwise. The choice is made once; enabling HTTPS in the
// tailnet later takes a restart.
type tailnetNode struct {
	d   *Daemon
	cfg config.Tailnet
	srv *tsnet.Server
	lc  *local.Client
	log *slog.Logger
	// whois tells who is at the far end of a connection: lc.WhoIs; tests
	// wrap it.
	whois func(ctx context.Context, remoteAddr string) (*apitype.WhoIsResponse, error)

	// hosts are the Host values the listener accepts: the node's MagicDNS
	// name, short and full, and its Tailscale addresses, each with and
	// without the port. They follow the node's name and addresses.
	hosts atomic.Pointer[map[string]bool]
	// state is the node's ipn.State; url the listener's URL once serving.
	state atomic.Value // ipn.State
	url   atomic.Pointer[string]
	// port is the port served on, once chosen.
	port atomic.Int32
	// urlFile holds the login URL while the node waits for a login
	// (config.TailnetLoginURLFile); loginURL is the URL last written.
	urlFile  string
	loginURL string

	stop    context.CancelFunc
	done    chan struct{}
	closeMu sync.Mutex
	closed  bool
}

// listenTailnet starts the Tailnet node of listen.tailnet; Run serves MCP
// on it once the node is up.
func (d *Daemon) listenTailnet() error {
	t := d.cfg.Listen.Tailnet
	if t == nil {
		return nil
	}
	n, err := d.startTailnet(*t)
	if err != nil {
		return err
	}
	d.tailnet = n
	return nil
}

// startTailnet reads the auth key and starts the node without waiting for
// it to log in.
func (d *Daemon) startTailnet(t config.Tailnet) (*tailnetNode, error) {
	log := d.log.With("listener", "tailnet")
	var authKey string
	if t.AuthKeyFile != "" {
		k, err := readAuthKey(t.AuthKeyFile)
		if err != nil {
			return nil, fmt.Errorf("field \"listen.tailnet.auth_key_file\": %w", err)
		}
		authKey = k
	}
	dir := d.cfg.TailnetStateDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("field \"listen.tailnet.state_dir\": %w", err)
	}
	if t.Hostname == "" {
		t.Hostname = config.DefaultTailnetHostname
	}
	// A login URL of an earlier run is stale: the node asks for a new one.
	urlFile := d.cfg.TailnetLoginURLFile()
	if err := os.Remove(urlFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the Tailnet login URL file: %w", err)
	}
	srv := &tsnet.Server{
		Hostname:   t.Hostname,
		Dir:        dir,
		AuthKey:    authKey,
		Ephemeral:  t.Ephemeral,
		ControlURL: t.ControlURL,
		// What tsnet means for the operator (the login URL, the state):
		// info. tailscaled's own log: debug, and only formatted when
		// debug is on.
		// The login URL is kept out of both (see hideLoginURLs): the log
		// goes to journald, which the adm group reads.
		UserLogf: func(format string, args ...any) {
			log.Info("tsnet: " + hideLoginURLs(strings.TrimSpace(fmt.Sprintf(format, args...)), urlFile, true))
		},
	}
	if log.Enabled(context.Background(), slog.LevelDebug) {
		srv.Logf = func(format string, args ...any) {
			log.Debug("tailscale: " + hideLoginURLs(strings.TrimSpace(fmt.Sprintf(format, args...)), urlFile, false))
		}
	}
	logsOff := !t.LogUpload
	if logsOff && !envknob.NoLogsNoSupport() {
		log.Warn("daemon: listen.tailnet.log_upload is off but TS_NO_LOGS_NO_SUPPORT is not set in the environment " +
			"(`proxmox-mcp serve` sets it): the node's log uploader is switched off after it starts instead")
	}
	if !logsOff && envknob.NoLogsNoSupport() {
		log.Info("daemon: listen.tailnet.log_upload is on, but TS_NO_LOGS_NO_SUPPORT in the environment keeps Tailscale's log upload off")
	}
	if err := srv.Start(); err != nil {
		srv.Close() //nolint:errcheck // it did not start
		return nil, fmt.Errorf("the Tailnet node did not start (state in %s): %w", dir, err)
	}
	if logsOff {
		// Belt and braces beside TS_NO_LOGS_NO_SUPPORT: this node's
		// uploader drops whatever it is given.
		if lt, ok := srv.LogtailWriter().(*logtail.Logger); ok {
			lt.SetEnabled(false)
		}
	}
	lc, err := srv.LocalClient()
	if err != nil {
		srv.Close() //nolint:errcheck // closing what failed
		return nil, fmt.Errorf("the Tailnet node: %w", err)
	}
	n := &tailnetNode{d: d, cfg: t, srv: srv, lc: lc, log: log, whois: lc.WhoIs, urlFile: urlFile, done: make(chan struct{})}
	n.state.Store(ipn.NoState)
	if d.tailnetStarted != nil {
		d.tailnetStarted(srv)
	}
	log.Info("daemon: the Tailnet node is starting", "hostname", t.Hostname, "state_dir", dir, "ephemeral", t.Ephemeral,
		"control_url", cmpOr(t.ControlURL, "Tailscale's"), "auth_key", authKey != "", "log_upload", t.LogUpload && !envknob.NoLogsNoSupport())
	return n, nil
}

// readAuthKey reads the auth key file, which must be readable by its owner
// only: the key adds machines to the tailnet.
func readAuthKey(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s is open to its group or others (mode %04o): it holds a secret that adds machines to the tailnet; "+
			"make it the daemon user's own with `chmod 600 %s`", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", err
	}
	if len(b) > 4096 {
		return "", fmt.Errorf("%s is over 4 KiB: it should hold one auth key (tskey-auth-…)", path)
	}
	key := strings.TrimSpace(string(b))
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return "", fmt.Errorf("%s must hold one auth key (tskey-auth-…) and nothing else", path)
	}
	return key, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// run follows the node's state until ctx ends: it logs what the operator
// must see (the login URL, errors), opens the listener when the node first
// runs, and keeps the Host allow-list in step with the node's name and
// addresses.
func (n *tailnetNode) run(ctx context.Context) {
	defer close(n.done)
	for ctx.Err() == nil {
		err := n.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("daemon: lost the Tailnet node's state; watching again", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (n *tailnetNode) watch(ctx context.Context) error {
	w, err := n.lc.WatchIPNBus(ctx, ipn.NotifyInitialState)
	if err != nil {
		return err
	}
	defer w.Close()
	for {
		note, err := w.Next()
		if err != nil {
			return err
		}
		if note.ErrMessage != nil {
			n.log.Error("daemon: the Tailnet node reports an error", "error", *note.ErrMessage)
		}
		if note.BrowseToURL != nil && *note.BrowseToURL != "" && *note.BrowseToURL != n.loginURL {
			n.needsLogin(*note.BrowseToURL)
		}
		if note.State != nil {
			prev := n.state.Swap(*note.State)
			if prev != *note.State {
				n.log.Info("daemon: Tailnet node state", "state", note.State.String())
				if *note.State == ipn.NeedsMachineAuth {
					n.log.Warn("daemon: the Tailnet node waits for approval in the tailnet's admin console (device approval)")
					n.d.setStatusExtra("tailnet: waiting for approval in the tailnet's admin console")
				}
			}
		}
		if n.state.Load() != ipn.Running {
			continue
		}
		if note.State != nil || note.SelfChange != nil {
			n.up(ctx)
		}
	}
}

// up reads the node's status: the first time, it opens the listener (a
// listener that cannot open ends Run, as on any listener); every time, it
// refreshes the Host allow-list.
func (n *tailnetNode) up(ctx context.Context) {
	st, err := n.lc.StatusWithoutPeers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("daemon: the Tailnet node's status is unavailable; trying again at its next change", "error", err)
		}
		return
	}
	if n.url.Load() == nil {
		err := n.serve(ctx, st)
		switch {
		case errors.Is(err, errStopping) || ctx.Err() != nil:
			return
		case err != nil:
			n.d.fail(fmt.Errorf("listener tailnet: %w", err))
			return
		}
		// The listener is in the status line now; the login is done.
		n.d.setStatusExtra("")
	}
	n.loggedIn()
	n.setHosts(st)
}

// needsLogin keeps the login URL where only root and the daemon's user
// can read it, and tells the log and the status line where that is: the
// URL itself attaches the node to whichever tailnet opens it, and the
// status line (systemctl status) and journald are readable by other
// users.
func (n *tailnetNode) needsLogin(url string) {
	n.loginURL = url
	if err := atomicfile.WriteFile(n.urlFile, []byte(url+"\n"), 0o600); err != nil {
		n.log.Error("daemon: the Tailnet node needs a login, and its login URL could not be written; "+
			"put an auth key in listen.tailnet.auth_key_file and restart", "file", n.urlFile, "err", err)
		n.d.setStatusExtra("tailnet: needs a login; the login URL could not be written (see the log)")
		return
	}
	n.log.Info("daemon: the Tailnet node needs a login: the login URL is in the file, readable by root; open it to add the node to your tailnet "+
		"(or put an auth key in listen.tailnet.auth_key_file and restart)", "file", n.urlFile)
	n.d.setStatusExtra("tailnet: needs a login: the login URL is in " + n.urlFile + " (root only; proxmox-mcp doctor shows it)")
}

// loggedIn removes the login URL once the node runs.
func (n *tailnetNode) loggedIn() {
	if n.loginURL == "" {
		return
	}
	n.loginURL = ""
	if err := os.Remove(n.urlFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		n.log.Warn("daemon: the used Tailnet login URL could not be removed", "file", n.urlFile, "err", err)
	}
}

// loginURLShape matches the login URLs of Tailscale (/a/…), of
// Headscale (/register/…) and of the test control server (/auth/…).
var loginURLShape = regexp.MustCompile(`https?://[^\s"'<>]+/(?:a|auth|register)/[^\s"'<>]+`)

// anyURL matches any URL.
var anyURL = regexp.MustCompile(`https?://[^\s"'<>]+`)

// hideLoginURLs replaces login URLs in a line of tsnet's log by where the
// URL is kept: every URL in the lines tsnet means for the user (the only
// URL they carry is the login URL), the login-shaped ones in tailscaled's
// own.
func hideLoginURLs(line, urlFile string, all bool) string {
	re := loginURLShape
	if all {
		re = anyURL
	}
	return re.ReplaceAllLiteralString(line, "<the login URL, in "+urlFile+">")
}

// serve opens the Tailnet listener: HTTPS on the node's tailnet name when
// the tailnet gives it certificates, plain HTTP on its address otherwise.
func (n *tailnetNode) serve(ctx context.Context, st *ipnstate.Status) error {
	https := len(st.CertDomains) > 0 && st.CurrentTailnet != nil && st.CurrentTailnet.MagicDNSEnabled
	port := n.cfg.ServePort(https)
	ln, err := n.srv.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return fmt.Errorf("port %d on the tailnet: %w", port, err)
	}
	n.port.Store(int32(port))
	n.setHosts(st)
	var fqdn, url, addr string
	if st.Self != nil {
		fqdn = strings.TrimSuffix(st.Self.DNSName, ".")
	}
	if len(st.TailscaleIPs) > 0 {
		addr = netip.AddrPortFrom(st.TailscaleIPs[0], uint16(port)).String()
	}
	if https {
		name := st.CertDomains[0]
		ln = tls.NewListener(ln, transport.LANTLSConfig(n.lc.GetCertificate))
		url = "https://" + name + portSuffix(port, 443)
		// The first certificate comes from the tailnet's CA (Let's
		// Encrypt, through the coordination server): fetch it now rather
		// than in the first client's handshake.
		go n.fetchCert(ctx, name)
	} else {
		host := fqdn
		if host == "" && len(st.TailscaleIPs) > 0 {
			host = st.TailscaleIPs[0].String()
		}
		url = "http://" + host + portSuffix(port, 80)
	}
	err = n.d.addHTTPListener(httpListener{
		name: "tailnet", ln: ln, addr: addr, origins: n.cfg.AllowedOrigins,
		hostAllowed: n.hostAllowed, identify: n.identify,
	})
	if err != nil {
		return err
	}
	n.url.Store(&url)
	ips := make([]string, len(st.TailscaleIPs))
	for i, ip := range st.TailscaleIPs {
		ips[i] = ip.String()
	}
	n.log.Info("daemon: serving MCP on the Tailnet", "url", url+"/mcp", "https", https, "name", fqdn,
		"addresses", strings.Join(ips, ","), "port", port)
	if !https {
		n.log.Info("daemon: the tailnet gives this node no HTTPS certificate, so MCP is plain HTTP inside WireGuard; " +
			"enable MagicDNS and HTTPS certificates in the tailnet's DNS settings and restart to serve HTTPS")
	}
	return nil
}

func portSuffix(port, def int) string {
	if port == def {
		return ""
	}
	return ":" + strconv.Itoa(port)
}

// fetchCert fetches the HTTPS certificate of name ahead of the first
// client.
func (n *tailnetNode) fetchCert(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, _, err := n.lc.CertPair(ctx, name); err != nil && ctx.Err() == nil {
		n.log.Warn("daemon: the Tailnet HTTPS certificate could not be fetched yet; the first client's handshake will try again",
			"name", name, "error", err)
	}
}

// setHosts computes the Host values of the listener from the node's
// status.
func (n *tailnetNode) setHosts(st *ipnstate.Status) {
	port := strconv.Itoa(int(n.port.Load()))
	hosts := map[string]bool{}
	add := func(h string) {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if h == "" {
			return
		}
		hosts[h] = true
		hosts[net.JoinHostPort(h, port)] = true
	}
	var names []string
	if st.Self != nil {
		names = append(names, st.Self.DNSName)
	}
	names = append(names, st.CertDomains...)
	for _, name := range names {
		name = strings.TrimSuffix(name, ".")
		add(name)
		if short, _, ok := strings.Cut(name, "."); ok {
			add(short)
		}
	}
	for _, ip := range st.TailscaleIPs {
		add(ip.String())
		if ip.Is6() {
			hosts["["+ip.String()+"]"] = true
		}
	}
	n.hosts.Store(&hosts)
}

func (n *tailnetNode) hostAllowed(host string) bool {
	h := n.hosts.Load()
	return h != nil && (*h)[host]
}

// identify asks the node who is at the far end of the request's
// connection. A request it cannot identify is refused (403), never served
// as an anonymous caller with a key.
func (n *tailnetNode) identify(r *http.Request) (*policy.TailnetIdentity, error) {
	who, err := n.whois(r.Context(), r.RemoteAddr)
	if err != nil {
		return nil, &transport.ForbiddenError{Reason: fmt.Sprintf("the Tailnet node cannot tell who %s is (WhoIs failed), so it serves nothing to it", r.RemoteAddr), Err: err}
	}
	id, err := tailnetIdentity(who)
	if err != nil {
		return nil, &transport.ForbiddenError{Reason: fmt.Sprintf("the Tailnet identity of %s is unusable", r.RemoteAddr), Err: err}
	}
	return id, nil
}

// tailnetIdentity is the policy's view of a WhoIs answer: the owner's
// login, the node's short name and tags, and the capability grants with
// their values decoded.
func tailnetIdentity(who *apitype.WhoIsResponse) (*policy.TailnetIdentity, error) {
	if who == nil || who.Node == nil || who.UserProfile == nil {
		return nil, errors.New("WhoIs named no node or no user")
	}
	node := who.Node.ComputedName
	if node == "" {
		node, _, _ = strings.Cut(strings.TrimSuffix(who.Node.Name, "."), ".")
	}
	id := &policy.TailnetIdentity{User: who.UserProfile.LoginName, Node: node}
	if len(who.Node.Tags) > 0 {
		id.Tags = slices.Clone(who.Node.Tags)
		slices.Sort(id.Tags)
	}
	if len(who.CapMap) > 0 {
		id.Capabilities = make(map[string][]any, len(who.CapMap))
		for name, raws := range who.CapMap {
			vals := make([]any, 0, len(raws))
			for i, raw := range raws {
				dec := json.NewDecoder(strings.NewReader(string(raw)))
				dec.UseNumber()
				var v any
				if err := dec.Decode(&v); err != nil {
					return nil, fmt.Errorf("capability %s, value %d: %w", name, i, err)
				}
				vals = append(vals, v)
			}
			id.Capabilities[string(name)] = vals
		}
	}
	return id, nil
}

// readiness says whether the Tailnet listener serves.
func (n *tailnetNode) readiness() string {
	st, _ := n.state.Load().(ipn.State)
	switch {
	case st == ipn.Running && n.url.Load() != nil:
		return "ok"
	case st == ipn.NeedsLogin:
		return "the node needs a login: the login URL is in " + n.urlFile + ", readable by root (or set listen.tailnet.auth_key_file)"
	case st == ipn.NeedsMachineAuth:
		return "the node waits for approval in the tailnet's admin console"
	case st == ipn.Stopped:
		return "the node is stopped (see the daemon's log)"
	default:
		return "starting (node state " + st.String() + ")"
	}
}

// start follows the node until stopWatching.
func (n *tailnetNode) start() {
	ctx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	go n.run(ctx)
}

// stopWatching ends run and waits for it: no listener opens after this.
func (n *tailnetNode) stopWatching() {
	if n.stop != nil {
		n.stop()
		<-n.done
	}
}

// close stops the node (after the listener has drained).
func (n *tailnetNode) close() {
	n.closeMu.Lock()
	defer n.closeMu.Unlock()
	if n.closed {
		return
	}
	n.closed = true
	n.stopWatching()
	if err := n.srv.Close(); err != nil {
		n.log.Warn("daemon: closing the Tailnet node", "error", err)
	}
}
