package changes

// taskKind is what PVE's worker for an endpoint is called in the task
// index: the types its fork_worker may be given (several when PVE chooses
// by the guest or the parameters: an HA-managed guest starts "hastart",
// a restore is "qmrestore"), and which argument is the task's id ("": the
// id is not a parameter; only the type, the token and the time match).
type taskKind struct {
	types []string
	id    string
}

// taskKinds maps "METHOD /template" to its worker, as qemu-server
// (PVE/API2/Qemu.pm), pve-container (PVE/API2/LXC*.pm), pve-manager
// (PVE/API2/Nodes.pm, Services.pm, VZDump.pm, APT.pm, Network.pm, Ceph,
// ACME) and pve-storage (PVE/API2/Storage, Disks) name them. Endpoints
// that answer at once (a PUT of a guest's config, the LXC config) start
// no task and are not here; endpoints whose task runs on a node the path
// does not name (cluster-wide bulk actions) are not either.
var taskKinds = map[string]taskKind{
	// qemu-server
	"POST /nodes/{node}/qemu":                                     {[]string{"qmcreate", "qmrestore"}, "vmid"},
	"DELETE /nodes/{node}/qemu/{vmid}":                            {[]string{"qmdestroy"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/config":                       {[]string{"qmconfig"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/status/start":                 {[]string{"qmstart", "hastart"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/status/stop":                  {[]string{"qmstop", "hastop"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/status/reset":                 {[]string{"qmreset"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/status/shutdown":              {[]string{"qmshutdown", "hastop"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/status/reboot":                {[]string{"qmreboot"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/status/suspend":               {[]string{"qmpause", "qmsuspend"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/status/resume":                {[]string{"qmresume"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/clone":                        {[]string{"qmclone"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/move_disk":                    {[]string{"qmmove"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/migrate":                      {[]string{"qmigrate", "hamigrate"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/remote_migrate":               {[]string{"qmigrate"}, "vmid"},
	"PUT /nodes/{node}/qemu/{vmid}/resize":                        {[]string{"resize"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/snapshot":                     {[]string{"qmsnapshot"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback": {[]string{"qmrollback"}, "vmid"},
	"DELETE /nodes/{node}/qemu/{vmid}/snapshot/{snapname}":        {[]string{"qmdelsnapshot"}, "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/template":                     {[]string{"qmtemplate"}, "vmid"},

	// pve-container
	"POST /nodes/{node}/lxc":                                     {[]string{"vzcreate", "vzrestore"}, "vmid"},
	"DELETE /nodes/{node}/lxc/{vmid}":                            {[]string{"vzdestroy"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/status/start":                 {[]string{"vzstart", "hastart"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/status/stop":                  {[]string{"vzstop", "hastop"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/status/shutdown":              {[]string{"vzshutdown", "hastop"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/status/reboot":                {[]string{"vzreboot"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/status/suspend":               {[]string{"vzsuspend"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/status/resume":                {[]string{"vzresume"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/clone":                        {[]string{"vzclone"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/move_volume":                  {[]string{"move_volume"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/migrate":                      {[]string{"vzmigrate", "hamigrate"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/remote_migrate":               {[]string{"vzmigrate"}, "vmid"},
	"PUT /nodes/{node}/lxc/{vmid}/resize":                        {[]string{"resize"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/snapshot":                     {[]string{"vzsnapshot"}, "vmid"},
	"POST /nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback": {[]string{"vzrollback"}, "vmid"},
	"DELETE /nodes/{node}/lxc/{vmid}/snapshot/{snapname}":        {[]string{"vzdelsnapshot"}, "vmid"},
	// The template's worker runs, but its UPID is not returned (LXC.pm
	// returns undef after fork_worker): only the index shows it.
	"POST /nodes/{node}/lxc/{vmid}/template": {[]string{"vztemplate"}, "vmid"},

	// pve-manager: backups (the id is the guest when there is one),
	// bulk actions of a node, services, updates, network, ACME, Ceph.
	"POST /nodes/{node}/vzdump":                               {[]string{"vzdump"}, "vmid"},
	"POST /nodes/{node}/startall":                             {[]string{"startall"}, ""},
	"POST /nodes/{node}/stopall":                              {[]string{"stopall"}, ""},
	"POST /nodes/{node}/suspendall":                           {[]string{"suspendall"}, ""},
	"POST /nodes/{node}/migrateall":                           {[]string{"migrateall"}, ""},
	"POST /nodes/{node}/services/{service}/start":             {[]string{"srvstart"}, "service"},
	"POST /nodes/{node}/services/{service}/stop":              {[]string{"srvstop"}, "service"},
	"POST /nodes/{node}/services/{service}/restart":           {[]string{"srvrestart"}, "service"},
	"POST /nodes/{node}/services/{service}/reload":            {[]string{"srvreload"}, "service"},
	"POST /nodes/{node}/apt/update":                           {[]string{"aptupdate"}, ""},
	"PUT /nodes/{node}/network":                               {[]string{"srvreload"}, ""},
	"POST /nodes/{node}/aplinfo":                              {[]string{"download"}, ""},
	"POST /nodes/{node}/certificates/acme/certificate":        {[]string{"acmenewcert"}, ""},
	"PUT /nodes/{node}/certificates/acme/certificate":         {[]string{"acmerenew"}, ""},
	"DELETE /nodes/{node}/certificates/acme/certificate":      {[]string{"acmerevoke"}, ""},
	"POST /nodes/{node}/ceph/start":                           {[]string{"srvstart"}, ""},
	"POST /nodes/{node}/ceph/stop":                            {[]string{"srvstop"}, ""},
	"POST /nodes/{node}/ceph/restart":                         {[]string{"srvrestart"}, ""},
	"POST /nodes/{node}/ceph/osd":                             {[]string{"cephcreateosd"}, ""},
	"DELETE /nodes/{node}/ceph/osd/{osdid}":                   {[]string{"cephdestroyosd"}, ""},
	"POST /nodes/{node}/ceph/mon/{monid}":                     {[]string{"cephcreatemon"}, ""},
	"DELETE /nodes/{node}/ceph/mon/{monid}":                   {[]string{"cephdestroymon"}, ""},
	"POST /nodes/{node}/ceph/mgr/{id}":                        {[]string{"cephcreatemgr"}, ""},
	"DELETE /nodes/{node}/ceph/mgr/{id}":                      {[]string{"cephdestroymgr"}, ""},
	"POST /nodes/{node}/ceph/mds/{name}":                      {[]string{"cephcreatemds"}, ""},
	"DELETE /nodes/{node}/ceph/mds/{name}":                    {[]string{"cephdestroymds"}, ""},
	"POST /nodes/{node}/ceph/fs/{name}":                       {[]string{"cephfscreate"}, "name"},
	"POST /nodes/{node}/ceph/pool":                            {[]string{"cephcreatepool"}, "name"},
	"DELETE /nodes/{node}/ceph/pool/{name}":                   {[]string{"cephdestroypool"}, "name"},
	"PUT /nodes/{node}/ceph/pool/{name}":                      {[]string{"cephsetpool"}, "name"},
	"POST /nodes/{node}/storage/{storage}/download-url":       {[]string{"download"}, ""},
	"POST /nodes/{node}/storage/{storage}/oci-registry-pull":  {[]string{"ociregistrypull"}, ""},
	"POST /nodes/{node}/storage/{storage}/upload":             {[]string{"imgcopy"}, ""},
	"POST /nodes/{node}/storage/{storage}/content/{volume}":   {[]string{"imgcopy"}, ""},
	"DELETE /nodes/{node}/storage/{storage}/content/{volume}": {[]string{"imgdel"}, ""},
	"DELETE /nodes/{node}/storage/{storage}/prunebackups":     {[]string{"prunebackups"}, ""},

	// pve-storage: disks
	"POST /nodes/{node}/disks/initgpt":            {[]string{"diskinit"}, ""},
	"PUT /nodes/{node}/disks/wipedisk":            {[]string{"wipedisk"}, ""},
	"POST /nodes/{node}/disks/directory":          {[]string{"dircreate"}, "name"},
	"DELETE /nodes/{node}/disks/directory/{name}": {[]string{"dirremove"}, "name"},
	"POST /nodes/{node}/disks/lvm":                {[]string{"lvmcreate"}, "name"},
	"DELETE /nodes/{node}/disks/lvm/{name}":       {[]string{"lvmremove"}, "name"},
	"POST /nodes/{node}/disks/lvmthin":            {[]string{"lvmthincreate"}, "name"},
	"DELETE /nodes/{node}/disks/lvmthin/{name}":   {[]string{"lvmthinremove"}, ""},
	"POST /nodes/{node}/disks/zfs":                {[]string{"zfscreate"}, "name"},
	"DELETE /nodes/{node}/disks/zfs/{name}":       {[]string{"zfsremove"}, "name"},
}

// TaskTypes are the task types PVE's worker for an endpoint (method and
// path template) may have; nil when it starts no task this package knows.
func TaskTypes(method, template string) []string {
	return taskKinds[method+" "+template].types
}

// guestEffect is what a write does to a guest's existence: a create (or
// clone, or restore) makes the guest the argument names; a destroy
// removes the path's guest.
type guestEffect struct {
	creates bool
	arg     string // the argument (or path variable) naming the guest
}

var guestEffects = map[string]guestEffect{
	"POST /nodes/{node}/qemu":              {creates: true, arg: "vmid"},
	"POST /nodes/{node}/lxc":               {creates: true, arg: "vmid"},
	"POST /nodes/{node}/qemu/{vmid}/clone": {creates: true, arg: "newid"},
	"POST /nodes/{node}/lxc/{vmid}/clone":  {creates: true, arg: "newid"},
	"DELETE /nodes/{node}/qemu/{vmid}":     {creates: false, arg: "vmid"},
	"DELETE /nodes/{node}/lxc/{vmid}":      {creates: false, arg: "vmid"},
}
