package schema

import "strings"

// secretNames are parameter names that are secrets wherever they appear
// (compared after lower-casing and turning '_' into '-'). From the PVE 9.1
// schema: password (users, realms, storages, scans, cluster join, SMTP,
// agent set-user-password), cipassword, confirmation-password, secret
// (webhook secrets), token (InfluxDB, Gotify, IPAM), key (a custom
// certificate's PEM private key, a DNS plugin's API key), keyring (Ceph),
// encryption-key (PBS), client-key (OpenID), eab-hmac-key (ACME), otp,
// totp (an otpauth URI holds the TOTP secret), tfa-challenge, recovery.
var secretNames = map[string]bool{
	"password": true, "cipassword": true, "confirmation-password": true, "new-password": true,
	"passphrase": true, "secret": true, "token": true, "key": true, "keyring": true,
	"otp": true, "totp": true, "tfa-challenge": true, "recovery": true, "authkey": true,
	"ticket": true, "csrfpreventiontoken": true, "authorization": true, "cookie": true,
	"private-key": true, "privkey": true, "client-secret": true, "api-key": true, "apikey": true,
}

// secretPathParams are parameters that are secrets only on some endpoints:
// the same name is harmless elsewhere (value is a boolean flag on
// /cluster/ceph/flags; data is /etc/hosts on /nodes/{node}/hosts).
var secretPathParams = []struct {
	prefix string
	names  []string
}{
	// The current TOTP or WebAuthn answer.
	{"/access/tfa", []string{"value"}},
	// ACME DNS plugin data: the DNS provider's API credentials.
	{"/cluster/acme/plugins", []string{"data"}},
}

// SecretParam reports whether a parameter of the endpoint at pathTemplate
// (empty: any endpoint) named name holds a secret: a name in the list
// above, a name containing password, passwd, passphrase, secret or
// private, or a name ending in -key, -token or -secret that is not a
// public key (pubkey, public-key).
func SecretParam(pathTemplate, name string) bool {
	n := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
	if secretNames[n] {
		return true
	}
	for _, s := range []string{"password", "passwd", "passphrase", "secret", "private"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	if strings.Contains(n, "pubkey") || strings.Contains(n, "public") {
		return false
	}
	for _, s := range []string{"-key", "-token", "-secret"} {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	for _, p := range secretPathParams {
		if pathTemplate == p.prefix || strings.HasPrefix(pathTemplate, p.prefix+"/") {
			for _, x := range p.names {
				if n == x {
					return true
				}
			}
		}
	}
	return false
}
