// Package pve is the client of the Proxmox VE API: PVEAPIToken
// authentication, TLS verified against the host's pveproxy certificate or a
// pinned fingerprint, decoding of PVE's response envelope and of every error
// shape it produces, careful retries (GETs only), UPID parsing and task
// waiting. Package pve/sim is a stateful simulator of the same API.
package pve
