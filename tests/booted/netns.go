package booted

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace with a veth pair to the host: a /30 of
// 10.213.0.0/16 whose first address is the host's and second the
// namespace's (on its eth0), and a loopback that is up.
type Netns struct {
	// Name is the namespace's name under /run/netns.
	Name string
	// HostIf is the host's end of the veth pair.
	HostIf     string
	IP, HostIP string
}

// Path is the namespace's file.
func (n *Netns) Path() string { return "/run/netns/" + n.Name }

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// freeSubnet picks a /30 of 10.213.0.0/16 no interface of the host uses.
func freeSubnet() (net.IP, error) {
	used := map[string]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			v := n.IP.To4()
			used[fmt.Sprintf("%d.%d.%d.%d", v[0], v[1], v[2], v[3]&^3)] = true
		}
	}
	for range 64 {
		var b [2]byte
		rand.Read(b[:]) //nolint:errcheck // crypto/rand never fails on Linux
		base := net.IPv4(10, 213, b[0], b[1]&^3).To4()
		if !used[base.String()] {
			return base, nil
		}
	}
	return nil, errors.New("no free /30 in 10.213.0.0/16")
}

// subnetMu is held from the choice of a /30 until the host's address in
// it is up, where the next freeSubnet sees it: the tests boot containers
// in parallel.
var subnetMu sync.Mutex

// NewNetns makes a namespace named name with its veth pair.
func NewNetns(name string) (*Netns, error) {
	subnetMu.Lock()
	defer subnetMu.Unlock()
	base, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	host := net.IPv4(base[0], base[1], base[2], base[3]+1).String()
	guest := net.IPv4(base[0], base[1], base[2], base[3]+2).String()
	// Interface names have 15 bytes at most: pmcp-xxxxxxxx is 13.
	n := &Netns{Name: name, HostIf: "v" + strings.TrimPrefix(name, "pmcp-") + "h", IP: guest, HostIP: host}
	peer := "v" + strings.TrimPrefix(name, "pmcp-") + "c"
	steps := [][]string{
		{"netns", "add", name},
		{"link", "add", n.HostIf, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", name},
		{"-n", name, "link", "set", peer, "name", "eth0"},
		{"addr", "add", host + "/30", "dev", n.HostIf},
		{"link", "set", n.HostIf, "up"},
		{"-n", name, "addr", "add", guest + "/30", "dev", "eth0"},
		{"-n", name, "link", "set", "eth0", "up"},
		{"-n", name, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			n.Delete() //nolint:errcheck // what was made so far
			return nil, fmt.Errorf("booted: %w", err)
		}
	}
	return n, nil
}

// Delete removes the namespace (and with it both ends of the veth pair).
func (n *Netns) Delete() error {
	var errs []error
	if _, err := os.Stat(n.Path()); err == nil {
		if err := ip("netns", "delete", n.Name); err != nil {
			errs = append(errs, err)
		}
	}
	// The host's end goes with the namespace, a moment later.
	for i := 0; i < 50 && hasLink(n.HostIf); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if hasLink(n.HostIf) {
		if err := ip("link", "delete", n.HostIf); err != nil && hasLink(n.HostIf) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func hasLink(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

// DialContext opens a connection from inside the namespace, as a program
// of the container would: the socket is made on a thread that entered the
// namespace (and is thrown away with it), then used from anywhere. It is
// an http.Transport's DialContext for a client on the host that talks to
// the container's loopback.
func (n *Netns) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	type dialed struct {
		conn net.Conn
		err  error
	}
	ch := make(chan dialed, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine rather than
		// go back to the scheduler in the container's namespace.
		runtime.LockOSThread()
		f, err := os.Open(n.Path())
		if err != nil {
			ch <- dialed{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- dialed{err: fmt.Errorf("booted: enter %s: %w", n.Path(), err)}
			return
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		ch <- dialed{conn, err}
	}()
	d := <-ch
	return d.conn, d.err
}

// Command runs a host program inside the namespace: the host's files, the
// container's network (its loopback, its address).
func (n *Netns) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.Path(), "--", name}, args...)...)
}
