package systemd

import (
	"fmt"
	"net"
	"os"

	"github.com/coreos/go-systemd/v22/activation"
)

// ActivatedUnix is the one Unix stream socket systemd passed this process
// (socket activation: LISTEN_PID, LISTEN_FDS), or nil when none was
// passed. Any other number of sockets, or one of another kind, is an
// error: the unit and the program disagree.
func ActivatedUnix() (*net.UnixListener, error) {
	if os.Getenv("LISTEN_FDS") == "" {
		return nil, nil
	}
	ls, err := activation.Listeners()
	if err != nil {
		return nil, fmt.Errorf("systemd: socket activation: %w", err)
	}
	if len(ls) != 1 || ls[0] == nil {
		return nil, fmt.Errorf("systemd: socket activation passed %d sockets; want one Unix stream socket", len(ls))
	}
	ul, ok := ls[0].(*net.UnixListener)
	if !ok {
		ls[0].Close()
		return nil, fmt.Errorf("systemd: socket activation passed a %T; want a Unix stream socket", ls[0])
	}
	return ul, nil
}
