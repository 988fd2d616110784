package sim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// state is the simulated cluster. Every access holds Sim.mu.
type state struct {
	clusterName string
	nodes       []*node
	storages    []*storage
	guests      map[int]*guest
	pools       map[string]*pool
	users       map[string]*user
	groups      map[string][]string
	acl         []aclEntry
	roleDefs    map[string]map[string]bool
	tasks       []*task
	clusterLog  []clusterLogEntry
	rng         *rand.Rand
	nextPID     uint32
	version     pveVersion
	// blockdevs are the nodes' disks, partitions and LVM (disks.go).
	blockdevs map[string]*blockLayout
}

type pveVersion struct{ version, release, repoid string }

type node struct {
	name      string
	id        int
	ip        string
	online    bool
	bootedAt  time.Time
	cpus      int
	cpuModel  string
	memTotal  int64
	rootTotal int64
	swapTotal int64
	sslFP     string
	services  []*service
	updates   []aptPackage
	updatedAt time.Time
	ifaces    []netIface
	disks     []disk
	syslog    []string
}

type service struct {
	name, desc  string
	active      string // active, inactive, failed
	unit        string // enabled, disabled
	activeSince time.Time
}

type aptPackage struct {
	name, oldVersion, version, origin, section, priority, title, description string
}

type netIface struct {
	name, typ, method, address, netmask, cidr, gateway, bridgePorts string
	active, autostart                                               bool
}

type disk struct {
	devpath, model, serial, typ, health, used, wwn, vendor string
	size                                                   int64
	gpt                                                    bool
	rpm                                                    int
}

type pool struct {
	id      string
	comment string
}

// storage is a storage definition of storage.cfg and its volumes.
type storage struct {
	id      string
	typ     string // dir, lvmthin, nfs
	content []string
	shared  bool
	path    string
	total   int64
	// options are further storage.cfg options (vgname, nodes, ...).
	options map[string]string
	// volumes by node; shared storages keep theirs under "".
	volumes map[string][]*volume
}

type volume struct {
	volid     string
	content   string // images, rootdir, iso, vztmpl, backup
	format    string
	size      int64
	vmid      int
	ctime     int64
	notes     string
	protected bool
	subtype   string // qemu or lxc, for backups
	// guestConf is the configuration a backup holds, for restores.
	guestConf map[string]string
}

func (st *storage) hasContent(c string) bool { return slices.Contains(st.content, c) }

func (st *storage) volumesOn(nodeName string) []*volume {
	if st.shared {
		return st.volumes[""]
	}
	return st.volumes[nodeName]
}

func (st *storage) addVolume(nodeName string, v *volume) {
	key := nodeName
	if st.shared {
		key = ""
	}
	st.volumes[key] = append(st.volumes[key], v)
}

func (st *storage) removeVolume(nodeName, volid string) bool {
	key := nodeName
	if st.shared {
		key = ""
	}
	vols := st.volumes[key]
	for i, v := range vols {
		if v.volid == volid {
			st.volumes[key] = slices.Delete(vols, i, i+1)
			return true
		}
	}
	return false
}

func (st *storage) used(nodeName string) int64 {
	var n int64
	for _, v := range st.volumesOn(nodeName) {
		n += v.size
	}
	return n
}

// guest is a QEMU VM or an LXC container.
type guest struct {
	vmid      int
	kind      string // qemu or lxc
	node      string
	conf      map[string]string
	pending   map[string]string
	pendDel   []string
	status    string // running, stopped
	paused    bool   // QEMU suspended
	startedAt time.Time
	lock      string
	snapshots []*snapshot
	parent    string // the snapshot the current state derives from
	pool      string
	agent     guestAgent // a VM's guest agent: the commands it runs (agent.go)
}

type snapshot struct {
	name, parent, description string
	snaptime                  int64
	vmstate                   bool
	conf                      map[string]string
}

func (g *guest) name() string {
	if g.kind == "lxc" {
		return g.conf["hostname"]
	}
	return g.conf["name"]
}

func (g *guest) template() bool { return g.conf["template"] == "1" }

func (g *guest) snapshot(name string) *snapshot {
	for _, s := range g.snapshots {
		if s.name == name {
			return s
		}
	}
	return nil
}

