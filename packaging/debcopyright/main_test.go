package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"apache", "Apache License\n   Version 2.0, January 2004", []string{"Apache-2.0"}},
		{"mpl", "Mozilla Public License Version 2.0\n==================", []string{"MPL-2.0"}},
		{"bsd-3", "Redistribution and use in source and binary\nforms ... Neither the name ... may be used to endorse or promote products", []string{"BSD-3-clause"}},
		{"bsd-2", "Redistribution and use in source and binary forms, with or without modification", []string{"BSD-2-clause"}},
		{"expat", "Permission is hereby granted, free of charge, to any person", []string{"Expat"}},
		{"isc", "Permission to use, copy, modify, and/or distribute this software for any\npurpose with or without fee is hereby granted", []string{"ISC"}},
		{"isc without and/or", "Permission to use, copy, modify, and distribute this software for any purpose with or without fee", []string{"ISC"}},
		{"sqlite", "All of the code and documentation in SQLite has been dedicated to the public\ndomain by the authors.", []string{"public-domain"}},
		{"unlicense", "This is free and unencumbered software released into the public domain.", []string{"Unlicense"}},
		{"apache with bsd files", "Apache License Version 2.0 ... Some files carry the BSD license: Redistribution and use in source and binary forms ... endorse or promote", []string{"Apache-2.0", "BSD-3-clause"}},
		{"unknown", "All rights reserved. Do what you want.", nil},
	} {
		if got := classify(c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCopyrights(t *testing.T) {
	text := `Copyright (c) 2009 The Go Authors. All rights reserved.
Copyright © 2012 fsnotify Authors.
   Copyright [yyyy] [name of copyright owner]
Redistributions of source code must retain the above copyright notice,
      copyright license to reproduce, prepare Derivative Works of,
Copyright (C) 2016-2022 Matt Layher
Copyright (c) 2009 The Go Authors. All rights reserved.`
	want := []string{"2009 The Go Authors", "2012 fsnotify Authors", "2016-2022 Matt Layher"}
	if got := copyrights(text); !slices.Equal(got, want) {
		t.Errorf("copyrights = %q, want %q", got, want)
	}
}

func TestReadLicensesRefusesAnUnknownLicence(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "LICENSE"), []byte("Use it, but be nice."), 0o644); err != nil {
		t.Fatal(err)
	}
	m := module{Path: "example.com/odd", Version: "v1.0.0", Dir: dir}
	err := m.readLicenses()
	if err == nil || !strings.Contains(err.Error(), "example.com/odd") {
		t.Fatalf("err = %v, want one naming the module", err)
	}
	m = module{Path: "example.com/none", Version: "v1.0.0", Dir: t.TempDir()}
	if err := m.readLicenses(); err == nil {
		t.Fatal("a module without a licence file was accepted")
	}
}

func TestReadLicensesNamesInventories(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"LICENSE":               "Permission is hereby granted, free of charge\nCopyright (c) 2020 A. Author",
		"LICENSE-3RD-PARTY.md":  "Apache License Version 2.0",
		"LICENSE-LOGO":          "https://example.com/logo.png",
		"license_test.go":       "package x",
		"LICENSE-SQLITE":        "dedicated to the public domain",
		"NOTICE":                "unrelated",
		"licenses/whatever.txt": "",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := module{Path: "example.com/m", Version: "v1.0.0", Dir: dir}
	if err := m.readLicenses(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range m.licenses {
		names = append(names, l.name)
	}
	if !slices.Equal(names, []string{"LICENSE", "LICENSE-SQLITE"}) {
		t.Errorf("licence files %v", names)
	}
	if !slices.Equal(m.notices, []string{"LICENSE-3RD-PARTY.md", "LICENSE-LOGO"}) {
		t.Errorf("notices %v", m.notices)
	}
}

// The file of the real binary: every License short name of a Files
// paragraph has its standalone paragraph, and each one is used.
func TestWriteTheRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the module's dependencies with go list")
	}
	t.Chdir("../..")
	mods, err := linkedModules("./cmd/proxmox-mcp")
	if err != nil {
		t.Fatal(err)
	}
	std, err := stdlib()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := write(&b, nil, "The proxmox-mcp authors", "2026", append([]module{std}, mods...)); err != nil {
		t.Fatal(err)
	}
	paras := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n\n")
	if !strings.HasPrefix(paras[0], "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n") {
		t.Errorf("header: %q", paras[0])
	}
	used, standalone := map[string]bool{}, map[string]bool{}
	files := 0
	for _, p := range paras[1:] {
		fields := map[string]string{}
		for _, line := range strings.Split(p, "\n") {
			if strings.HasPrefix(line, " ") {
				continue
			}
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				t.Errorf("malformed line %q in\n%s", line, p)
			}
			fields[k] = v
		}
		if _, ok := fields["Files"]; ok {
			files++
			if fields["Copyright"] == "" || fields["License"] == "" {
				t.Errorf("paragraph without Copyright or License:\n%s", p)
			}
			for _, id := range strings.Split(fields["License"], " and ") {
				used[id] = true
			}
			continue
		}
		if standalone[fields["License"]] {
			t.Errorf("two standalone paragraphs for %s", fields["License"])
		}
		standalone[fields["License"]] = true
	}
	for id := range used {
		if !standalone[id] {
			t.Errorf("licence %s has no standalone paragraph", id)
		}
	}
	for id := range standalone {
		if !used[id] {
			t.Errorf("standalone paragraph %s is not used", id)
		}
	}
	if files != len(mods)+2 {
		t.Errorf("%d Files paragraphs, want %d (the project, the standard library and %d modules)", files, len(mods)+2, len(mods))
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if len(line) > 80 {
			t.Errorf("line over 80 columns: %q", line)
		}
	}
}
