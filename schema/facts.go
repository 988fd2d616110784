package schema

import (
	"bytes"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Facts are what an endpoint is, beside its risk class: whether it edits a
// configuration guarded by a digest, whether PVE fetches from outside the
// cluster for it, whether its answer carries secrets, which of its
// parameters are secrets, and which parameters name the objects a call
// acts on. They are computed once, when the registry is built, so that the
// tools, the policy input, the journal and the guard read one answer
// instead of re-deriving it from the path.
type Facts struct {
	// ConfigEdit: a PUT or POST that changes a configuration PVE guards
	// with a digest (the call takes a digest parameter, and the GET of the
	// same path returns the configuration with its digest). Such a call is
	// planned against the configuration as it is read just before.
	ConfigEdit bool
	// ReadsConfig: a GET of a configuration that a config edit of the
	// same path changes (the configuration with its digest).
	ReadsConfig bool
	// ReachesOutside: PVE fetches from outside the cluster for this call
	// (a URL, a container registry).
	ReachesOutside bool
	// ReturnsSecrets: the answer can carry a secret, a ticket, or a
	// console or tunnel into a guest or the host (PVE's expose_credentials
	// flag, or an endpoint known to).
	ReturnsSecrets bool
	// Targets are the parameters that name objects the call acts on, in
	// parameter order.
	Targets []TargetParam
	// CreatesUnprivileged: a container create that makes the container
	// unprivileged when the call does not say (PVE 9: "For creation, the
	// default is 1"; PVE 8's create defaults to a privileged container).
	CreatesUnprivileged bool

	secret map[string]bool       // parameters whose values are secrets
	kinds  map[string]TargetKind // Targets by schema name
}

// TargetKind is what kind of object a parameter names.
type TargetKind string

// Target kinds.
const (
	TargetNode    TargetKind = "node"
	TargetVMID    TargetKind = "vmid"    // one vmid or a list of them
	TargetStorage TargetKind = "storage" // one storage id, or a src:dst map (targetstorage)
	TargetPool    TargetKind = "pool"
	TargetPath    TargetKind = "path" // a file or directory on the host
	TargetService TargetKind = "service"
	TargetCommand TargetKind = "command"
	// TargetVolume is a volume id (storage:name); its storage and the
	// guest that owns it are targets too.
	TargetVolume TargetKind = "volume"
	// TargetDisk is a property string whose default key or file/volume
	// key is a volume id or a path (disks, mount points).
	TargetDisk TargetKind = "disk"
)

// TargetParam is one parameter that names a target.
type TargetParam struct {
	// Param is the schema name; numbered keys keep their literal form
	// (scsi[n]), whose wire names are scsi0, scsi1, …
	Param string
	Kind  TargetKind
	// PathVar: the parameter is a variable of the path.
	PathVar bool
}

// Secret reports whether the parameter of this endpoint named name (its
// wire name: net0, password) holds a secret.
func (e *Endpoint) Secret(name string) bool {
	if e.Facts.secret[name] {
		return true
	}
	return SecretParam(e.Path, name)
}

// TargetKind says what kind of object the argument named name (its wire
// name: vmid, scsi0) names, if any.
func (e *Endpoint) TargetKind(name string) (TargetKind, bool) {
	if k, ok := e.Facts.kinds[name]; ok {
		return k, true
	}
	if p, _ := e.indexedParam(name); p != nil {
		k, ok := e.Facts.kinds[p.Name]
		return k, ok
	}
	return "", false
}

// Names of parameters that name targets, on every endpoint that has them.
var targetNames = map[string]TargetKind{
	"node": TargetNode, "target-node": TargetNode,
	"vmid": TargetVMID, "newid": TargetVMID, "target-vmid": TargetVMID,
	"storage": TargetStorage, "target-storage": TargetStorage, "targetstorage": TargetStorage,
	"pool": TargetPool, "poolid": TargetPool,
	"path": TargetPath, "file": TargetPath, "filename": TargetPath, "dir": TargetPath,
	"service": TargetService,
	"command": TargetCommand, "cmd": TargetCommand,
	// A template or backup to create a guest from: a volume id (or a path).
	"ostemplate": TargetVolume, "archive": TargetVolume,
}

// reachesOutside are the endpoints (by their last path segment) for which
// PVE downloads from or queries a place outside the cluster.
var reachesOutside = []string{"download-url", "oci-registry-pull", "query-url-metadata", "query-oci-repo-tags"}

// returnsSecrets are the endpoints, beside those PVE marks
// expose_credentials, whose answer is a secret, a ticket, or a console or
// tunnel into a guest or the host: logins and tickets, new API tokens and
// TFA secrets, consoles, migration tunnels, guest agent reads that can
// return any file or a command's output, cloud-init dumps (passwords),
// file-restore downloads, and ACME plugin configurations (DNS API keys).
var returnsSecrets = map[string]bool{
	"POST /access/ticket":                                       true,
	"POST /access/vncticket":                                    true,
	"POST /access/openid/login":                                 true,
	"POST /access/users/{userid}/token/{tokenid}":               true,
	"POST /access/tfa/{userid}":                                 true,
	"POST /nodes/{node}/qemu/{vmid}/vncproxy":                   true,
	"POST /nodes/{node}/qemu/{vmid}/termproxy":                  true,
	"POST /nodes/{node}/qemu/{vmid}/spiceproxy":                 true,
	"GET /nodes/{node}/qemu/{vmid}/vncwebsocket":                true,
	"POST /nodes/{node}/qemu/{vmid}/mtunnel":                    true,
	"GET /nodes/{node}/qemu/{vmid}/mtunnelwebsocket":            true,
	"POST /nodes/{node}/lxc/{vmid}/vncproxy":                    true,
	"POST /nodes/{node}/lxc/{vmid}/termproxy":                   true,
	"POST /nodes/{node}/lxc/{vmid}/spiceproxy":                  true,
	"GET /nodes/{node}/lxc/{vmid}/vncwebsocket":                 true,
	"POST /nodes/{node}/lxc/{vmid}/mtunnel":                     true,
	"GET /nodes/{node}/lxc/{vmid}/mtunnelwebsocket":             true,
	"POST /nodes/{node}/vncshell":                               true,
	"POST /nodes/{node}/termproxy":                              true,
	"POST /nodes/{node}/spiceshell":                             true,
	"GET /nodes/{node}/vncwebsocket":                            true,
	"GET /nodes/{node}/qemu/{vmid}/agent/file-read":             true,
	"GET /nodes/{node}/qemu/{vmid}/agent/exec-status":           true,
	"GET /nodes/{node}/qemu/{vmid}/cloudinit/dump":              true,
	"GET /nodes/{node}/storage/{storage}/file-restore/download": true,
	"GET /cluster/acme/plugins":                                 true,
	"GET /cluster/acme/plugins/{id}":                            true,
}

// computeFacts fills the facts of every endpoint of a registry.
func (r *Registry) computeFacts() {
	for _, ep := range r.endpoints {
		ep.Facts.ConfigEdit = r.isConfigEdit(ep)
	}
	for _, ep := range r.endpoints {
		f := &ep.Facts
		if ep.Method == "GET" {
			for _, m := range []string{"PUT", "POST"} {
				if w := r.Lookup(m, ep.Path); w != nil && w.Facts.ConfigEdit {
					f.ReadsConfig = true
				}
			}
		}
		last := ep.Path[strings.LastIndexByte(ep.Path, '/')+1:]
		f.ReachesOutside = slices.Contains(reachesOutside, last)
		f.ReturnsSecrets = ep.ExposeCredentials || returnsSecrets[ep.Key()]
		f.Targets = targetParams(ep)
		if p := ep.Param("unprivileged"); p != nil && ep.Method == "POST" && ep.Path == "/nodes/{node}/lxc" {
			f.CreatesUnprivileged = strings.Contains(p.Description, "For creation, the default is 1")
		}
		f.kinds = make(map[string]TargetKind, len(f.Targets))
		for _, tp := range f.Targets {
			f.kinds[tp.Param] = tp.Kind
		}
		for _, p := range ep.Params {
			if SecretParam(ep.Path, p.Name) || (p.Indexed && SecretParam(ep.Path, p.Prefix)) {
				if f.secret == nil {
					f.secret = map[string]bool{}
				}
				f.secret[p.Name] = true
			}
		}
	}
}

// isConfigEdit: a PUT or POST that takes digest, beside a GET of the same
// path that answers an object with a digest.
func (r *Registry) isConfigEdit(ep *Endpoint) bool {
	if (ep.Method != "PUT" && ep.Method != "POST") || ep.Param("digest") == nil {
		return false
	}
	get := r.Lookup("GET", ep.Path)
	return get != nil && len(get.Returns) > 0 && objectWithDigest(get.Returns)
}

// objectWithDigest reports whether a return schema is of type object and
// lists a digest property. It reads the schema token by token and skips
// every value but the type and the properties' names, where decoding it
// whole cost 5 ms of each parse of PVE 9.1. It reads the keys as
// encoding/json would into a struct of the two (any case of the key, the
// last one wins, null leaves a value as it is, any other type is no).
func objectWithDigest(ret jsontext.Value) bool {
	dec := jsontext.NewDecoder(bytes.NewReader(ret), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	typ, digest := "", false
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return false
		}
		switch key := name.String(); {
		case strings.EqualFold(key, "type"):
			tok, err := dec.ReadToken()
			switch {
			case err != nil:
				return false
			case tok.Kind() == '"':
				typ = tok.String()
			case tok.Kind() != 'n':
				return false
			}
		case strings.EqualFold(key, "properties"):
			var ok bool
			if digest, ok = hasName(dec, "digest"); !ok {
				return false
			}
		default:
			if dec.SkipValue() != nil {
				return false
			}
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	return typ == "object" && digest
}

// hasName reads the next value, an object or null, and reports whether it
// is an object with a member called name; ok is false for any other value.
func hasName(dec *jsontext.Decoder, name string) (has, ok bool) {
	tok, err := dec.ReadToken()
	if err != nil {
		return false, false
	}
	switch tok.Kind() {
	case 'n':
		return false, true
	case '{':
	default:
		return false, false
	}
	for dec.PeekKind() != '}' {
		key, err := dec.ReadToken()
		if err != nil {
			return false, false
		}
		has = has || key.String() == name
		if dec.SkipValue() != nil {
			return false, false
		}
	}
	_, err = dec.ReadToken()
	return has, err == nil
}

// targetParams lists the parameters of ep that name targets: by name
// (target only when its format is a node), by format (volume ids), and
// property strings that hold a volume or a path (disks, mount points).
func targetParams(ep *Endpoint) []TargetParam {
	var out []TargetParam
	isVar := func(name string) bool { return slices.Contains(ep.PathParams, name) }
	for _, p := range ep.Params {
		kind, ok := targetNames[p.Name]
		switch {
		case p.Name == "target" && p.Format == "pve-node":
			kind, ok = TargetNode, true
		case p.Name == "volume" && isVar("volume"):
			kind, ok = TargetVolume, true
		case strings.HasPrefix(p.Format, "pve-volume-id"):
			kind, ok = TargetVolume, true
		case !ok && holdsVolume(p):
			kind, ok = TargetDisk, true
		}
		if ok {
			out = append(out, TargetParam{Param: p.Name, Kind: kind, PathVar: isVar(p.Name)})
		}
	}
	return out
}

// holdsVolume reports whether a property string's default key or one of
// its keys is a volume (file, volume).
func holdsVolume(p *Param) bool {
	if p.Properties == nil {
		return false
	}
	if d := p.Properties.defaultKey; d != nil && (d.Name == "file" || d.Name == "volume") {
		return true
	}
	return p.Properties.Key("file") != nil || p.Properties.Key("volume") != nil
}

// VolumesOfDisk returns the volumes or paths a disk or mount point
// property string (scsi0, mp0, rootfs) names: the value of its default key
// (a bare first item) or of its file or volume key, and the source of an
// import (import-from), which a new disk copies.
func VolumesOfDisk(p *Param, s string) []string {
	if p == nil || p.Properties == nil {
		return nil
	}
	def := ""
	if d := p.Properties.defaultKey; d != nil {
		def = d.Name
	}
	var out []string
	for i, item := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(item, "=")
		switch {
		case !ok && i == 0 && (def == "file" || def == "volume"):
			out = append(out, item)
		case ok && (k == "file" || k == "volume" || k == "import-from"):
			out = append(out, v)
		}
	}
	return out
}

// ParamFor finds the schema of an argument by its wire name, numbered keys
// included (net0 → net[n]).
func (e *Endpoint) ParamFor(name string) *Param {
	if p := e.params[name]; p != nil {
		return p
	}
	p, _ := e.indexedParam(name)
	return p
}