// digest is the SHA-1 of the configuration as PVE would write the file:
// sorted "key: value" lines, the pending section, then the snapshots.
func (g *guest) digest() string {
	h := sha1.New()
	writeSection(h, g.conf)
	if len(g.pending) > 0 || len(g.pendDel) > 0 {
		fmt.Fprintln(h, "[PENDING]")
		writeSection(h, g.pending)
		if len(g.pendDel) > 0 {
			fmt.Fprintf(h, "delete: %s\n", strings.Join(g.pendDel, ","))
		}
	}
	for _, s := range g.snapshots {
		fmt.Fprintf(h, "[%s]\n", s.name)
		writeSection(h, s.conf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeSection(w interface{ Write([]byte) (int, error) }, conf map[string]string) {
	keys := make([]string, 0, len(conf))
	for k := range conf {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s: %s\n", k, conf[k])
	}
}

func cloneConf(c map[string]string) map[string]string {
	out := make(map[string]string, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// memoryMiB reads the memory option ("2048" or "current=2048").
func (g *guest) memoryMiB() int64 {
	v := g.conf["memory"]
	if v == "" {
		if g.kind == "lxc" {
			return 512
		}
		return 2048
	}
	v = strings.TrimPrefix(v, "current=")
	v, _, _ = strings.Cut(v, ",")
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

func (g *guest) cpus() int {
	cores, _ := strconv.Atoi(g.conf["cores"])
	if cores == 0 {
		cores = 1
	}
	if g.kind == "lxc" {
		return cores
	}
	sockets, _ := strconv.Atoi(g.conf["sockets"])
	if sockets == 0 {
		sockets = 1
	}
	return cores * sockets
}

// diskBytes sums the sizes of the guest's disks.
func (g *guest) diskBytes() int64 {
	var total int64
	for k, v := range g.conf {
		if isDiskKey(g.kind, k) && !strings.Contains(v, "media=cdrom") {
			total += parseSizeOpt(v)
		}
	}
	return total
}

// bootDiskBytes is the size PVE reports as maxdisk: the boot disk (QEMU)
// or rootfs (LXC).
func (g *guest) bootDiskBytes() int64 {
	if g.kind == "lxc" {
		return parseSizeOpt(g.conf["rootfs"])
	}
	for _, k := range []string{"scsi0", "virtio0", "sata0", "ide0"} {
		if v, ok := g.conf[k]; ok {
			return parseSizeOpt(v)
		}
	}
	return 0
}

func isDiskKey(kind, key string) bool {
	if kind == "lxc" {
		return key == "rootfs" || isIndexed(key, "mp")
	}
	for _, p := range []string{"scsi", "virtio", "sata", "ide", "efidisk", "tpmstate"} {
		if isIndexed(key, p) {
			return true
		}
	}
	return false
}

func isIndexed(key, prefix string) bool {
	digits, ok := strings.CutPrefix(key, prefix)
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseSizeOpt reads size=32G from a disk option.
func parseSizeOpt(v string) int64 {
	for part := range strings.SplitSeq(v, ",") {
		if s, ok := strings.CutPrefix(part, "size="); ok {
			return parseSize(s)
		}
	}
	return 0
}

// parseSize reads 32G, 512M, 1T or bytes.
func parseSize(s string) int64 {
	if s == "" {
		return 0
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'K':
		mult = 1 << 10
	case 'M':
		mult = 1 << 20
	case 'G':
		mult = 1 << 30
	case 'T':
		mult = 1 << 40
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return int64(f * float64(mult))
}

// formatSize writes bytes the way PVE writes disk sizes (32G, 512M).
func formatSize(b int64) string {
	switch {
	case b%(1<<40) == 0 && b > 0:
		return fmt.Sprintf("%dT", b>>40)
	case b%(1<<30) == 0 && b > 0:
		return fmt.Sprintf("%dG", b>>30)
	case b%(1<<20) == 0 && b > 0:
		return fmt.Sprintf("%dM", b>>20)
	case b%(1<<10) == 0 && b > 0:
		return fmt.Sprintf("%dK", b>>10)
	}
	return strconv.FormatInt(b, 10)
}

func (st *state) node(name string) *node {
	for _, n := range st.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func (st *state) storage(id string) *storage {
	for _, s := range st.storages {
		if s.id == id {
			return s
		}
	}
	return nil
}

func (st *state) guestByID(vmid string) *guest {
	n, err := strconv.Atoi(vmid)
	if err != nil {
		return nil
	}
	return st.guests[n]
}

// sortedGuests lists guests by VM ID.
func (st *state) sortedGuests() []*guest {
	ids := make([]int, 0, len(st.guests))
	for id := range st.guests {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*guest, 0, len(ids))
	for _, id := range ids {
		out = append(out, st.guests[id])
	}
	return out
}

// macAddress makes a MAC in Proxmox's BC:24:11 OUI from the seeded source.
func (st *state) macAddress() string {
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", st.rng.IntN(256), st.rng.IntN(256), st.rng.IntN(256))
}

func (st *state) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(st.rng.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (st *state) secret() string { return st.uuid() }

// clusterLogEntry is one line of GET /cluster/log.
type clusterLogEntry struct {
	uid  int
	time int64
	pri  int
	tag  string
	pid  int
	node string
	user string
	msg  string
}

func (st *state) logCluster(now time.Time, nodeName, userid, tag, msg string) {
	st.clusterLog = append(st.clusterLog, clusterLogEntry{
		uid: len(st.clusterLog) + 1, time: now.Unix(), pri: 6, tag: tag, pid: int(st.nextPID), node: nodeName, user: userid, msg: msg,
	})
}
