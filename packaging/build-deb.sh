#!/bin/sh
# Builds the Debian package of proxmox-mcp with dpkg-deb, reproducibly:
#
#   packaging/build-deb.sh OUTDIR
#
# writes OUTDIR/proxmox-mcp_<version>_<arch>.deb and prints its path. Run
# from anywhere; it builds the working tree it lives in. The environment
# may set:
#
#   GO                 the go command (go)
#   GOARCH             the target architecture (go env GOARCH), mapped to
#                      the Debian one (amd64, arm64, ...)
#   VERSION            the upstream version (default: from git describe:
#                      a tag v1.2.3 gives 1.2.3, 5 commits later
#                      1.2.3+git5.gabc1234; without a tag 0~gitN.gHASH)
#   DEB_REVISION       the Debian revision (1)
#   DEB_MAINTAINER     the Maintainer field
#   SOURCE_DATE_EPOCH  the time of every file, the changelog and the
#                      manual page (default: the last commit's time)
#   DEB_COMPRESS       dpkg-deb's compression (xz; gzip is faster)
#   DEB_BINARY         package this binary instead of building one
#                      (it must be a build for GOARCH)
#   DEB_COMMIT         the commit the changelog names (default: HEAD, and
#                      whether the tree has uncommitted changes); set it
#                      when building from an export without .git
#
#   packaging/build-deb.sh --version-of VERSION|DESCRIBE
#
# prints the Debian upstream version a version or git describe string
# maps to, and exits. What goes into the package and why:
# docs/packaging.md.
set -eu

usage() {
	echo "usage: $0 OUTDIR | --version-of VERSION" >&2
	exit 2
}
die() {
	echo "build-deb: $*" >&2
	exit 1
}

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

GO=${GO:-go}
DEB_REVISION=${DEB_REVISION:-1}
DEB_MAINTAINER=${DEB_MAINTAINER:-proxmox-mcp maintainers <maintainers@users.noreply.a-seed-1ae05cc0.example>}
homepage=https://github.com/proxmox-mcp/proxmox-mcp

DEB_COMPRESS=${DEB_COMPRESS:-xz}

for tool in dpkg-deb gzip md5sum find sort; do
	command -v "$tool" >/dev/null || die "$tool is needed (apt-get install dpkg coreutils findutils gzip)"
done

in_git() { git -C "$top" rev-parse --git-dir >/dev/null 2>&1; }

# --- version -----------------------------------------------------------
# debian_upstream maps a version or a git describe string to a Debian
# upstream version: no leading v, pre-release dashes as ~ (1.0.0-rc1 sorts
# before 1.0.0), commits after a tag as +gitN.gHASH.
debian_upstream() {
	printf '%s\n' "$1" | sed -E \
		-e 's/^v([0-9])/\1/' \
		-e 's/^(.*)-([0-9]+)-g([0-9a-f]+)$/\1+git\2.g\3/' \
		-e 's/\+git0\.g[0-9a-f]+$//' \
		-e ':a' -e 's/^([^+]*)-/\1~/' -e 'ta'
}

# valid_upstream: digits first, then letters, digits and . + ~ (no dash:
# the Debian revision follows the last one).
valid_upstream() { printf '%s\n' "$1" | grep -Eq '^[0-9][A-Za-z0-9.+~]*$'; }

