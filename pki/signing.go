package pki

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/proxmox-mcp/proxmox-mcp/atomicfile"
)

// The break-glass signing key (docs/breakglass.md): an Ed25519 key in a
// PKCS #8 PEM file that only root reads (0600, in a directory of root's
// alone). The helper signs approved requests with it and the runner
// verifies them with its public half; the daemon never holds it.

// CreateSigningKey writes a new signing key at path unless one is there,
// and reports whether it made one.
func CreateSigningKey(path string) (bool, error) {
	if _, err := ReadSigningKey(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, writeSigningKey(path, false)
}

// RotateSigningKey replaces the signing key at path with a new one:
// requests signed with the old key and not yet run are refused by the
// runner from then on (their requesters ask again).
func RotateSigningKey(path string) error { return writeSigningKey(path, true) }

func writeSigningKey(path string, replace bool) error {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("pki: generate the signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("pki: encode the signing key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	d, err := atomicfile.OpenDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("pki: the signing key's directory: %w", err)
	}
	defer d.Close()
	if err := rootsDir(d); err != nil {
		return err
	}
	if replace {
		err = d.WriteFile(filepath.Base(path), data, 0o600)
	} else {
		err = d.CreateFile(filepath.Base(path), data, 0o600)
	}
	if err != nil {
		return fmt.Errorf("pki: write the signing key: %w", err)
	}
	return nil
}

// ReadSigningKey reads the signing key, refusing one that anybody but its
// owner (root) could read or replace.
func ReadSigningKey(path string) (ed25519.PrivateKey, error) {
	d, err := atomicfile.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("pki: the signing key's directory: %w", err)
	}
	defer d.Close()
	if err := rootsDir(d); err != nil {
		return nil, err
	}
	f, err := d.Open(filepath.Base(path))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pki: there is no break-glass signing key at %s (the installer makes it; proxmox-mcp breakglass rotate-key makes a new one): %w", path, err)
		}
		return nil, fmt.Errorf("pki: the signing key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		return nil, fmt.Errorf("pki: the signing key %s must be uid %d's alone (0600); it is uid %d mode %04o", path, os.Geteuid(), st.Uid, st.Mode&0o7777)
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("pki: the signing key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("pki: %s holds no PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("pki: %s is not an Ed25519 key", path)
	}
	return key, nil
}

// rootsDir refuses a directory that anybody but its owner, this
// process's user, can reach.
func rootsDir(d *atomicfile.Dir) error {
	if err := d.CheckPrivate(); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}
