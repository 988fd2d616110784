// The API schema of the proxmox-mcp demo: the part of the Proxmox VE API
// that the simulator in this package serves, in the layout of PVE's
// apidoc.js so that schema.Parse reads it like the real file. Paths,
// methods, parameters, types, formats, bounds, permissions and the shapes of
// the answers follow PVE 9.1; the descriptions are written for proxmox-mcp.
// Edit it by hand and keep demo_test.go passing.
const apiSchema = [
{
 "path":"/access",
 "text":"access",
 "leaf":0,
 "info":{
  "GET":{
   "allowtoken":1,
   "description":"List the access control subdirectories.",
   "method":"GET",
   "name":"index",
   "parameters":{"additionalProperties":0,"properties":{}},
   "permissions":{"user":"all"},
   "returns":{"items":{"properties":{"subdir":{"type":"string"}},"type":"object"},"links":[{"href":"{subdir}","rel":"child"}],"type":"array"}
  }
 },
 "children":[
 {
  "path":"/access/permissions",
  "text":"permissions",
  "leaf":1,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"Show the privileges a user or token holds, per ACL path.",
    "method":"GET",
    "name":"permissions",
    "parameters":{"additionalProperties":0,"properties":{
      "path":{"description":"Restrict the answer to this ACL path.","optional":1,"type":"string"},
      "userid":{"description":"User (user@realm) or API token (user@realm!name) to report on; the caller when absent.","optional":1,"pattern":"(?^:^(?^:[^\\s:/]+)\\@(?^:[A-Za-z][A-Za-z0-9\\.\\-_]+)(?:!(?^:[A-Za-z][A-Za-z0-9\\.\\-_]+))?$)","type":"string"}
    }},
    "permissions":{"description":"Users and tokens may read their own privileges; reading another user's needs Sys.Audit on /access.","user":"all"},
    "returns":{"type":"object"}
   }
  }
 }
 ]
},
{
 "path":"/cluster",
 "text":"cluster",
 "leaf":0,
 "info":{
  "GET":{
   "allowtoken":1,
   "description":"List the cluster-wide API subdirectories.",
   "method":"GET",
   "name":"index",
   "parameters":{"additionalProperties":0,"properties":{}},
   "permissions":{"user":"all"},
   "returns":{"items":{"properties":{},"type":"object"},"links":[{"href":"{name}","rel":"child"}],"type":"array"}
  }
 },
 "children":[
  {
  "path":"/cluster/ha",
  "text":"ha",
  "leaf":0,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"List the HA subdirectories.",
    "method":"GET",
    "name":"index",
    "parameters":{"additionalProperties":0,"properties":{}},
    "permissions":{"check":["perm","/",["Sys.Audit"]]},
    "returns":{"items":{"properties":{"id":{"type":"string"}},"type":"object"},"links":[{"href":"{id}","rel":"child"}],"type":"array"}
   }
  },
  "children":[
  {
   "path":"/cluster/ha/status",
   "text":"status",
   "leaf":0,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the HA status subdirectories.",
     "method":"GET",
     "name":"index",
     "parameters":{"additionalProperties":0,"properties":{}},
     "permissions":{"user":"all"},
     "returns":{"items":{"properties":{},"type":"object"},"links":[{"href":"{name}","rel":"child"}],"type":"array"}
    }
   },
   "children":[
   {
    "path":"/cluster/ha/status/current",
    "text":"current",
    "leaf":1,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"The HA manager's status.",
      "method":"GET",
      "name":"status",
      "parameters":{"additionalProperties":0,"properties":{}},
      "permissions":{"check":["perm","/",["Sys.Audit"]]},
      "returns":{"items":{"properties":{
        "crm_state":{"description":"A resource's state in the cluster resource manager.","optional":1,"type":"string"},
        "id":{"description":"Which entry: quorum, master, fencing, lrm:NODE or service:SID.","type":"string"},
        "node":{"description":"The node the entry is about.","type":"string"},
        "quorate":{"description":"Quorum entry: whether the cluster has quorum.","optional":1,"type":"boolean"},
        "request_state":{"description":"A resource's requested state.","optional":1,"type":"string"},
        "sid":{"description":"A resource's id, such as vm:100.","optional":1,"type":"string"},
        "state":{"description":"A resource's state, in words.","optional":1,"type":"string"},
        "status":{"description":"The entry's status line; its wording depends on the type.","type":"string"},
        "timestamp":{"description":"Master and LRM entries: when the status was written (Unix time).","optional":1,"type":"integer"},
        "type":{"description":"The kind of entry.","enum":["quorum","master","lrm","service"]}
       },"type":"object"},"type":"array"}
     }
    }
   }
   ]
  }
  ]
 },
 {
  "path":"/cluster/log",
  "text":"log",
  "leaf":1,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"Read the newest entries of the cluster log.",
    "method":"GET",
    "name":"log",
    "parameters":{"additionalProperties":0,"properties":{
      "max":{"description":"Maximum number of entries to return.","minimum":1,"optional":1,"type":"integer"}
    }},
    "permissions":{"description":"Sys.Syslog on / shows every entry; without it a user sees only their own.","user":"all"},
    "returns":{"items":{"properties":{},"type":"object"},"type":"array"}
   }
  }
 },
 {
  "path":"/cluster/nextid",
  "text":"nextid",
  "leaf":1,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"Suggest a free VM ID, or confirm that a given one is free.",
    "method":"GET",
    "name":"nextid",
    "parameters":{"additionalProperties":0,"properties":{
      "vmid":{"description":"VM ID to check; the answer is an error when it is taken.","format":"pve-vmid","maximum":999999999,"minimum":100,"optional":1,"type":"integer"}
    }},
    "permissions":{"user":"all"},
    "returns":{"type":"integer"}
   }
  }
 },
 {
  "path":"/cluster/resources",
  "text":"resources",
  "leaf":1,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"List every guest, node and storage of the cluster with its usage.",
    "method":"GET",
    "name":"resources",
    "parameters":{"additionalProperties":0,"properties":{
      "type":{"description":"Only resources of this kind.","enum":["vm","storage","node","sdn"],"optional":1,"type":"string"}
    }},
    "permissions":{"user":"all"},
    "returns":{"items":{"properties":{
      "cgroup-mode":{"description":"Control group version the node runs.","optional":1,"type":"integer"},
      "content":{"description":"Content types the storage accepts, separated by commas.","format":"pve-storage-content-list","optional":1,"type":"string"},
      "cpu":{"description":"CPU load of a node or guest as a fraction.","minimum":0,"optional":1,"type":"number"},
      "disk":{"description":"Space used on a storage, or by a guest's root disk, in bytes.","minimum":0,"optional":1,"type":"integer"},
      "diskread":{"description":"Bytes read from disks since the guest started.","optional":1,"type":"integer"},
      "diskwrite":{"description":"Bytes written to disks since the guest started.","optional":1,"type":"integer"},
      "hastate":{"description":"High-availability state of a managed guest.","optional":1,"type":"string"},
      "id":{"description":"Identifier of the entry, such as qemu/100 or node/pve1.","type":"string"},
      "level":{"description":"Subscription level of the node.","optional":1,"type":"string"},
      "lock":{"description":"Configuration lock held on the guest, if any.","optional":1,"type":"string"},
      "maxcpu":{"description":"Number of CPUs of a node or guest.","minimum":0,"optional":1,"type":"number"},
      "maxdisk":{"description":"Size of a storage, or of a guest's root disk, in bytes.","minimum":0,"optional":1,"type":"integer"},
      "maxmem":{"description":"Memory of a node or guest, in bytes.","optional":1,"type":"integer"},
      "mem":{"description":"Memory used by a node or guest, in bytes.","minimum":0,"optional":1,"type":"integer"},
      "memhost":{"description":"Memory the guest takes on the host, in bytes.","minimum":0,"optional":1,"type":"integer"},
      "name":{"description":"Name of a guest.","optional":1,"type":"string"},
      "netin":{"description":"Bytes received over the network since the guest started.","optional":1,"type":"integer"},
      "netout":{"description":"Bytes sent over the network since the guest started.","optional":1,"type":"integer"},
      "network":{"description":"Name of the network entry.","optional":1,"type":"string"},
      "network-type":{"description":"Kind of network entry.","enum":["fabric","zone"],"optional":1,"type":"string"},
      "node":{"description":"Name of the node.","format":"pve-node","optional":1,"type":"string"},
      "plugintype":{"description":"Backend type of the storage.","optional":1,"type":"string"},
      "pool":{"description":"Pool the guest belongs to.","optional":1,"type":"string"},
      "protocol":{"description":"Routing protocol of a fabric.","optional":1,"type":"string"},
      "sdn":{"description":"Name of the SDN entry.","optional":1,"type":"string"},
      "status":{"description":"State of the resource; its values depend on the type.","optional":1,"type":"string"},
      "storage":{"description":"Storage ID.","format":"pve-storage-id","optional":1,"type":"string"},
      "tags":{"description":"Tags of the guest, separated by semicolons.","optional":1,"type":"string"},
      "template":{"default":0,"description":"Whether the guest is a template.","optional":1,"type":"boolean"},
      "type":{"description":"Kind of resource.","enum":["node","storage","pool","qemu","lxc","openvz","sdn","network"],"type":"string"},
      "uptime":{"description":"Seconds since the node or guest started.","optional":1,"type":"integer"},
      "vmid":{"description":"VM ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"optional":1,"type":"integer"},
      "zone-type":{"description":"Kind of SDN zone.","optional":1,"type":"string"}
     },"type":"object"},"type":"array"}
   }
  }
 },
 {
  "path":"/cluster/status",
  "text":"status",
  "leaf":1,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"Show quorum and the membership state of every node.",
    "method":"GET",
    "name":"get_status",
    "parameters":{"additionalProperties":0,"properties":{}},
    "permissions":{"check":["perm","/",["Sys.Audit"]]},
    "protected":1,
    "returns":{"items":{"properties":{
      "id":{"type":"string"},
      "ip":{"description":"Address of the node.","optional":1,"type":"string"},
      "level":{"description":"Subscription level of the node.","optional":1,"type":"string"},
      "local":{"description":"Whether this node answered the request.","optional":1,"type":"boolean"},
      "name":{"type":"string"},
      "nodeid":{"description":"Corosync ID of the node.","optional":1,"type":"integer"},
      "nodes":{"description":"Number of nodes, offline ones included.","optional":1,"type":"integer"},
      "online":{"description":"Whether the node is reachable.","optional":1,"type":"boolean"},
      "quorate":{"description":"Whether enough nodes are online to decide.","optional":1,"type":"boolean"},
      "type":{"description":"Whether the entry describes the cluster or a node.","enum":["cluster","node"],"type":"string"},
      "version":{"description":"Version of the cluster configuration.","optional":1,"type":"integer"}
     },"type":"object"},"type":"array"}
   }
  }
 },
 {
  "path":"/cluster/tasks",
  "text":"tasks",
  "leaf":1,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"List recent tasks of all nodes.",
    "method":"GET",
    "name":"tasks",
    "parameters":{"additionalProperties":0,"properties":{}},
    "permissions":{"user":"all"},
    "returns":{"items":{"properties":{"upid":{"type":"string"}},"type":"object"},"type":"array"}
   }
  }
 }
 ]
},
{
 "path":"/nodes",
 "text":"nodes",
 "leaf":0,
 "info":{
  "GET":{
   "allowtoken":1,
   "description":"List the cluster nodes with their status and resource usage.",
   "method":"GET",
   "name":"index",
   "parameters":{"additionalProperties":0,"properties":{}},
   "permissions":{"user":"all"},
   "returns":{"items":{"properties":{
     "cpu":{"description":"CPU load of the node as a fraction.","optional":1,"type":"number"},
     "level":{"description":"Subscription level of the node.","optional":1,"type":"string"},
     "maxcpu":{"description":"Number of CPUs of the node.","optional":1,"type":"integer"},
     "maxmem":{"description":"Memory of the node, in bytes.","optional":1,"type":"integer"},
     "mem":{"description":"Memory used on the node, in bytes.","optional":1,"type":"integer"},
     "node":{"description":"Name of the node.","format":"pve-node","type":"string"},
     "ssl_fingerprint":{"description":"SHA-256 fingerprint of the node's TLS certificate.","optional":1,"type":"string"},
     "status":{"description":"Whether the node is online, offline or unknown.","enum":["unknown","online","offline"],"type":"string"},
     "uptime":{"description":"Seconds since the node booted.","optional":1,"type":"integer"}
    },"type":"object"},"links":[{"href":"{node}","rel":"child"}],"type":"array"}
  }
 },
 "children":[
 {
  "path":"/nodes/{node}",
  "text":"{node}",
  "leaf":0,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"List the API subdirectories of a node.",
    "method":"GET",
    "name":"index",
    "parameters":{"additionalProperties":0,"properties":{
      "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
    }},
    "permissions":{"user":"all"},
    "returns":{"items":{"properties":{},"type":"object"},"links":[{"href":"{name}","rel":"child"}],"type":"array"}
   }
  },
  "children":[
  {
   "path":"/nodes/{node}/apt",
   "text":"apt",
   "leaf":0,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the package management subdirectories of a node.",
     "method":"GET",
     "name":"index",
     "parameters":{"additionalProperties":0,"properties":{
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
     }},
     "permissions":{"user":"all"},
     "returns":{"items":{"properties":{"id":{"type":"string"}},"type":"object"},"links":[{"href":"{id}","rel":"child"}],"type":"array"}
    }
   },
   "children":[
   {
    "path":"/nodes/{node}/apt/update",
    "text":"update",
    "leaf":1,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"List the package upgrades available on a node.",
      "method":"GET",
      "name":"list_updates",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
      }},
      "permissions":{"check":["perm","/nodes/{node}",["Sys.Modify"]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"items":{"properties":{
        "Arch":{"description":"Architecture of the package.","enum":["armhf","arm64","amd64","ppc64el","risc64","s390x","all"],"type":"string"},
        "Description":{"description":"Long description of the package.","type":"string"},
        "NotifyStatus":{"description":"Version about which a notification has already been sent.","optional":1,"type":"string"},
        "OldVersion":{"description":"Version installed now.","optional":1,"type":"string"},
        "Origin":{"description":"Where the package comes from, such as Debian or Proxmox.","type":"string"},
        "Package":{"description":"Name of the package.","type":"string"},
        "Priority":{"description":"Debian priority of the package.","type":"string"},
        "Section":{"description":"Debian section of the package.","type":"string"},
        "Title":{"description":"One-line summary of the package.","type":"string"},
        "Version":{"description":"Version the upgrade installs.","type":"string"}
       },"type":"object"},"type":"array"}
     },
     "POST":{
      "allowtoken":1,
      "description":"Refresh the package lists of a node from its repositories, as a task.",
      "method":"POST",
      "name":"update_database",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "notify":{"default":0,"description":"Mail the administrator about new packages.","optional":1,"type":"boolean"},
        "quiet":{"default":0,"description":"Print less output.","optional":1,"type":"boolean"}
      }},
      "permissions":{"check":["perm","/nodes/{node}",["Sys.Modify"]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"type":"string"}
     }
    }
   }
   ]
  },
  {
   "path":"/nodes/{node}/disks",
   "text":"disks",
   "leaf":0,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the disk-related subdirectories of a node.",
     "method":"GET",
     "name":"index",
     "parameters":{"additionalProperties":0,"properties":{
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
     }},
     "permissions":{"user":"all"},
     "proxyto":"node",
     "returns":{"items":{"properties":{},"type":"object"},"links":[{"href":"{name}","rel":"child"}],"type":"array"}
    }
   },
   "children":[
   {
    "path":"/nodes/{node}/disks/list",
    "text":"list",
    "leaf":1,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"List the physical disks attached to a node.",
      "method":"GET",
      "name":"list",
      "parameters":{"additionalProperties":0,"properties":{
        "include-partitions":{"default":0,"description":"Also list partitions.","optional":1,"type":"boolean"},
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "skipsmart":{"default":0,"description":"Do not read SMART health data.","optional":1,"type":"boolean"},
        "type":{"description":"Only unused disks, or only disks usable as Ceph journals.","enum":["unused","journal_disks"],"optional":1,"type":"string"}
      }},
      "permissions":{"check":["or",["perm","/",["Sys.Audit"]],["perm","/nodes/{node}",["Sys.Audit"]]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"items":{"properties":{
        "devpath":{"description":"Device path, such as /dev/sda.","type":"string"},
        "gpt":{"type":"boolean"},
        "health":{"optional":1,"type":"string"},
        "model":{"optional":1,"type":"string"},
        "mounted":{"type":"boolean"},
        "osdid":{"type":"integer"},
        "osdid-list":{"items":{"type":"integer"},"type":"array"},
        "parent":{"description":"Disk a partition belongs to.","optional":1,"type":"string"},
        "serial":{"optional":1,"type":"string"},
        "size":{"type":"integer"},
        "used":{"optional":1,"type":"string"},
        "vendor":{"optional":1,"type":"string"},
        "wwn":{"optional":1,"type":"string"}
       },"type":"object"},"type":"array"}
     }
    }
   },
   {
    "path":"/nodes/{node}/disks/smart",
    "text":"smart",
    "leaf":1,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"The SMART data of one disk.",
      "method":"GET",
      "name":"smart",
      "parameters":{"additionalProperties":0,"properties":{
        "disk":{"description":"Block device name, such as /dev/sda.","pattern":"^/dev/[a-zA-Z0-9\\/]+$","type":"string"},
        "healthonly":{"description":"Only the health status.","optional":1,"type":"boolean"},
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
      }},
      "permissions":{"check":["perm","/",["Sys.Audit"]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"properties":{"attributes":{"optional":1,"type":"array"},"health":{"type":"string"},"text":{"optional":1,"type":"string"},"type":{"optional":1,"type":"string"}},"type":"object"}
     }
    }
   },
   {
    "path":"/nodes/{node}/disks/directory",
    "text":"directory",
    "leaf":1,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"List the mount units of the directory storages PVE made on a node.",
      "method":"GET",
      "name":"index",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
      }},
      "permissions":{"check":["perm","/",["Sys.Audit"]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"items":{"properties":{"device":{"description":"What the unit mounts (often /dev/disk/by-uuid/...).","type":"string"},"options":{"description":"Mount options.","type":"string"},"path":{"description":"Where it is mounted.","type":"string"},"type":{"description":"Filesystem type.","type":"string"},"unitfile":{"description":"The systemd mount unit file.","type":"string"}},"type":"object"},"type":"array"}
     },
     "POST":{
      "allowtoken":1,
      "description":"Make a filesystem on an unused disk or partition and mount it at /mnt/pve/NAME with a systemd mount unit.",
      "method":"POST",
      "name":"create",
      "parameters":{"additionalProperties":0,"properties":{
        "add_storage":{"default":0,"description":"Also define a storage of this name on it, for this node.","optional":1,"type":"boolean"},
        "device":{"description":"Unused disk (a partition is made on it) or partition.","type":"string"},
        "filesystem":{"default":"ext4","description":"Filesystem to make.","enum":["ext4","xfs"],"optional":1,"type":"string"},
        "name":{"description":"Name of the directory under /mnt/pve, and of its storage.","format":"pve-storage-id","type":"string"},
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
      }},
      "permissions":{"check":["perm","/",["Sys.Modify"]],"description":"Datastore.Allocate on /storage is needed too with 'add_storage'."},
      "protected":1,
      "proxyto":"node",
      "returns":{"type":"string"}
     }
    }
   },
   {
    "path":"/nodes/{node}/disks/lvm",
    "text":"lvm",
    "leaf":1,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"List the LVM volume groups of a node with their physical volumes.",
      "method":"GET",
      "name":"index",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
      }},
      "permissions":{"check":["perm","/",["Sys.Audit"]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"properties":{"children":{"items":{"properties":{"children":{"description":"Physical volumes of the group.","items":{"properties":{"free":{"description":"Unallocated bytes of the physical volume.","type":"integer"},"leaf":{"type":"boolean"},"name":{"description":"Device path of the physical volume.","type":"string"},"size":{"description":"Bytes the physical volume holds.","type":"integer"}},"type":"object"},"optional":1,"type":"array"},"free":{"description":"Unallocated bytes of the group.","type":"integer"},"leaf":{"type":"boolean"},"name":{"description":"Name of the volume group.","type":"string"},"size":{"description":"Bytes the group spans.","type":"integer"}},"type":"object"},"type":"array"},"leaf":{"type":"boolean"}},"type":"object"}
     },
     "POST":{
      "allowtoken":1,
      "description":"Create an LVM volume group on an unused disk or partition.",
      "method":"POST",
      "name":"create",
      "parameters":{"additionalProperties":0,"properties":{
        "add_storage":{"default":0,"description":"Also define a storage of this name on it, for this node.","optional":1,"type":"boolean"},
        "device":{"description":"Unused disk or partition to make the physical volume.","type":"string"},
        "name":{"description":"Name of the new volume group, and of its storage.","format":"pve-storage-id","type":"string"},
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
      }},
      "permissions":{"check":["perm","/",["Sys.Modify"]],"description":"Datastore.Allocate on /storage is needed too with 'add_storage'."},
      "protected":1,
      "proxyto":"node",
      "returns":{"type":"string"}
     }
    }
   },
   {
    "path":"/nodes/{node}/disks/lvmthin",
    "text":"lvmthin",
    "leaf":1,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"List the LVM thin pools of a node.",
      "method":"GET",
      "name":"index",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
      }},
      "permissions":{"check":["perm","/",["Sys.Audit"]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"items":{"properties":{"lv":{"description":"Name of the thin pool LV.","type":"string"},"lv_size":{"description":"Size of the pool in bytes.","type":"integer"},"metadata_size":{"description":"Size of its metadata LV in bytes.","type":"integer"},"metadata_used":{"description":"Bytes of metadata in use.","type":"integer"},"used":{"description":"Bytes of the pool in use.","type":"integer"},"vg":{"description":"Volume group holding the pool.","type":"string"}},"type":"object"},"type":"array"}
     }
    }
   }
   ]
  },
  {
   "path":"/nodes/{node}/journal",
   "text":"journal",
   "leaf":1,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"Read lines of a node's systemd journal.",
     "download_allowed":1,
     "method":"GET",
     "name":"journal",
     "parameters":{"additionalProperties":0,"properties":{
       "endcursor":{"description":"Stop before this journal cursor.","optional":1,"type":"string"},
       "lastentries":{"description":"Return only this many of the newest lines.","minimum":0,"optional":1,"type":"integer"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
       "since":{"description":"Only lines from this UNIX time on.","minimum":0,"optional":1,"type":"integer"},
       "startcursor":{"description":"Begin after this journal cursor.","optional":1,"type":"string"},
       "until":{"description":"Only lines up to this UNIX time.","minimum":0,"optional":1,"type":"integer"}
     }},
     "permissions":{"check":["perm","/nodes/{node}",["Sys.Syslog"]]},
     "protected":1,
     "proxyto":"node",
     "returns":{"items":{"type":"string"},"type":"array"}
    }
   }
  },
  {
   "path":"/nodes/{node}/lxc",
   "text":"lxc",
   "leaf":0,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the containers on a node.",
     "method":"GET",
     "name":"vmlist",
     "parameters":{"additionalProperties":0,"properties":{
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
     }},
     "permissions":{"description":"Containers appear only where the caller has VM.Audit.","user":"all"},
     "protected":1,
     "proxyto":"node",
     "returns":{"items":{"properties":{
       "cpu":{"description":"CPU load as a fraction of the available CPUs.","optional":1,"type":"number"},
       "cpus":{"description":"Number of CPUs the guest may use.","optional":1,"type":"number"},
       "disk":{"description":"Disk space in use, in bytes.","minimum":0,"optional":1,"type":"integer"},
       "diskread":{"description":"Bytes read from disks since the guest started.","optional":1,"type":"integer"},
       "diskwrite":{"description":"Bytes written to disks since the guest started.","optional":1,"type":"integer"},
       "lock":{"description":"Configuration lock held on the guest, if any.","optional":1,"type":"string"},
       "maxdisk":{"description":"Disk size, in bytes.","optional":1,"type":"integer"},
       "maxmem":{"description":"Memory available, in bytes.","optional":1,"type":"integer"},
       "maxswap":{"description":"Swap available to the container, in bytes.","optional":1,"type":"integer"},
       "mem":{"description":"Memory in use, in bytes.","optional":1,"type":"integer"},
       "name":{"description":"Display name or host name of the guest.","optional":1,"type":"string"},
       "netin":{"description":"Bytes received over the network since the guest started.","optional":1,"type":"integer"},
       "netout":{"description":"Bytes sent over the network since the guest started.","optional":1,"type":"integer"},
       "pressurecpusome":{"description":"Share of time some tasks stalled on CPU, over 10 seconds.","optional":1,"type":"number"},
       "pressureiofull":{"description":"Share of time all tasks stalled on I/O, over 10 seconds.","optional":1,"type":"number"},
       "pressureiosome":{"description":"Share of time some tasks stalled on I/O, over 10 seconds.","optional":1,"type":"number"},
       "pressurememoryfull":{"description":"Share of time all tasks stalled on memory, over 10 seconds.","optional":1,"type":"number"},
       "pressurememorysome":{"description":"Share of time some tasks stalled on memory, over 10 seconds.","optional":1,"type":"number"},
       "status":{"description":"Whether the container is running or stopped.","enum":["stopped","running"],"type":"string"},
       "tags":{"description":"Tags of the guest, separated by semicolons.","optional":1,"type":"string"},
       "template":{"default":0,"description":"Whether the guest is a template.","optional":1,"type":"boolean"},
       "uptime":{"description":"Seconds since start.","optional":1,"type":"integer"},
       "vmid":{"description":"VM ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
      },"type":"object"},"links":[{"href":"{vmid}","rel":"child"}],"type":"array"}
    },
    "POST":{
     "allowtoken":1,
     "description":"Create a container from an OS template, or restore one from a backup, as a task.",
     "method":"POST",
     "name":"create_vm",
     "parameters":{"additionalProperties":0,"properties":{
       "arch":{"default":"amd64","description":"CPU architecture of the container's OS.","enum":["amd64","i386","arm64","armhf","riscv32","riscv64"],"optional":1,"type":"string"},
       "bwlimit":{"description":"I/O bandwidth limit for this operation in KiB/s.","minimum":"0","optional":1,"type":"number"},
       "cores":{"description":"Number of CPU cores the container may use; all when unset.","maximum":8192,"minimum":1,"optional":1,"type":"integer"},
       "cpulimit":{"default":0,"description":"Upper bound of CPU time, in whole CPUs; 0 means no limit.","maximum":8192,"minimum":0,"optional":1,"type":"number"},
       "cpuunits":{"description":"Relative CPU weight of the container against other guests.","maximum":500000,"minimum":0,"optional":1,"type":"integer"},
       "description":{"description":"Free-text notes about the container, kept in its configuration.","maxLength":8192,"optional":1,"type":"string"},
       "features":{"description":"Advanced container features to allow.","format":{
         "force_rw_sys":{"default":0,"description":"Mount /sys writable in unprivileged containers.","optional":1,"type":"boolean"},
         "fuse":{"default":0,"description":"Allow FUSE file systems.","optional":1,"type":"boolean"},
         "keyctl":{"default":0,"description":"Allow the keyctl() system call in unprivileged containers, which Docker needs.","optional":1,"type":"boolean"},
         "mknod":{"default":0,"description":"Allow unprivileged containers to create some device nodes.","optional":1,"type":"boolean"},
         "mount":{"description":"File system types the container may mount, separated by semicolons.","optional":1,"pattern":"(?^:[a-zA-Z0-9_; ]+)","type":"string"},
         "nesting":{"default":0,"description":"Allow containers inside the container.","optional":1,"type":"boolean"}
        },"optional":1,"type":"string","typetext":"[force_rw_sys=<1|0>] [,fuse=<1|0>] [,keyctl=<1|0>] [,mknod=<1|0>] [,mount=<string>] [,nesting=<1|0>]"},
       "force":{"description":"Overwrite an existing container when restoring.","optional":1,"type":"boolean"},
       "hostname":{"description":"Host name of the container.","format":"dns-name","maxLength":255,"optional":1,"type":"string"},
       "ignore-unpack-errors":{"description":"Carry on when the template archive has extraction errors.","optional":1,"type":"boolean"},
       "lock":{"description":"Configuration lock of the container; setting it locks, deleting it unlocks.","enum":["backup","create","destroyed","disk","fstrim","migrate","mounted","rollback","snapshot","snapshot-delete"],"optional":1,"type":"string"},
       "memory":{"default":512,"description":"Memory limit of the container in MiB.","minimum":16,"optional":1,"type":"integer"},
       "mp[n]":{"description":"Additional mount point of the container; STORAGE:SIZE in GiB allocates a new volume.","format":{
         "acl":{"description":"Turn POSIX ACL support on or off.","optional":1,"type":"boolean"},
         "backup":{"description":"Include the mount point in backups.","optional":1,"type":"boolean"},
         "mountoptions":{"description":"Extra mount options, separated by semicolons.","optional":1,"pattern":"(?^:(?^:(discard|lazytime|noatime|nodev|noexec|nosuid))(;(?^:(discard|lazytime|noatime|nodev|noexec|nosuid)))*)","type":"string"},
         "mp":{"description":"Path inside the container to mount it at.","format":"pve-lxc-mp-string","type":"string"},
         "quota":{"description":"Enable user quotas inside the container.","optional":1,"type":"boolean"},
         "replicate":{"default":1,"description":"Include the volume in storage replication.","optional":1,"type":"boolean"},
         "ro":{"description":"Mount read-only.","optional":1,"type":"boolean"},
         "shared":{"default":0,"description":"Declare a bind mount as present on every node.","optional":1,"type":"boolean"},
         "size":{"description":"Size of the volume, recorded by the system.","format":"disk-size","optional":1,"type":"string"},
         "volume":{"default_key":1,"description":"Volume, device or host directory to mount; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-lxc-mp-string","type":"string"}
        },"optional":1,"type":"string","typetext":"[volume=]<pve-lxc-mp-string> ,mp=<pve-lxc-mp-string> [,acl=<1|0>] [,backup=<1|0>] [,mountoptions=<string>] [,quota=<1|0>] [,replicate=<1|0>] [,ro=<1|0>] [,shared=<1|0>] [,size=<disk-size>]"},
       "nameserver":{"description":"DNS servers of the container; the host's are used when neither this nor searchdomain is set.","format":"lxc-ip-with-ll-iface-list","optional":1,"type":"string"},
       "net[n]":{"description":"Network interface of the container.","format":{
         "bridge":{"description":"Host bridge to connect the interface to.","optional":1,"pattern":"[-_.\\w\\d]+","type":"string"},
         "firewall":{"description":"Filter the interface's traffic with the guest firewall.","optional":1,"type":"boolean"},
         "gw":{"description":"IPv4 default gateway.","format":"ipv4","optional":1,"type":"string"},
         "gw6":{"description":"IPv6 default gateway.","format":"ipv6","optional":1,"type":"string"},
         "host-managed":{"description":"Let the host configure the interface's addresses.","optional":1,"type":"boolean"},
         "hwaddr":{"description":"MAC address of the interface; generated when absent.","format":"mac-addr","optional":1,"type":"string"},
         "ip":{"description":"IPv4 address with prefix length, dhcp, or manual.","format":"pve-ipv4-config","optional":1,"type":"string"},
         "ip6":{"description":"IPv6 address with prefix length, auto, dhcp, or manual.","format":"pve-ipv6-config","optional":1,"type":"string"},
         "link_down":{"description":"Keep the interface disconnected.","optional":1,"type":"boolean"},
         "mtu":{"description":"MTU of the interface.","maximum":65535,"minimum":64,"optional":1,"type":"integer"},
         "name":{"description":"Interface name inside the container, such as eth0.","pattern":"[-_.\\w\\d]+","type":"string"},
         "rate":{"description":"Bandwidth limit in MB/s.","optional":1,"type":"number"},
         "tag":{"description":"VLAN tag added to the interface's traffic.","maximum":4094,"minimum":1,"optional":1,"type":"integer"},
         "trunks":{"description":"VLANs passed through, separated by semicolons.","optional":1,"pattern":"(?^:\\d+(?:;\\d+)*)","type":"string"},
         "type":{"description":"Kind of interface.","enum":["veth"],"optional":1,"type":"string"}
        },"optional":1,"type":"string","typetext":"name=<string> [,bridge=<string>] [,firewall=<1|0>] [,gw=<ipv4>] [,gw6=<ipv6>] [,host-managed=<1|0>] [,hwaddr=<mac-addr>] [,ip=<pve-ipv4-config>] [,ip6=<pve-ipv6-config>] [,link_down=<1|0>] [,mtu=<integer>] [,rate=<number>] [,tag=<integer>] [,trunks=<string>] [,type=<veth>]"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
       "onboot":{"default":0,"description":"Start the container when its node boots.","optional":1,"type":"boolean"},
       "ostemplate":{"description":"OS template volume to create from, or the backup to restore.","maxLength":255,"type":"string"},
       "ostype":{"description":"Distribution inside the container, which selects its setup scripts.","enum":["debian","devuan","ubuntu","centos","fedora","opensuse","archlinux","alpine","gentoo","nixos","unmanaged"],"optional":1,"type":"string"},
       "password":{"description":"Root password to set inside the container.","minLength":5,"optional":1,"type":"string"},
       "pool":{"description":"Pool to add the new container to.","format":"pve-poolid","optional":1,"type":"string"},
       "protection":{"default":0,"description":"Blocks destroying the container and changing its disks while set.","optional":1,"type":"boolean"},
       "restore":{"description":"Restore a backup given as ostemplate instead of creating a new container.","optional":1,"type":"boolean"},
       "rootfs":{"description":"Root file system of the container; STORAGE:SIZE in GiB allocates a new volume.","format":{
         "acl":{"description":"Turn POSIX ACL support on or off.","optional":1,"type":"boolean"},
         "mountoptions":{"description":"Extra mount options, separated by semicolons.","optional":1,"pattern":"(?^:(?^:(discard|lazytime|noatime|nodev|noexec|nosuid))(;(?^:(discard|lazytime|noatime|nodev|noexec|nosuid)))*)","type":"string"},
         "quota":{"description":"Enable user quotas inside the container.","optional":1,"type":"boolean"},
         "replicate":{"default":1,"description":"Include the volume in storage replication.","optional":1,"type":"boolean"},
         "ro":{"description":"Mount read-only.","optional":1,"type":"boolean"},
         "shared":{"default":0,"description":"Declare a bind mount as present on every node.","optional":1,"type":"boolean"},
         "size":{"description":"Size of the volume, recorded by the system.","format":"disk-size","optional":1,"type":"string"},
         "volume":{"default_key":1,"description":"Volume, device or host directory to mount; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-lxc-mp-string","type":"string"}
        },"optional":1,"type":"string","typetext":"[volume=]<pve-lxc-mp-string> [,acl=<1|0>] [,mountoptions=<string>] [,quota=<1|0>] [,replicate=<1|0>] [,ro=<1|0>] [,shared=<1|0>] [,size=<disk-size>]"},
       "searchdomain":{"description":"DNS search domains of the container; the host's are used when neither this nor nameserver is set.","format":"dns-name-list","optional":1,"type":"string"},
       "ssh-public-keys":{"description":"Public SSH keys for root, one per line in OpenSSH format.","optional":1,"type":"string"},
       "start":{"default":0,"description":"Start the container when creation has finished.","optional":1,"type":"boolean"},
       "startup":{"description":"Boot order and delays when the node starts guests, for example order=1,up=30.","format":"pve-startup-order","optional":1,"type":"string"},
       "storage":{"default":"local","description":"Storage for the root file system and new mount points.","format":"pve-storage-id","optional":1,"type":"string"},
       "swap":{"default":512,"description":"Swap of the container in MiB.","minimum":0,"optional":1,"type":"integer"},
       "tags":{"description":"Tags of the container, separated by semicolons.","format":"pve-tag-list","optional":1,"type":"string"},
       "template":{"default":0,"description":"Marks the guest as a template.","optional":1,"type":"boolean"},
       "timezone":{"description":"Time zone inside the container: host, or a name from the zoneinfo database.","format":"pve-ct-timezone","optional":1,"type":"string"},
       "unique":{"description":"Give restored network devices new MAC addresses.","optional":1,"requires":"restore","type":"boolean"},
       "unprivileged":{"default":0,"description":"Run the container with mapped, unprivileged user IDs.","optional":1,"type":"boolean"},
       "unused[n]":{"description":"Volume that belongs to the guest but is not attached; kept by the system.","format":{
         "volume":{"default_key":1,"description":"Volume ID of the detached volume.","format":"pve-volume-id","type":"string"}
        },"optional":1,"type":"string","typetext":"[volume=]<pve-volume-id>"},
       "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
     }},
     "permissions":{"description":"Needs VM.Allocate on the new guest or its pool; restoring over an existing guest can use VM.Backup instead, and storage access is checked too.","user":"all"},
     "protected":1,
     "proxyto":"node",
     "returns":{"type":"string"}
    }
   },
   "children":[
   {
    "path":"/nodes/{node}/lxc/{vmid}",
    "text":"{vmid}",
    "leaf":0,
    "info":{
     "DELETE":{
      "allowtoken":1,
      "description":"Destroy a stopped container together with its volumes, as a task.",
      "method":"DELETE",
      "name":"destroy_vm",
      "parameters":{"additionalProperties":0,"properties":{
        "destroy-unreferenced-disks":{"description":"Also destroy volumes on any enabled storage that carry this VM ID but are not in the configuration.","optional":1,"type":"boolean"},
        "force":{"default":0,"description":"Destroy the container even while it runs.","optional":1,"type":"boolean"},
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "purge":{"default":0,"description":"Also drop the container from backup jobs, replication and HA.","optional":1,"type":"boolean"},
        "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
      }},
      "permissions":{"check":["perm","/vms/{vmid}",["VM.Allocate"]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"type":"string"}
     },
     "GET":{
      "allowtoken":1,
      "description":"List the API subdirectories of a container.",
      "method":"GET",
      "name":"vmdiridx",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
      }},
      "permissions":{"user":"all"},
      "proxyto":"node",
      "returns":{"items":{"properties":{"subdir":{"type":"string"}},"type":"object"},"links":[{"href":"{subdir}","rel":"child"}],"type":"array"}
     }
    },
    "children":[
    {
     "path":"/nodes/{node}/lxc/{vmid}/clone",
     "text":"clone",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Copy a container or template to a new VM ID, as a task.",
       "method":"POST",
       "name":"clone_vm",
       "parameters":{"additionalProperties":0,"properties":{
         "bwlimit":{"description":"I/O bandwidth limit for this operation in KiB/s.","minimum":"0","optional":1,"type":"number"},
         "description":{"description":"Notes for the copy.","optional":1,"type":"string"},
         "full":{"description":"Copy every volume fully rather than linking to the template's volumes.","optional":1,"type":"boolean"},
         "hostname":{"description":"Host name of the copy.","format":"dns-name","optional":1,"type":"string"},
         "newid":{"description":"VM ID for the copy.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "pool":{"description":"Pool to add the copy to.","format":"pve-poolid","optional":1,"type":"string"},
         "snapname":{"description":"Copy the state saved in this snapshot.","format":"pve-configid","maxLength":40,"optional":1,"type":"string"},
         "storage":{"description":"Storage for a full copy's volumes.","format":"pve-storage-id","optional":1,"type":"string"},
         "target":{"description":"Node for the copy; needs the source on shared storage.","format":"pve-node","optional":1,"type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["and",["perm","/vms/{vmid}",["VM.Clone"]],["or",["perm","/vms/{newid}",["VM.Allocate"]],["perm","/pool/{pool}",["VM.Allocate"],"require_param","pool"]]],"description":"Needs VM.Clone on the source, VM.Allocate on the new ID or its pool, and space on the target storage."},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/config",
     "text":"config",
     "leaf":1,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"Read a container's configuration, pending changes included unless current is set.",
       "method":"GET",
       "name":"vm_config",
       "parameters":{"additionalProperties":0,"properties":{
         "current":{"default":0,"description":"Read the configuration in effect, leaving out pending changes.","optional":1,"type":"boolean"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "snapshot":{"description":"Read the configuration saved with this snapshot instead.","format":"pve-configid","maxLength":40,"optional":1,"type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Audit"]]},
       "proxyto":"node",
       "returns":{"properties":{
         "arch":{"default":"amd64","description":"CPU architecture of the container's OS.","enum":["amd64","i386","arm64","armhf","riscv32","riscv64"],"optional":1,"type":"string"},
         "cores":{"description":"Number of CPU cores the container may use; all when unset.","maximum":8192,"minimum":1,"optional":1,"type":"integer"},
         "cpulimit":{"default":0,"description":"Upper bound of CPU time, in whole CPUs; 0 means no limit.","maximum":8192,"minimum":0,"optional":1,"type":"number"},
         "cpuunits":{"description":"Relative CPU weight of the container against other guests.","maximum":500000,"minimum":0,"optional":1,"type":"integer"},
         "description":{"description":"Free-text notes about the container, kept in its configuration.","optional":1,"type":"string"},
         "digest":{"description":"SHA1 digest of the configuration, to detect concurrent changes.","type":"string"},
         "features":{"description":"Advanced container features to allow.","optional":1,"type":"string"},
         "hostname":{"description":"Host name of the container.","format":"dns-name","optional":1,"type":"string"},
         "lock":{"description":"Configuration lock of the container; setting it locks, deleting it unlocks.","enum":["backup","create","destroyed","disk","fstrim","migrate","mounted","rollback","snapshot","snapshot-delete"],"optional":1,"type":"string"},
         "memory":{"default":512,"description":"Memory limit of the container in MiB.","minimum":16,"optional":1,"type":"integer"},
         "mp[n]":{"description":"Additional mount point of the container; STORAGE:SIZE in GiB allocates a new volume.","optional":1,"type":"string"},
         "nameserver":{"description":"DNS servers of the container; the host's are used when neither this nor searchdomain is set.","format":"lxc-ip-with-ll-iface-list","optional":1,"type":"string"},
         "net[n]":{"description":"Network interface of the container.","optional":1,"type":"string"},
         "onboot":{"default":0,"description":"Start the container when its node boots.","optional":1,"type":"boolean"},
         "ostype":{"description":"Distribution inside the container, which selects its setup scripts.","enum":["debian","devuan","ubuntu","centos","fedora","opensuse","archlinux","alpine","gentoo","nixos","unmanaged"],"optional":1,"type":"string"},
         "protection":{"default":0,"description":"Blocks destroying the container and changing its disks while set.","optional":1,"type":"boolean"},
         "rootfs":{"description":"Root file system of the container; STORAGE:SIZE in GiB allocates a new volume.","optional":1,"type":"string"},
         "searchdomain":{"description":"DNS search domains of the container; the host's are used when neither this nor nameserver is set.","format":"dns-name-list","optional":1,"type":"string"},
         "startup":{"description":"Boot order and delays when the node starts guests, for example order=1,up=30.","format":"pve-startup-order","optional":1,"type":"string"},
         "swap":{"default":512,"description":"Swap of the container in MiB.","minimum":0,"optional":1,"type":"integer"},
         "tags":{"description":"Tags of the container, separated by semicolons.","format":"pve-tag-list","optional":1,"type":"string"},
         "template":{"default":0,"description":"Marks the guest as a template.","optional":1,"type":"boolean"},
         "timezone":{"description":"Time zone inside the container: host, or a name from the zoneinfo database.","format":"pve-ct-timezone","optional":1,"type":"string"},
         "unprivileged":{"default":0,"description":"Run the container with mapped, unprivileged user IDs.","optional":1,"type":"boolean"},
         "unused[n]":{"description":"Volume that belongs to the guest but is not attached; kept by the system.","optional":1,"type":"string"}
        },"type":"object"}
      },
      "PUT":{
       "allowtoken":1,
       "description":"Change container options.",
       "method":"PUT",
       "name":"update_vm",
       "parameters":{"additionalProperties":0,"properties":{
         "arch":{"default":"amd64","description":"CPU architecture of the container's OS.","enum":["amd64","i386","arm64","armhf","riscv32","riscv64"],"optional":1,"type":"string"},
         "cores":{"description":"Number of CPU cores the container may use; all when unset.","maximum":8192,"minimum":1,"optional":1,"type":"integer"},
         "cpulimit":{"default":0,"description":"Upper bound of CPU time, in whole CPUs; 0 means no limit.","maximum":8192,"minimum":0,"optional":1,"type":"number"},
         "cpuunits":{"description":"Relative CPU weight of the container against other guests.","maximum":500000,"minimum":0,"optional":1,"type":"integer"},
         "delete":{"description":"Configuration keys to remove, separated by commas.","format":"pve-configid-list","optional":1,"type":"string"},
         "description":{"description":"Free-text notes about the container, kept in its configuration.","maxLength":8192,"optional":1,"type":"string"},
         "digest":{"description":"Refuse the change unless the configuration still has this SHA1 digest.","maxLength":40,"optional":1,"type":"string"},
         "features":{"description":"Advanced container features to allow.","format":{
           "force_rw_sys":{"default":0,"description":"Mount /sys writable in unprivileged containers.","optional":1,"type":"boolean"},
           "fuse":{"default":0,"description":"Allow FUSE file systems.","optional":1,"type":"boolean"},
           "keyctl":{"default":0,"description":"Allow the keyctl() system call in unprivileged containers, which Docker needs.","optional":1,"type":"boolean"},
           "mknod":{"default":0,"description":"Allow unprivileged containers to create some device nodes.","optional":1,"type":"boolean"},
           "mount":{"description":"File system types the container may mount, separated by semicolons.","optional":1,"pattern":"(?^:[a-zA-Z0-9_; ]+)","type":"string"},
           "nesting":{"default":0,"description":"Allow containers inside the container.","optional":1,"type":"boolean"}
          },"optional":1,"type":"string","typetext":"[force_rw_sys=<1|0>] [,fuse=<1|0>] [,keyctl=<1|0>] [,mknod=<1|0>] [,mount=<string>] [,nesting=<1|0>]"},
         "hostname":{"description":"Host name of the container.","format":"dns-name","maxLength":255,"optional":1,"type":"string"},
         "lock":{"description":"Configuration lock of the container; setting it locks, deleting it unlocks.","enum":["backup","create","destroyed","disk","fstrim","migrate","mounted","rollback","snapshot","snapshot-delete"],"optional":1,"type":"string"},
         "memory":{"default":512,"description":"Memory limit of the container in MiB.","minimum":16,"optional":1,"type":"integer"},
         "mp[n]":{"description":"Additional mount point of the container; STORAGE:SIZE in GiB allocates a new volume.","format":{
           "acl":{"description":"Turn POSIX ACL support on or off.","optional":1,"type":"boolean"},
           "backup":{"description":"Include the mount point in backups.","optional":1,"type":"boolean"},
           "mountoptions":{"description":"Extra mount options, separated by semicolons.","optional":1,"pattern":"(?^:(?^:(discard|lazytime|noatime|nodev|noexec|nosuid))(;(?^:(discard|lazytime|noatime|nodev|noexec|nosuid)))*)","type":"string"},
           "mp":{"description":"Path inside the container to mount it at.","format":"pve-lxc-mp-string","type":"string"},
           "quota":{"description":"Enable user quotas inside the container.","optional":1,"type":"boolean"},
           "replicate":{"default":1,"description":"Include the volume in storage replication.","optional":1,"type":"boolean"},
           "ro":{"description":"Mount read-only.","optional":1,"type":"boolean"},
           "shared":{"default":0,"description":"Declare a bind mount as present on every node.","optional":1,"type":"boolean"},
           "size":{"description":"Size of the volume, recorded by the system.","format":"disk-size","optional":1,"type":"string"},
           "volume":{"default_key":1,"description":"Volume, device or host directory to mount; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-lxc-mp-string","type":"string"}
          },"optional":1,"type":"string","typetext":"[volume=]<pve-lxc-mp-string> ,mp=<pve-lxc-mp-string> [,acl=<1|0>] [,backup=<1|0>] [,mountoptions=<string>] [,quota=<1|0>] [,replicate=<1|0>] [,ro=<1|0>] [,shared=<1|0>] [,size=<disk-size>]"},
         "nameserver":{"description":"DNS servers of the container; the host's are used when neither this nor searchdomain is set.","format":"lxc-ip-with-ll-iface-list","optional":1,"type":"string"},
         "net[n]":{"description":"Network interface of the container.","format":{
           "bridge":{"description":"Host bridge to connect the interface to.","optional":1,"pattern":"[-_.\\w\\d]+","type":"string"},
           "firewall":{"description":"Filter the interface's traffic with the guest firewall.","optional":1,"type":"boolean"},
           "gw":{"description":"IPv4 default gateway.","format":"ipv4","optional":1,"type":"string"},
           "gw6":{"description":"IPv6 default gateway.","format":"ipv6","optional":1,"type":"string"},
           "host-managed":{"description":"Let the host configure the interface's addresses.","optional":1,"type":"boolean"},
           "hwaddr":{"description":"MAC address of the interface; generated when absent.","format":"mac-addr","optional":1,"type":"string"},
           "ip":{"description":"IPv4 address with prefix length, dhcp, or manual.","format":"pve-ipv4-config","optional":1,"type":"string"},
           "ip6":{"description":"IPv6 address with prefix length, auto, dhcp, or manual.","format":"pve-ipv6-config","optional":1,"type":"string"},
           "link_down":{"description":"Keep the interface disconnected.","optional":1,"type":"boolean"},
           "mtu":{"description":"MTU of the interface.","maximum":65535,"minimum":64,"optional":1,"type":"integer"},
           "name":{"description":"Interface name inside the container, such as eth0.","pattern":"[-_.\\w\\d]+","type":"string"},
           "rate":{"description":"Bandwidth limit in MB/s.","optional":1,"type":"number"},
           "tag":{"description":"VLAN tag added to the interface's traffic.","maximum":4094,"minimum":1,"optional":1,"type":"integer"},
           "trunks":{"description":"VLANs passed through, separated by semicolons.","optional":1,"pattern":"(?^:\\d+(?:;\\d+)*)","type":"string"},
           "type":{"description":"Kind of interface.","enum":["veth"],"optional":1,"type":"string"}
          },"optional":1,"type":"string","typetext":"name=<string> [,bridge=<string>] [,firewall=<1|0>] [,gw=<ipv4>] [,gw6=<ipv6>] [,host-managed=<1|0>] [,hwaddr=<mac-addr>] [,ip=<pve-ipv4-config>] [,ip6=<pve-ipv6-config>] [,link_down=<1|0>] [,mtu=<integer>] [,rate=<number>] [,tag=<integer>] [,trunks=<string>] [,type=<veth>]"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "onboot":{"default":0,"description":"Start the container when its node boots.","optional":1,"type":"boolean"},
         "ostype":{"description":"Distribution inside the container, which selects its setup scripts.","enum":["debian","devuan","ubuntu","centos","fedora","opensuse","archlinux","alpine","gentoo","nixos","unmanaged"],"optional":1,"type":"string"},
         "protection":{"default":0,"description":"Blocks destroying the container and changing its disks while set.","optional":1,"type":"boolean"},
         "revert":{"description":"Pending changes to discard, by key.","format":"pve-configid-list","optional":1,"type":"string"},
         "rootfs":{"description":"Root file system of the container; STORAGE:SIZE in GiB allocates a new volume.","format":{
           "acl":{"description":"Turn POSIX ACL support on or off.","optional":1,"type":"boolean"},
           "mountoptions":{"description":"Extra mount options, separated by semicolons.","optional":1,"pattern":"(?^:(?^:(discard|lazytime|noatime|nodev|noexec|nosuid))(;(?^:(discard|lazytime|noatime|nodev|noexec|nosuid)))*)","type":"string"},
           "quota":{"description":"Enable user quotas inside the container.","optional":1,"type":"boolean"},
           "replicate":{"default":1,"description":"Include the volume in storage replication.","optional":1,"type":"boolean"},
           "ro":{"description":"Mount read-only.","optional":1,"type":"boolean"},
           "shared":{"default":0,"description":"Declare a bind mount as present on every node.","optional":1,"type":"boolean"},
           "size":{"description":"Size of the volume, recorded by the system.","format":"disk-size","optional":1,"type":"string"},
           "volume":{"default_key":1,"description":"Volume, device or host directory to mount; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-lxc-mp-string","type":"string"}
          },"optional":1,"type":"string","typetext":"[volume=]<pve-lxc-mp-string> [,acl=<1|0>] [,mountoptions=<string>] [,quota=<1|0>] [,replicate=<1|0>] [,ro=<1|0>] [,shared=<1|0>] [,size=<disk-size>]"},
         "searchdomain":{"description":"DNS search domains of the container; the host's are used when neither this nor nameserver is set.","format":"dns-name-list","optional":1,"type":"string"},
         "startup":{"description":"Boot order and delays when the node starts guests, for example order=1,up=30.","format":"pve-startup-order","optional":1,"type":"string"},
         "swap":{"default":512,"description":"Swap of the container in MiB.","minimum":0,"optional":1,"type":"integer"},
         "tags":{"description":"Tags of the container, separated by semicolons.","format":"pve-tag-list","optional":1,"type":"string"},
         "template":{"default":0,"description":"Marks the guest as a template.","optional":1,"type":"boolean"},
         "timezone":{"description":"Time zone inside the container: host, or a name from the zoneinfo database.","format":"pve-ct-timezone","optional":1,"type":"string"},
         "unprivileged":{"default":0,"description":"Run the container with mapped, unprivileged user IDs.","optional":1,"type":"boolean"},
         "unused[n]":{"description":"Volume that belongs to the guest but is not attached; kept by the system.","format":{
           "volume":{"default_key":1,"description":"Volume ID of the detached volume.","format":"pve-volume-id","type":"string"}
          },"optional":1,"type":"string","typetext":"[volume=]<pve-volume-id>"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Config.Disk","VM.Config.CPU","VM.Config.Memory","VM.Config.Network","VM.Config.Options"],"any",1],"description":"The privileges depend on the options changed; bind and device mounts are for root@pam only."},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"null"}
      }
     }
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/migrate",
     "text":"migrate",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Move a container to another cluster node, as a task.",
       "method":"POST",
       "name":"migrate_vm",
       "parameters":{"additionalProperties":0,"properties":{
         "bwlimit":{"description":"I/O bandwidth limit for this operation in KiB/s.","minimum":"0","optional":1,"type":"number"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "online":{"description":"Move a running container live (not supported; use restart).","optional":1,"type":"boolean"},
         "restart":{"description":"Move a running container by stopping it and starting it on the target.","optional":1,"type":"boolean"},
         "target":{"description":"Node to move the container to.","format":"pve-node","type":"string"},
         "target-storage":{"description":"Storage mapping for the target: one storage ID for all, SOURCE:TARGET pairs, or 1 to keep each ID.","format":"storage-pair-list","optional":1,"type":"string"},
         "timeout":{"default":180,"description":"Seconds to wait for the container to shut down in restart mode.","optional":1,"type":"integer"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Migrate"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/pending",
     "text":"pending",
     "leaf":1,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"List each configuration key of a container with its current and pending value.",
       "method":"GET",
       "name":"vm_pending",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Audit"]]},
       "proxyto":"node",
       "returns":{"items":{"properties":{
         "delete":{"description":"Set when a deletion of the key is pending; 2 means a forced deletion.","maximum":2,"minimum":0,"optional":1,"type":"integer"},
         "key":{"description":"Configuration key.","type":"string"},
         "pending":{"description":"Value that applies after the next restart.","optional":1,"type":"string"},
         "value":{"description":"Value in effect now.","optional":1,"type":"string"}
        },"type":"object"},"type":"array"}
      }
     }
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/resize",
     "text":"resize",
     "leaf":1,
     "info":{
      "PUT":{
       "allowtoken":1,
       "description":"Grow a container's root disk or mount point, as a task.",
       "method":"PUT",
       "name":"resize_vm",
       "parameters":{"additionalProperties":0,"properties":{
         "digest":{"description":"Refuse the change unless the configuration still has this SHA1 digest.","maxLength":40,"optional":1,"type":"string"},
         "disk":{"description":"Volume to grow: rootfs or mpN.","enum":["rootfs","mp0","mp1","mp2","mp3","mp4","mp5","mp6","mp7","mp8","mp9","mp10","mp11","mp12","mp13","mp14","mp15","mp16","mp17","mp18","mp19","mp20","mp21","mp22","mp23","mp24","mp25","mp26","mp27","mp28","mp29","mp30","mp31","mp32","mp33","mp34","mp35","mp36","mp37","mp38","mp39","mp40","mp41","mp42","mp43","mp44","mp45","mp46","mp47","mp48","mp49","mp50","mp51","mp52","mp53","mp54","mp55","mp56","mp57","mp58","mp59","mp60","mp61","mp62","mp63","mp64","mp65","mp66","mp67","mp68","mp69","mp70","mp71","mp72","mp73","mp74","mp75","mp76","mp77","mp78","mp79","mp80","mp81","mp82","mp83","mp84","mp85","mp86","mp87","mp88","mp89","mp90","mp91","mp92","mp93","mp94","mp95","mp96","mp97","mp98","mp99","mp100","mp101","mp102","mp103","mp104","mp105","mp106","mp107","mp108","mp109","mp110","mp111","mp112","mp113","mp114","mp115","mp116","mp117","mp118","mp119","mp120","mp121","mp122","mp123","mp124","mp125","mp126","mp127","mp128","mp129","mp130","mp131","mp132","mp133","mp134","mp135","mp136","mp137","mp138","mp139","mp140","mp141","mp142","mp143","mp144","mp145","mp146","mp147","mp148","mp149","mp150","mp151","mp152","mp153","mp154","mp155","mp156","mp157","mp158","mp159","mp160","mp161","mp162","mp163","mp164","mp165","mp166","mp167","mp168","mp169","mp170","mp171","mp172","mp173","mp174","mp175","mp176","mp177","mp178","mp179","mp180","mp181","mp182","mp183","mp184","mp185","mp186","mp187","mp188","mp189","mp190","mp191","mp192","mp193","mp194","mp195","mp196","mp197","mp198","mp199","mp200","mp201","mp202","mp203","mp204","mp205","mp206","mp207","mp208","mp209","mp210","mp211","mp212","mp213","mp214","mp215","mp216","mp217","mp218","mp219","mp220","mp221","mp222","mp223","mp224","mp225","mp226","mp227","mp228","mp229","mp230","mp231","mp232","mp233","mp234","mp235","mp236","mp237","mp238","mp239","mp240","mp241","mp242","mp243","mp244","mp245","mp246","mp247","mp248","mp249","mp250","mp251","mp252","mp253","mp254","mp255"],"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "size":{"description":"New size, or with a leading + the amount to add, such as 16G or +4G; volumes only grow.","pattern":"\\+?\\d+(\\.\\d+)?[KMGT]?","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Config.Disk"],"any",1]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/snapshot",
     "text":"snapshot",
     "leaf":0,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"List a container's snapshots, ending with the current state.",
       "method":"GET",
       "name":"list",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Audit"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"items":{"properties":{
         "description":{"description":"Notes for the snapshot.","type":"string"},
         "name":{"description":"Snapshot name; current stands for the present state.","type":"string"},
         "parent":{"description":"Snapshot this one was taken on top of.","optional":1,"type":"string"},
         "snaptime":{"description":"When the snapshot was taken, in UNIX seconds.","optional":1,"type":"integer"}
        },"type":"object"},"links":[{"href":"{name}","rel":"child"}],"type":"array"}
      },
      "POST":{
       "allowtoken":1,
       "description":"Take a snapshot of a container, as a task.",
       "method":"POST",
       "name":"snapshot",
       "parameters":{"additionalProperties":0,"properties":{
         "description":{"description":"Notes for the snapshot.","optional":1,"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     },
     "children":[
     {
      "path":"/nodes/{node}/lxc/{vmid}/snapshot/{snapname}",
      "text":"{snapname}",
      "leaf":0,
      "info":{
       "DELETE":{
        "allowtoken":1,
        "description":"Remove a snapshot of a container, as a task.",
        "method":"DELETE",
        "name":"delsnapshot",
        "parameters":{"additionalProperties":0,"properties":{
          "force":{"description":"Drop the snapshot from the configuration even when removing its volume snapshots fails.","optional":1,"type":"boolean"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       },
       "GET":{
        "allowtoken":1,
        "description":"List the actions available for one container snapshot.",
        "method":"GET",
        "name":"snapshot_cmd_idx",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"user":"all"},
        "returns":{"items":{"properties":{},"type":"object"},"links":[{"href":"{cmd}","rel":"child"}],"type":"array"}
       }
      },
      "children":[
      {
       "path":"/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/config",
       "text":"config",
       "leaf":1,
       "info":{
        "GET":{
         "allowtoken":1,
         "description":"Read the configuration a container had when the snapshot was taken.",
         "method":"GET",
         "name":"get_snapshot_config",
         "parameters":{"additionalProperties":0,"properties":{
           "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
           "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
           "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
         }},
         "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot","VM.Snapshot.Rollback","VM.Audit"],"any",1]},
         "proxyto":"node",
         "returns":{"type":"object"}
        },
        "PUT":{
         "allowtoken":1,
         "description":"Change the description of a container snapshot.",
         "method":"PUT",
         "name":"update_snapshot_config",
         "parameters":{"additionalProperties":0,"properties":{
           "description":{"description":"New notes for the snapshot.","optional":1,"type":"string"},
           "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
           "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
           "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
         }},
         "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot"]]},
         "protected":1,
         "proxyto":"node",
         "returns":{"type":"null"}
        }
       }
      },
      {
       "path":"/nodes/{node}/lxc/{vmid}/snapshot/{snapname}/rollback",
       "text":"rollback",
       "leaf":1,
       "info":{
        "POST":{
         "allowtoken":1,
         "description":"Return a container to the state of a snapshot, as a task.",
         "method":"POST",
         "name":"rollback",
         "parameters":{"additionalProperties":0,"properties":{
           "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
           "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
           "start":{"default":0,"description":"Start the container after the rollback.","optional":1,"type":"boolean"},
           "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
         }},
         "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot","VM.Snapshot.Rollback"],"any",1]},
         "protected":1,
         "proxyto":"node",
         "returns":{"type":"string"}
        }
       }
      }
      ]
     }
     ]
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/status",
     "text":"status",
     "leaf":0,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"List the power-state actions of a container.",
       "method":"GET",
       "name":"vmcmdidx",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"user":"all"},
       "proxyto":"node",
       "returns":{"items":{"properties":{"subdir":{"type":"string"}},"type":"object"},"links":[{"href":"{subdir}","rel":"child"}],"type":"array"}
      }
     },
     "children":[
     {
      "path":"/nodes/{node}/lxc/{vmid}/status/current",
      "text":"current",
      "leaf":1,
      "info":{
       "GET":{
        "allowtoken":1,
        "description":"Show whether a container runs, and its live resource usage.",
        "method":"GET",
        "name":"vm_status",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.Audit"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"properties":{
          "cpu":{"description":"CPU load as a fraction of the available CPUs.","optional":1,"type":"number"},
          "cpus":{"description":"Number of CPUs the guest may use.","optional":1,"type":"number"},
          "disk":{"description":"Disk space in use, in bytes.","minimum":0,"optional":1,"type":"integer"},
          "diskread":{"description":"Bytes read from disks since the guest started.","optional":1,"type":"integer"},
          "diskwrite":{"description":"Bytes written to disks since the guest started.","optional":1,"type":"integer"},
          "ha":{"description":"High-availability state of the guest.","type":"object"},
          "lock":{"description":"Configuration lock held on the guest, if any.","optional":1,"type":"string"},
          "maxdisk":{"description":"Disk size, in bytes.","optional":1,"type":"integer"},
          "maxmem":{"description":"Memory available, in bytes.","optional":1,"type":"integer"},
          "maxswap":{"description":"Swap available to the container, in bytes.","optional":1,"type":"integer"},
          "mem":{"description":"Memory in use, in bytes.","optional":1,"type":"integer"},
          "name":{"description":"Display name or host name of the guest.","optional":1,"type":"string"},
          "netin":{"description":"Bytes received over the network since the guest started.","optional":1,"type":"integer"},
          "netout":{"description":"Bytes sent over the network since the guest started.","optional":1,"type":"integer"},
          "pressurecpusome":{"description":"Share of time some tasks stalled on CPU, over 10 seconds.","optional":1,"type":"number"},
          "pressureiofull":{"description":"Share of time all tasks stalled on I/O, over 10 seconds.","optional":1,"type":"number"},
          "pressureiosome":{"description":"Share of time some tasks stalled on I/O, over 10 seconds.","optional":1,"type":"number"},
          "pressurememoryfull":{"description":"Share of time all tasks stalled on memory, over 10 seconds.","optional":1,"type":"number"},
          "pressurememorysome":{"description":"Share of time some tasks stalled on memory, over 10 seconds.","optional":1,"type":"number"},
          "status":{"description":"Whether the container is running or stopped.","enum":["stopped","running"],"type":"string"},
          "tags":{"description":"Tags of the guest, separated by semicolons.","optional":1,"type":"string"},
          "template":{"default":0,"description":"Whether the guest is a template.","optional":1,"type":"boolean"},
          "uptime":{"description":"Seconds since start.","optional":1,"type":"integer"},
          "vmid":{"description":"VM ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
         },"type":"object"}
       }
      }
     },
     {
      "path":"/nodes/{node}/lxc/{vmid}/status/reboot",
      "text":"reboot",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Shut a container down cleanly and start it again, applying pending changes.",
        "method":"POST",
        "name":"vm_reboot",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "timeout":{"description":"Seconds to wait for the shutdown before giving up.","minimum":0,"optional":1,"type":"integer"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/lxc/{vmid}/status/resume",
      "text":"resume",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Thaw a frozen container.",
        "method":"POST",
        "name":"vm_resume",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/lxc/{vmid}/status/shutdown",
      "text":"shutdown",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Ask a container's init system to shut down cleanly, as a task.",
        "method":"POST",
        "name":"vm_shutdown",
        "parameters":{"additionalProperties":0,"properties":{
          "forceStop":{"default":0,"description":"Kill the container if it has not shut down in time.","optional":1,"type":"boolean"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "timeout":{"default":60,"description":"Give up waiting after this many seconds.","minimum":0,"optional":1,"type":"integer"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/lxc/{vmid}/status/start",
      "text":"start",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Start a container, as a task.",
        "method":"POST",
        "name":"vm_start",
        "parameters":{"additionalProperties":0,"properties":{
          "debug":{"default":0,"description":"Log the container start at debug level.","optional":1,"type":"boolean"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/lxc/{vmid}/status/stop",
      "text":"stop",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Kill all processes of a container at once.",
        "method":"POST",
        "name":"vm_stop",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "overrule-shutdown":{"default":0,"description":"Cancel running shutdown tasks of the container before stopping.","optional":1,"type":"boolean"},
          "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/lxc/{vmid}/status/suspend",
      "text":"suspend",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Freeze all processes of a container (experimental).",
        "method":"POST",
        "name":"vm_suspend",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     }
     ]
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/termproxy",
     "text":"termproxy",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Open a terminal proxy (xterm.js) to a container's console.",
       "method":"POST",
       "name":"termproxy",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Console"]]},
       "protected":1,
       "returns":{"additionalProperties":0,"properties":{"port":{"type":"integer"},"ticket":{"type":"string"},"upid":{"type":"string"},"user":{"type":"string"}}}
      }
     }
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/vncproxy",
     "text":"vncproxy",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Open a VNC proxy to a container's console: a ticket and a port (and a password with websocket).",
       "method":"POST",
       "name":"vncproxy",
       "parameters":{"additionalProperties":0,"properties":{
         "height":{"description":"The console height in pixels.","maximum":2160,"minimum":16,"optional":1,"type":"integer"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"},
         "websocket":{"description":"Prepare for a websocket upgrade (noVNC).","optional":1,"type":"boolean"},
         "width":{"description":"The console width in pixels.","maximum":4096,"minimum":16,"optional":1,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Console"]]},
       "protected":1,
       "returns":{"additionalProperties":0,"properties":{"cert":{"type":"string"},"port":{"type":"integer"},"ticket":{"type":"string"},"upid":{"type":"string"},"user":{"type":"string"}}}
      }
     }
    },
    {
     "path":"/nodes/{node}/lxc/{vmid}/template",
     "text":"template",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Turn a stopped container into a template for clones.",
       "method":"POST",
       "name":"template",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Allocate"]],"description":"Needs VM.Allocate on the container."},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"null"}
      }
     }
    }
    ]
   }
   ]
  },
  {
   "path":"/nodes/{node}/network",
   "text":"network",
   "leaf":1,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the network interfaces configured on a node.",
     "method":"GET",
     "name":"index",
     "parameters":{"additionalProperties":0,"properties":{
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
       "type":{"description":"Only interfaces of this kind.","enum":["bridge","bond","eth","alias","vlan","fabric","OVSBridge","OVSBond","OVSPort","OVSIntPort","vnet","any_bridge","any_local_bridge","include_sdn"],"optional":1,"type":"string"}
     }},
     "permissions":{"user":"all"},
     "proxyto":"node",
     "returns":{"items":{"properties":{
       "active":{"description":"Whether the interface is up.","optional":1,"type":"boolean"},
       "address":{"description":"IPv4 address.","format":"ipv4","optional":1,"type":"string"},
       "address6":{"description":"IPv6 address.","format":"ipv6","optional":1,"type":"string"},
       "autostart":{"description":"Whether the interface comes up at boot.","optional":1,"type":"boolean"},
       "bond-primary":{"description":"Preferred member of an active-backup bond.","format":"pve-iface","optional":1,"type":"string"},
       "bond_mode":{"description":"How the bond spreads traffic over its members.","enum":["balance-rr","active-backup","balance-xor","broadcast","802.3ad","balance-tlb","balance-alb","balance-slb","lacp-balance-slb","lacp-balance-tcp"],"optional":1,"type":"string"},
       "bond_xmit_hash_policy":{"description":"Hash policy choosing a bond member for outgoing traffic.","enum":["layer2","layer2+3","layer3+4"],"optional":1,"type":"string"},
       "bridge-access":{"description":"Access VLAN of the bridge port.","optional":1,"type":"integer"},
       "bridge-arp-nd-suppress":{"description":"Whether ARP and neighbour discovery are suppressed on the port.","optional":1,"type":"boolean"},
       "bridge-learning":{"description":"Whether the port learns MAC addresses.","optional":1,"type":"boolean"},
       "bridge-multicast-flood":{"description":"Whether multicast is flooded to the port.","optional":1,"type":"boolean"},
       "bridge-unicast-flood":{"description":"Whether unknown unicast is flooded to the port.","optional":1,"type":"boolean"},
       "bridge_ports":{"description":"Member interfaces of the bridge.","format":"pve-iface-list","optional":1,"type":"string"},
       "bridge_vids":{"description":"VLANs a VLAN-aware bridge allows.","format":"pve-vlan-id-or-range-list","optional":1,"type":"string"},
       "bridge_vlan_aware":{"description":"Whether the bridge handles VLANs.","optional":1,"type":"boolean"},
       "cidr":{"description":"IPv4 address with prefix length.","format":"CIDRv4","optional":1,"type":"string"},
       "cidr6":{"description":"IPv6 address with prefix length.","format":"CIDRv6","optional":1,"type":"string"},
       "comments":{"description":"Comment for the IPv4 configuration.","optional":1,"type":"string"},
       "comments6":{"description":"Comment for the IPv6 configuration.","optional":1,"type":"string"},
       "exists":{"description":"Whether the device exists in the system.","optional":1,"type":"boolean"},
       "families":{"description":"Address families configured.","items":{"description":"Address families configured.","enum":["inet","inet6"],"type":"string"},"optional":1,"type":"array"},
       "gateway":{"description":"IPv4 default gateway.","format":"ipv4","optional":1,"type":"string"},
       "gateway6":{"description":"IPv6 default gateway.","format":"ipv6","optional":1,"type":"string"},
       "iface":{"description":"Interface name.","format":"pve-iface","type":"string"},
       "link-type":{"description":"Kind of link.","optional":1,"type":"string"},
       "method":{"description":"How IPv4 is configured, such as static or dhcp.","enum":["loopback","dhcp","manual","static","auto"],"optional":1,"type":"string"},
       "method6":{"description":"How IPv6 is configured.","enum":["loopback","dhcp","manual","static","auto"],"optional":1,"type":"string"},
       "mtu":{"description":"MTU of the interface.","maximum":65520,"minimum":1280,"optional":1,"type":"integer"},
       "netmask":{"description":"IPv4 netmask.","format":"ipv4mask","optional":1,"type":"string"},
       "netmask6":{"description":"IPv6 prefix length.","maximum":128,"minimum":0,"optional":1,"type":"integer"},
       "options":{"description":"Further IPv4 options from the interfaces file.","items":{"description":"Further IPv4 options from the interfaces file.","type":"string"},"optional":1,"type":"array"},
       "options6":{"description":"Further IPv6 options from the interfaces file.","items":{"description":"Further IPv6 options from the interfaces file.","type":"string"},"optional":1,"type":"array"},
       "ovs_bonds":{"description":"Member interfaces of an OVS bond.","format":"pve-iface-list","optional":1,"type":"string"},
       "ovs_bridge":{"description":"OVS bridge the port belongs to.","format":"pve-iface","optional":1,"type":"string"},
       "ovs_options":{"description":"Extra OVS options.","optional":1,"type":"string"},
       "ovs_ports":{"description":"Ports of an OVS bridge.","format":"pve-iface-list","optional":1,"type":"string"},
       "ovs_tag":{"description":"VLAN tag of an OVS port.","maximum":4094,"minimum":1,"optional":1,"type":"integer"},
       "priority":{"description":"Position of the interface in the interfaces file.","optional":1,"type":"integer"},
       "slaves":{"description":"Member interfaces of a bond.","format":"pve-iface-list","optional":1,"type":"string"},
       "type":{"description":"Kind of interface, such as bridge, bond or eth.","enum":["bridge","bond","eth","alias","vlan","fabric","OVSBridge","OVSBond","OVSPort","OVSIntPort","vnet","unknown"],"type":"string"},
       "uplink-id":{"description":"Uplink identifier.","optional":1,"type":"string"},
       "vlan-id":{"description":"VLAN ID of a VLAN interface.","maximum":4094,"minimum":1,"optional":1,"type":"integer"},
       "vlan-protocol":{"description":"VLAN protocol, such as 802.1q.","enum":["802.1ad","802.1q"],"optional":1,"type":"string"},
       "vlan-raw-device":{"description":"Interface a VLAN interface sits on.","format":"pve-iface","optional":1,"type":"string"},
       "vxlan-id":{"description":"VXLAN network identifier.","optional":1,"type":"integer"},
       "vxlan-local-tunnelip":{"description":"Local tunnel address of the VXLAN.","optional":1,"type":"string"},
       "vxlan-physdev":{"description":"Physical device carrying the VXLAN.","optional":1,"type":"string"},
       "vxlan-svcnodeip":{"description":"Multicast or service node address of the VXLAN.","optional":1,"type":"string"}
      },"type":"object"},"links":[{"href":"{iface}","rel":"child"}],"type":"array"}
    }
   }
  },
  {
   "path":"/nodes/{node}/qemu",
   "text":"qemu",
   "leaf":0,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the virtual machines on a node.",
     "method":"GET",
     "name":"vmlist",
     "parameters":{"additionalProperties":0,"properties":{
       "full":{"description":"Include live QEMU details of running machines, which is slower.","optional":1,"type":"boolean"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
     }},
     "permissions":{"description":"Virtual machines appear only where the caller has VM.Audit.","user":"all"},
     "protected":1,
     "proxyto":"node",
     "returns":{"items":{"properties":{
       "cpu":{"description":"CPU load as a fraction of the available CPUs.","optional":1,"type":"number"},
       "cpus":{"description":"Number of CPUs the guest may use.","optional":1,"type":"number"},
       "diskread":{"description":"Bytes read from disks since the guest started.","optional":1,"type":"integer"},
       "diskwrite":{"description":"Bytes written to disks since the guest started.","optional":1,"type":"integer"},
       "lock":{"description":"Configuration lock held on the guest, if any.","optional":1,"type":"string"},
       "maxdisk":{"description":"Disk size, in bytes.","optional":1,"type":"integer"},
       "maxmem":{"description":"Memory available, in bytes.","optional":1,"type":"integer"},
       "mem":{"description":"Memory in use, in bytes.","optional":1,"type":"integer"},
       "memhost":{"description":"Memory the guest takes on the host, in bytes.","optional":1,"type":"integer"},
       "name":{"description":"Display name or host name of the guest.","optional":1,"type":"string"},
       "netin":{"description":"Bytes received over the network since the guest started.","optional":1,"type":"integer"},
       "netout":{"description":"Bytes sent over the network since the guest started.","optional":1,"type":"integer"},
       "pid":{"description":"Process ID of the guest's QEMU process while it runs.","optional":1,"type":"integer"},
       "pressurecpufull":{"description":"Share of time all tasks stalled on CPU, over 10 seconds.","optional":1,"type":"number"},
       "pressurecpusome":{"description":"Share of time some tasks stalled on CPU, over 10 seconds.","optional":1,"type":"number"},
       "pressureiofull":{"description":"Share of time all tasks stalled on I/O, over 10 seconds.","optional":1,"type":"number"},
       "pressureiosome":{"description":"Share of time some tasks stalled on I/O, over 10 seconds.","optional":1,"type":"number"},
       "pressurememoryfull":{"description":"Share of time all tasks stalled on memory, over 10 seconds.","optional":1,"type":"number"},
       "pressurememorysome":{"description":"Share of time some tasks stalled on memory, over 10 seconds.","optional":1,"type":"number"},
       "qmpstatus":{"description":"Run state QEMU reports, such as running or paused.","optional":1,"type":"string"},
       "running-machine":{"description":"Machine type of the running QEMU process.","optional":1,"type":"string"},
       "running-qemu":{"description":"QEMU version of the running process.","optional":1,"type":"string"},
       "serial":{"description":"Whether the guest has a serial port.","optional":1,"type":"boolean"},
       "status":{"description":"Whether the VM is running or stopped.","enum":["stopped","running"],"type":"string"},
       "tags":{"description":"Tags of the guest, separated by semicolons.","optional":1,"type":"string"},
       "template":{"default":0,"description":"Whether the guest is a template.","optional":1,"type":"boolean"},
       "uptime":{"description":"Seconds since start.","optional":1,"type":"integer"},
       "vmid":{"description":"VM ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
      },"type":"object"},"links":[{"href":"{vmid}","rel":"child"}],"type":"array"}
    },
    "POST":{
     "allowtoken":1,
     "description":"Create a virtual machine, or restore one from a backup archive, as a task.",
     "method":"POST",
     "name":"create_vm",
     "parameters":{"additionalProperties":0,"properties":{
       "acpi":{"default":1,"description":"Give the guest ACPI.","optional":1,"type":"boolean"},
       "agent":{"description":"Settings of the QEMU guest agent.","format":{
         "enabled":{"default":0,"default_key":1,"description":"Talk to a QEMU guest agent in the VM.","type":"boolean"},
         "freeze-fs-on-backup":{"default":1,"description":"Freeze guest file systems during backups.","optional":1,"type":"boolean"},
         "fstrim_cloned_disks":{"default":0,"description":"Trim file systems after a disk is moved or the VM migrated.","optional":1,"type":"boolean"},
         "type":{"default":"virtio","description":"Channel used to reach the agent.","enum":["virtio","isa"],"optional":1,"type":"string"}
        },"optional":1,"type":"string","typetext":"[enabled=]<1|0> [,freeze-fs-on-backup=<1|0>] [,fstrim_cloned_disks=<1|0>] [,type=<virtio|isa>]"},
       "archive":{"description":"Backup to restore: a volume ID on a storage, or a path to a .vma or .tar file.","maxLength":255,"optional":1,"type":"string"},
       "balloon":{"description":"Memory target for the balloon driver in MiB; 0 turns ballooning off.","minimum":0,"optional":1,"type":"integer"},
       "bios":{"default":"seabios","description":"Firmware of the virtual machine.","enum":["seabios","ovmf"],"optional":1,"type":"string"},
       "boot":{"description":"Boot order of the virtual machine's devices.","format":"pve-qm-boot","optional":1,"type":"string"},
       "bwlimit":{"description":"I/O bandwidth limit for this operation in KiB/s.","minimum":"0","optional":1,"type":"integer"},
       "cipassword":{"description":"Password cloud-init sets for the user; SSH keys are preferable.","optional":1,"type":"string"},
       "ciuser":{"description":"User cloud-init configures instead of the image's default one.","optional":1,"type":"string"},
       "cores":{"default":1,"description":"Number of CPU cores per socket.","minimum":1,"optional":1,"type":"integer"},
       "cpu":{"description":"CPU model the guest sees, with optional flags.","format":"pve-vm-cpu-conf","optional":1,"type":"string"},
       "cpulimit":{"default":0,"description":"Upper bound of CPU time, in whole CPUs; 0 means no limit.","maximum":128,"minimum":0,"optional":1,"type":"number"},
       "cpuunits":{"description":"Relative CPU weight of the VM against other guests.","maximum":262144,"minimum":1,"optional":1,"type":"integer"},
       "description":{"description":"Free-text notes about the VM, kept in its configuration.","maxLength":8192,"optional":1,"type":"string"},
       "efidisk0":{"description":"Disk for the UEFI variables; STORAGE:SIZE allocates a new one.","format":{
         "efitype":{"default":"2m","description":"Size of the UEFI variable store; 4m is needed for Secure Boot.","enum":["2m","4m"],"optional":1,"type":"string"},
         "file":{"default_key":1,"description":"Volume ID of the UEFI variable disk; STORAGE:1 allocates a new one.","format":"pve-volume-id-or-qm-path","type":"string"},
         "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
         "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
         "ms-cert":{"default":"2011","description":"Newest Microsoft UEFI certificate enrolled, for information.","enum":["2011","2023"],"optional":1,"type":"string"},
         "pre-enrolled-keys":{"default":0,"description":"Start from a variable store with distribution and Microsoft keys enrolled, enabling Secure Boot.","optional":1,"type":"boolean"},
         "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
         "volume":{"alias":"file"}
        },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,efitype=<2m|4m>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,ms-cert=<2011|2023>] [,pre-enrolled-keys=<1|0>] [,size=<disk-size>]"},
       "force":{"description":"Overwrite an existing VM when restoring.","optional":1,"requires":"archive","type":"boolean"},
       "ide[n]":{"description":"IDE disk or CD-ROM drive (n is 0 to 3); STORAGE:SIZE in GiB allocates a new volume.","format":{
         "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
         "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
         "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
         "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
         "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
         "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
         "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
         "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
         "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
         "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
         "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
         "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
         "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
         "volume":{"alias":"file"}
        },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
       "ipconfig[n]":{"description":"Cloud-init addresses and gateways of the matching network device, for example ip=dhcp or ip=10.0.0.5/24,gw=10.0.0.1.","format":"pve-qm-ipconfig","optional":1,"type":"string"},
       "kvm":{"default":1,"description":"Use hardware virtualization.","optional":1,"type":"boolean"},
       "live-restore":{"description":"Start the restored machine at once and copy its data in the background.","optional":1,"type":"boolean"},
       "lock":{"description":"Configuration lock of the VM; setting it locks, deleting it unlocks.","enum":["backup","clone","create","migrate","rollback","snapshot","snapshot-delete","suspending","suspended"],"optional":1,"type":"string"},
       "machine":{"description":"QEMU machine type and its options.","format":{
         "aw-bits":{"description":"Address width of the virtual IOMMU in bits.","maximum":64,"minimum":32,"optional":1,"type":"number"},
         "enable-s3":{"description":"Offer the S3 (suspend to RAM) power state.","optional":1,"type":"boolean"},
         "enable-s4":{"description":"Offer the S4 (suspend to disk) power state.","optional":1,"type":"boolean"},
         "type":{"default_key":1,"description":"QEMU machine type, such as q35 or pc-i440fx-9.2.","maxLength":40,"optional":1,"pattern":"(pc|pc(-i440fx)?-\\d+(\\.\\d+)+(\\+pve\\d+)?(\\.pxe)?|q35|pc-q35-\\d+(\\.\\d+)+(\\+pve\\d+)?(\\.pxe)?|virt(?:-\\d+(\\.\\d+)+)?(\\+pve\\d+)?)","type":"string"},
         "viommu":{"description":"Virtual IOMMU to emulate; intel needs q35.","enum":["intel","virtio"],"optional":1,"type":"string"}
        },"optional":1,"type":"string","typetext":"[[type=]<string>] [,aw-bits=<number>] [,enable-s3=<1|0>] [,enable-s4=<1|0>] [,viommu=<intel|virtio>]"},
       "memory":{"description":"Memory of the VM in MiB.","format":{
         "current":{"default":512,"default_key":1,"description":"Memory of the VM in MiB, the upper bound when ballooning.","minimum":16,"type":"integer"}
        },"optional":1,"type":"string","typetext":"[current=]<integer>"},
       "name":{"description":"Display name of the VM.","format":"dns-name","optional":1,"type":"string"},
       "nameserver":{"description":"DNS servers cloud-init configures.","format":"address-list","optional":1,"type":"string"},
       "net[n]":{"description":"Network device of the VM.","format":{
         "bridge":{"description":"Host bridge to connect the card to.","format":"pve-bridge-id","optional":1,"type":"string"},
         "e1000":{"alias":"macaddr","keyAlias":"model"},
         "e1000-82540em":{"alias":"macaddr","keyAlias":"model"},
         "e1000-82544gc":{"alias":"macaddr","keyAlias":"model"},
         "e1000-82545em":{"alias":"macaddr","keyAlias":"model"},
         "e1000e":{"alias":"macaddr","keyAlias":"model"},
         "firewall":{"description":"Filter the card's traffic with the guest firewall.","optional":1,"type":"boolean"},
         "i82551":{"alias":"macaddr","keyAlias":"model"},
         "i82557b":{"alias":"macaddr","keyAlias":"model"},
         "i82559er":{"alias":"macaddr","keyAlias":"model"},
         "link_down":{"description":"Start with the link disconnected.","optional":1,"type":"boolean"},
         "macaddr":{"description":"MAC address of the card; generated when absent.","format":"mac-addr","optional":1,"type":"string"},
         "model":{"default_key":1,"description":"Emulated network card; virtio performs best.","enum":["e1000","e1000-82540em","e1000-82544gc","e1000-82545em","e1000e","i82551","i82557b","i82559er","ne2k_isa","ne2k_pci","pcnet","rtl8139","virtio","vmxnet3"],"type":"string"},
         "mtu":{"description":"MTU of a VirtIO card; 1 takes the bridge's MTU.","maximum":65520,"minimum":1,"optional":1,"type":"integer"},
         "ne2k_isa":{"alias":"macaddr","keyAlias":"model"},
         "ne2k_pci":{"alias":"macaddr","keyAlias":"model"},
         "pcnet":{"alias":"macaddr","keyAlias":"model"},
         "queues":{"description":"Number of packet queues of the card.","maximum":64,"minimum":0,"optional":1,"type":"integer"},
         "rate":{"description":"Bandwidth limit in MB/s.","minimum":0,"optional":1,"type":"number"},
         "rtl8139":{"alias":"macaddr","keyAlias":"model"},
         "tag":{"description":"VLAN tag added to the card's traffic.","maximum":4094,"minimum":1,"optional":1,"type":"integer"},
         "trunks":{"description":"VLANs passed through, separated by semicolons.","optional":1,"pattern":"(?^:\\d+(?:-\\d+)?(?:;\\d+(?:-\\d+)?)*)","type":"string"},
         "virtio":{"alias":"macaddr","keyAlias":"model"},
         "vmxnet3":{"alias":"macaddr","keyAlias":"model"}
        },"optional":1,"type":"string","typetext":"[model=]<enum> [,bridge=<pve-bridge-id>] [,firewall=<1|0>] [,link_down=<1|0>] [,macaddr=<mac-addr>] [,mtu=<integer>] [,queues=<integer>] [,rate=<number>] [,tag=<integer>] [,trunks=<string>] [,<model>=<macaddr>]"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
       "numa":{"default":0,"description":"Expose a NUMA topology to the guest.","optional":1,"type":"boolean"},
       "onboot":{"default":0,"description":"Start the VM when its node boots.","optional":1,"type":"boolean"},
       "ostype":{"default":"other","description":"Guest operating system, so that QEMU can tune for it.","enum":["other","wxp","w2k","w2k3","w2k8","wvista","win7","win8","win10","win11","l24","l26","solaris"],"optional":1,"type":"string"},
       "pool":{"description":"Pool to add the new VM to.","format":"pve-poolid","optional":1,"type":"string"},
       "protection":{"default":0,"description":"Blocks destroying the VM and removing its disks while set.","optional":1,"type":"boolean"},
       "sata[n]":{"description":"SATA disk or CD-ROM drive (n is 0 to 5); STORAGE:SIZE in GiB allocates a new volume.","format":{
         "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
         "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
         "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
         "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
         "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
         "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
         "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
         "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
         "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
         "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
         "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
         "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
         "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
         "volume":{"alias":"file"}
        },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
       "scsi[n]":{"description":"SCSI disk or CD-ROM drive (n is 0 to 30); STORAGE:SIZE in GiB allocates a new volume.","format":{
         "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
         "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
         "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
         "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
         "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
         "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
         "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
         "iothread":{"description":"Give the drive its own I/O thread.","optional":1,"type":"boolean"},
         "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
         "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
         "ro":{"description":"Attach the drive read-only.","optional":1,"type":"boolean"},
         "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
         "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
         "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
         "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
         "volume":{"alias":"file"}
        },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,iothread=<1|0>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,ro=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
       "scsihw":{"default":"lsi","description":"Model of the SCSI controller.","enum":["lsi","lsi53c810","virtio-scsi-pci","virtio-scsi-single","megasas","pvscsi"],"optional":1,"type":"string"},
       "searchdomain":{"description":"DNS search domains cloud-init configures.","optional":1,"type":"string"},
       "serial[n]":{"description":"Serial port of the guest (n is 0 to 3): a host device path or socket.","optional":1,"pattern":"(/dev/.+|socket)","type":"string"},
       "smbios1":{"description":"SMBIOS type 1 fields such as the UUID.","format":"pve-qm-smbios1","maxLength":512,"optional":1,"type":"string"},
       "sockets":{"default":1,"description":"Number of CPU sockets.","minimum":1,"optional":1,"type":"integer"},
       "sshkeys":{"description":"Public SSH keys cloud-init installs, one per line, URL-encoded.","format":"urlencoded","optional":1,"type":"string"},
       "start":{"default":0,"description":"Start the VM when creation has finished.","optional":1,"type":"boolean"},
       "startup":{"description":"Boot order and delays when the node starts guests, for example order=1,up=30.","format":"pve-startup-order","optional":1,"type":"string"},
       "storage":{"description":"Storage for new disks when restoring.","format":"pve-storage-id","optional":1,"type":"string"},
       "tags":{"description":"Tags of the VM, separated by semicolons.","format":"pve-tag-list","optional":1,"type":"string"},
       "template":{"default":0,"description":"Marks the guest as a template.","optional":1,"type":"boolean"},
       "tpmstate0":{"description":"Disk holding the state of a virtual TPM; STORAGE:SIZE allocates a new one.","format":{
         "file":{"default_key":1,"description":"Volume ID of the TPM state disk; STORAGE:1 allocates a new one.","format":"pve-volume-id-or-qm-path","type":"string"},
         "format":{"description":"Image format of the volume.","enum":["raw","qcow2","vmdk"],"optional":1,"type":"string"},
         "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
         "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
         "version":{"default":"v1.2","description":"TPM version to emulate; it cannot be changed later.","enum":["v1.2","v2.0"],"optional":1,"type":"string"},
         "volume":{"alias":"file"}
        },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,format=<raw|qcow2|vmdk>] [,import-from=<pve-volume-id-or-absolute-path>] [,size=<disk-size>] [,version=<v1.2|v2.0>]"},
       "unique":{"description":"Give restored network devices new MAC addresses.","optional":1,"requires":"archive","type":"boolean"},
       "unused[n]":{"description":"Volume that belongs to the guest but is not attached; kept by the system.","format":{
         "file":{"default_key":1,"description":"Volume ID of the detached disk.","format":"pve-volume-id","type":"string"},
         "volume":{"alias":"file"}
        },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id>"},
       "vga":{"description":"Display adapter of the virtual machine.","format":{
         "clipboard":{"description":"Clipboard to offer to the display.","enum":["vnc"],"optional":1,"type":"string"},
         "memory":{"description":"Video memory in MiB.","maximum":512,"minimum":4,"optional":1,"type":"integer"},
         "type":{"default":"std","default_key":1,"description":"Kind of display adapter.","enum":["cirrus","qxl","qxl2","qxl3","qxl4","none","serial0","serial1","serial2","serial3","std","virtio","virtio-gl","vmware"],"optional":1,"type":"string"}
        },"optional":1,"type":"string","typetext":"[[type=]<enum>] [,clipboard=<vnc>] [,memory=<integer>]"},
       "virtio[n]":{"description":"VirtIO block disk (n is 0 to 15); STORAGE:SIZE in GiB allocates a new volume.","format":{
         "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
         "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
         "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
         "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
         "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
         "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
         "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
         "iothread":{"description":"Give the drive its own I/O thread.","optional":1,"type":"boolean"},
         "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
         "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
         "ro":{"description":"Attach the drive read-only.","optional":1,"type":"boolean"},
         "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
         "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
         "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
         "volume":{"alias":"file"}
        },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,iothread=<1|0>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,ro=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>]"},
       "vmgenid":{"description":"VM generation ID: 1 generates a new one, 0 removes it.","optional":1,"pattern":"(?:[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}|[01])","type":"string"},
       "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
     }},
     "permissions":{"description":"Needs VM.Allocate on the new guest or its pool; restoring over an existing guest can use VM.Backup instead, and storage access is checked too.","user":"all"},
     "protected":1,
     "proxyto":"node",
     "returns":{"type":"string"}
    }
   },
   "children":[
   {
    "path":"/nodes/{node}/qemu/{vmid}",
    "text":"{vmid}",
    "leaf":0,
    "info":{
     "DELETE":{
      "allowtoken":1,
      "description":"Destroy a stopped virtual machine together with its disks, as a task.",
      "method":"DELETE",
      "name":"destroy_vm",
      "parameters":{"additionalProperties":0,"properties":{
        "destroy-unreferenced-disks":{"default":0,"description":"Also destroy disks on any enabled storage that carry this VM ID but are not in the configuration.","optional":1,"type":"boolean"},
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "purge":{"description":"Also drop the VM from backup jobs, replication, HA and ACLs.","optional":1,"type":"boolean"},
        "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
        "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
      }},
      "permissions":{"check":["perm","/vms/{vmid}",["VM.Allocate"]]},
      "protected":1,
      "proxyto":"node",
      "returns":{"type":"string"}
     },
     "GET":{
      "allowtoken":1,
      "description":"List the API subdirectories of a virtual machine.",
      "method":"GET",
      "name":"vmdiridx",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
      }},
      "permissions":{"user":"all"},
      "proxyto":"node",
      "returns":{"items":{"properties":{"subdir":{"type":"string"}},"type":"object"},"links":[{"href":"{subdir}","rel":"child"}],"type":"array"}
     }
    },
    "children":[
    {
     "path":"/nodes/{node}/qemu/{vmid}/agent",
     "text":"agent",
     "leaf":0,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"List the guest agent commands of a virtual machine.",
       "method":"GET",
       "name":"index",
       "parameters":{"additionalProperties":1,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"user":"all"},
       "proxyto":"node",
       "returns":{"description":"One entry per guest agent command.","items":{"properties":{},"type":"object"},"links":[{"href":"{name}","rel":"child"}],"type":"array"}
      }
     },
     "children":[
     {
      "path":"/nodes/{node}/qemu/{vmid}/agent/exec",
      "text":"exec",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Start a command in a running virtual machine through its guest agent and answer its process ID.",
        "method":"POST",
        "name":"exec",
        "parameters":{"additionalProperties":0,"properties":{
          "command":{"description":"The program to run and its arguments, one item each.","items":{"description":"The program or one of its arguments.","type":"string"},"type":"array"},
          "input-data":{"description":"Text the command reads on its standard input.","maxLength":65536,"optional":1,"type":"string"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.GuestAgent.Unrestricted"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"properties":{"pid":{"description":"Process ID of the command inside the guest.","type":"integer"}},"type":"object"}
       }
      }
     },
     {
      "path":"/nodes/{node}/qemu/{vmid}/agent/exec-status",
      "text":"exec-status",
      "leaf":1,
      "info":{
       "GET":{
        "allowtoken":1,
        "description":"Show whether a command started through the guest agent has ended, with its exit code and output once it has.",
        "method":"GET",
        "name":"exec-status",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "pid":{"description":"Process ID that the exec call answered.","type":"integer"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.GuestAgent.Unrestricted"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"properties":{
          "err-data":{"description":"Standard error of the command, once it has ended.","optional":1,"type":"string"},
          "err-truncated":{"description":"Set when the agent kept only the start of standard error.","optional":1,"type":"boolean"},
          "exitcode":{"description":"Exit code of a command that ended on its own.","optional":1,"type":"integer"},
          "exited":{"description":"Whether the command has ended.","type":"boolean"},
          "out-data":{"description":"Standard output of the command, once it has ended.","optional":1,"type":"string"},
          "out-truncated":{"description":"Set when the agent kept only the start of standard output.","optional":1,"type":"boolean"},
          "signal":{"description":"Signal that ended the command, when one did.","optional":1,"type":"integer"}
         },"type":"object"}
       }
      }
     }
     ]
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/clone",
     "text":"clone",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Copy a virtual machine or template to a new VM ID, as a task.",
       "method":"POST",
       "name":"clone_vm",
       "parameters":{"additionalProperties":0,"properties":{
         "bwlimit":{"description":"I/O bandwidth limit for this operation in KiB/s.","minimum":"0","optional":1,"type":"integer"},
         "description":{"description":"Notes for the copy.","optional":1,"type":"string"},
         "format":{"description":"Disk format on file-based storage; full copies only.","enum":["raw","qcow2","vmdk"],"optional":1,"type":"string"},
         "full":{"description":"Copy every disk fully rather than linking to the template's disks.","optional":1,"type":"boolean"},
         "name":{"description":"Display name of the copy.","format":"dns-name","optional":1,"type":"string"},
         "newid":{"description":"VM ID for the copy.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "pool":{"description":"Pool to add the copy to.","format":"pve-poolid","optional":1,"type":"string"},
         "snapname":{"description":"Copy the state saved in this snapshot.","format":"pve-configid","maxLength":40,"optional":1,"type":"string"},
         "storage":{"description":"Storage for a full copy's disks.","format":"pve-storage-id","optional":1,"type":"string"},
         "target":{"description":"Node for the copy; needs the source on shared storage.","format":"pve-node","optional":1,"type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["and",["perm","/vms/{vmid}",["VM.Clone"]],["or",["perm","/vms/{newid}",["VM.Allocate"]],["perm","/pool/{pool}",["VM.Allocate"],"require_param","pool"]]],"description":"Needs VM.Clone on the source, VM.Allocate on the new ID or its pool, and space on the target storage."},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/config",
     "text":"config",
     "leaf":1,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"Read a virtual machine's configuration, pending changes included unless current is set.",
       "method":"GET",
       "name":"vm_config",
       "parameters":{"additionalProperties":0,"properties":{
         "current":{"default":0,"description":"Read the configuration in effect, leaving out pending changes.","optional":1,"type":"boolean"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "snapshot":{"description":"Read the configuration saved with this snapshot instead.","format":"pve-configid","maxLength":40,"optional":1,"type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Audit"]]},
       "proxyto":"node",
       "returns":{"properties":{
         "acpi":{"default":1,"description":"Give the guest ACPI.","optional":1,"type":"boolean"},
         "agent":{"description":"Settings of the QEMU guest agent.","optional":1,"type":"string"},
         "balloon":{"description":"Memory target for the balloon driver in MiB; 0 turns ballooning off.","minimum":0,"optional":1,"type":"integer"},
         "bios":{"default":"seabios","description":"Firmware of the virtual machine.","enum":["seabios","ovmf"],"optional":1,"type":"string"},
         "boot":{"description":"Boot order of the virtual machine's devices.","format":"pve-qm-boot","optional":1,"type":"string"},
         "cipassword":{"description":"Password cloud-init sets for the user; SSH keys are preferable.","optional":1,"type":"string"},
         "ciuser":{"description":"User cloud-init configures instead of the image's default one.","optional":1,"type":"string"},
         "cores":{"default":1,"description":"Number of CPU cores per socket.","minimum":1,"optional":1,"type":"integer"},
         "cpu":{"description":"CPU model the guest sees, with optional flags.","format":"pve-vm-cpu-conf","optional":1,"type":"string"},
         "cpulimit":{"default":0,"description":"Upper bound of CPU time, in whole CPUs; 0 means no limit.","maximum":128,"minimum":0,"optional":1,"type":"number"},
         "cpuunits":{"description":"Relative CPU weight of the VM against other guests.","maximum":262144,"minimum":1,"optional":1,"type":"integer"},
         "description":{"description":"Free-text notes about the VM, kept in its configuration.","optional":1,"type":"string"},
         "digest":{"description":"SHA1 digest of the configuration, to detect concurrent changes.","type":"string"},
         "efidisk0":{"description":"Disk for the UEFI variables; STORAGE:SIZE allocates a new one.","optional":1,"type":"string"},
         "ide[n]":{"description":"IDE disk or CD-ROM drive (n is 0 to 3); STORAGE:SIZE in GiB allocates a new volume.","optional":1,"type":"string"},
         "ipconfig[n]":{"description":"Cloud-init addresses and gateways of the matching network device, for example ip=dhcp or ip=10.0.0.5/24,gw=10.0.0.1.","format":"pve-qm-ipconfig","optional":1,"type":"string"},
         "kvm":{"default":1,"description":"Use hardware virtualization.","optional":1,"type":"boolean"},
         "lock":{"description":"Configuration lock of the VM; setting it locks, deleting it unlocks.","enum":["backup","clone","create","migrate","rollback","snapshot","snapshot-delete","suspending","suspended"],"optional":1,"type":"string"},
         "machine":{"description":"QEMU machine type and its options.","optional":1,"type":"string"},
         "memory":{"description":"Memory of the VM in MiB.","optional":1,"type":"string"},
         "meta":{"description":"Read-only facts about the VM, such as when and with which QEMU it was created.","optional":1,"type":"string"},
         "name":{"description":"Display name of the VM.","format":"dns-name","optional":1,"type":"string"},
         "nameserver":{"description":"DNS servers cloud-init configures.","format":"address-list","optional":1,"type":"string"},
         "net[n]":{"description":"Network device of the VM.","optional":1,"type":"string"},
         "numa":{"default":0,"description":"Expose a NUMA topology to the guest.","optional":1,"type":"boolean"},
         "onboot":{"default":0,"description":"Start the VM when its node boots.","optional":1,"type":"boolean"},
         "ostype":{"default":"other","description":"Guest operating system, so that QEMU can tune for it.","enum":["other","wxp","w2k","w2k3","w2k8","wvista","win7","win8","win10","win11","l24","l26","solaris"],"optional":1,"type":"string"},
         "parent":{"description":"Snapshot the current state is based on.","format":"pve-configid","optional":1,"type":"string"},
         "protection":{"default":0,"description":"Blocks destroying the VM and removing its disks while set.","optional":1,"type":"boolean"},
         "runningcpu":{"description":"QEMU -cpu argument the VM ran with when a snapshot was taken.","optional":1,"pattern":"(?^:^((?>[+-]?[\\w\\-\\._=]+,?)+)$)","type":"string"},
         "runningmachine":{"description":"Machine type the VM ran with when a snapshot was taken.","optional":1,"type":"string"},
         "sata[n]":{"description":"SATA disk or CD-ROM drive (n is 0 to 5); STORAGE:SIZE in GiB allocates a new volume.","optional":1,"type":"string"},
         "scsi[n]":{"description":"SCSI disk or CD-ROM drive (n is 0 to 30); STORAGE:SIZE in GiB allocates a new volume.","optional":1,"type":"string"},
         "scsihw":{"default":"lsi","description":"Model of the SCSI controller.","enum":["lsi","lsi53c810","virtio-scsi-pci","virtio-scsi-single","megasas","pvscsi"],"optional":1,"type":"string"},
         "searchdomain":{"description":"DNS search domains cloud-init configures.","optional":1,"type":"string"},
         "serial[n]":{"description":"Serial port of the guest (n is 0 to 3): a host device path or socket.","optional":1,"pattern":"(/dev/.+|socket)","type":"string"},
         "smbios1":{"description":"SMBIOS type 1 fields such as the UUID.","format":"pve-qm-smbios1","optional":1,"type":"string"},
         "snaptime":{"description":"When a snapshot was taken, in UNIX seconds.","minimum":0,"optional":1,"type":"integer"},
         "sockets":{"default":1,"description":"Number of CPU sockets.","minimum":1,"optional":1,"type":"integer"},
         "sshkeys":{"description":"Public SSH keys cloud-init installs, one per line, URL-encoded.","format":"urlencoded","optional":1,"type":"string"},
         "startup":{"description":"Boot order and delays when the node starts guests, for example order=1,up=30.","format":"pve-startup-order","optional":1,"type":"string"},
         "tags":{"description":"Tags of the VM, separated by semicolons.","format":"pve-tag-list","optional":1,"type":"string"},
         "template":{"default":0,"description":"Marks the guest as a template.","optional":1,"type":"boolean"},
         "tpmstate0":{"description":"Disk holding the state of a virtual TPM; STORAGE:SIZE allocates a new one.","optional":1,"type":"string"},
         "unused[n]":{"description":"Volume that belongs to the guest but is not attached; kept by the system.","optional":1,"type":"string"},
         "vga":{"description":"Display adapter of the virtual machine.","optional":1,"type":"string"},
         "virtio[n]":{"description":"VirtIO block disk (n is 0 to 15); STORAGE:SIZE in GiB allocates a new volume.","optional":1,"type":"string"},
         "vmgenid":{"description":"VM generation ID: 1 generates a new one, 0 removes it.","optional":1,"pattern":"(?:[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}|[01])","type":"string"},
         "vmstate":{"description":"Volume holding the memory saved with a snapshot.","format":"pve-volume-id","optional":1,"type":"string"}
        },"type":"object"}
      },
      "POST":{
       "allowtoken":1,
       "description":"Change virtual machine options in a background task.",
       "method":"POST",
       "name":"update_vm_async",
       "parameters":{"additionalProperties":0,"properties":{
         "acpi":{"default":1,"description":"Give the guest ACPI.","optional":1,"type":"boolean"},
         "agent":{"description":"Settings of the QEMU guest agent.","format":{
           "enabled":{"default":0,"default_key":1,"description":"Talk to a QEMU guest agent in the VM.","type":"boolean"},
           "freeze-fs-on-backup":{"default":1,"description":"Freeze guest file systems during backups.","optional":1,"type":"boolean"},
           "fstrim_cloned_disks":{"default":0,"description":"Trim file systems after a disk is moved or the VM migrated.","optional":1,"type":"boolean"},
           "type":{"default":"virtio","description":"Channel used to reach the agent.","enum":["virtio","isa"],"optional":1,"type":"string"}
          },"optional":1,"type":"string","typetext":"[enabled=]<1|0> [,freeze-fs-on-backup=<1|0>] [,fstrim_cloned_disks=<1|0>] [,type=<virtio|isa>]"},
         "background_delay":{"description":"Wait up to this many seconds for the task and return null if it finished by then.","maximum":30,"minimum":1,"optional":1,"type":"integer"},
         "balloon":{"description":"Memory target for the balloon driver in MiB; 0 turns ballooning off.","minimum":0,"optional":1,"type":"integer"},
         "bios":{"default":"seabios","description":"Firmware of the virtual machine.","enum":["seabios","ovmf"],"optional":1,"type":"string"},
         "boot":{"description":"Boot order of the virtual machine's devices.","format":"pve-qm-boot","optional":1,"type":"string"},
         "cipassword":{"description":"Password cloud-init sets for the user; SSH keys are preferable.","optional":1,"type":"string"},
         "ciuser":{"description":"User cloud-init configures instead of the image's default one.","optional":1,"type":"string"},
         "cores":{"default":1,"description":"Number of CPU cores per socket.","minimum":1,"optional":1,"type":"integer"},
         "cpu":{"description":"CPU model the guest sees, with optional flags.","format":"pve-vm-cpu-conf","optional":1,"type":"string"},
         "cpulimit":{"default":0,"description":"Upper bound of CPU time, in whole CPUs; 0 means no limit.","maximum":128,"minimum":0,"optional":1,"type":"number"},
         "cpuunits":{"description":"Relative CPU weight of the VM against other guests.","maximum":262144,"minimum":1,"optional":1,"type":"integer"},
         "delete":{"description":"Configuration keys to remove, separated by commas.","format":"pve-configid-list","optional":1,"type":"string"},
         "description":{"description":"Free-text notes about the VM, kept in its configuration.","maxLength":8192,"optional":1,"type":"string"},
         "digest":{"description":"Refuse the change unless the configuration still has this SHA1 digest.","maxLength":40,"optional":1,"type":"string"},
         "efidisk0":{"description":"Disk for the UEFI variables; STORAGE:SIZE allocates a new one.","format":{
           "efitype":{"default":"2m","description":"Size of the UEFI variable store; 4m is needed for Secure Boot.","enum":["2m","4m"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID of the UEFI variable disk; STORAGE:1 allocates a new one.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "ms-cert":{"default":"2011","description":"Newest Microsoft UEFI certificate enrolled, for information.","enum":["2011","2023"],"optional":1,"type":"string"},
           "pre-enrolled-keys":{"default":0,"description":"Start from a variable store with distribution and Microsoft keys enrolled, enabling Secure Boot.","optional":1,"type":"boolean"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,efitype=<2m|4m>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,ms-cert=<2011|2023>] [,pre-enrolled-keys=<1|0>] [,size=<disk-size>]"},
         "force":{"description":"Destroy a removed disk instead of keeping it as unusedN.","optional":1,"requires":"delete","type":"boolean"},
         "ide[n]":{"description":"IDE disk or CD-ROM drive (n is 0 to 3); STORAGE:SIZE in GiB allocates a new volume.","format":{
           "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
           "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
           "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
           "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
           "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
           "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
           "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
         "ipconfig[n]":{"description":"Cloud-init addresses and gateways of the matching network device, for example ip=dhcp or ip=10.0.0.5/24,gw=10.0.0.1.","format":"pve-qm-ipconfig","optional":1,"type":"string"},
         "kvm":{"default":1,"description":"Use hardware virtualization.","optional":1,"type":"boolean"},
         "lock":{"description":"Configuration lock of the VM; setting it locks, deleting it unlocks.","enum":["backup","clone","create","migrate","rollback","snapshot","snapshot-delete","suspending","suspended"],"optional":1,"type":"string"},
         "machine":{"description":"QEMU machine type and its options.","format":{
           "aw-bits":{"description":"Address width of the virtual IOMMU in bits.","maximum":64,"minimum":32,"optional":1,"type":"number"},
           "enable-s3":{"description":"Offer the S3 (suspend to RAM) power state.","optional":1,"type":"boolean"},
           "enable-s4":{"description":"Offer the S4 (suspend to disk) power state.","optional":1,"type":"boolean"},
           "type":{"default_key":1,"description":"QEMU machine type, such as q35 or pc-i440fx-9.2.","maxLength":40,"optional":1,"pattern":"(pc|pc(-i440fx)?-\\d+(\\.\\d+)+(\\+pve\\d+)?(\\.pxe)?|q35|pc-q35-\\d+(\\.\\d+)+(\\+pve\\d+)?(\\.pxe)?|virt(?:-\\d+(\\.\\d+)+)?(\\+pve\\d+)?)","type":"string"},
           "viommu":{"description":"Virtual IOMMU to emulate; intel needs q35.","enum":["intel","virtio"],"optional":1,"type":"string"}
          },"optional":1,"type":"string","typetext":"[[type=]<string>] [,aw-bits=<number>] [,enable-s3=<1|0>] [,enable-s4=<1|0>] [,viommu=<intel|virtio>]"},
         "memory":{"description":"Memory of the VM in MiB.","format":{
           "current":{"default":512,"default_key":1,"description":"Memory of the VM in MiB, the upper bound when ballooning.","minimum":16,"type":"integer"}
          },"optional":1,"type":"string","typetext":"[current=]<integer>"},
         "name":{"description":"Display name of the VM.","format":"dns-name","optional":1,"type":"string"},
         "nameserver":{"description":"DNS servers cloud-init configures.","format":"address-list","optional":1,"type":"string"},
         "net[n]":{"description":"Network device of the VM.","format":{
           "bridge":{"description":"Host bridge to connect the card to.","format":"pve-bridge-id","optional":1,"type":"string"},
           "e1000":{"alias":"macaddr","keyAlias":"model"},
           "e1000-82540em":{"alias":"macaddr","keyAlias":"model"},
           "e1000-82544gc":{"alias":"macaddr","keyAlias":"model"},
           "e1000-82545em":{"alias":"macaddr","keyAlias":"model"},
           "e1000e":{"alias":"macaddr","keyAlias":"model"},
           "firewall":{"description":"Filter the card's traffic with the guest firewall.","optional":1,"type":"boolean"},
           "i82551":{"alias":"macaddr","keyAlias":"model"},
           "i82557b":{"alias":"macaddr","keyAlias":"model"},
           "i82559er":{"alias":"macaddr","keyAlias":"model"},
           "link_down":{"description":"Start with the link disconnected.","optional":1,"type":"boolean"},
           "macaddr":{"description":"MAC address of the card; generated when absent.","format":"mac-addr","optional":1,"type":"string"},
           "model":{"default_key":1,"description":"Emulated network card; virtio performs best.","enum":["e1000","e1000-82540em","e1000-82544gc","e1000-82545em","e1000e","i82551","i82557b","i82559er","ne2k_isa","ne2k_pci","pcnet","rtl8139","virtio","vmxnet3"],"type":"string"},
           "mtu":{"description":"MTU of a VirtIO card; 1 takes the bridge's MTU.","maximum":65520,"minimum":1,"optional":1,"type":"integer"},
           "ne2k_isa":{"alias":"macaddr","keyAlias":"model"},
           "ne2k_pci":{"alias":"macaddr","keyAlias":"model"},
           "pcnet":{"alias":"macaddr","keyAlias":"model"},
           "queues":{"description":"Number of packet queues of the card.","maximum":64,"minimum":0,"optional":1,"type":"integer"},
           "rate":{"description":"Bandwidth limit in MB/s.","minimum":0,"optional":1,"type":"number"},
           "rtl8139":{"alias":"macaddr","keyAlias":"model"},
           "tag":{"description":"VLAN tag added to the card's traffic.","maximum":4094,"minimum":1,"optional":1,"type":"integer"},
           "trunks":{"description":"VLANs passed through, separated by semicolons.","optional":1,"pattern":"(?^:\\d+(?:-\\d+)?(?:;\\d+(?:-\\d+)?)*)","type":"string"},
           "virtio":{"alias":"macaddr","keyAlias":"model"},
           "vmxnet3":{"alias":"macaddr","keyAlias":"model"}
          },"optional":1,"type":"string","typetext":"[model=]<enum> [,bridge=<pve-bridge-id>] [,firewall=<1|0>] [,link_down=<1|0>] [,macaddr=<mac-addr>] [,mtu=<integer>] [,queues=<integer>] [,rate=<number>] [,tag=<integer>] [,trunks=<string>] [,<model>=<macaddr>]"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "numa":{"default":0,"description":"Expose a NUMA topology to the guest.","optional":1,"type":"boolean"},
         "onboot":{"default":0,"description":"Start the VM when its node boots.","optional":1,"type":"boolean"},
         "ostype":{"default":"other","description":"Guest operating system, so that QEMU can tune for it.","enum":["other","wxp","w2k","w2k3","w2k8","wvista","win7","win8","win10","win11","l24","l26","solaris"],"optional":1,"type":"string"},
         "protection":{"default":0,"description":"Blocks destroying the VM and removing its disks while set.","optional":1,"type":"boolean"},
         "revert":{"description":"Pending changes to discard, by key.","format":"pve-configid-list","optional":1,"type":"string"},
         "sata[n]":{"description":"SATA disk or CD-ROM drive (n is 0 to 5); STORAGE:SIZE in GiB allocates a new volume.","format":{
           "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
           "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
           "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
           "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
           "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
           "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
           "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
         "scsi[n]":{"description":"SCSI disk or CD-ROM drive (n is 0 to 30); STORAGE:SIZE in GiB allocates a new volume.","format":{
           "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
           "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
           "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
           "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "iothread":{"description":"Give the drive its own I/O thread.","optional":1,"type":"boolean"},
           "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
           "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
           "ro":{"description":"Attach the drive read-only.","optional":1,"type":"boolean"},
           "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
           "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,iothread=<1|0>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,ro=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
         "scsihw":{"default":"lsi","description":"Model of the SCSI controller.","enum":["lsi","lsi53c810","virtio-scsi-pci","virtio-scsi-single","megasas","pvscsi"],"optional":1,"type":"string"},
         "searchdomain":{"description":"DNS search domains cloud-init configures.","optional":1,"type":"string"},
         "serial[n]":{"description":"Serial port of the guest (n is 0 to 3): a host device path or socket.","optional":1,"pattern":"(/dev/.+|socket)","type":"string"},
         "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
         "smbios1":{"description":"SMBIOS type 1 fields such as the UUID.","format":"pve-qm-smbios1","maxLength":512,"optional":1,"type":"string"},
         "sockets":{"default":1,"description":"Number of CPU sockets.","minimum":1,"optional":1,"type":"integer"},
         "sshkeys":{"description":"Public SSH keys cloud-init installs, one per line, URL-encoded.","format":"urlencoded","optional":1,"type":"string"},
         "startup":{"description":"Boot order and delays when the node starts guests, for example order=1,up=30.","format":"pve-startup-order","optional":1,"type":"string"},
         "tags":{"description":"Tags of the VM, separated by semicolons.","format":"pve-tag-list","optional":1,"type":"string"},
         "template":{"default":0,"description":"Marks the guest as a template.","optional":1,"type":"boolean"},
         "tpmstate0":{"description":"Disk holding the state of a virtual TPM; STORAGE:SIZE allocates a new one.","format":{
           "file":{"default_key":1,"description":"Volume ID of the TPM state disk; STORAGE:1 allocates a new one.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow2","vmdk"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "version":{"default":"v1.2","description":"TPM version to emulate; it cannot be changed later.","enum":["v1.2","v2.0"],"optional":1,"type":"string"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,format=<raw|qcow2|vmdk>] [,import-from=<pve-volume-id-or-absolute-path>] [,size=<disk-size>] [,version=<v1.2|v2.0>]"},
         "unused[n]":{"description":"Volume that belongs to the guest but is not attached; kept by the system.","format":{
           "file":{"default_key":1,"description":"Volume ID of the detached disk.","format":"pve-volume-id","type":"string"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id>"},
         "vga":{"description":"Display adapter of the virtual machine.","format":{
           "clipboard":{"description":"Clipboard to offer to the display.","enum":["vnc"],"optional":1,"type":"string"},
           "memory":{"description":"Video memory in MiB.","maximum":512,"minimum":4,"optional":1,"type":"integer"},
           "type":{"default":"std","default_key":1,"description":"Kind of display adapter.","enum":["cirrus","qxl","qxl2","qxl3","qxl4","none","serial0","serial1","serial2","serial3","std","virtio","virtio-gl","vmware"],"optional":1,"type":"string"}
          },"optional":1,"type":"string","typetext":"[[type=]<enum>] [,clipboard=<vnc>] [,memory=<integer>]"},
         "virtio[n]":{"description":"VirtIO block disk (n is 0 to 15); STORAGE:SIZE in GiB allocates a new volume.","format":{
           "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
           "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
           "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
           "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "iothread":{"description":"Give the drive its own I/O thread.","optional":1,"type":"boolean"},
           "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
           "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
           "ro":{"description":"Attach the drive read-only.","optional":1,"type":"boolean"},
           "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,iothread=<1|0>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,ro=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>]"},
         "vmgenid":{"description":"VM generation ID: 1 generates a new one, 0 removes it.","optional":1,"pattern":"(?:[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}|[01])","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Config.Disk","VM.Config.CDROM","VM.Config.CPU","VM.Config.Memory","VM.Config.Network","VM.Config.HWType","VM.Config.Options","VM.Config.Cloudinit"],"any",1]},
       "protected":1,
       "proxyto":"node",
       "returns":{"optional":1,"type":"string"}
      },
      "PUT":{
       "allowtoken":1,
       "description":"Change virtual machine options and wait for the change to be written.",
       "method":"PUT",
       "name":"update_vm",
       "parameters":{"additionalProperties":0,"properties":{
         "acpi":{"default":1,"description":"Give the guest ACPI.","optional":1,"type":"boolean"},
         "agent":{"description":"Settings of the QEMU guest agent.","format":{
           "enabled":{"default":0,"default_key":1,"description":"Talk to a QEMU guest agent in the VM.","type":"boolean"},
           "freeze-fs-on-backup":{"default":1,"description":"Freeze guest file systems during backups.","optional":1,"type":"boolean"},
           "fstrim_cloned_disks":{"default":0,"description":"Trim file systems after a disk is moved or the VM migrated.","optional":1,"type":"boolean"},
           "type":{"default":"virtio","description":"Channel used to reach the agent.","enum":["virtio","isa"],"optional":1,"type":"string"}
          },"optional":1,"type":"string","typetext":"[enabled=]<1|0> [,freeze-fs-on-backup=<1|0>] [,fstrim_cloned_disks=<1|0>] [,type=<virtio|isa>]"},
         "balloon":{"description":"Memory target for the balloon driver in MiB; 0 turns ballooning off.","minimum":0,"optional":1,"type":"integer"},
         "bios":{"default":"seabios","description":"Firmware of the virtual machine.","enum":["seabios","ovmf"],"optional":1,"type":"string"},
         "boot":{"description":"Boot order of the virtual machine's devices.","format":"pve-qm-boot","optional":1,"type":"string"},
         "cipassword":{"description":"Password cloud-init sets for the user; SSH keys are preferable.","optional":1,"type":"string"},
         "ciuser":{"description":"User cloud-init configures instead of the image's default one.","optional":1,"type":"string"},
         "cores":{"default":1,"description":"Number of CPU cores per socket.","minimum":1,"optional":1,"type":"integer"},
         "cpu":{"description":"CPU model the guest sees, with optional flags.","format":"pve-vm-cpu-conf","optional":1,"type":"string"},
         "cpulimit":{"default":0,"description":"Upper bound of CPU time, in whole CPUs; 0 means no limit.","maximum":128,"minimum":0,"optional":1,"type":"number"},
         "cpuunits":{"description":"Relative CPU weight of the VM against other guests.","maximum":262144,"minimum":1,"optional":1,"type":"integer"},
         "delete":{"description":"Configuration keys to remove, separated by commas.","format":"pve-configid-list","optional":1,"type":"string"},
         "description":{"description":"Free-text notes about the VM, kept in its configuration.","maxLength":8192,"optional":1,"type":"string"},
         "digest":{"description":"Refuse the change unless the configuration still has this SHA1 digest.","maxLength":40,"optional":1,"type":"string"},
         "efidisk0":{"description":"Disk for the UEFI variables; STORAGE:SIZE allocates a new one.","format":{
           "efitype":{"default":"2m","description":"Size of the UEFI variable store; 4m is needed for Secure Boot.","enum":["2m","4m"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID of the UEFI variable disk; STORAGE:1 allocates a new one.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "ms-cert":{"default":"2011","description":"Newest Microsoft UEFI certificate enrolled, for information.","enum":["2011","2023"],"optional":1,"type":"string"},
           "pre-enrolled-keys":{"default":0,"description":"Start from a variable store with distribution and Microsoft keys enrolled, enabling Secure Boot.","optional":1,"type":"boolean"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,efitype=<2m|4m>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,ms-cert=<2011|2023>] [,pre-enrolled-keys=<1|0>] [,size=<disk-size>]"},
         "force":{"description":"Destroy a removed disk instead of keeping it as unusedN.","optional":1,"requires":"delete","type":"boolean"},
         "ide[n]":{"description":"IDE disk or CD-ROM drive (n is 0 to 3); STORAGE:SIZE in GiB allocates a new volume.","format":{
           "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
           "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
           "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
           "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
           "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
           "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
           "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
         "ipconfig[n]":{"description":"Cloud-init addresses and gateways of the matching network device, for example ip=dhcp or ip=10.0.0.5/24,gw=10.0.0.1.","format":"pve-qm-ipconfig","optional":1,"type":"string"},
         "kvm":{"default":1,"description":"Use hardware virtualization.","optional":1,"type":"boolean"},
         "lock":{"description":"Configuration lock of the VM; setting it locks, deleting it unlocks.","enum":["backup","clone","create","migrate","rollback","snapshot","snapshot-delete","suspending","suspended"],"optional":1,"type":"string"},
         "machine":{"description":"QEMU machine type and its options.","format":{
           "aw-bits":{"description":"Address width of the virtual IOMMU in bits.","maximum":64,"minimum":32,"optional":1,"type":"number"},
           "enable-s3":{"description":"Offer the S3 (suspend to RAM) power state.","optional":1,"type":"boolean"},
           "enable-s4":{"description":"Offer the S4 (suspend to disk) power state.","optional":1,"type":"boolean"},
           "type":{"default_key":1,"description":"QEMU machine type, such as q35 or pc-i440fx-9.2.","maxLength":40,"optional":1,"pattern":"(pc|pc(-i440fx)?-\\d+(\\.\\d+)+(\\+pve\\d+)?(\\.pxe)?|q35|pc-q35-\\d+(\\.\\d+)+(\\+pve\\d+)?(\\.pxe)?|virt(?:-\\d+(\\.\\d+)+)?(\\+pve\\d+)?)","type":"string"},
           "viommu":{"description":"Virtual IOMMU to emulate; intel needs q35.","enum":["intel","virtio"],"optional":1,"type":"string"}
          },"optional":1,"type":"string","typetext":"[[type=]<string>] [,aw-bits=<number>] [,enable-s3=<1|0>] [,enable-s4=<1|0>] [,viommu=<intel|virtio>]"},
         "memory":{"description":"Memory of the VM in MiB.","format":{
           "current":{"default":512,"default_key":1,"description":"Memory of the VM in MiB, the upper bound when ballooning.","minimum":16,"type":"integer"}
          },"optional":1,"type":"string","typetext":"[current=]<integer>"},
         "name":{"description":"Display name of the VM.","format":"dns-name","optional":1,"type":"string"},
         "nameserver":{"description":"DNS servers cloud-init configures.","format":"address-list","optional":1,"type":"string"},
         "net[n]":{"description":"Network device of the VM.","format":{
           "bridge":{"description":"Host bridge to connect the card to.","format":"pve-bridge-id","optional":1,"type":"string"},
           "e1000":{"alias":"macaddr","keyAlias":"model"},
           "e1000-82540em":{"alias":"macaddr","keyAlias":"model"},
           "e1000-82544gc":{"alias":"macaddr","keyAlias":"model"},
           "e1000-82545em":{"alias":"macaddr","keyAlias":"model"},
           "e1000e":{"alias":"macaddr","keyAlias":"model"},
           "firewall":{"description":"Filter the card's traffic with the guest firewall.","optional":1,"type":"boolean"},
           "i82551":{"alias":"macaddr","keyAlias":"model"},
           "i82557b":{"alias":"macaddr","keyAlias":"model"},
           "i82559er":{"alias":"macaddr","keyAlias":"model"},
           "link_down":{"description":"Start with the link disconnected.","optional":1,"type":"boolean"},
           "macaddr":{"description":"MAC address of the card; generated when absent.","format":"mac-addr","optional":1,"type":"string"},
           "model":{"default_key":1,"description":"Emulated network card; virtio performs best.","enum":["e1000","e1000-82540em","e1000-82544gc","e1000-82545em","e1000e","i82551","i82557b","i82559er","ne2k_isa","ne2k_pci","pcnet","rtl8139","virtio","vmxnet3"],"type":"string"},
           "mtu":{"description":"MTU of a VirtIO card; 1 takes the bridge's MTU.","maximum":65520,"minimum":1,"optional":1,"type":"integer"},
           "ne2k_isa":{"alias":"macaddr","keyAlias":"model"},
           "ne2k_pci":{"alias":"macaddr","keyAlias":"model"},
           "pcnet":{"alias":"macaddr","keyAlias":"model"},
           "queues":{"description":"Number of packet queues of the card.","maximum":64,"minimum":0,"optional":1,"type":"integer"},
           "rate":{"description":"Bandwidth limit in MB/s.","minimum":0,"optional":1,"type":"number"},
           "rtl8139":{"alias":"macaddr","keyAlias":"model"},
           "tag":{"description":"VLAN tag added to the card's traffic.","maximum":4094,"minimum":1,"optional":1,"type":"integer"},
           "trunks":{"description":"VLANs passed through, separated by semicolons.","optional":1,"pattern":"(?^:\\d+(?:-\\d+)?(?:;\\d+(?:-\\d+)?)*)","type":"string"},
           "virtio":{"alias":"macaddr","keyAlias":"model"},
           "vmxnet3":{"alias":"macaddr","keyAlias":"model"}
          },"optional":1,"type":"string","typetext":"[model=]<enum> [,bridge=<pve-bridge-id>] [,firewall=<1|0>] [,link_down=<1|0>] [,macaddr=<mac-addr>] [,mtu=<integer>] [,queues=<integer>] [,rate=<number>] [,tag=<integer>] [,trunks=<string>] [,<model>=<macaddr>]"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "numa":{"default":0,"description":"Expose a NUMA topology to the guest.","optional":1,"type":"boolean"},
         "onboot":{"default":0,"description":"Start the VM when its node boots.","optional":1,"type":"boolean"},
         "ostype":{"default":"other","description":"Guest operating system, so that QEMU can tune for it.","enum":["other","wxp","w2k","w2k3","w2k8","wvista","win7","win8","win10","win11","l24","l26","solaris"],"optional":1,"type":"string"},
         "protection":{"default":0,"description":"Blocks destroying the VM and removing its disks while set.","optional":1,"type":"boolean"},
         "revert":{"description":"Pending changes to discard, by key.","format":"pve-configid-list","optional":1,"type":"string"},
         "sata[n]":{"description":"SATA disk or CD-ROM drive (n is 0 to 5); STORAGE:SIZE in GiB allocates a new volume.","format":{
           "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
           "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
           "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
           "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
           "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
           "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
           "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
         "scsi[n]":{"description":"SCSI disk or CD-ROM drive (n is 0 to 30); STORAGE:SIZE in GiB allocates a new volume.","format":{
           "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
           "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
           "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
           "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "iothread":{"description":"Give the drive its own I/O thread.","optional":1,"type":"boolean"},
           "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
           "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
           "ro":{"description":"Attach the drive read-only.","optional":1,"type":"boolean"},
           "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
           "ssd":{"description":"Present the drive to the guest as a solid-state disk.","optional":1,"type":"boolean"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,iothread=<1|0>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,ro=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>] [,ssd=<1|0>]"},
         "scsihw":{"default":"lsi","description":"Model of the SCSI controller.","enum":["lsi","lsi53c810","virtio-scsi-pci","virtio-scsi-single","megasas","pvscsi"],"optional":1,"type":"string"},
         "searchdomain":{"description":"DNS search domains cloud-init configures.","optional":1,"type":"string"},
         "serial[n]":{"description":"Serial port of the guest (n is 0 to 3): a host device path or socket.","optional":1,"pattern":"(/dev/.+|socket)","type":"string"},
         "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
         "smbios1":{"description":"SMBIOS type 1 fields such as the UUID.","format":"pve-qm-smbios1","maxLength":512,"optional":1,"type":"string"},
         "sockets":{"default":1,"description":"Number of CPU sockets.","minimum":1,"optional":1,"type":"integer"},
         "sshkeys":{"description":"Public SSH keys cloud-init installs, one per line, URL-encoded.","format":"urlencoded","optional":1,"type":"string"},
         "startup":{"description":"Boot order and delays when the node starts guests, for example order=1,up=30.","format":"pve-startup-order","optional":1,"type":"string"},
         "tags":{"description":"Tags of the VM, separated by semicolons.","format":"pve-tag-list","optional":1,"type":"string"},
         "template":{"default":0,"description":"Marks the guest as a template.","optional":1,"type":"boolean"},
         "tpmstate0":{"description":"Disk holding the state of a virtual TPM; STORAGE:SIZE allocates a new one.","format":{
           "file":{"default_key":1,"description":"Volume ID of the TPM state disk; STORAGE:1 allocates a new one.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow2","vmdk"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "version":{"default":"v1.2","description":"TPM version to emulate; it cannot be changed later.","enum":["v1.2","v2.0"],"optional":1,"type":"string"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,format=<raw|qcow2|vmdk>] [,import-from=<pve-volume-id-or-absolute-path>] [,size=<disk-size>] [,version=<v1.2|v2.0>]"},
         "unused[n]":{"description":"Volume that belongs to the guest but is not attached; kept by the system.","format":{
           "file":{"default_key":1,"description":"Volume ID of the detached disk.","format":"pve-volume-id","type":"string"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id>"},
         "vga":{"description":"Display adapter of the virtual machine.","format":{
           "clipboard":{"description":"Clipboard to offer to the display.","enum":["vnc"],"optional":1,"type":"string"},
           "memory":{"description":"Video memory in MiB.","maximum":512,"minimum":4,"optional":1,"type":"integer"},
           "type":{"default":"std","default_key":1,"description":"Kind of display adapter.","enum":["cirrus","qxl","qxl2","qxl3","qxl4","none","serial0","serial1","serial2","serial3","std","virtio","virtio-gl","vmware"],"optional":1,"type":"string"}
          },"optional":1,"type":"string","typetext":"[[type=]<enum>] [,clipboard=<vnc>] [,memory=<integer>]"},
         "virtio[n]":{"description":"VirtIO block disk (n is 0 to 15); STORAGE:SIZE in GiB allocates a new volume.","format":{
           "aio":{"description":"Asynchronous I/O method QEMU uses for the drive.","enum":["native","threads","io_uring"],"optional":1,"type":"string"},
           "backup":{"description":"Include the drive in backups.","optional":1,"type":"boolean"},
           "cache":{"description":"Host cache mode for the drive.","enum":["none","writethrough","writeback","unsafe","directsync"],"optional":1,"type":"string"},
           "discard":{"description":"Pass the guest's discard (TRIM) requests on to the storage.","enum":["ignore","on"],"optional":1,"type":"string"},
           "file":{"default_key":1,"description":"Volume ID or path of the disk; STORAGE:SIZE in GiB allocates a new volume.","format":"pve-volume-id-or-qm-path","type":"string"},
           "format":{"description":"Image format of the volume.","enum":["raw","qcow","qed","qcow2","vmdk","cloop"],"optional":1,"type":"string"},
           "import-from":{"description":"Volume or absolute path to copy into the new disk.","format":"pve-volume-id-or-absolute-path","optional":1,"type":"string"},
           "iothread":{"description":"Give the drive its own I/O thread.","optional":1,"type":"boolean"},
           "media":{"default":"disk","description":"Whether the drive is a disk or a CD-ROM.","enum":["cdrom","disk"],"optional":1,"type":"string"},
           "replicate":{"default":1,"description":"Include the drive in storage replication.","optional":1,"type":"boolean"},
           "ro":{"description":"Attach the drive read-only.","optional":1,"type":"boolean"},
           "serial":{"description":"Serial number the guest sees, URL-encoded.","format":"urlencoded","maxLength":60,"optional":1,"type":"string"},
           "size":{"description":"Size of the volume, recorded by the system; setting it changes nothing.","format":"disk-size","optional":1,"type":"string"},
           "snapshot":{"description":"Throw away all writes when the VM stops (QEMU snapshot mode).","optional":1,"type":"boolean"},
           "volume":{"alias":"file"}
          },"optional":1,"type":"string","typetext":"[file=]<pve-volume-id-or-qm-path> [,aio=<native|threads|io_uring>] [,backup=<1|0>] [,cache=<enum>] [,discard=<ignore|on>] [,format=<enum>] [,import-from=<pve-volume-id-or-absolute-path>] [,iothread=<1|0>] [,media=<cdrom|disk>] [,replicate=<1|0>] [,ro=<1|0>] [,serial=<urlencoded>] [,size=<disk-size>] [,snapshot=<1|0>]"},
         "vmgenid":{"description":"VM generation ID: 1 generates a new one, 0 removes it.","optional":1,"pattern":"(?:[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}|[01])","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Config.Disk","VM.Config.CDROM","VM.Config.CPU","VM.Config.Memory","VM.Config.Network","VM.Config.HWType","VM.Config.Options","VM.Config.Cloudinit"],"any",1]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"null"}
      }
     }
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/migrate",
     "text":"migrate",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Move a virtual machine to another cluster node, as a task.",
       "method":"POST",
       "name":"migrate_vm",
       "parameters":{"additionalProperties":0,"properties":{
         "bwlimit":{"description":"I/O bandwidth limit for this operation in KiB/s.","minimum":"0","optional":1,"type":"integer"},
         "force":{"description":"Migrate even with local devices attached (root@pam only).","optional":1,"type":"boolean"},
         "migration_network":{"description":"Network (CIDR) to send migration traffic over.","format":"CIDR","optional":1,"type":"string"},
         "migration_type":{"description":"Whether migration traffic goes through an encrypted SSH tunnel.","enum":["secure","insecure"],"optional":1,"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "online":{"description":"Move a running VM without stopping it.","optional":1,"type":"boolean"},
         "target":{"description":"Node to move the VM to.","format":"pve-node","type":"string"},
         "targetstorage":{"description":"Storage mapping for the target: one storage ID for all, SOURCE:TARGET pairs, or 1 to keep each ID.","format":"storage-pair-list","optional":1,"type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"},
         "with-conntrack-state":{"default":0,"description":"Carry the firewall's connection tracking state over to the target.","optional":1,"type":"boolean"},
         "with-local-disks":{"description":"Copy local disks to the target while the VM runs.","optional":1,"type":"boolean"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Migrate"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/pending",
     "text":"pending",
     "leaf":1,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"List each configuration key of a virtual machine with its current and pending value.",
       "method":"GET",
       "name":"vm_pending",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Audit"]]},
       "proxyto":"node",
       "returns":{"items":{"properties":{
         "delete":{"description":"Set when a deletion of the key is pending; 2 means a forced deletion.","maximum":2,"minimum":0,"optional":1,"type":"integer"},
         "key":{"description":"Configuration key.","type":"string"},
         "pending":{"description":"Value that applies after the next restart.","optional":1,"type":"string"},
         "value":{"description":"Value in effect now.","optional":1,"type":"string"}
        },"type":"object"},"type":"array"}
      }
     }
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/resize",
     "text":"resize",
     "leaf":1,
     "info":{
      "PUT":{
       "allowtoken":1,
       "description":"Grow a virtual machine disk.",
       "method":"PUT",
       "name":"resize_vm",
       "parameters":{"additionalProperties":0,"properties":{
         "digest":{"description":"Refuse the change unless the configuration still has this SHA1 digest.","maxLength":40,"optional":1,"type":"string"},
         "disk":{"description":"Disk to act on, such as scsi0.","enum":["ide0","ide1","ide2","ide3","scsi0","scsi1","scsi2","scsi3","scsi4","scsi5","scsi6","scsi7","scsi8","scsi9","scsi10","scsi11","scsi12","scsi13","scsi14","scsi15","scsi16","scsi17","scsi18","scsi19","scsi20","scsi21","scsi22","scsi23","scsi24","scsi25","scsi26","scsi27","scsi28","scsi29","scsi30","virtio0","virtio1","virtio2","virtio3","virtio4","virtio5","virtio6","virtio7","virtio8","virtio9","virtio10","virtio11","virtio12","virtio13","virtio14","virtio15","sata0","sata1","sata2","sata3","sata4","sata5","efidisk0","tpmstate0"],"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "size":{"description":"New size, or with a leading + the amount to add, such as 40G or +10G; disks only grow.","pattern":"\\+?\\d+(\\.\\d+)?[KMGT]?","type":"string"},
         "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Config.Disk"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/snapshot",
     "text":"snapshot",
     "leaf":0,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"List a virtual machine's snapshots, ending with the current state.",
       "method":"GET",
       "name":"snapshot_list",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Audit"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"items":{"properties":{
         "description":{"description":"Notes for the snapshot.","type":"string"},
         "name":{"description":"Snapshot name; current stands for the present state.","type":"string"},
         "parent":{"description":"Snapshot this one was taken on top of.","optional":1,"type":"string"},
         "snaptime":{"description":"When the snapshot was taken, in UNIX seconds.","optional":1,"type":"integer"},
         "vmstate":{"description":"Whether the snapshot includes the VM's memory.","optional":1,"type":"boolean"}
        },"type":"object"},"links":[{"href":"{name}","rel":"child"}],"type":"array"}
      },
      "POST":{
       "allowtoken":1,
       "description":"Take a snapshot of a virtual machine, as a task.",
       "method":"POST",
       "name":"snapshot",
       "parameters":{"additionalProperties":0,"properties":{
         "description":{"description":"Notes for the snapshot.","optional":1,"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"},
         "vmstate":{"description":"Also save the VM's memory so the snapshot can resume it running.","optional":1,"type":"boolean"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     },
     "children":[
     {
      "path":"/nodes/{node}/qemu/{vmid}/snapshot/{snapname}",
      "text":"{snapname}",
      "leaf":0,
      "info":{
       "DELETE":{
        "allowtoken":1,
        "description":"Remove a snapshot of a virtual machine, as a task.",
        "method":"DELETE",
        "name":"delsnapshot",
        "parameters":{"additionalProperties":0,"properties":{
          "force":{"description":"Drop the snapshot from the configuration even when removing its disk snapshots fails.","optional":1,"type":"boolean"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       },
       "GET":{
        "allowtoken":1,
        "description":"List the actions available for one snapshot.",
        "method":"GET",
        "name":"snapshot_cmd_idx",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"user":"all"},
        "returns":{"items":{"properties":{},"type":"object"},"links":[{"href":"{cmd}","rel":"child"}],"type":"array"}
       }
      },
      "children":[
      {
       "path":"/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/config",
       "text":"config",
       "leaf":1,
       "info":{
        "GET":{
         "allowtoken":1,
         "description":"Read the configuration a virtual machine had when the snapshot was taken.",
         "method":"GET",
         "name":"get_snapshot_config",
         "parameters":{"additionalProperties":0,"properties":{
           "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
           "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
           "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
         }},
         "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot","VM.Snapshot.Rollback","VM.Audit"],"any",1]},
         "proxyto":"node",
         "returns":{"type":"object"}
        },
        "PUT":{
         "allowtoken":1,
         "description":"Change the description of a virtual machine snapshot.",
         "method":"PUT",
         "name":"update_snapshot_config",
         "parameters":{"additionalProperties":0,"properties":{
           "description":{"description":"New notes for the snapshot.","optional":1,"type":"string"},
           "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
           "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
           "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
         }},
         "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot"]]},
         "protected":1,
         "proxyto":"node",
         "returns":{"type":"null"}
        }
       }
      },
      {
       "path":"/nodes/{node}/qemu/{vmid}/snapshot/{snapname}/rollback",
       "text":"rollback",
       "leaf":1,
       "info":{
        "POST":{
         "allowtoken":1,
         "description":"Return a virtual machine to the state of a snapshot, as a task.",
         "method":"POST",
         "name":"rollback",
         "parameters":{"additionalProperties":0,"properties":{
           "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
           "snapname":{"description":"Name of the snapshot.","format":"pve-configid","maxLength":40,"type":"string"},
           "start":{"default":0,"description":"Start the VM after the rollback; one saved with memory starts anyway.","optional":1,"type":"boolean"},
           "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
         }},
         "permissions":{"check":["perm","/vms/{vmid}",["VM.Snapshot","VM.Snapshot.Rollback"],"any",1]},
         "protected":1,
         "proxyto":"node",
         "returns":{"type":"string"}
        }
       }
      }
      ]
     }
     ]
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/status",
     "text":"status",
     "leaf":0,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"List the power-state actions of a virtual machine.",
       "method":"GET",
       "name":"vmcmdidx",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"user":"all"},
       "proxyto":"node",
       "returns":{"items":{"properties":{"subdir":{"type":"string"}},"type":"object"},"links":[{"href":"{subdir}","rel":"child"}],"type":"array"}
      }
     },
     "children":[
     {
      "path":"/nodes/{node}/qemu/{vmid}/status/current",
      "text":"current",
      "leaf":1,
      "info":{
       "GET":{
        "allowtoken":1,
        "description":"Show whether a virtual machine runs, and its live resource usage.",
        "method":"GET",
        "name":"vm_status",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.Audit"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"properties":{
          "agent":{"description":"Whether the guest agent is enabled in the configuration.","optional":1,"type":"boolean"},
          "clipboard":{"description":"Clipboard offered to the display, if any.","enum":["vnc"],"optional":1,"type":"string"},
          "cpu":{"description":"CPU load as a fraction of the available CPUs.","optional":1,"type":"number"},
          "cpus":{"description":"Number of CPUs the guest may use.","optional":1,"type":"number"},
          "diskread":{"description":"Bytes read from disks since the guest started.","optional":1,"type":"integer"},
          "diskwrite":{"description":"Bytes written to disks since the guest started.","optional":1,"type":"integer"},
          "ha":{"description":"High-availability state of the guest.","type":"object"},
          "lock":{"description":"Configuration lock held on the guest, if any.","optional":1,"type":"string"},
          "maxdisk":{"description":"Disk size, in bytes.","optional":1,"type":"integer"},
          "maxmem":{"description":"Memory available, in bytes.","optional":1,"type":"integer"},
          "mem":{"description":"Memory in use, in bytes.","optional":1,"type":"integer"},
          "memhost":{"description":"Memory the guest takes on the host, in bytes.","optional":1,"type":"integer"},
          "name":{"description":"Display name or host name of the guest.","optional":1,"type":"string"},
          "netin":{"description":"Bytes received over the network since the guest started.","optional":1,"type":"integer"},
          "netout":{"description":"Bytes sent over the network since the guest started.","optional":1,"type":"integer"},
          "pid":{"description":"Process ID of the guest's QEMU process while it runs.","optional":1,"type":"integer"},
          "pressurecpufull":{"description":"Share of time all tasks stalled on CPU, over 10 seconds.","optional":1,"type":"number"},
          "pressurecpusome":{"description":"Share of time some tasks stalled on CPU, over 10 seconds.","optional":1,"type":"number"},
          "pressureiofull":{"description":"Share of time all tasks stalled on I/O, over 10 seconds.","optional":1,"type":"number"},
          "pressureiosome":{"description":"Share of time some tasks stalled on I/O, over 10 seconds.","optional":1,"type":"number"},
          "pressurememoryfull":{"description":"Share of time all tasks stalled on memory, over 10 seconds.","optional":1,"type":"number"},
          "pressurememorysome":{"description":"Share of time some tasks stalled on memory, over 10 seconds.","optional":1,"type":"number"},
          "qmpstatus":{"description":"Run state QEMU reports, such as running or paused.","optional":1,"type":"string"},
          "running-machine":{"description":"Machine type of the running QEMU process.","optional":1,"type":"string"},
          "running-qemu":{"description":"QEMU version of the running process.","optional":1,"type":"string"},
          "serial":{"description":"Whether the guest has a serial port.","optional":1,"type":"boolean"},
          "spice":{"description":"Whether the display supports SPICE.","optional":1,"type":"boolean"},
          "status":{"description":"Whether the VM is running or stopped.","enum":["stopped","running"],"type":"string"},
          "tags":{"description":"Tags of the guest, separated by semicolons.","optional":1,"type":"string"},
          "template":{"default":0,"description":"Whether the guest is a template.","optional":1,"type":"boolean"},
          "uptime":{"description":"Seconds since start.","optional":1,"type":"integer"},
          "vmid":{"description":"VM ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
         },"type":"object"}
       }
      }
     },
     {
      "path":"/nodes/{node}/qemu/{vmid}/status/reboot",
      "text":"reboot",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Shut a virtual machine down cleanly and boot it again, applying pending changes.",
        "method":"POST",
        "name":"vm_reboot",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "timeout":{"description":"Seconds to wait for the shutdown before giving up.","minimum":0,"optional":1,"type":"integer"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/qemu/{vmid}/status/reset",
      "text":"reset",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Hard-reset a running virtual machine, like its reset button.",
        "method":"POST",
        "name":"vm_reset",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/qemu/{vmid}/status/resume",
      "text":"resume",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Continue a paused virtual machine.",
        "method":"POST",
        "name":"vm_resume",
        "parameters":{"additionalProperties":0,"properties":{
          "nocheck":{"description":"Skip the checks made before resuming (used by migration).","optional":1,"type":"boolean"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/qemu/{vmid}/status/shutdown",
      "text":"shutdown",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Ask the guest operating system to power down cleanly, as a task.",
        "method":"POST",
        "name":"vm_shutdown",
        "parameters":{"additionalProperties":0,"properties":{
          "forceStop":{"default":0,"description":"Stop the VM hard if it has not shut down in time.","optional":1,"type":"boolean"},
          "keepActive":{"default":0,"description":"Leave the VM's storage volumes active afterwards.","optional":1,"type":"boolean"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
          "timeout":{"description":"Give up waiting after this many seconds.","minimum":0,"optional":1,"type":"integer"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/qemu/{vmid}/status/start",
      "text":"start",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Power on a virtual machine, as a task.",
        "method":"POST",
        "name":"vm_start",
        "parameters":{"additionalProperties":0,"properties":{
          "force-cpu":{"description":"Replace the generated QEMU -cpu argument with this text.","optional":1,"type":"string"},
          "machine":{"description":"QEMU machine type and its options.","format":{
            "aw-bits":{"description":"Address width of the virtual IOMMU in bits.","maximum":64,"minimum":32,"optional":1,"type":"number"},
            "enable-s3":{"description":"Offer the S3 (suspend to RAM) power state.","optional":1,"type":"boolean"},
            "enable-s4":{"description":"Offer the S4 (suspend to disk) power state.","optional":1,"type":"boolean"},
            "type":{"default_key":1,"description":"QEMU machine type, such as q35 or pc-i440fx-9.2.","maxLength":40,"optional":1,"pattern":"(pc|pc(-i440fx)?-\\d+(\\.\\d+)+(\\+pve\\d+)?(\\.pxe)?|q35|pc-q35-\\d+(\\.\\d+)+(\\+pve\\d+)?(\\.pxe)?|virt(?:-\\d+(\\.\\d+)+)?(\\+pve\\d+)?)","type":"string"},
            "viommu":{"description":"Virtual IOMMU to emulate; intel needs q35.","enum":["intel","virtio"],"optional":1,"type":"string"}
           },"optional":1,"type":"string","typetext":"[[type=]<string>] [,aw-bits=<number>] [,enable-s3=<1|0>] [,enable-s4=<1|0>] [,viommu=<intel|virtio>]"},
          "migratedfrom":{"description":"Node the VM is arriving from (used by migration).","format":"pve-node","optional":1,"type":"string"},
          "migration_network":{"description":"Network (CIDR) to send migration traffic over.","format":"CIDR","optional":1,"type":"string"},
          "migration_type":{"description":"Whether migration traffic goes through an encrypted SSH tunnel.","enum":["secure","insecure"],"optional":1,"type":"string"},
          "nets-host-mtu":{"description":"Host MTU of each VirtIO network device on the source (used by migration).","optional":1,"pattern":"net\\d+=\\d+(,net\\d+=\\d+)*","type":"string"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
          "stateuri":{"description":"Where QEMU loads saved state from (used by migration).","maxLength":128,"optional":1,"type":"string"},
          "targetstorage":{"description":"Storage mapping for the target: one storage ID for all, SOURCE:TARGET pairs, or 1 to keep each ID.","format":"storage-pair-list","optional":1,"type":"string"},
          "timeout":{"description":"Give up waiting after this many seconds.","minimum":0,"optional":1,"type":"integer"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"},
          "with-conntrack-state":{"default":0,"description":"Carry the firewall's connection tracking state over to the target.","optional":1,"type":"boolean"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/qemu/{vmid}/status/stop",
      "text":"stop",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Power off a virtual machine at once, without asking the guest.",
        "method":"POST",
        "name":"vm_stop",
        "parameters":{"additionalProperties":0,"properties":{
          "keepActive":{"default":0,"description":"Leave the VM's storage volumes active afterwards.","optional":1,"type":"boolean"},
          "migratedfrom":{"description":"Node the VM is arriving from (used by migration).","format":"pve-node","optional":1,"type":"string"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "overrule-shutdown":{"default":0,"description":"Cancel running shutdown tasks of the VM before stopping.","optional":1,"type":"boolean"},
          "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
          "timeout":{"description":"Give up waiting after this many seconds.","minimum":0,"optional":1,"type":"integer"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]]},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     },
     {
      "path":"/nodes/{node}/qemu/{vmid}/status/suspend",
      "text":"suspend",
      "leaf":1,
      "info":{
       "POST":{
        "allowtoken":1,
        "description":"Pause a running virtual machine.",
        "method":"POST",
        "name":"vm_suspend",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "skiplock":{"description":"Act even when the guest is locked (root@pam only).","optional":1,"type":"boolean"},
          "statestorage":{"description":"Storage for the memory image when suspending to disk.","format":"pve-storage-id","optional":1,"requires":"todisk","type":"string"},
          "todisk":{"default":0,"description":"Save memory to disk and stop; the next start resumes from it.","optional":1,"type":"boolean"},
          "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
        }},
        "permissions":{"check":["perm","/vms/{vmid}",["VM.PowerMgmt"]],"description":"Needs VM.PowerMgmt; suspending to disk also needs VM.Config.Disk and space on the state storage."},
        "protected":1,
        "proxyto":"node",
        "returns":{"type":"string"}
       }
      }
     }
     ]
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/termproxy",
     "text":"termproxy",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Open a terminal proxy (xterm.js) to a virtual machine's serial console or display.",
       "method":"POST",
       "name":"termproxy",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "serial":{"description":"The serial port to open; the display when not given.","enum":["serial0","serial1","serial2","serial3"],"optional":1,"type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Console"]]},
       "protected":1,
       "returns":{"additionalProperties":0,"properties":{"port":{"type":"integer"},"ticket":{"type":"string"},"upid":{"type":"string"},"user":{"type":"string"}}}
      }
     }
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/vncproxy",
     "text":"vncproxy",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Open a VNC proxy to a virtual machine's display: a ticket, a port and a password for the VNC protocol.",
       "method":"POST",
       "name":"vncproxy",
       "parameters":{"additionalProperties":0,"properties":{
         "generate-password":{"default":0,"description":"Deprecated: a password is generated when one is needed.","optional":1,"type":"boolean"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"},
         "websocket":{"description":"Prepare for a websocket upgrade (noVNC).","optional":1,"type":"boolean"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Console"]]},
       "protected":1,
       "returns":{"additionalProperties":0,"properties":{"cert":{"type":"string"},"password":{"description":"Password used for authentication within the VNC protocol.","optional":1,"type":"string"},"port":{"type":"integer"},"ticket":{"type":"string"},"upid":{"type":"string"},"user":{"type":"string"}}}
      }
     }
    },
    {
     "path":"/nodes/{node}/qemu/{vmid}/template",
     "text":"template",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Turn a stopped virtual machine into a template for clones.",
       "method":"POST",
       "name":"template",
       "parameters":{"additionalProperties":0,"properties":{
         "disk":{"description":"Convert only this disk to a base image.","enum":["ide0","ide1","ide2","ide3","scsi0","scsi1","scsi2","scsi3","scsi4","scsi5","scsi6","scsi7","scsi8","scsi9","scsi10","scsi11","scsi12","scsi13","scsi14","scsi15","scsi16","scsi17","scsi18","scsi19","scsi20","scsi21","scsi22","scsi23","scsi24","scsi25","scsi26","scsi27","scsi28","scsi29","scsi30","virtio0","virtio1","virtio2","virtio3","virtio4","virtio5","virtio6","virtio7","virtio8","virtio9","virtio10","virtio11","virtio12","virtio13","virtio14","virtio15","sata0","sata1","sata2","sata3","sata4","sata5","efidisk0","tpmstate0"],"optional":1,"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "vmid":{"description":"Numeric ID of the guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"type":"integer"}
       }},
       "permissions":{"check":["perm","/vms/{vmid}",["VM.Allocate"]],"description":"Needs VM.Allocate on the virtual machine."},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    }
    ]
   }
   ]
  },
   {
   "path":"/nodes/{node}/rrddata",
   "text":"rrddata",
   "leaf":1,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"A node's RRD statistics.",
     "method":"GET",
     "name":"rrddata",
     "parameters":{"additionalProperties":0,"properties":{
       "cf":{"description":"How rows are consolidated: average or maximum.","enum":["AVERAGE","MAX"],"optional":1,"type":"string"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
       "timeframe":{"description":"The time frame.","enum":["hour","day","week","month","year","decade"],"type":"string"}
     }},
     "permissions":{"check":["perm","/nodes/{node}",["Sys.Audit"]]},
     "protected":1,
     "returns":{"items":{"properties":{},"type":"object"},"type":"array"}
    }
   }
  },
  {
   "path":"/nodes/{node}/services",
   "text":"services",
   "leaf":0,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the system services Proxmox VE manages on a node.",
     "method":"GET",
     "name":"index",
     "parameters":{"additionalProperties":0,"properties":{
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
     }},
     "permissions":{"check":["perm","/nodes/{node}",["Sys.Audit"]]},
     "protected":1,
     "proxyto":"node",
     "returns":{"items":{"properties":{
       "active-state":{"description":"systemd ActiveState of the unit.","enum":["active","inactive","failed","activating","deactivating","maintenance","reloading","refreshing","unknown"],"type":"string"},
       "desc":{"description":"What the service does.","type":"string"},
       "name":{"description":"Short name of the service.","type":"string"},
       "service":{"description":"systemd unit name.","type":"string"},
       "state":{"description":"systemd SubState of the unit.","enum":["dead","condition","start-pre","start","start-post","running","exited","reload","reload-signal","reload-notify","mounting","stop","stop-watchdog","stop-sigterm","stop-sigkill","stop-post","final-watchdog","final-sigterm","final-sigkill","failed","dead-before-auto-restart","failed-before-auto-restart","dead-resources-pinned","auto-restart","auto-restart-queued","cleaning","unknown"],"type":"string"},
       "unit-state":{"description":"systemd UnitFileState: whether the unit is enabled.","enum":["enabled","enabled-runtime","linked","linked-runtime","alias","masked","masked-runtime","static","disabled","indirect","generated","transient","bad","not-found","unknown"],"type":"string"}
      },"type":"object"},"links":[{"href":"{service}","rel":"child"}],"type":"array"}
    }
   },
   "children":[
   {
    "path":"/nodes/{node}/services/{service}",
    "text":"{service}",
    "leaf":0,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"List the actions available for one system service.",
      "method":"GET",
      "name":"srvcmdidx",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "service":{"description":"Name of the system service.","enum":["chrony","corosync","cron","ksmtuned","lxcfs","postfix","proxmox-firewall","pve-cluster","pve-firewall","pve-ha-crm","pve-ha-lrm","pve-lxc-syscalld","pvedaemon","pvefw-logger","pveproxy","pvescheduler","pvestatd","qmeventd","spiceproxy","sshd","syslog","systemd-journald","systemd-timesyncd"],"type":"string"}
      }},
      "permissions":{"check":["perm","/nodes/{node}",["Sys.Audit"]]},
      "returns":{"items":{"properties":{"subdir":{"type":"string"}},"type":"object"},"links":[{"href":"{subdir}","rel":"child"}],"type":"array"}
     }
    },
    "children":[
    {
     "path":"/nodes/{node}/services/{service}/reload",
     "text":"reload",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Reload a system service's configuration, restarting it when it cannot reload.",
       "method":"POST",
       "name":"service_reload",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "service":{"description":"Name of the system service.","enum":["chrony","corosync","cron","ksmtuned","lxcfs","postfix","proxmox-firewall","pve-cluster","pve-firewall","pve-ha-crm","pve-ha-lrm","pve-lxc-syscalld","pvedaemon","pvefw-logger","pveproxy","pvescheduler","pvestatd","qmeventd","spiceproxy","sshd","syslog","systemd-journald","systemd-timesyncd"],"type":"string"}
       }},
       "permissions":{"check":["perm","/nodes/{node}",["Sys.Modify"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/services/{service}/restart",
     "text":"restart",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Restart a system service on a node, as a task.",
       "method":"POST",
       "name":"service_restart",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "service":{"description":"Name of the system service.","enum":["chrony","corosync","cron","ksmtuned","lxcfs","postfix","proxmox-firewall","pve-cluster","pve-firewall","pve-ha-crm","pve-ha-lrm","pve-lxc-syscalld","pvedaemon","pvefw-logger","pveproxy","pvescheduler","pvestatd","qmeventd","spiceproxy","sshd","syslog","systemd-journald","systemd-timesyncd"],"type":"string"}
       }},
       "permissions":{"check":["perm","/nodes/{node}",["Sys.Modify"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/services/{service}/start",
     "text":"start",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Start a system service on a node, as a task.",
       "method":"POST",
       "name":"service_start",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "service":{"description":"Name of the system service.","enum":["chrony","corosync","cron","ksmtuned","lxcfs","postfix","proxmox-firewall","pve-cluster","pve-firewall","pve-ha-crm","pve-ha-lrm","pve-lxc-syscalld","pvedaemon","pvefw-logger","pveproxy","pvescheduler","pvestatd","qmeventd","spiceproxy","sshd","syslog","systemd-journald","systemd-timesyncd"],"type":"string"}
       }},
       "permissions":{"check":["perm","/nodes/{node}",["Sys.Modify"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/services/{service}/state",
     "text":"state",
     "leaf":1,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"Show whether a system service is running and enabled.",
       "method":"GET",
       "name":"service_state",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "service":{"description":"Name of the system service.","enum":["chrony","corosync","cron","ksmtuned","lxcfs","postfix","proxmox-firewall","pve-cluster","pve-firewall","pve-ha-crm","pve-ha-lrm","pve-lxc-syscalld","pvedaemon","pvefw-logger","pveproxy","pvescheduler","pvestatd","qmeventd","spiceproxy","sshd","syslog","systemd-journald","systemd-timesyncd"],"type":"string"}
       }},
       "permissions":{"check":["perm","/nodes/{node}",["Sys.Audit"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"properties":{
         "active-state":{"description":"systemd ActiveState of the unit.","enum":["active","inactive","failed","activating","deactivating","maintenance","reloading","refreshing","unknown"],"type":"string"},
         "desc":{"description":"What the service does.","type":"string"},
         "name":{"description":"Short name of the service.","type":"string"},
         "service":{"description":"systemd unit name.","type":"string"},
         "state":{"description":"systemd SubState of the unit.","enum":["dead","condition","start-pre","start","start-post","running","exited","reload","reload-signal","reload-notify","mounting","stop","stop-watchdog","stop-sigterm","stop-sigkill","stop-post","final-watchdog","final-sigterm","final-sigkill","failed","dead-before-auto-restart","failed-before-auto-restart","dead-resources-pinned","auto-restart","auto-restart-queued","cleaning","unknown"],"type":"string"},
         "unit-state":{"description":"systemd UnitFileState: whether the unit is enabled.","enum":["enabled","enabled-runtime","linked","linked-runtime","alias","masked","masked-runtime","static","disabled","indirect","generated","transient","bad","not-found","unknown"],"type":"string"}
        },"type":"object"}
      }
     }
    },
    {
     "path":"/nodes/{node}/services/{service}/stop",
     "text":"stop",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Stop a system service on a node, as a task.",
       "method":"POST",
       "name":"service_stop",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "service":{"description":"Name of the system service.","enum":["chrony","corosync","cron","ksmtuned","lxcfs","postfix","proxmox-firewall","pve-cluster","pve-firewall","pve-ha-crm","pve-ha-lrm","pve-lxc-syscalld","pvedaemon","pvefw-logger","pveproxy","pvescheduler","pvestatd","qmeventd","spiceproxy","sshd","syslog","systemd-journald","systemd-timesyncd"],"type":"string"}
       }},
       "permissions":{"check":["perm","/nodes/{node}",["Sys.Modify"]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    }
    ]
   }
   ]
  },
  {
   "path":"/nodes/{node}/status",
   "text":"status",
   "leaf":1,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"Show a node's CPU, memory, root disk, kernel and uptime.",
     "method":"GET",
     "name":"status",
     "parameters":{"additionalProperties":0,"properties":{
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
     }},
     "permissions":{"check":["perm","/nodes/{node}",["Sys.Audit"]]},
     "proxyto":"node",
     "returns":{"properties":{
       "boot-info":{"description":"How the node booted.","properties":{"mode":{"description":"Firmware the node booted with: efi or legacy BIOS.","enum":["efi","legacy-bios"],"type":"string"},"secureboot":{"description":"Whether Secure Boot is on (EFI only).","optional":1,"type":"boolean"}},"type":"object"},
       "cpu":{"description":"CPU load of the node as a fraction.","type":"number"},
       "cpuinfo":{"properties":{"cores":{"description":"Physical CPU cores.","type":"integer"},"cpus":{"description":"Logical CPUs (threads).","type":"integer"},"model":{"description":"CPU model name.","type":"string"},"sockets":{"description":"CPU sockets.","type":"integer"}},"type":"object"},
       "current-kernel":{"description":"The running kernel.","properties":{"machine":{"description":"Hardware architecture.","type":"string"},"release":{"description":"Kernel release, such as 6.17.4-1-pve.","type":"string"},"sysname":{"description":"Kernel name, such as Linux.","type":"string"},"version":{"description":"Kernel build string.","type":"string"}},"type":"object"},
       "loadavg":{"description":"Load averages over 1, 5 and 15 minutes.","items":{"description":"Load averages over 1, 5 and 15 minutes.","type":"string"},"type":"array"},
       "memory":{"properties":{"available":{"description":"Memory available for new work, in bytes.","type":"integer"},"free":{"description":"Unused memory, in bytes.","type":"integer"},"total":{"description":"Installed memory, in bytes.","type":"integer"},"used":{"description":"Memory in use, in bytes.","type":"integer"}},"type":"object"},
       "pveversion":{"description":"Version string of pve-manager.","type":"string"},
       "rootfs":{"properties":{"avail":{"description":"Space available to users on the root file system, in bytes.","type":"integer"},"free":{"description":"Free space on the root file system, in bytes.","type":"integer"},"total":{"description":"Size of the root file system, in bytes.","type":"integer"},"used":{"description":"Space used on the root file system, in bytes.","type":"integer"}},"type":"object"}
      },"type":"object"}
    }
   }
  },
  {
   "path":"/nodes/{node}/storage",
   "text":"storage",
   "leaf":0,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the storages a node can use, with capacity and usage.",
     "method":"GET",
     "name":"index",
     "parameters":{"additionalProperties":0,"properties":{
       "content":{"description":"Only storages that accept one of these content types.","format":"pve-storage-content-list","optional":1,"type":"string"},
       "enabled":{"default":0,"description":"Only storages that are enabled.","optional":1,"type":"boolean"},
       "format":{"default":0,"description":"Also report the volume formats each storage supports.","optional":1,"type":"boolean"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
       "storage":{"description":"Only this storage.","format":"pve-storage-id","optional":1,"type":"string"},
       "target":{"description":"Second node that must also see the storage; only shared storages are listed then.","format":"pve-node","optional":1,"type":"string"}
     }},
     "permissions":{"description":"Storages appear only where the caller has Datastore.Audit or Datastore.AllocateSpace.","user":"all"},
     "protected":1,
     "proxyto":"node",
     "returns":{"items":{"properties":{
       "active":{"description":"Whether the storage can be reached.","optional":1,"type":"boolean"},
       "avail":{"description":"Free space, in bytes.","optional":1,"type":"integer"},
       "content":{"description":"Content types the storage accepts, separated by commas.","format":"pve-storage-content-list","type":"string"},
       "enabled":{"description":"Whether the storage is enabled.","optional":1,"type":"boolean"},
       "formats":{"description":"Volume formats of the storage.","optional":1,"properties":{"default":{"description":"Format new volumes get.","enum":["qcow2","raw","subvol","vmdk"],"type":"string"},"supported":{"description":"Formats the storage can hold.","items":{"enum":["qcow2","raw","subvol","vmdk"],"type":"string"},"type":"array"}},"type":"object"},
       "select_existing":{"description":"Whether volumes must be picked from existing ones rather than created.","optional":1,"type":"boolean"},
       "shared":{"description":"Whether all nodes see the same storage.","optional":1,"type":"boolean"},
       "storage":{"description":"Storage ID.","format":"pve-storage-id","type":"string"},
       "total":{"description":"Capacity, in bytes.","optional":1,"type":"integer"},
       "type":{"description":"Backend type of the storage.","type":"string"},
       "used":{"description":"Space used, in bytes.","optional":1,"type":"integer"},
       "used_fraction":{"description":"Space used as a fraction of capacity.","optional":1,"type":"number"}
      },"type":"object"},"links":[{"href":"{storage}","rel":"child"}],"type":"array"}
    }
   },
   "children":[
   {
    "path":"/nodes/{node}/storage/{storage}",
    "text":"{storage}",
    "leaf":0,
    "info":{
     "GET":{
      "allowtoken":1,
      "description":"List the subdirectories of a storage on a node.",
      "method":"GET",
      "name":"diridx",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "storage":{"description":"Storage ID.","format":"pve-storage-id","type":"string"}
      }},
      "permissions":{"check":["perm","/storage/{storage}",["Datastore.Audit","Datastore.AllocateSpace"],"any",1]},
      "returns":{"items":{"properties":{"subdir":{"type":"string"}},"type":"object"},"links":[{"href":"{subdir}","rel":"child"}],"type":"array"}
     }
    },
    "children":[
    {
     "path":"/nodes/{node}/storage/{storage}/content",
     "text":"content",
     "leaf":0,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"List the volumes on a storage: disks, ISO images, templates and backups.",
       "method":"GET",
       "name":"index",
       "parameters":{"additionalProperties":0,"properties":{
         "content":{"description":"Only volumes of this content type.","format":"pve-storage-content","optional":1,"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "storage":{"description":"Storage ID.","format":"pve-storage-id","type":"string"},
         "vmid":{"description":"Only volumes that belong to this guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"optional":1,"type":"integer"}
       }},
       "permissions":{"check":["perm","/storage/{storage}",["Datastore.Audit","Datastore.AllocateSpace"],"any",1]},
       "protected":1,
       "proxyto":"node",
       "returns":{"items":{"properties":{
         "ctime":{"description":"Creation time, in UNIX seconds.","minimum":0,"optional":1,"type":"integer"},
         "encrypted":{"description":"Key fingerprint, or 1, when the backup is encrypted.","optional":1,"type":"string"},
         "format":{"description":"Format of the volume, such as raw, qcow2, iso or vma.zst.","type":"string"},
         "notes":{"description":"First line of the volume's notes.","optional":1,"type":"string"},
         "parent":{"description":"Base volume of a linked clone.","optional":1,"type":"string"},
         "protected":{"description":"Whether the volume is protected from removal.","optional":1,"type":"boolean"},
         "size":{"description":"Size of the volume, in bytes.","type":"integer"},
         "used":{"description":"Space the volume takes, in bytes; many backends do not report it.","optional":1,"type":"integer"},
         "verification":{"description":"Result of the latest verification of a backup.","optional":1,"properties":{"state":{"description":"Whether the latest verification passed.","type":"string"},"upid":{"description":"Task that verified the backup.","type":"string"}},"type":"object"},
         "vmid":{"description":"Guest the volume belongs to.","optional":1,"type":"integer"},
         "volid":{"description":"Volume ID.","type":"string"}
        },"type":"object"},"links":[{"href":"{volid}","rel":"child"}],"type":"array"}
      }
     },
     "children":[
     {
      "path":"/nodes/{node}/storage/{storage}/content/{volume}",
      "text":"{volume}",
      "leaf":1,
      "info":{
       "DELETE":{
        "allowtoken":1,
        "description":"Remove a volume from a storage, as a task.",
        "method":"DELETE",
        "name":"delete",
        "parameters":{"additionalProperties":0,"properties":{
          "delay":{"description":"Wait up to this many seconds for the task and return null if it finished by then.","maximum":30,"minimum":1,"optional":1,"type":"integer"},
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "storage":{"description":"Storage ID.","format":"pve-storage-id","optional":1,"type":"string"},
          "volume":{"description":"Volume ID, or a volume name on this storage.","type":"string"}
        }},
        "permissions":{"description":"Needs Datastore.Allocate on the storage; a backup can also be removed with Datastore.AllocateSpace plus VM.Backup on its guest.","user":"all"},
        "protected":1,
        "proxyto":"node",
        "returns":{"optional":1,"type":"string"}
       },
       "GET":{
        "allowtoken":1,
        "description":"Show the size, format and notes of one volume.",
        "method":"GET",
        "name":"info",
        "parameters":{"additionalProperties":0,"properties":{
          "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
          "storage":{"description":"Storage ID.","format":"pve-storage-id","optional":1,"type":"string"},
          "volume":{"description":"Volume ID, or a volume name on this storage.","type":"string"}
        }},
        "permissions":{"description":"The caller must be allowed to read the volume.","user":"all"},
        "protected":1,
        "proxyto":"node",
        "returns":{"properties":{
          "format":{"description":"Format of the volume, such as raw, qcow2, iso or vma.zst.","type":"string"},
          "notes":{"description":"Notes attached to the volume.","optional":1,"type":"string"},
          "path":{"description":"Path of the volume on the node.","type":"string"},
          "protected":{"description":"Whether the volume is protected from removal.","optional":1,"type":"boolean"},
          "size":{"description":"Size of the volume, in bytes.","type":"integer"},
          "used":{"description":"Space the volume takes, in bytes; many backends do not report it.","type":"integer"}
         },"type":"object"}
       }
      }
     }
     ]
    },
    {
     "path":"/nodes/{node}/storage/{storage}/download-url",
     "text":"download-url",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Download an ISO image, container template or importable image from a URL into a storage.",
       "method":"POST",
       "name":"download_url",
       "parameters":{"additionalProperties":0,"properties":{
         "checksum":{"description":"Checksum the downloaded file must have.","optional":1,"requires":"checksum-algorithm","type":"string"},
         "checksum-algorithm":{"description":"The algorithm of the checksum.","enum":["md5","sha1","sha224","sha256","sha384","sha512"],"optional":1,"requires":"checksum","type":"string"},
         "compression":{"description":"Decompress the downloaded file with this algorithm (gz, lzo, zst or bz2).","optional":1,"type":"string"},
         "content":{"description":"What the file is: an ISO image, a container template or an importable image.","enum":["iso","vztmpl","import"],"format":"pve-storage-content","type":"string"},
         "filename":{"description":"The name of the file to create (normalized).","maxLength":255,"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "storage":{"description":"Storage to download into.","format":"pve-storage-id","type":"string"},
         "url":{"description":"Where to fetch the file (http or https).","pattern":"https?://.*","type":"string"},
         "verify-certificates":{"default":1,"description":"If false, TLS certificates are not verified.","optional":1,"type":"boolean"}
       }},
       "permissions":{"check":["and",["perm","/storage/{storage}",["Datastore.AllocateTemplate"]],["or",["perm","/",["Sys.Audit","Sys.Modify"]],["perm","/nodes/{node}",["Sys.AccessNetwork"]]]],"description":"Needs Datastore.AllocateTemplate on the storage, and Sys.Audit with Sys.Modify on / or Sys.AccessNetwork on the node (the download probes the node's network)."},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/storage/{storage}/oci-registry-pull",
     "text":"oci-registry-pull",
     "leaf":1,
     "info":{
      "POST":{
       "allowtoken":1,
       "description":"Pull an OCI image from a registry into a storage as a container template.",
       "method":"POST",
       "name":"oci_registry_pull",
       "parameters":{"additionalProperties":0,"properties":{
         "filename":{"description":"The name of the template file (normalized).","maxLength":255,"minLength":1,"optional":1,"type":"string"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "reference":{"description":"Image to pull, such as docker.io/library/debian:13.","pattern":"^(?:(?:[a-zA-Z\\d]|[a-zA-Z\\d][a-zA-Z\\d-]*[a-zA-Z\\d])(?:\\.(?:[a-zA-Z\\d]|[a-zA-Z\\d][a-zA-Z\\d-]*[a-zA-Z\\d]))*(?::\\d+)?/)?[a-z\\d]+(?:(?:[._]|__|[-]*)[a-z\\d]+)*(?:/[a-z\\d]+(?:(?:[._]|__|[-]*)[a-z\\d]+)*)*:\\w[\\w.-]{0,127}$","type":"string"},
         "storage":{"description":"Storage to download into.","format":"pve-storage-id","type":"string"}
       }},
       "permissions":{"check":["and",["perm","/storage/{storage}",["Datastore.AllocateTemplate"]],["perm","/nodes/{node}",["Sys.AccessNetwork"]]]},
       "protected":1,
       "proxyto":"node",
       "returns":{"type":"string"}
      }
     }
    },
    {
     "path":"/nodes/{node}/storage/{storage}/status",
     "text":"status",
     "leaf":1,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"Show capacity and usage of one storage on a node.",
       "method":"GET",
       "name":"read_status",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "storage":{"description":"Storage ID.","format":"pve-storage-id","type":"string"}
       }},
       "permissions":{"check":["perm","/storage/{storage}",["Datastore.Audit","Datastore.AllocateSpace"],"any",1]},
       "protected":1,
       "proxyto":"node",
       "returns":{"properties":{
         "active":{"description":"Whether the storage can be reached.","optional":1,"type":"boolean"},
         "avail":{"description":"Free space, in bytes.","optional":1,"type":"integer"},
         "content":{"description":"Content types the storage accepts, separated by commas.","format":"pve-storage-content-list","type":"string"},
         "enabled":{"description":"Whether the storage is enabled.","optional":1,"type":"boolean"},
         "shared":{"description":"Whether all nodes see the same storage.","optional":1,"type":"boolean"},
         "total":{"description":"Capacity, in bytes.","optional":1,"type":"integer"},
         "type":{"description":"Backend type of the storage.","type":"string"},
         "used":{"description":"Space used, in bytes.","optional":1,"type":"integer"}
        },"type":"object"}
      }
     }
    }
    ]
   }
   ]
  },
  {
   "path":"/nodes/{node}/syslog",
   "text":"syslog",
   "leaf":1,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"Read numbered lines of a node's system log.",
     "method":"GET",
     "name":"syslog",
     "parameters":{"additionalProperties":0,"properties":{
       "limit":{"description":"Maximum number of lines to return.","minimum":0,"optional":1,"type":"integer"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
       "service":{"description":"Only lines of this systemd unit.","maxLength":128,"optional":1,"type":"string"},
       "since":{"description":"Only lines from this date and time on (YYYY-MM-DD HH:MM:SS).","optional":1,"pattern":"^\\d{4}-\\d{2}-\\d{2}( \\d{2}:\\d{2}(:\\d{2})?)?$","type":"string"},
       "start":{"description":"Number of lines to skip.","minimum":0,"optional":1,"type":"integer"},
       "until":{"description":"Only lines up to this date and time (YYYY-MM-DD HH:MM:SS).","optional":1,"pattern":"^\\d{4}-\\d{2}-\\d{2}( \\d{2}:\\d{2}(:\\d{2})?)?$","type":"string"}
     }},
     "permissions":{"check":["perm","/nodes/{node}",["Sys.Syslog"]]},
     "protected":1,
     "proxyto":"node",
     "returns":{"items":{"properties":{
       "n":{"description":"Line number, from 1.","type":"integer"},
       "t":{"description":"Text of the line.","type":"string"}
      },"type":"object"},"type":"array"}
    }
   }
  },
  {
   "path":"/nodes/{node}/tasks",
   "text":"tasks",
   "leaf":0,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"List the tasks of a node, newest first.",
     "method":"GET",
     "name":"node_tasks",
     "parameters":{"additionalProperties":0,"properties":{
       "errors":{"default":0,"description":"Only tasks that ended in an error.","optional":1,"type":"boolean"},
       "limit":{"default":50,"description":"Maximum number of tasks to return.","minimum":0,"optional":1,"type":"integer"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
       "since":{"description":"Only tasks started at or after this UNIX time.","optional":1,"type":"integer"},
       "source":{"default":"archive","description":"Which tasks to list: finished (archive), running (active) or both (all).","enum":["archive","active","all"],"optional":1,"type":"string"},
       "start":{"default":0,"description":"Number of tasks to skip.","minimum":0,"optional":1,"type":"integer"},
       "statusfilter":{"description":"Task states to include, separated by commas.","format":"pve-task-status-type-list","optional":1,"type":"string"},
       "typefilter":{"description":"Only tasks of this type, such as qmstart or vzdump.","optional":1,"type":"string"},
       "until":{"description":"Only tasks started at or before this UNIX time.","optional":1,"type":"integer"},
       "userfilter":{"description":"Only tasks started by this user.","optional":1,"type":"string"},
       "vmid":{"description":"Only tasks of this guest.","format":"pve-vmid","maximum":999999999,"minimum":100,"optional":1,"type":"integer"}
     }},
     "permissions":{"description":"Shows the caller's own tasks, and all tasks of the node with Sys.Audit on it.","user":"all"},
     "proxyto":"node",
     "returns":{"items":{"properties":{
       "endtime":{"optional":1,"type":"integer"},
       "id":{"type":"string"},
       "node":{"type":"string"},
       "pid":{"type":"integer"},
       "pstart":{"type":"integer"},
       "starttime":{"type":"integer"},
       "status":{"optional":1,"type":"string"},
       "type":{"type":"string"},
       "upid":{"type":"string"},
       "user":{"type":"string"}
      },"type":"object"},"links":[{"href":"{upid}","rel":"child"}],"type":"array"}
    }
   },
   "children":[
   {
    "path":"/nodes/{node}/tasks/{upid}",
    "text":"{upid}",
    "leaf":0,
    "info":{
     "DELETE":{
      "allowtoken":1,
      "description":"Ask a running task to stop.",
      "method":"DELETE",
      "name":"stop_task",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "upid":{"description":"Task identifier (UPID) as returned when the task started.","type":"string"}
      }},
      "permissions":{"description":"Anyone may stop their own tasks; stopping others' needs Sys.Modify on the node.","user":"all"},
      "protected":1,
      "proxyto":"node",
      "returns":{"type":"null"}
     },
     "GET":{
      "allowtoken":1,
      "description":"List the subdirectories of one task.",
      "method":"GET",
      "name":"upid_index",
      "parameters":{"additionalProperties":0,"properties":{
        "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
        "upid":{"description":"Task identifier (UPID) as returned when the task started.","type":"string"}
      }},
      "permissions":{"user":"all"},
      "returns":{"items":{"properties":{},"type":"object"},"links":[{"href":"{name}","rel":"child"}],"type":"array"}
     }
    },
    "children":[
    {
     "path":"/nodes/{node}/tasks/{upid}/log",
     "text":"log",
     "leaf":1,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"Read numbered lines of a task's log.",
       "download_allowed":1,
       "method":"GET",
       "name":"read_task_log",
       "parameters":{"additionalProperties":0,"properties":{
         "download":{"description":"Return the whole log as a file instead of JSON lines.","optional":1,"type":"boolean"},
         "limit":{"default":50,"description":"Maximum number of lines to return.","minimum":0,"optional":1,"type":"integer"},
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "start":{"default":0,"description":"Number of lines to skip.","minimum":0,"optional":1,"type":"integer"},
         "upid":{"description":"Task identifier (UPID) as returned when the task started.","type":"string"}
       }},
       "permissions":{"description":"Owners may read their task; others need Sys.Audit on the node.","user":"all"},
       "protected":1,
       "proxyto":"node",
       "returns":{"items":{"properties":{
         "n":{"description":"Line number, from 1.","type":"integer"},
         "t":{"description":"Text of the line.","type":"string"}
        },"type":"object"},"type":"array"}
      }
     }
    },
    {
     "path":"/nodes/{node}/tasks/{upid}/status",
     "text":"status",
     "leaf":1,
     "info":{
      "GET":{
       "allowtoken":1,
       "description":"Show whether a task is still running and how it ended.",
       "method":"GET",
       "name":"read_task_status",
       "parameters":{"additionalProperties":0,"properties":{
         "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"},
         "upid":{"description":"Task identifier (UPID) as returned when the task started.","type":"string"}
       }},
       "permissions":{"description":"Owners may read their task; others need Sys.Audit on the node.","user":"all"},
       "protected":1,
       "proxyto":"node",
       "returns":{"properties":{
         "exitstatus":{"optional":1,"type":"string"},
         "id":{"type":"string"},
         "node":{"type":"string"},
         "pid":{"type":"integer"},
         "pstart":{"type":"integer"},
         "starttime":{"type":"integer"},
         "status":{"enum":["running","stopped"],"type":"string"},
         "type":{"type":"string"},
         "upid":{"type":"string"},
         "user":{"type":"string"}
        },"type":"object"}
      }
     }
    }
    ]
   }
   ]
  },
  {
   "path":"/nodes/{node}/termproxy",
   "text":"termproxy",
   "leaf":1,
   "info":{
    "POST":{
     "allowtoken":1,
     "description":"Open a terminal proxy (xterm.js) to a node's shell; an API token gets a login prompt.",
     "method":"POST",
     "name":"termproxy",
     "parameters":{"additionalProperties":0,"properties":{
       "cmd":{"default":"login","description":"What to run instead of a login (root@pam only).","enum":["ceph_install","login","upgrade"],"optional":1,"type":"string"},
       "cmd-opts":{"default":"","description":"Arguments of cmd, each ended by a NUL character.","optional":1,"requires":"cmd","type":"string"},
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
     }},
     "permissions":{"check":["perm","/nodes/{node}",["Sys.Console"]]},
     "protected":1,
     "returns":{"additionalProperties":0,"properties":{"port":{"description":"Where the proxy listens.","type":"integer"},"ticket":{"description":"Ticket the websocket connection presents.","type":"string"},"upid":{"description":"The proxy's worker task.","type":"string"},"user":{"description":"Who the ticket was made for.","type":"string"}}}
    }
   }
  },
  {
   "path":"/nodes/{node}/version",
   "text":"version",
   "leaf":1,
   "info":{
    "GET":{
     "allowtoken":1,
     "description":"Report the Proxmox VE version installed on a node.",
     "method":"GET",
     "name":"version",
     "parameters":{"additionalProperties":0,"properties":{
       "node":{"description":"Name of the cluster node.","format":"pve-node","type":"string"}
     }},
     "permissions":{"user":"all"},
     "proxyto":"node",
     "returns":{"properties":{
       "release":{"description":"Proxmox VE release on the node, such as 9.1.","type":"string"},
       "repoid":{"description":"Short commit hash the package was built from.","type":"string"},
       "version":{"description":"Version of the pve-manager package on the node.","type":"string"}
      },"type":"object"}
    }
   }
  },
  {
   "path":"/nodes/{node}/vzdump",
   "text":"vzdump",
   "leaf":1,
   "info":{
    "POST":{
     "allowtoken":1,
     "description":"Back up one or more guests of a node to a backup storage, as a task.",
     "method":"POST",
     "name":"vzdump",
     "parameters":{"additionalProperties":0,"properties":{
       "all":{"default":0,"description":"Back up every guest on the node.","optional":1,"type":"boolean"},
       "bwlimit":{"default":0,"description":"I/O bandwidth limit for this operation in KiB/s.","minimum":0,"optional":1,"type":"integer"},
       "compress":{"default":"0","description":"Compression of the archive: 0 for none, or gzip, lzo or zstd.","enum":["0","1","gzip","lzo","zstd"],"optional":1,"type":"string"},
       "dumpdir":{"description":"Directory to write the archives to, instead of a storage.","optional":1,"type":"string"},
       "exclude":{"description":"Guests to leave out when backing up all of them.","format":"pve-vmid-list","optional":1,"type":"string"},
       "exclude-path":{"description":"Shell patterns of container paths to leave out of the archive.","items":{"type":"string"},"optional":1,"type":"array"},
       "fleecing":{"description":"Fleecing image settings for VM backups.","format":"backup-fleecing","optional":1,"type":"string"},
       "ionice":{"default":7,"description":"I/O priority of the backup (8 means idle).","maximum":8,"minimum":0,"optional":1,"type":"integer"},
       "job-id":{"description":"Backup job this run belongs to, for notifications (root@pam only).","maxLength":50,"optional":1,"pattern":"\\S+","type":"string"},
       "lockwait":{"default":180,"description":"Minutes to wait for the global backup lock.","minimum":0,"optional":1,"type":"integer"},
       "mailnotification":{"default":"always","description":"When to send mail (deprecated in favour of notification matchers).","enum":["always","failure"],"optional":1,"type":"string"},
       "mailto":{"description":"Mail addresses or users to notify (deprecated in favour of notification targets).","format":"email-or-username-list","optional":1,"type":"string"},
       "maxfiles":{"description":"Number of backups to keep per guest (deprecated; use prune-backups).","minimum":1,"optional":1,"type":"integer"},
       "mode":{"default":"snapshot","description":"How guests are backed up: live with a snapshot, suspended, or stopped.","enum":["snapshot","suspend","stop"],"optional":1,"type":"string"},
       "node":{"description":"Run only when the call reaches this node.","format":"pve-node","optional":1,"type":"string"},
       "notes-template":{"description":"Notes for each archive; {{cluster}}, {{guestname}}, {{node}} and {{vmid}} are filled in.","maxLength":1024,"optional":1,"requires":"storage","type":"string"},
       "notification-mode":{"default":"auto","description":"Which notification mechanism to use for the result.","enum":["auto","legacy-sendmail","notification-system"],"optional":1,"type":"string"},
       "pbs-change-detection-mode":{"description":"How container backups to Proxmox Backup Server find changed files.","enum":["legacy","data","metadata"],"optional":1,"type":"string"},
       "performance":{"description":"Tuning options for the backup workers.","format":"backup-performance","optional":1,"type":"string"},
       "pigz":{"default":0,"description":"Threads for pigz when compressing with gzip; 0 uses plain gzip.","optional":1,"type":"integer"},
       "pool":{"description":"Back up every guest in this pool.","optional":1,"type":"string"},
       "protected":{"description":"Protect the new archives from pruning and deletion.","optional":1,"requires":"storage","type":"boolean"},
       "prune-backups":{"default":"keep-all=1","description":"Retention rules to apply instead of the storage's own.","format":"prune-backups","optional":1,"type":"string"},
       "quiet":{"default":0,"description":"Print less output.","optional":1,"type":"boolean"},
       "remove":{"default":1,"description":"Prune older archives according to the retention rules afterwards.","optional":1,"type":"boolean"},
       "script":{"description":"Hook script to run at each backup phase.","optional":1,"type":"string"},
       "stdexcludes":{"default":1,"description":"Leave temporary files and logs out of container archives.","optional":1,"type":"boolean"},
       "stdout":{"description":"Write the archive to standard output instead of a file.","optional":1,"type":"boolean"},
       "stop":{"default":0,"description":"Stop backup jobs already running on the node.","optional":1,"type":"boolean"},
       "stopwait":{"default":10,"description":"Minutes to wait for a guest to stop in stop mode.","minimum":0,"optional":1,"type":"integer"},
       "storage":{"description":"Storage to write the archives to.","format":"pve-storage-id","optional":1,"type":"string"},
       "tmpdir":{"description":"Directory for temporary files during the backup.","optional":1,"type":"string"},
       "vmid":{"description":"Guests to back up, separated by commas.","format":"pve-vmid-list","optional":1,"type":"string"},
       "zstd":{"default":1,"description":"Threads for zstd compression; 0 uses half of the cores.","optional":1,"type":"integer"}
     }},
     "permissions":{"description":"Needs VM.Backup on every guest backed up and Datastore.AllocateSpace on the target storage; some options are for root only.","user":"all"},
     "protected":1,
     "proxyto":"node",
     "returns":{"type":"string"}
    }
   }
  }
  ]
 }
 ]
},
{
 "path":"/pools",
 "text":"pools",
 "leaf":1,
 "info":{
  "GET":{
   "allowtoken":1,
   "description":"List resource pools.",
   "method":"GET",
   "name":"index",
   "parameters":{"additionalProperties":0,"properties":{
     "poolid":{"description":"Show only this pool, with its members.","format":"pve-poolid","optional":1,"type":"string"},
     "type":{"description":"With poolid, only members of this kind.","enum":["qemu","lxc","storage"],"optional":1,"requires":"poolid","type":"string"}
   }},
   "permissions":{"description":"Pools appear only where the caller has Pool.Audit.","user":"all"},
   "returns":{"items":{"properties":{
     "comment":{"optional":1,"type":"string"},
     "members":{"items":{"properties":{"id":{"type":"string"},"node":{"type":"string"},"storage":{"optional":1,"type":"string"},"type":{"enum":["qemu","lxc","openvz","storage"],"type":"string"},"vmid":{"optional":1,"type":"integer"}},"type":"object"},"optional":1,"type":"array"},
     "poolid":{"type":"string"}
    },"type":"object"},"links":[{"href":"{poolid}","rel":"child"}],"type":"array"}
  }
 }
},
{
 "path":"/storage",
 "text":"storage",
 "leaf":0,
 "info":{
  "GET":{
   "allowtoken":1,
   "description":"List the storage definitions of the datacenter.",
   "method":"GET",
   "name":"index",
   "parameters":{"additionalProperties":0,"properties":{
     "type":{"description":"Only storages of this backend type.","enum":["btrfs","cephfs","cifs","dir","esxi","iscsi","iscsidirect","lvm","lvmthin","nfs","pbs","rbd","zfs","zfspool"],"optional":1,"type":"string"}
   }},
   "permissions":{"description":"Storages appear only where the caller has Datastore.Audit or Datastore.AllocateSpace.","user":"all"},
   "returns":{"items":{"properties":{"storage":{"type":"string"}},"type":"object"},"links":[{"href":"{storage}","rel":"child"}],"type":"array"}
  }
 },
 "children":[
 {
  "path":"/storage/{storage}",
  "text":"{storage}",
  "leaf":1,
  "info":{
   "GET":{
    "allowtoken":1,
    "description":"Show the definition of one storage.",
    "method":"GET",
    "name":"read",
    "parameters":{"additionalProperties":0,"properties":{
      "storage":{"description":"Storage ID.","format":"pve-storage-id","type":"string"}
    }},
    "permissions":{"check":["perm","/storage/{storage}",["Datastore.Allocate"]]},
    "returns":{"type":"object"}
   }
  }
 }
 ]
},
{
 "path":"/version",
 "text":"version",
 "leaf":1,
 "info":{
  "GET":{
   "allowtoken":1,
   "description":"Report the Proxmox VE version of the cluster.",
   "method":"GET",
   "name":"version",
   "parameters":{"additionalProperties":0,"properties":{}},
   "permissions":{"user":"all"},
   "returns":{"properties":{
     "console":{"description":"Console viewer the datacenter prefers.","enum":["applet","vv","html5","xtermjs"],"optional":1,"type":"string"},
     "release":{"description":"Proxmox VE release, such as 9.1.","type":"string"},
     "repoid":{"description":"Short commit hash the package was built from.","pattern":"[0-9a-fA-F]{8,64}","type":"string"},
     "version":{"description":"Version of the pve-manager package.","type":"string"}
    },"type":"object"}
  }
 }
}
];
