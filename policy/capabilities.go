package policy

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// RemovedBuiltins are the builtins no policy may call: they reach the
// network or the environment, or make a decision depend on something other
// than its input (the clock, randomness), which would make simulation lie.
func RemovedBuiltins() []string {
	return []string{
		"http.send",          // network
		"net.lookup_ip_addr", // DNS
		"opa.runtime",        // environment variables and configuration
		"json.verify_schema", // can fetch remote $refs
		"json.match_schema",  // can fetch remote $refs
		"time.now_ns",        // wall clock: use input.time
		"rand.intn",          // randomness
		"uuid.rfc4122",       // randomness
		"crypto.x509.parse_and_verify_certificates",              // the clock
		"crypto.x509.parse_and_verify_certificates_with_options", // the clock
		"io.jwt.decode_verify",                                   // the clock
		"trace",                                                  // writes to the evaluation trace
	}
}

// safeCapabilities returns this OPA version's capabilities without the
// removed builtins and with no network access for the compiler either.
func safeCapabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	removed := RemovedBuiltins()
	caps.Builtins = slices.DeleteFunc(caps.Builtins, func(b *ast.Builtin) bool { return slices.Contains(removed, b.Name) })
	caps.AllowNet = []string{}
	return caps
}
