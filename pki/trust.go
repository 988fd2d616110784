package pki

import "fmt"

// Step is one platform's or client's way to trust the CA.
type Step struct {
	For      string   `json:"for"`
	Commands []string `json:"commands"`
	Note     string   `json:"note,omitempty"`
}

// TrustFor names the CA and the host for TrustSteps.
type TrustFor struct {
	// Host is the host's name, as clients reach it over ssh.
	Host string
	// CAPath is ca.pem on the host; Fingerprint its SHA-256 fingerprint.
	CAPath, Fingerprint string
	// URL is a LAN listener's base URL (https://name:port).
	URL string
}

// TrustSteps say how a client machine trusts the CA, and how MCP clients
// use it. The CA is copied under the name proxmox-mcp-<host>: distinct per
// host, and with the .crt extension update-ca-certificates requires.
func TrustSteps(t TrustFor) []Step {
	host, caPath, fingerprint := t.Host, t.CAPath, t.Fingerprint
	label := "proxmox-mcp-" + host
	pem := label + ".pem"
	return []Step{
		{
			For: "every client: copy ca.pem and check its fingerprint",
			Commands: []string{
				fmt.Sprintf("scp root@%s:%s %s", host, caPath, pem),
				"openssl x509 -in " + pem + " -noout -fingerprint -sha256",
			},
			Note: "the fingerprint printed must be " + fingerprint + "; compare it out of band, not over the network you copied it through",
		},
		{
			For:      "macOS",
			Commands: []string{"sudo security add-trusted-cert -d -r trustRoot -k /Library/Keychains/System.keychain " + pem},
		},
		{
			For: "Linux: Debian, Ubuntu",
			Commands: []string{
				"sudo cp " + pem + " /usr/local/share/ca-certificates/" + label + ".crt",
				"sudo update-ca-certificates",
			},
		},
		{
			For: "Linux: Fedora, RHEL",
			Commands: []string{
				"sudo cp " + pem + " /etc/pki/ca-trust/source/anchors/" + pem,
				"sudo update-ca-trust",
			},
		},
		{
			For:      "Windows (an elevated prompt)",
			Commands: []string{"certutil -addstore -f Root " + pem},
		},
		{
			For:      "Node-based MCP clients (Claude Code, the MCP Inspector, mcp-remote, the TypeScript SDK)",
			Commands: []string{"export NODE_EXTRA_CA_CERTS=$HOME/" + pem},
			Note:     "Node reads its own CA list, not the system's: set this in the environment the client starts from",
		},
		{
			For:      "Python MCP clients (the Python SDK, httpx)",
			Commands: []string{"export SSL_CERT_FILE=$HOME/" + pem},
			Note:     "this replaces the default CA bundle for that process; name a bundle holding both when the client also calls public services",
		},
		{
			For:      "a quick check",
			Commands: []string{"curl --cacert " + pem + " " + t.URL + "/healthz"},
		},
	}
}
