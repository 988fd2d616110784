package sim

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/pve"
)

// NodeDir serves the simulator as pveproxy serves a node, from what it
// reads in the node's /etc/pve: the certificate (local/pveproxy-ssl.pem
// and its key when a custom one is installed, else local/pve-ssl.pem),
// read once as pveproxy reads it at start; and the users, tokens, groups,
// custom roles and ACL of user.cfg and priv/token.cfg, read again before a
// request whenever either file changed, as pveproxy's cluster file system
// cache does. A file that does not parse leaves the last good access in
// place and is logged. So a pveum that writes those files (PVE's, or a
// test's) creates the tokens this simulator accepts.
type NodeDir struct {
	sim *Sim
	dir string

	mu    sync.Mutex
	stamp [2]fileStamp
}

// fileStamp tells a file's versions apart: inode, size and mtime.
type fileStamp struct {
	ino, size int64
	mtime     time.Time
	exists    bool
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime(), exists: true}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = int64(sys.Ino)
	}
	return st, nil
}

// The files of /etc/pve a NodeDir reads.
const (
	UserCfg    = "user.cfg"
	TokenCfg   = "priv/token.cfg"
	NodeCert   = "local/pve-ssl.pem"
	NodeKey    = "local/pve-ssl.key"
	CustomCert = "local/pveproxy-ssl.pem"
	CustomKey  = "local/pveproxy-ssl.key"
)

// OpenNodeDir reads dir's access files into s (absent files are a fresh
// node: root@pam alone, no tokens) and returns the NodeDir that keeps them
// current.
func OpenNodeDir(s *Sim, dir string) (*NodeDir, error) {
	n := &NodeDir{sim: s, dir: dir}
	if err := n.load(); err != nil {
		return nil, err
	}
	return n, nil
}

// load reads both files when either changed since the last load.
func (n *NodeDir) load() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var stamps [2]fileStamp
	for i, name := range []string{UserCfg, TokenCfg} {
		st, err := stampOf(filepath.Join(n.dir, name))
		if err != nil {
			return fmt.Errorf("sim: %s: %w", name, err)
		}
		stamps[i] = st
	}
	if stamps == n.stamp && n.stamp[0].exists {
		return nil
	}
	uc := NewUserConfig()
	if stamps[0].exists {
		data, err := os.ReadFile(filepath.Join(n.dir, UserCfg))
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if uc, err = ParseUserConfig(data); err != nil {
			return fmt.Errorf("sim: %s: %w", filepath.Join(n.dir, UserCfg), err)
		}
	}
	secrets := map[string]string{}
	if stamps[1].exists {
		data, err := os.ReadFile(filepath.Join(n.dir, TokenCfg))
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if secrets, err = ParseTokenConfig(data); err != nil {
			return fmt.Errorf("sim: %s: %w", filepath.Join(n.dir, TokenCfg), err)
		}
	}
	n.sim.SetAccess(uc, secrets)
	n.stamp = stamps
	return nil
}

// ServeHTTP brings the access files in before answering like pveproxy.
func (n *NodeDir) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := n.load(); err != nil {
		n.sim.log.Warn("sim: the node's access files were not applied; the last good ones stay", "dir", n.dir, "err", err)
	}
	n.sim.ServeHTTP(w, r)
}

// Certificate is the certificate pveproxy serves: the custom one when
// local/pveproxy-ssl.pem exists, else the node's own, each with its key.
func (n *NodeDir) Certificate() (tls.Certificate, error) {
	cert, key := NodeCert, NodeKey
	if _, err := os.Stat(filepath.Join(n.dir, CustomCert)); err == nil {
		cert, key = CustomCert, CustomKey
	}
	c, err := tls.LoadX509KeyPair(filepath.Join(n.dir, cert), filepath.Join(n.dir, key))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("sim: the certificate in %s: %w", n.dir, err)
	}
	return c, nil
}

// ListenNode binds addr and prepares a server that answers as n's
// pveproxy, with n's certificate; Serve runs it.
func ListenNode(n *NodeDir, addr string) (*Server, error) {
	cert, err := n.Certificate()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return &Server{
		Sim:         n.sim,
		URL:         "https://" + ln.Addr().String() + APIPrefix,
		Cert:        cert,
		Fingerprint: pve.Fingerprint(cert.Certificate[0]),
		ln:          ln,
		http: &http.Server{
			Handler:           n,
			ReadHeaderTimeout: 10 * time.Second,
			TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		},
	}, nil
}
