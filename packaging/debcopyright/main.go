// Command debcopyright writes the machine-readable Debian copyright file
// (DEP-5) of the proxmox-mcp package. The binary is one statically linked
// Go program, so besides the project itself it carries the Go standard
// library and every module it links: the file lists each of them with the
// licence found in its LICENSE file in the module cache, as `go mod
// vendor` would lay them out under vendor/. A module whose licence it
// cannot tell fails the build, so a new dependency is never shipped
// without its licence being accounted for.
//
//	go run ./packaging/debcopyright [-pkg ./cmd/proxmox-mcp] [-holder NAME] [-years 2025-2026] [-license FILE]
//
// GOOS, GOARCH and CGO_ENABLED of the environment choose the build whose
// dependencies are listed.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

func main() {
	pkg := flag.String("pkg", "./cmd/proxmox-mcp", "the Go package of the binary")
	holder := flag.String("holder", "The proxmox-mcp authors", "copyright holder of the project")
	years := flag.String("years", "", "copyright years of the project (e.g. 2025-2026)")
	license := flag.String("license", "LICENSE", "the project's licence file; absent: the project has none yet")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: debcopyright [-pkg PKG] [-holder NAME] [-years YEARS] [-license FILE]")
		os.Exit(2)
	}
	mods, err := linkedModules(*pkg)
	if err == nil {
		var std module
		std, err = stdlib()
		mods = append([]module{std}, mods...)
	}
	var project *licenseFile
	if err == nil {
		project, err = projectLicense(*license)
	}
	if err == nil {
		err = write(os.Stdout, project, *holder, *years, mods)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "debcopyright:", err)
		os.Exit(1)
	}
}

// module is one body of code linked into the binary.
type module struct {
	Path, Version, Dir string
	// files is where the copyright file says it is (vendor/PATH/*).
	files string
	// licenses are its licence files, classified.
	licenses []licenseFile
	// notices are further licence notices of the module that are not
	// classified (inventories of third-party code), named in a comment.
	notices []string
}

type licenseFile struct {
	name      string
	ids       []string // DEP-5 short names
	copyright []string
}

// linkedModules lists the modules the package links, without the main
// module, in path order, with their licences.
func linkedModules(pkg string) ([]module, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}\t{{.Version}}\t{{.Dir}}{{end}}{{end}}", pkg)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %w", pkg, err)
	}
	seen := map[string]bool{}
	var mods []module
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		if f[2] == "" {
			return nil, fmt.Errorf("module %s %s is not in the module cache (run go mod download)", f[0], f[1])
		}
		m := module{Path: f[0], Version: f[1], Dir: f[2], files: "vendor/" + f[0] + "/*"}
		if err := m.readLicenses(); err != nil {
			return nil, err
		}
		mods = append(mods, m)
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Path < mods[j].Path })
	return mods, nil
}

// stdlib is the Go standard library and runtime of the toolchain.
func stdlib() (module, error) {
	out, err := exec.Command("go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return module{}, fmt.Errorf("go env: %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return module{}, fmt.Errorf("go env GOROOT GOVERSION: %q", out)
	}
	m := module{Path: "the Go standard library and runtime", Version: f[1], Dir: f[0], files: "go/src/*"}
	return m, m.readLicenses()
}

