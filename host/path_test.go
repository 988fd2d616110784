package host

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanPath(t *testing.T) {
	long := "/" + strings.Repeat("a", 256)
	tooLong := strings.Repeat("/"+strings.Repeat("b", 200), 21)
	for _, tc := range []struct {
		in   string
		rule string // "" when accepted
	}{
		{"/", ""},
		{"/var/log/syslog", ""},
		{"/var/log/pve/tasks/index", ""},
		{"/srv/données/é", ""},
		{"", "must not be empty"},
		{"var/log", "must be absolute"},
		{"/var/log/", `must not end with /; did you mean "/var/log"`},
		{"/var//log", "empty element"},
		{"/var/log/../../etc/shadow", `the element ".."`},
		{"/var/./log", `the element "."`},
		{"/var/log/..", `the element ".."`},
		{"/var/log/a\x00b", "control character U+0000"},
		{"/var/log/a\nb", "control character U+000A"},
		{"/var/log/a\x1b[31m", "control character U+001B"},
		{"/var/log/a\u0085", "control character U+0085"},
		{"/var/log/\xff", "valid UTF-8"},
		{long, "element of 256 bytes"},
		{tooLong, "at most 4095"},
	} {
		got, err := CleanPath("path", tc.in)
		if tc.rule == "" {
			if err != nil || got != tc.in {
				t.Errorf("CleanPath(%q) = %q, %v; want it accepted as is", tc.in, got, err)
			}
			continue
		}
		var pe *PathError
		if !errors.As(err, &pe) || pe.Field != "path" || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("CleanPath(%q) = %q, %v; want a PathError of field path saying %q", tc.in, got, err, tc.rule)
		}
	}
}

func TestCleanName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", "a\x00", strings.Repeat("x", 256)} {
		if _, err := CleanName("after", bad); err == nil || !strings.HasPrefix(err.Error(), "after") {
			t.Errorf("CleanName(%q) = %v; want an error naming the field after", bad, err)
		}
	}
	if n, err := CleanName("after", "syslog.1.gz"); err != nil || n != "syslog.1.gz" {
		t.Errorf("CleanName(syslog.1.gz) = %q, %v", n, err)
	}
}

// Whatever CleanPath accepts is what path.Clean would make of it, without
// a . or .. element or a character that could hide in a message.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "/var/log", "/a/../b", "//", "/a\x00", "/é/\u0085", "rel", "/a/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := CleanPath("path", p)
		if err != nil {
			if got != "" {
				t.Fatalf("refused %q but returned %q", p, got)
			}
			return
		}
		if got != p || path.Clean(p) != p || !path.IsAbs(p) || !utf8.ValidString(p) || len(p) > maxPath {
			t.Fatalf("accepted %q, which is not canonical", p)
		}
		for _, elem := range strings.Split(p, "/") {
			if elem == ".." || elem == "." || len(elem) > maxName {
				t.Fatalf("accepted %q with the element %q", p, elem)
			}
		}
		for _, r := range p {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("accepted %q with the control character %U", p, r)
			}
		}
	})
}
