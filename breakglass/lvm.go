package breakglass

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LVM looks up and removes logical volumes.
type LVM interface {
	// Lookup describes the volume vg/lv.
	Lookup(ctx context.Context, volume string) (LV, error)
	// Remove removes vg/lv if its UUID is still uuid.
	Remove(ctx context.Context, volume, uuid string) error
}

// LV is a logical volume as lvs reports it.
type LV struct {
	VG, Name, UUID string
	Size           int64
	// Open is set when something holds it open (mounted, a guest's disk).
	Open bool
}

// LVMTools runs LVM's own commands from a fixed directory with a fixed
// environment.
type LVMTools struct {
	// Dir holds lvs and lvremove (/usr/sbin when empty).
	Dir string
	// Timeout bounds each command (60 s when zero).
	Timeout time.Duration
}

func (l LVMTools) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	dir := l.Dir
	if dir == "" {
		dir = "/usr/sbin"
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(dir, name), args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "LVM_SUPPRESS_FD_WARNINGS=1"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("breakglass: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// Lookup runs lvs for the volume.
func (l LVMTools) Lookup(ctx context.Context, volume string) (LV, error) {
	out, err := l.run(ctx, "lvs", "--reportformat", "json", "--units", "b", "--nosuffix", "-o", "vg_name,lv_name,lv_uuid,lv_size,lv_attr", volume)
	if err != nil {
		return LV{}, targetErr("the logical volume %s: %v", volume, err)
	}
	return parseLVs(out, volume)
}

// parseLVs reads lvs's JSON report of one volume.
func parseLVs(out []byte, volume string) (LV, error) {
	var rep struct {
		Report []struct {
			LV []struct {
				VG   string `json:"vg_name"`
				Name string `json:"lv_name"`
				UUID string `json:"lv_uuid"`
				Size string `json:"lv_size"`
				Attr string `json:"lv_attr"`
			} `json:"lv"`
		} `json:"report"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return LV{}, fmt.Errorf("breakglass: lvs's report of %s: %w", volume, err)
	}
	if len(rep.Report) != 1 || len(rep.Report[0].LV) != 1 {
		return LV{}, targetErr("lvs reports no single logical volume %s", volume)
	}
	v := rep.Report[0].LV[0]
	if v.VG+"/"+v.Name != volume || v.UUID == "" {
		return LV{}, targetErr("lvs reports %s/%s (uuid %q) for %s", v.VG, v.Name, v.UUID, volume)
	}
	size, err := strconv.ParseInt(v.Size, 10, 64)
	if err != nil {
		return LV{}, fmt.Errorf("breakglass: lvs's size %q of %s: %w", v.Size, volume, err)
	}
	return LV{VG: v.VG, Name: v.Name, UUID: v.UUID, Size: size, Open: len(v.Attr) > 5 && v.Attr[5] == 'o'}, nil
}

// Remove checks the UUID once more, then runs lvremove.
func (l LVMTools) Remove(ctx context.Context, volume, uuid string) error {
	lv, err := l.Lookup(ctx, volume)
	if err != nil {
		return err
	}
	if lv.UUID != uuid {
		return targetErr("%s has uuid %s now, %s when approved: it is another volume", volume, lv.UUID, uuid)
	}
	_, err = l.run(ctx, "lvremove", "--yes", volume)
	return err
}
