package sim

import (
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Consoles and downloads: qemu-server's and pve-container's vncproxy and
// termproxy (a proxy on a VNC port, waiting 10 s for its connection,
// authenticated by a ticket bound to the guest's ACL path and the port)
// and pve-storage's download-url and oci-registry-pull (a worker that
// fetches into the storage's directory). Their permissions (VM.Console;
// Datastore.AllocateTemplate with Sys.Audit and Sys.Modify on / or
// Sys.AccessNetwork on the node) are the schema's, checked before a
// handler runs. The simulator fetches nothing: a download's task ends with
// the file in the storage.

const (
	durConsole  = 10 * time.Second // the proxy's wait for a connection
	durDownload = 20 * time.Second
)

func (s *Sim) consoleRoutes(add func(string, handler)) {
	for _, kind := range []string{"qemu", "lxc"} {
		item := "/nodes/{node}/" + kind + "/{vmid}"
		add("POST "+item+"/vncproxy", s.vncProxy(kind))
		add("POST "+item+"/termproxy", s.termProxy(kind))
	}
	add("POST /nodes/{node}/termproxy", s.nodeTermProxy)
	add("POST /nodes/{node}/storage/{storage}/download-url", s.downloadURL)
	add("POST /nodes/{node}/storage/{storage}/oci-registry-pull", s.ociPull)
}

// vncPort is PVE::Tools::next_vnc_port: the first port from 5900 that no
// running console of the node holds.
func (r *request) vncPort(nodeName string) int {
	used := map[string]bool{}
	for _, t := range r.sim.st.tasks {
		if t.running() && t.upid.Node == nodeName && (t.upid.Type == "vncproxy" || t.upid.Type == "vncshell") {
			for _, line := range t.log {
				if p, ok := strings.CutPrefix(line, "listening on port "); ok {
					used[p] = true
				}
			}
		}
	}
	port := 5900
	for used[strconv.Itoa(port)] {
		port++
	}
	return port
}

// vncTicket is PVE::AccessControl::assemble_vnc_ticket: PVEVNC, the time
// in hex, and an RSA signature (base64) over the user, the ACL path and
// the port.
func (r *request) vncTicket() string {
	sig := make([]byte, 256)
	for i := range sig {
		sig[i] = byte(r.sim.st.rng.IntN(256))
	}
	return fmt.Sprintf("PVEVNC:%08X::%s", r.now.Unix(), base64.StdEncoding.EncodeToString(sig))
}

// vncPassword is PVE::Ticket::generate_vnc_password: eight printable
// ASCII characters ('!' .. '~').
func (r *request) vncPassword() string {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte('!' + r.sim.st.rng.IntN('~'-'!'+1))
	}
	return string(b)
}

// consoleTask starts the proxy's worker: it waits for its connection,
// and none comes to the simulator.
func (r *request) consoleTask(g *guest, typ string, port int) string {
	return r.startTask(g.node, typ, strconv.Itoa(g.vmid), durConsole, []string{"listening on port " + strconv.Itoa(port)},
		func() error { return fmt.Errorf("connection timed out") })
}

// vncProxy is POST …/vncproxy. A VM's password is generated unless its
// display is a serial port and no websocket is asked for; a container's
// only with websocket (both as PVE 9 does, the password then also
// prefixing the ticket).
func (s *Sim) vncProxy(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		port := r.vncPort(g.node)
		ticket := r.vncTicket()
		serial := kind == "qemu" && strings.HasPrefix(g.conf["vga"], "serial")
		res := map[string]any{"user": r.who.tokenid, "port": port, "cert": simRootCA}
		if (kind == "qemu" && (r.flag("generate-password") || !serial || r.flag("websocket"))) || (kind == "lxc" && r.flag("websocket")) {
			pw := r.vncPassword()
			ticket = pw + ":" + ticket
			res["password"] = pw
		}
		res["ticket"] = ticket
		res["upid"] = r.consoleTask(g, "vncproxy", port)
		return res, nil
	}
}

// termProxy is POST …/termproxy: a terminal (xterm.js) proxy, its ticket
// passed to termproxy on a pipe.
func (s *Sim) termProxy(kind string) handler {
	return func(r *request) (any, error) {
		g, err := r.guest(kind)
		if err != nil {
			return nil, err
		}
		port := r.vncPort(g.node)
		return map[string]any{"user": r.who.tokenid, "ticket": r.vncTicket(), "port": port, "upid": r.consoleTask(g, "vncproxy", port)}, nil
	}
}

// nodeTermProxy is POST /nodes/{node}/termproxy: a terminal on the node,
// its ticket bound to /nodes/{node}. get_shell_command runs the command
// asked for only for root@pam; anyone else, every API token included, gets
// /bin/login (a login prompt asking for the host's credentials).
func (s *Sim) nodeTermProxy(r *request) (any, error) {
	nodeName := r.str("node")
	port := r.vncPort(nodeName)
	shell := "/bin/login"
	if r.who.isRoot() {
		shell = "/bin/login -f root"
	}
	upid := r.startTask(nodeName, "vncshell", "", durConsole, []string{"listening on port " + strconv.Itoa(port), "running " + shell},
		func() error { return fmt.Errorf("connection timed out") })
	return map[string]any{"user": r.who.tokenid, "ticket": r.vncTicket(), "port": port, "upid": upid}, nil
}

