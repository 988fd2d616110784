package booted

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// cgroups are a container's own cgroup, one directory in each hierarchy
// systemd-nspawn places its payload in: the unified (cgroup2) one and, on
// a host that mounts both, the named systemd one. With --keep-unit, nspawn
// makes "payload" and "supervisor" under the cgroup it was started in;
// containers started from the same process (the test binary) shared them,
// and each container's systemd removed, as its own, cgroups the other had
// just made: a unit of one failed to start, "Failed to spawn executor: No
// such file or directory", and the system came up degraded. Each nspawn
// now starts in a cgroup made for it under the test process's own.
type cgroups []string

// newCgroups makes name under the test process's cgroup in each hierarchy.
func newCgroups(name string) (cgroups, error) {
	parents, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	var made cgroups
	for _, p := range parents {
		dir := filepath.Join(p, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			made.remove(time.Second) //nolint:errcheck // the error reported is the mkdir's
			return nil, fmt.Errorf("a cgroup for the container: %w", err)
		}
		made = append(made, dir)
	}
	return made, nil
}

// procs are the files a process writes its pid into to join the cgroups.
func (c cgroups) procs() []string {
	files := make([]string, len(c))
	for i, dir := range c {
		files[i] = filepath.Join(dir, "cgroup.procs")
	}
	return files
}

// remove deletes the cgroups, children first (nspawn's payload and
// supervisor, and what the container's systemd left), retrying for up to
// wait while their last processes exit.
func (c cgroups) remove(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := c.removeOnce()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c cgroups) removeOnce() error {
	var errs []error
	for _, root := range c {
		var dirs []string
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ownCgroups is the directory of this process's cgroup in the unified
// hierarchy and, where it is mounted, in the named systemd one.
func ownCgroups() ([]string, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-id:controllers:path
		id, rest, _ := strings.Cut(sc.Text(), ":")
		controllers, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		var mnt string
		switch {
		case id == "0" && controllers == "":
			mnt = mounts.unified
		case controllers == "name=systemd":
			mnt = mounts.systemd
		}
		if mnt != "" {
			dirs = append(dirs, filepath.Join(mnt, path))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(dirs) == 0 || mounts.unified == "" {
		return nil, errors.New("no unified (cgroup2) hierarchy is mounted, which systemd 257 needs")
	}
	return dirs, nil
}

type cgroupMountPoints struct{ unified, systemd string }

// cgroupMounts finds the mount points of the cgroup2 hierarchy and of the
// named systemd v1 one in /proc/self/mountinfo.
func cgroupMounts() (cgroupMountPoints, error) {
	var m cgroupMountPoints
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return m, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mount-point options [optional...] - fstype source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(after) < 3 {
			continue
		}
		switch {
		case after[0] == "cgroup2" && m.unified == "":
			m.unified = fields[4]
		case after[0] == "cgroup" && m.systemd == "" && slices.Contains(strings.Split(after[2], ","), "name=systemd"):
			m.systemd = fields[4]
		}
	}
	return m, sc.Err()
}