if [ $# -eq 2 ] && [ "$1" = --version-of ]; then
	upstream=$(debian_upstream "$2")
	valid_upstream "$upstream" || die "$2 maps to $upstream, not a Debian upstream version"
	echo "$upstream"
	exit 0
fi
[ $# -eq 1 ] || usage
outdir=$1
case "$outdir" in
/*) ;;
*) outdir=$(pwd)/$outdir ;;
esac
cd "$top"

if [ -n "${VERSION:-}" ]; then
	version=$VERSION
	upstream=$(debian_upstream "$VERSION")
elif in_git && describe=$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
	version=$(git describe --tags --match 'v[0-9]*')
	upstream=$(debian_upstream "$describe")
elif in_git; then
	hash=$(git rev-parse --short HEAD)
	version=$hash
	upstream="0~git$(git rev-list --count HEAD).g$hash"
else
	die "not a git checkout: set VERSION (e.g. VERSION=1.0.0)"
fi
commit=${DEB_COMMIT:-}
if [ -z "$commit" ] && in_git; then
	commit=$(git rev-parse --short HEAD)
	git diff --quiet HEAD -- || commit="$commit with uncommitted changes"
fi
valid_upstream "$upstream" ||
	die "version $upstream (from $version) is not a Debian upstream version: set VERSION"
printf '%s\n' "$DEB_REVISION" | grep -Eq '^[0-9A-Za-z.+~]+$' ||
	die "DEB_REVISION $DEB_REVISION is not a Debian revision"
debversion="$upstream-$DEB_REVISION"

# --- architecture --------------------------------------------------------
goarch=${GOARCH:-$("$GO" env GOARCH)}
case "$goarch" in
amd64 | arm64 | riscv64 | s390x | loong64) arch=$goarch ;;
386) arch=i386 ;;
arm) arch=armhf ;;
ppc64le) arch=ppc64el ;;
mips64le) arch=mips64el ;;
*) die "GOARCH $goarch has no Debian architecture here" ;;
esac

# --- time ----------------------------------------------------------------
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	if in_git; then
		SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
	else
		SOURCE_DATE_EPOCH=$(date +%s)
	fi
fi
export SOURCE_DATE_EPOCH
first_year=$(git log --reverse --format=%ad --date=format:%Y 2>/dev/null | head -n 1)
last_year=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)
years=${first_year:-$last_year}
[ "$years" = "$last_year" ] || years="$years-$last_year"

# --- staging -------------------------------------------------------------
umask 022
work=$(mktemp -d "${TMPDIR:-/tmp}/proxmox-mcp-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
doc=$root/usr/share/doc/proxmox-mcp
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/systemd/system" \
	"$root/usr/lib/sysusers.d" "$root/usr/share/man/man1" "$doc" \
	"$root/usr/share/lintian/overrides"

# The binary: static (no cgo), paths trimmed, symbols and DWARF stripped.
if [ -n "${DEB_BINARY:-}" ]; then
	[ -f "$DEB_BINARY" ] || die "DEB_BINARY $DEB_BINARY is not a file"
	cp "$DEB_BINARY" "$root/usr/bin/proxmox-mcp"
else
	CGO_ENABLED=0 GOOS=linux GOARCH=$goarch "$GO" build -trimpath \
		-ldflags "-s -w -X main.version=$version" \
		-o "$root/usr/bin/proxmox-mcp" ./cmd/proxmox-mcp
fi

# The generators run on this machine: the target binary if it can, else
# one built for here.
run=$root/usr/bin/proxmox-mcp
if [ "$goarch" != "$("$GO" env GOHOSTARCH)" ]; then
	run=$work/proxmox-mcp-host
	CGO_ENABLED=0 GOOS='' GOARCH='' "$GO" build -trimpath \
		-ldflags "-X main.version=$version" -o "$run" ./cmd/proxmox-mcp
fi

# The units: the service loopback-only (local), what systemd knows before
# "proxmox-mcp install" writes its own in /etc/systemd/system; the LAN
# certificate renewal service and timer, enabled only by the installer in
# a LAN mode; the root helper's socket and service; the system user.
"$run" units render "$work/local" --mode local --binary /usr/bin/proxmox-mcp >/dev/null
"$run" units render "$work/lan" --mode lan --binary /usr/bin/proxmox-mcp >/dev/null
cp "$work/local/proxmox-mcp.service" "$root/usr/lib/systemd/system/"
cp "$work/lan/proxmox-mcp-pki-renew.service" "$work/lan/proxmox-mcp-pki-renew.timer" \
	"$root/usr/lib/systemd/system/"
# The root helper's socket and service, and the break-glass runner's path
# unit and service, enabled only by the installer (which writes the
# runner's own, with the configured repository, in /etc/systemd/system).
cp "$work/local/proxmox-mcp-helper.socket" "$work/local/proxmox-mcp-helper.service" \
	"$work/local/proxmox-mcp-breakglass.path" "$work/local/proxmox-mcp-breakglass.service" \
	"$root/usr/lib/systemd/system/"
cp "$work/local/proxmox-mcp.conf" "$root/usr/lib/sysusers.d/"

# The manual page, from the binary's own commands and flags.
"$run" help --man >"$work/proxmox-mcp.1"
gzip -9n <"$work/proxmox-mcp.1" >"$root/usr/share/man/man1/proxmox-mcp.1.gz"

# Shell completion for bash and zsh, from the binary's own command table.
mkdir -p "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions"
"$run" completion bash >"$root/usr/share/bash-completion/completions/proxmox-mcp"
"$run" completion zsh >"$root/usr/share/zsh/vendor-completions/_proxmox-mcp"

# The copyright file: the project and every module the binary links.
CGO_ENABLED=0 GOOS=linux GOARCH=$goarch "$GO" run ./packaging/debcopyright \
	-years "$years" -license "$top/LICENSE" >"$doc/copyright"

# changelog.Debian.gz: one entry for this build.
changes="proxmox-mcp $version."
if [ -n "$commit" ]; then
	changes="$changes
    Built from commit $commit.
    History: $homepage/commits/${commit%% *}"
fi
cat >"$work/changelog" <<EOF
proxmox-mcp ($debversion) unstable; urgency=medium

  * $changes

 -- $DEB_MAINTAINER  $(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")
EOF
gzip -9n <"$work/changelog" >"$doc/changelog.Debian.gz"

cp "$here/debian/lintian-overrides" "$root/usr/share/lintian/overrides/proxmox-mcp"
for script in postinst prerm postrm; do
	cp "$here/debian/$script" "$root/DEBIAN/$script"
done

# Modes: 0755 for directories, the binary and the maintainer scripts,
# 0644 for everything else.
find "$root" -type d -exec chmod 0755 {} +
find "$root" -type f -exec chmod 0644 {} +
chmod 0755 "$root/usr/bin/proxmox-mcp" "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"

(cd "$root" && find usr -type f | LC_ALL=C sort | xargs md5sum) >"$root/DEBIAN/md5sums"

# Installed-Size as dpkg-gencontrol counts it: every file rounded up to
# KiB, one KiB per directory.
size=$(find "$root" -path "$root/DEBIAN" -prune -o \( -type f -printf '%s\n' \) -o \( -type d -printf '1024\n' \) |
	awk '{ kib += int(($1 + 1023) / 1024) } END { print kib }')

sed -e "s|@VERSION@|$debversion|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" \
	-e "s|@MAINTAINER@|$DEB_MAINTAINER|" -e "s|@HOMEPAGE@|$homepage|" \
	"$here/debian/control.in" >"$root/DEBIAN/control"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

mkdir -p "$outdir"
deb=$outdir/proxmox-mcp_${debversion}_$arch.deb
dpkg-deb --root-owner-group "-Z$DEB_COMPRESS" --build "$root" "$deb" >/dev/null
echo "$deb"
