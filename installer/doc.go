// Package installer installs, upgrades, checks and removes proxmox-mcp on
// a Proxmox VE 9 host: `proxmox-mcp install`, `uninstall [--purge]` and
// `doctor`.
//
// An installation is a list of named steps (preflight, binary, user,
// directories, PVE trust, PVE identity, configuration, exposure,
// validation, units, service, initial key). Each step is idempotent: Apply
// makes its part of the host right and changes nothing that already is, and
// Check reports what is wrong with it and how to fix it, changing nothing
// (`doctor` runs every Check). A re-run of install is therefore an upgrade
// and a resume: it keeps keys, policies, the journal, the PVE tokens whose
// secrets are still on disk and the operator's edits to the configuration.
// The install state (/var/lib/proxmox-mcp-install/install.json, root's
// alone) records the mode, the steps done, the step that failed and why,
// and what install created, so that uninstall removes only that; and
// uninstall never removes anything outside install's own files and
// directories, whatever the record says. An install.json an older version
// left in the state directory, which the service user can write, is taken
// only where install could have made what it names, and moved.
//
// The installer runs as root in directories the service user can write:
// every file it writes, chmods, chowns or removes is reached through a
// directory descriptor without following a link another user could plant
// (package atomicfile).
//
// Everything that touches the host goes through [System]: a [Runner] for
// commands (argv, never a shell, with a timeout), a filesystem root under
// which every path is resolved ("/" on a host, a temporary directory in
// tests), an [Owners] seam for file ownership, the effective user id, and
// the free-disk, free-port and host-name probes. The tests run the whole
// install, upgrade, failure and resume, uninstall and doctor in a temporary
// root with fakes of pveum, pveversion, systemctl and systemd-sysusers.
package installer
