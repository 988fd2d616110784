// Package pki owns the local certificate authority of the LAN TLS
// listeners: a CA (ECDSA P-256, ten years) whose certificate carries
// critical name constraints (the host's DNS names, the private address
// ranges and loopback), and the server certificate it signs (ECDSA P-256,
// serverAuth, 90 days) for the addresses and names of listen.lan.
//
// Because of the name constraints, a client that trusts the CA trusts it
// for this host's names and private addresses only: a leaked CA key cannot
// mint a certificate that a verifier accepts for a public name such as
// example.com or 8.8.8.8.
//
// The files live in one directory (pki.dir, /etc/proxmox-mcp/pki):
//
//	ca.pem          0644  the CA certificate clients trust
//	ca-key.pem      0600  the CA key: root-only, never read by the daemon
//	server.pem      0644  the server certificate
//	server-key.pem  0640  its key, readable by the state directory's group
//	                      (0600 and the caller's own when not run as root)
//
// Every file is written atomically under an flock of the directory, so a
// reader sees the old file or the new one, never a part. [PKI.Renew]
// re-issues the server certificate when a third of its life is left or
// when the configured names changed; the daemon's TLS listener picks the
// new files up without a restart.
package pki
