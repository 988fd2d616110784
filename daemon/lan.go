package daemon

import "errors"

// listenLAN opens the LAN TLS listeners of listen.lan.
func (d *Daemon) listenLAN() error {
	if len(d.cfg.Listen.LAN) > 0 {
		return errors.New("daemon: listen.lan is not served by this build yet; remove it to start")
	}
	return nil
}
