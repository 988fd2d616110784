// Package systemd owns what ties the daemon to systemd: the notify protocol
// (READY, RELOADING, STOPPING, STATUS and watchdog pings tied to a health
// check), structured logging to the journal (PMCP_* fields, so that
// `journalctl -u proxmox-mcp PMCP_DECISION=deny` works), and the unit files,
// embedded and rendered for the installer and `proxmox-mcp units render`.
package systemd
