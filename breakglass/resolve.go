package breakglass

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// hiddenPrefixes are the directories the daemon's systemd sandbox hides or
// replaces (PrivateDevices, PrivateTmp, ProtectHome, ProtectProc): what a
// path there names in PVE's view cannot be seen from the daemon, so a path
// there (or one whose symlinks lead there) is unresolved. Devices under
// /dev are resolved through PVE's disk list instead.
var hiddenPrefixes = []string{"/dev", "/tmp", "/var/tmp", "/home", "/root", "/run/user", "/proc"}

func isHidden(p string) bool {
	for _, h := range hiddenPrefixes {
		if within(p, h) {
			return true
		}
	}
	return false
}

// within reports whether p is dir or below it (both clean and absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// errHidden marks a path the sandbox hides.
var errHidden = errors.New("the daemon's sandbox hides it")

// ResolvePath resolves a path as PVE would see it, from inside the daemon's
// sandbox: the longest prefix that exists has its symlinks followed, the
// rest (which does not exist, so cannot be a symlink) is kept. A path in a
// hidden directory, or one that leads there, is an error, and so is one
// whose symlinks cannot be followed (a loop, a directory the daemon may not
// enter).
func ResolvePath(p string) (string, error) {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s is not an absolute path", p)
	}
	if isHidden(p) {
		return "", fmt.Errorf("%s: %w", p, errHidden)
	}
	prefix, rest := p, ""
	for prefix != "/" {
		_, err := os.Lstat(prefix)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("resolve %s: %w", p, err)
		}
		rest = filepath.Join(filepath.Base(prefix), rest)
		prefix = filepath.Dir(prefix)
	}
	real, err := filepath.EvalSymlinks(prefix)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	out := filepath.Join(real, rest)
	if isHidden(out) {
		return "", fmt.Errorf("%s leads to %s: %w", p, out, errHidden)
	}
	return out, nil
}

// charDevice matches kernel names of character devices that guests are
// given (serial ports, GPUs, USB, input, KVM, TUN): no block device can
// have these names, so they need no resolution. Generic SCSI (sg, bsg) and
// tape devices are not here: they reach disks.
var charDevice = regexp.MustCompile(`^/dev/(?:null|zero|full|random|urandom|kvm|fuse|hwrng|kfd|vhost-net|vhost-vsock|net/tun|` +
	`tty(?:S|USB|ACM|AMA)\d+|parport\d+|dri/(?:card|renderD)\d+|nvidia(?:\d+|ctl|-uvm|-uvm-tools|-modeset)|` +
	`bus/usb/\d+/\d+|input/event\d+|vfio/(?:\d+|vfio)|accel/accel\d+)$`)

// mapperName splits a device-mapper name of an LV (vg-lv, with '-' in
// either doubled) into the VG and the LV.
func mapperName(name string) (vg, lv string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '-' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(name) && name[i+1] == '-' {
			b.WriteByte('-')
			i++
			continue
		}
		vg = b.String()
		lv = strings.ReplaceAll(name[i+1:], "--", "-")
		return vg, lv, vg != "" && lv != "" && !strings.Contains(strings.ReplaceAll(name[i+1:], "--", ""), "-")
	}
	return "", "", false
}

// mapperPath is the /dev/mapper name of an LV.
func mapperPath(vg, lv string) string {
	return "/dev/mapper/" + strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}