// simRootCA stands for /etc/pve/pve-root-ca.pem, which vncproxy returns
// for the client to verify the proxy's TLS.
const simRootCA = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUU2ltdWxhdGVkIFBWRSByb290IENBMAoGCCqGSM49BAMC\n-----END CERTIFICATE-----\n"

// File name rules of PVE::Storage (ISO_EXT_RE_0, VZTMPL_EXT_RE_1,
// SAFE_CHAR_CLASS_RE with UPLOAD_IMPORT_EXT_RE_1).
var (
	reISOName    = regexp.MustCompile(`(?i)[^/]+\.(?:iso|img)$`)
	reVztmplName = regexp.MustCompile(`(?i)[^/]+\.(?:tar|tar\.(?:gz|xz|zst|bz2))$`)
	reImportName = regexp.MustCompile(`[a-zA-Z0-9\-.+=_]+\.(ova|qcow2|raw|vmdk)$`)
	reUnsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]`)
)

// normalizeFilename is PVE::Storage::normalize_content_filename.
func normalizeFilename(name string) string {
	name = strings.TrimSuffix(name, "\n")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return reUnsafeName.ReplaceAllString(name, "_")
}

// fileStorage is storage_check_enabled for a download: the storage exists,
// is enabled and on the node, and is file based.
func (r *request) fileStorage() (*storage, error) {
	st, err := r.storage()
	if err != nil {
		return nil, err
	}
	if st.options["disable"] == "1" {
		return nil, fail("storage '%s' is disabled", st.id)
	}
	if nodes := st.options["nodes"]; nodes != "" && !strings.Contains(","+nodes+",", ","+r.str("node")+",") {
		return nil, fail("storage '%s' is not available on node '%s'", st.id, r.str("node"))
	}
	if st.path == "" {
		return nil, fail("can't upload to storage type '%s', not a file based storage!", st.typ)
	}
	return st, nil
}

// contentDirs are where each content type lives under a storage's path.
var contentDirs = map[string]string{"iso": "template/iso", "vztmpl": "template/cache", "import": "import"}

// downloadURL is POST …/download-url: the file name is normalized and
// checked against the content type, and a download task starts; it fails
// when the file is there already, as download_file_from_url refuses to
// overwrite.
func (s *Sim) downloadURL(r *request) (any, error) {
	st, err := r.fileStorage()
	if err != nil {
		return nil, err
	}
	content := r.str("content")
	if !st.hasContent(content) {
		return nil, fail("storage '%s' is not configured for content-type '%s'", st.id, content)
	}
	filename := normalizeFilename(r.str("filename"))
	format := ""
	switch content {
	case "iso":
		if !reISOName.MatchString(filename) {
			return nil, paramError(map[string]string{"filename": "wrong file extension"})
		}
		format = "iso"
	case "vztmpl":
		if !reVztmplName.MatchString(filename) {
			return nil, paramError(map[string]string{"filename": "wrong file extension"})
		}
		format = "tzst"
	case "import":
		m := reImportName.FindStringSubmatch(filename)
		if m == nil {
			return nil, paramError(map[string]string{"filename": "invalid filename or wrong extension"})
		}
		format = m[1]
	}
	if r.str("compression") != "" && content != "iso" {
		// The worker dies on it, after the task started.
		return r.downloadTask(st, content, filename, format, "decompression not supported for "+content), nil
	}
	return r.downloadTask(st, content, filename, format, ""), nil
}

// downloadTask fetches into the storage: the volume appears when the task
// ends.
func (r *request) downloadTask(st *storage, content, filename, format, failWith string) string {
	nodeName := r.str("node")
	dest := path.Join(st.path, contentDirs[content], filename)
	volid := st.id + ":" + content + "/" + filename
	url := r.str("url")
	log := []string{fmt.Sprintf("downloading %s to %s", url, dest)}
	return r.startTask(nodeName, "download", filename, durDownload, log, func() error {
		if failWith != "" {
			return fmt.Errorf("%s", failWith)
		}
		for _, v := range st.volumesOn(nodeName) {
			if v.volid == volid {
				return fmt.Errorf("refusing to override existing file '%s'", dest)
			}
		}
		st.addVolume(nodeName, &volume{volid: volid, content: content, format: format, size: 4 << 20, ctime: r.sim.clock.Now().Unix()})
		return nil
	})
}

// ociPull is POST …/oci-registry-pull: the image becomes a container
// template (an OCI archive, .tar).
func (s *Sim) ociPull(r *request) (any, error) {
	st, err := r.fileStorage()
	if err != nil {
		return nil, err
	}
	if !st.hasContent("vztmpl") {
		return nil, fail("storage '%s' is not configured for content-type 'vztmpl'", st.id)
	}
	name := r.str("filename")
	if name == "" {
		name = r.str("reference")
	}
	filename := normalizeFilename(name) + ".tar"
	volid := st.id + ":vztmpl/" + filename
	for _, v := range st.volumesOn(r.str("node")) {
		if v.volid == volid {
			return nil, fail("refusing to override existing file '%s'", filename)
		}
	}
	nodeName := r.str("node")
	log := []string{fmt.Sprintf("skopeo copy docker://%s oci-archive:%s", r.str("reference"), path.Join(st.path, "template/cache", filename+".tmp"))}
	return r.startTask(nodeName, "ociregistrypull", filename, durDownload, log, func() error {
		st.addVolume(nodeName, &volume{volid: volid, content: "vztmpl", format: "tar", size: 80 << 20, ctime: r.sim.clock.Now().Unix()})
		return nil
	}), nil
}
