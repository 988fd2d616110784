package schema

// TestedSchema is a real PVE API schema this build's tests run over.
type TestedSchema struct {
	// Release is the Proxmox VE release the schema came from.
	Release string `json:"release"`
	// SHA256 identifies its apidoc.js.
	SHA256 string `json:"sha256"`
	// Endpoints is how many it has.
	Endpoints int `json:"endpoints"`
}

// TestedWith lists the real apidoc.js files the tests of this build read
// (../shared/fixtures; TestTestedWith holds each entry to its file), as
// `proxmox-mcp --version` reports them. A schema outside the list still
// loads: the list says what was tried, not what is allowed.
func TestedWith() []TestedSchema {
	return []TestedSchema{
		{Release: "9.1", SHA256: "4af79be30166209a4714b771f65e1e9540c5b738f414ff30c98454402e29d030", Endpoints: 646},
		{Release: "8.4.5", SHA256: "bbe03a42c55b3f9ae77a5b5216c1a8554f4fffd0f4b266848f4af26be295946e", Endpoints: 605},
	}
}
