package schema

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// formatCheck validates one value of a named format; the error text is PVE's.
type formatCheck func(v string) error

// Regular expressions of PVE's named formats (pve-common, pve-access-control,
// pve-storage), anchored as PVE anchors them.
var (
	reConfigID   = regexp.MustCompile(`^(?i:[a-z][a-z0-9_-]+)$`)
	reStorageID  = regexp.MustCompile(`^(?i:[a-z][a-z0-9\-_.]*[a-z0-9])$`)
	reBridgeID   = regexp.MustCompile(`^[-_.\w\d]+$`)
	reVMID       = regexp.MustCompile(`^[1-9][0-9]{2,8}$`)
	reNode       = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)
	reMAC        = regexp.MustCompile(`^(?i:[a-f0-9][02468ace](?::[a-f0-9]{2}){5})$`)
	reDNSName    = regexp.MustCompile(`^(([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`)
	reIface      = regexp.MustCompile(`^(?i:[a-z][a-z0-9_]{1,20}([:.]\d+)?)$`)
	reURLEncoded = regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`)
	reLDAPAttr   = regexp.MustCompile(`^[a-zA-Z0-9]+$`)
	reTag        = regexp.MustCompile(`^(?i:[a-z0-9_][a-z0-9_\-+.]*)$`)
	reTaskStatus = regexp.MustCompile(`^(?i:ok|error|warning|unknown)$`)
	reAccessName = regexp.MustCompile(`^[A-Za-z0-9.\-_]+$`)
	rePoolID     = regexp.MustCompile(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`)
	reRealm      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.\-_]+$`)
	reUserID     = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+$`)
	reTokenID    = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+![A-Za-z][A-Za-z0-9.\-_]+$`)
	reVolumeID   = regexp.MustCompile(`^(?i:[a-z][a-z0-9\-_.]*[a-z0-9]):.+$`)
	reDiskSize   = regexp.MustCompile(`^\d+(\.\d+)?[KMGT]?$`)
	reEmail      = regexp.MustCompile(`^[\w+\-~]+(\.[\w+\-~]+)*@[a-zA-Z0-9\-]+(\.[a-zA-Z0-9\-]+)*$`)
	reEmailUser  = regexp.MustCompile(`^[\w+\-~.@]+$`)
	reHAResource = regexp.MustCompile(`^[a-z]+:\S+$`)
)

// namedFormat returns the check of a named format PVE registers, or nil for
// formats this package does not check (PVE still does).
func namedFormat(name string) formatCheck {
	switch name {
	case "string":
		return func(string) error { return nil }
	case "pve-configid":
		return matchOr(reConfigID, "invalid configuration ID '%s'")
	case "pve-storage-id":
		return matchOr(reStorageID, "storage ID '%s' contains illegal characters")
	case "pve-bridge-id":
		return matchOr(reBridgeID, "invalid bridge ID '%s'")
	case "pve-vmid":
		return matchOr(reVMID, "value does not look like a valid VM ID")
	case "pve-node":
		return matchOr(reNode, "value does not look like a valid node name")
	case "mac-addr":
		return matchOr(reMAC, "value does not look like a valid unicast MAC address")
	case "dns-name":
		return matchOr(reDNSName, "value does not look like a valid DNS name")
	case "pve-iface":
		return matchOr(reIface, "invalid network interface name '%s'")
	case "urlencoded":
		return matchOr(reURLEncoded, "invalid urlencoded string: %s")
	case "ldap-simple-attr":
		return matchOr(reLDAPAttr, "value '%s' does not look like a simple ldap attribute name")
	case "pve-tag":
		return matchOr(reTag, "invalid characters in tag")
	case "pve-task-status-type":
		return matchOr(reTaskStatus, "invalid status '%s'")
	case "pve-groupid":
		return matchOr(reAccessName, "group name '%s' contains invalid characters")
	case "pve-roleid":
		return matchOr(reAccessName, "role name '%s' contains invalid characters")
	case "pve-poolid":
		return matchOr(rePoolID, "pool name '%s' contains invalid characters")
	case "pve-realm":
		return matchOr(reRealm, "realm '%s' contains invalid characters")
	case "pve-userid":
		return checkUserID
	case "pve-tokenid":
		return matchOr(reTokenID, "value '%s' does not look like a valid token ID")
	case "pve-volume-id":
		return matchOr(reVolumeID, "unable to parse volume ID '%s'")
	case "pve-volume-id-or-qm-path", "pve-volume-id-or-absolute-path":
		return checkVolumeOrPath
	case "disk-size":
		return matchOr(reDiskSize, "value does not look like a valid disk size: %s")
	case "email":
		return matchOr(reEmail, "value does not look like a valid email address")
	case "email-or-username":
		return checkEmailOrUser
	case "pve-ha-resource-id":
		return matchOr(reHAResource, "value does not look like a valid ha resource id")
	case "pve-ha-resource-or-vm-id":
		return checkHAResourceOrVMID
	case "ipv4":
		return checkIP(4, "value does not look like a valid IPv4 address")
	case "ipv6":
		return checkIP(6, "value does not look like a valid IPv6 address")
	case "ip":
		return checkIP(0, "value does not look like a valid IP address")
	case "address":
		return checkAddress
	case "ipv4mask":
		return checkIPv4Mask
	case "CIDRv4":
		return checkCIDR(4, "value does not look like a valid IPv4 CIDR network")
	case "CIDRv6":
		return checkCIDR(6, "value does not look like a valid IPv6 CIDR network")
	case "CIDR":
		return checkCIDR(0, "value does not look like a valid CIDR network")
	case "pve-ipv4-config":
		return keywordOr([]string{"dhcp", "manual"}, checkCIDR(4, ""), "value does not look like a valid ipv4 network configuration")
	case "pve-ipv6-config":
		return keywordOr([]string{"auto", "dhcp", "manual"}, checkCIDR(6, ""), "value does not look like a valid ipv6 network configuration")
	case "pve-vlan-id-or-range":
		return checkVLANRange
	case "pve-startup-order":
		return checkStartupOrder
	case "storage-pair":
		return checkIDPair(reStorageID)
	case "bridge-pair":
		return checkIDPair(reBridgeID)
	}
	return nil
}

// FormatChecked reports whether this package checks the named format,
// including its -list and -opt variants.
func FormatChecked(format string) bool {
	base, _ := splitFormat(format)
	return namedFormat(base) != nil
}

// splitFormat separates the -list and -opt suffixes PVE adds to any format
// registered as a function: "pve-vmid-list" is a list of pve-vmid.
func splitFormat(format string) (base, kind string) {
	for _, suffix := range []string{"-list", "-opt"} {
		if b, ok := strings.CutSuffix(format, suffix); ok && namedFormat(b) != nil {
			return b, suffix[1:]
		}
	}
	return format, ""
}

// checkFormat validates v against a named format the way PVE's
// check_format does: a -list is split with PVE's split_list and every item
// checked; an -opt value is checked only when not empty.
func checkFormat(format, v string) error {
	base, kind := splitFormat(format)
	check := namedFormat(base)
	if check == nil {
		return nil
	}
	switch kind {
	case "list":
		for _, item := range SplitList(v) {
			if err := check(item); err != nil {
				return err
			}
		}
		return nil
	case "opt":
		if v == "" {
			return nil
		}
	}
	return check(v)
}

// SplitList splits a list value as PVE's split_list does: on NUL if the
// value holds one, otherwise on commas, semicolons and white space.
func SplitList(v string) []string {
	if strings.ContainsRune(v, 0) {
		return strings.Split(v, "\x00")
	}
	return strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
	})
}

func matchOr(re *regexp.Regexp, msg string) formatCheck {
	return func(v string) error {
		if re.MatchString(v) {
			return nil
		}
		if strings.Contains(msg, "%s") {
			return fmt.Errorf(msg, v)
		}
		return fmt.Errorf("%s", msg)
	}
}

func checkUserID(v string) error {
	if len(v) > 64 {
		return fmt.Errorf("user ID '%s' is too long (> 64 characters)", v)
	}
	if !reUserID.MatchString(v) {
		return fmt.Errorf("value '%s' does not look like a valid user name", v)
	}
	return nil
}

func checkVolumeOrPath(v string) error {
	if v == "none" || v == "cdrom" || strings.HasPrefix(v, "/") || reVolumeID.MatchString(v) {
		return nil
	}
	return fmt.Errorf("invalid volume ID or path '%s'", v)
}

func checkEmailOrUser(v string) error {
	if reEmail.MatchString(v) || reEmailUser.MatchString(v) {
		return nil
	}
	return fmt.Errorf("value does not look like a valid email address or user name")
}

func checkHAResourceOrVMID(v string) error {
	if reVMID.MatchString(v) || reHAResource.MatchString(v) {
		return nil
	}
	return fmt.Errorf("value does not look like a valid ha resource id")
}

// checkIP accepts an IPv4 (version 4), IPv6 (6) or either (0) address in
// the textual forms PVE's regular expressions accept (no zone, no brackets).
func checkIP(version int, msg string) formatCheck {
	return func(v string) error {
		if ipOK(v, version) {
			return nil
		}
		return fmt.Errorf("%s", msg)
	}
}

func ipOK(v string, version int) bool {
	if strings.Contains(v, "%") {
		return false
	}
	addr, err := netip.ParseAddr(v)
	if err != nil {
		return false
	}
	switch version {
	case 4:
		return addr.Is4()
	case 6:
		return addr.Is6()
	}
	return true
}

func checkAddress(v string) error {
	if ipOK(v, 0) || reDNSName.MatchString(v) {
		return nil
	}
	return fmt.Errorf("value does not look like a valid address: %s", v)
}

func checkIPv4Mask(v string) error {
	addr, err := netip.ParseAddr(v)
	if err == nil && addr.Is4() {
		b := addr.As4()
		m := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		if m == 0 || (^m)&(^m+1) == 0 { // ones then zeros
			return nil
		}
	}
	return fmt.Errorf("value does not look like a valid IP netmask")
}

// checkCIDR accepts ADDRESS/BITS with PVE's prefix bounds: more than 7 and
// at most 32 (IPv4) or 128 (IPv6).
func checkCIDR(version int, msg string) formatCheck {
	return func(v string) error {
		addr, bitsText, ok := strings.Cut(v, "/")
		if ok {
			bits, err := strconv.Atoi(bitsText)
			if err == nil && bitsText[0] != '+' && bitsText[0] != '-' {
				switch {
				case (version == 4 || version == 0) && ipOK(addr, 4) && bits > 7 && bits <= 32:
					return nil
				case (version == 6 || version == 0) && ipOK(addr, 6) && bits > 7 && bits <= 128:
					return nil
				}
			}
		}
		return fmt.Errorf("%s", msg)
	}
}

func keywordOr(words []string, other formatCheck, msg string) formatCheck {
	return func(v string) error {
		for _, w := range words {
			if v == w {
				return nil
			}
		}
		if other(v) == nil {
			return nil
		}
		return fmt.Errorf("%s", msg)
	}
}

func checkVLANRange(v string) error {
	start, end, isRange := strings.Cut(v, "-")
	lo, err1 := strconv.Atoi(start)
	if err1 != nil || !allDigits(start) || (isRange && !allDigits(end)) {
		return fmt.Errorf("invalid VLAN configuration '%s'", v)
	}
	if lo < 2 || lo > 4094 {
		return fmt.Errorf("invalid VLAN tag '%s'", start)
	}
	if isRange {
		hi, _ := strconv.Atoi(end)
		if hi < 2 || hi > 4094 {
			return fmt.Errorf("invalid VLAN tag '%s'", end)
		}
		if lo >= hi {
			return fmt.Errorf("VLAN range must go from lower to higher tag '%s'", v)
		}
	}
	return nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkStartupOrder accepts [[order=]N][,up=N][,down=N].
func checkStartupOrder(v string) error {
	bad := fmt.Errorf("unable to parse startup options")
	if v == "" {
		return bad
	}
	for part := range strings.SplitSeq(v, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		key, val, hasKey := strings.Cut(part, "=")
		if !hasKey {
			key, val = "order", part
		}
		if (key != "order" && key != "up" && key != "down") || !allDigits(val) {
			return bad
		}
	}
	return nil
}

// checkIDPair checks one entry of a storage-pair or bridge-pair list:
// "1", "ID" or "SOURCE:TARGET".
func checkIDPair(re *regexp.Regexp) formatCheck {
	return func(v string) error {
		if v == "1" {
			return nil
		}
		src, dst, isPair := strings.Cut(v, ":")
		if !re.MatchString(src) || (isPair && (!re.MatchString(dst) || strings.Contains(dst, ":"))) {
			return fmt.Errorf("entry '%s' contains invalid ID", v)
		}
		return nil
	}
}
