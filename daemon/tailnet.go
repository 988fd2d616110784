package daemon

import "errors"

// listenTailnet starts the Tailnet node of listen.tailnet and serves MCP on
// it.
func (d *Daemon) listenTailnet() error {
	if d.cfg.Listen.Tailnet != nil {
		return errors.New("daemon: listen.tailnet is not served by this build yet; remove it to start")
	}
	return nil
}
