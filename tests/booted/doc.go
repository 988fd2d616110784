// Package booted is the test bed of a real systemd: it builds a Debian 13
// (trixie, systemd 257, as on Proxmox VE 9) root file system with
// debootstrap, cached outside the repository and keyed by its package list,
// boots it with systemd-nspawn on a private overlay and in a network
// namespace of its own, runs commands inside (nsenter into the container's
// init), copies files in, reports the container's journal when a test
// fails, and always powers it off: at the end of the test, at a deadline
// below the test binary's timeout, and, should the test process die, from
// a watcher process that kills the container and removes its mount and
// network namespace.
//
// PVENode lays a Proxmox VE node's files into a container: the cluster CA
// and the node certificate in /etc/pve, fakes of pveum and pveversion
// (tests/booted/fakepve), PVE's apidoc.js, and a pveproxy.service running
// `proxmox-mcp sim --node-dir /etc/pve` on 127.0.0.1:8006. The tests of
// this package (TestBooted…) prove the Debian package, the installer and
// the daemon under that systemd.
//
// Everything here needs root, debootstrap, systemd-nspawn (Debian's
// systemd-container), nsenter and iproute2. Without them the tests skip,
// saying what is missing; with PMCP_REQUIRE_E2E=1 (CI) they fail instead.
package booted
