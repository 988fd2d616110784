package schema

import (
	"regexp"

	"github.com/go-json-experiment/json/jsontext"
)

// Endpoint is one method of one path of the PVE API.
type Endpoint struct {
	// Method is GET, POST, PUT or DELETE.
	Method string
	// Path is the template, e.g. /nodes/{node}/qemu/{vmid}/config.
	Path string
	// PathParams are the names of the {variables} of Path, in order.
	PathParams []string
	// Handler is PVE's handler name (info.name), e.g. vm_start.
	Handler string
	// Description is PVE's description of the method.
	Description string
	// Tool is the deterministic MCP tool name (see ToolName).
	Tool string
	// Risk is the highest class any call of this endpoint can have.
	Risk Risk
	// Params are the request parameters, sorted by name. Path variables are
	// ordinary required parameters, as PVE lists them.
	Params []*Param
	// AdditionalParams reports whether PVE accepts parameters that the schema
	// does not name (parameters.additionalProperties: 1).
	AdditionalParams bool
	// Returns is PVE's return schema, compact JSON; nil when absent.
	Returns jsontext.Value
	// Permissions is nil when PVE states none (root-only or internal calls).
	Permissions *Permissions
	// Protected methods are forwarded by pveproxy to the privileged pvedaemon.
	Protected bool
	// ProxyTo names the parameter whose node the call is forwarded to ("node"),
	// or is empty.
	ProxyTo string
	// AllowToken reports whether API tokens may call the method.
	AllowToken bool
	// DownloadAllowed marks streaming downloads.
	DownloadAllowed bool
	// ExposeCredentials marks methods whose response can carry credentials.
	ExposeCredentials bool
	// Unstable marks methods PVE declares unstable.
	Unstable bool
	// Facts are what the endpoint is beside its risk (config edit, reaches
	// outside, secrets, targets), computed when the registry is built.
	Facts Facts

	params  map[string]*Param
	indexed []*Param
	rules   []*riskRule // the risk rules that can apply to a call, first match wins
}

// Key returns "METHOD /path/template", the endpoint's identity.
func (e *Endpoint) Key() string { return e.Method + " " + e.Path }

// Param returns the parameter with the given schema name (numbered keys by
// their literal name, e.g. "net[n]"), or nil.
func (e *Endpoint) Param(name string) *Param { return e.params[name] }

// Permissions is the permission object of a method.
type Permissions struct {
	// Check is PVE's check expression, e.g. ["perm","/vms/{vmid}",["VM.PowerMgmt"]];
	// nil when absent.
	Check jsontext.Value `json:"check,omitempty"`
	// User is "all", "world" or empty.
	User string `json:"user,omitempty"`
	// Description explains the rule in words.
	Description string `json:"description,omitempty"`
}

// Param is one parameter, property-string sub-key, or array item schema, in
// PVE's dialect.
type Param struct {
	// Name is the schema name. Numbered keys keep their literal form, "net[n]".
	Name string
	// Indexed is true for numbered keys; on the wire they are Prefix followed
	// by a number (net0, net1, ...).
	Indexed bool
	// Prefix is the wire prefix of a numbered key ("net").
	Prefix string
	// IndexMax is the highest index the description states ("n is 0 to 30"),
	// or -1 when the schema does not say.
	IndexMax int

	// Type is string, integer, number, boolean, array, object, null or any; it
	// is empty for property-string aliases.
	Type string
	// Format is a named format such as pve-vmid or pve-configid-list.
	Format string
	// Properties describes the sub-keys when the format is a property string.
	Properties *PropertyFormat
	// Optional is false for required parameters.
	Optional bool
	// Enum lists the allowed values, if restricted.
	Enum []string
	// Minimum and Maximum bound numbers; nil when unbounded.
	Minimum, Maximum *float64
	// MinLength and MaxLength bound string lengths; nil when unbounded.
	MinLength, MaxLength *int
	// Pattern is the Perl regular expression the value must match as a whole.
	Pattern string
	// TypeText is PVE's human hint of the syntax.
	TypeText string
	// Default is the default as PVE states it (JSON); it need not match Type.
	Default jsontext.Value
	// Description, VerboseDescription, FormatDescription and Title are text.
	Description        string
	VerboseDescription string
	FormatDescription  string
	Title              string
	// Requires names a parameter that must be present when this one is.
	Requires string
	// Items is the item schema of an array.
	Items *Param
	// OneOf lists alternatives selected by TypeProperty (SDN fabrics).
	OneOf []*Param
	// InstanceTypes are the values of the type property this variant applies to.
	InstanceTypes []string
	// TypeProperty names the parameter that selects the variant.
	TypeProperty string
	// Alias, KeyAlias and DefaultKey describe property-string sub-keys.
	Alias      string
	KeyAlias   string
	DefaultKey bool

	// re is Pattern compiled for Go; nil when there is no pattern or when it
	// uses a construct RE2 cannot express (then PVE remains the judge).
	re *regexp.Regexp
	// commonProse: many parameters of the registry have this description
	// (InputSchema leaves it out).
	commonProse bool
}

// PropertyFormat is the sub-key schema of a property string, the
// comma-separated key=value syntax PVE uses for values like net0.
type PropertyFormat struct {
	// Keys are the sub-keys, sorted by name.
	Keys []*Param

	byName     map[string]*Param
	defaultKey *Param
}

// Key returns the sub-key schema for name, or nil.
func (f *PropertyFormat) Key(name string) *Param { return f.byName[name] }