// The names of licence files: the module's own licence, and further
// notices that are inventories of third-party code.
var (
	licenseName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|unlicense)([-_.][a-z0-9_.-]+)?$`)
	inventory   = regexp.MustCompile(`(?i)3rd[-_]?party|third[-_]?party|logo`)
)

func (m *module) readLicenses() error {
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return fmt.Errorf("%s: %w", m.Path, err)
	}
	for _, e := range entries {
		if e.IsDir() || !licenseName.MatchString(e.Name()) || strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		if inventory.MatchString(e.Name()) {
			m.notices = append(m.notices, e.Name())
			continue
		}
		text, err := os.ReadFile(filepath.Join(m.Dir, e.Name()))
		if err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
		ids := classify(string(text))
		if len(ids) == 0 {
			return fmt.Errorf("%s %s: cannot tell the licence of %s; classify it in packaging/debcopyright", m.Path, m.Version, e.Name())
		}
		m.licenses = append(m.licenses, licenseFile{name: e.Name(), ids: ids, copyright: copyrights(string(text))})
	}
	if len(m.licenses) == 0 {
		return fmt.Errorf("%s %s: no licence file in %s", m.Path, m.Version, m.Dir)
	}
	return nil
}

// projectLicense reads the project's own licence file; nil when there is
// none.
func projectLicense(path string) (*licenseFile, error) {
	text, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids := classify(string(text))
	if len(ids) == 0 {
		return nil, fmt.Errorf("cannot tell the licence of %s; classify it in packaging/debcopyright", path)
	}
	return &licenseFile{name: filepath.Base(path), ids: ids, copyright: copyrights(string(text))}, nil
}

// classify names the licences a licence file holds, by the phrases each
// licence's text is known by; none when it recognizes none.
func classify(text string) []string {
	t := strings.Join(strings.Fields(text), " ")
	has := func(s ...string) bool {
		for _, x := range s {
			if !strings.Contains(t, x) {
				return false
			}
		}
		return true
	}
	var ids []string
	if has("Apache License", "Version 2.0") {
		ids = append(ids, "Apache-2.0")
	}
	if has("Mozilla Public License", "2.0") {
		ids = append(ids, "MPL-2.0")
	}
	if has("Redistribution and use in source and binary forms") {
		if has("endorse or promote") {
			ids = append(ids, "BSD-3-clause")
		} else {
			ids = append(ids, "BSD-2-clause")
		}
	}
	if has("Permission is hereby granted, free of charge") {
		ids = append(ids, "Expat")
	}
	if has("Permission to use, copy, modify, and") && has("distribute this software for any purpose with or without fee") {
		ids = append(ids, "ISC")
	}
	if has("This is free and unencumbered software released into the public domain") {
		ids = append(ids, "Unlicense")
	} else if has("dedicated", "to the public domain") {
		ids = append(ids, "public-domain")
	}
	return ids
}

var (
	copyrightLine = regexp.MustCompile(`(?i)^\s*(?:copyright|©)\s*(?:\(c\)|©)?\s*(.*\S)\s*$`)
	notHolder     = regexp.MustCompile(`(?i)\[yyyy\]|notice|licen[cs]e|holder|owner|staring|^$`)
	rightsClause  = regexp.MustCompile(`(?i)[.,]?\s*all rights reserved\.?$`)
)

// copyrights are the copyright statements of a licence file, without the
// word Copyright and "All rights reserved".
func copyrights(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		m := copyrightLine.FindStringSubmatch(line)
		if m == nil || notHolder.MatchString(m[1]) {
			continue
		}
		c := strings.TrimSuffix(rightsClause.ReplaceAllString(m[1], ""), ".")
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func write(w io.Writer, project *licenseFile, holder, years string, mods []module) error {
	var b bytes.Buffer
	used := map[string]bool{}
	b.WriteString(`Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: proxmox-mcp
Upstream-Contact: https://github.com/proxmox-mcp/proxmox-mcp/issues
Source: https://github.com/proxmox-mcp/proxmox-mcp
Comment: /usr/bin/proxmox-mcp is a statically linked Go program. Besides the
 project's own code it contains the Go standard library and runtime and the Go
 modules listed below, each under its own licence, at the version the project's
 go.sum pins; their paths are those "go mod vendor" gives them. This file is
 written at build time from the licence files of exactly the modules linked
 (packaging/debcopyright).

`)
	statement := strings.TrimSpace(years + " " + holder)
	projectID := "not-yet-licensed"
	if project != nil {
		projectID = strings.Join(project.ids, " and ")
		if len(project.copyright) > 0 {
			statement = strings.Join(project.copyright, "\n ")
		}
	}
	fmt.Fprintf(&b, "Files: *\nCopyright: %s\nLicense: %s\n\n", statement, projectID)
	for _, id := range strings.Split(projectID, " and ") {
		used[id] = true
	}
	for _, m := range mods {
		var ids, holders, names []string
		for _, l := range m.licenses {
			names = append(names, l.name)
			for _, id := range l.ids {
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
				used[id] = true
			}
			for _, c := range l.copyright {
				if !slices.Contains(holders, c) {
					holders = append(holders, c)
				}
			}
		}
		if len(holders) == 0 {
			holders = []string{"The authors of " + m.Path}
		}
		comment := fmt.Sprintf("%s %s; licence: %s", m.Path, m.Version, strings.Join(names, ", "))
		if len(m.notices) > 0 {
			comment += fmt.Sprintf("; the module's %s names the licences of third-party code within it", strings.Join(m.notices, ", "))
		}
		fmt.Fprintf(&b, "Files: %s\nCopyright: %s\nLicense: %s\nComment: %s\n\n",
			m.files, strings.Join(holders, "\n "), strings.Join(ids, " and "), wrap("Comment", comment))
	}
	ids := make([]string, 0, len(used))
	for id := range used {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i, id := range ids {
		text, ok := licenseTexts[id]
		if !ok {
			return fmt.Errorf("no text for licence %s", id)
		}
		fmt.Fprintf(&b, "License: %s\n%s\n", id, paragraph(text))
		if i < len(ids)-1 {
			b.WriteString("\n")
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// wrap folds the value of a field into continuation lines of at most 79
// columns (unless one word is longer); field is the field's name.
func wrap(field, s string) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		width := 78 // after the continuation line's space
		if len(lines) == 0 {
			width = 79 - len(field) - 2
		}
		if line != "" && len(line)+1+len(word) > width {
			lines = append(lines, line)
			line = word
			continue
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return strings.Join(append(lines, line), "\n ")
}

// paragraph formats a licence text as the continuation lines of a License
// field: each line indented by one space, blank lines as " .".
func paragraph(text string) string {
	var out []string
	for _, line := range strings.Split(strings.Trim(text, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			out = append(out, " .")
			continue
		}
		out = append(out, " "+line)
	}
	return strings.Join(out, "\n")
}
