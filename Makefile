# proxmox-mcp: build, test and measure.
GO      ?= go
BIN     ?= bin/proxmox-mcp
PKGS    := ./...
# A count of executions, not a duration: a duration-bound run can fail with a
# bare 'context deadline exceeded' and no input at its end, a race in Go 1.26's
# fuzz coordinator (go.dev/issue/75804, fixed in Go 1.27), as CI's runs of
# FuzzExecArgs, FuzzParse and FuzzECMAPattern did.
FUZZTIME ?= 100000x
# Each new interesting input is minimized for up to this long (Go's default
# is 60 s, executions the fuzzer does not count: with inputs the size of an
# apidoc.js subtree, most of a short run went there).
FUZZMINIMIZE ?= 5s

.PHONY: all build demo test vet staticcheck fmt-check bench fuzz clean e2e-deps deb lint-deb

all: build

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/proxmox-mcp

# The daemon in front of the built-in PVE simulator, with an operator key:
# nothing touches a real host. DEMO_ARGS passes flags (--profile, --listen,
# --apidoc, --json).
demo:
	$(GO) run ./cmd/proxmox-mcp demo $(DEMO_ARGS)

# The test command README.md names and .ci/run runs. Each package's test
# binary has 30 minutes (go test's default of 10 is too short for tests/ on
# a loaded 2-CPU runner, where it builds the daemon and the package and runs
# lintian; the booted tests power their containers off a minute before it).
# A binary built with -race sleeps a second when it exits (the race runtime's
# atexit_sleep_ms, for racing threads to report): every test binary, and the
# processes some tests start from it, 10 ms here instead; a GORACE of your
# own still applies, and its atexit_sleep_ms, if it sets one, wins.
# (cmd/proxmox-mcp's TestMain sets the same for its scripts, which start the
# race-built CLI some 200 times, when go test is run by hand.)
#
# go test starts the packages' test binaries in the order it is given them,
# at most -p at a time: the longest come first (./... would start them last,
# in the order of their names), and four at a time keep the two CPUs busy
# while the booted and end-to-end tests wait on containers and processes.
TEST_P     ?= 4
TEST_FIRST := ./tests/booted ./tests ./tools ./cmd/proxmox-mcp ./daemon ./journal ./policy
TEST_PKGS  := $(if $(filter ./...,$(PKGS)),$(TEST_FIRST) $(PKGS),$(PKGS))
test: fmt-check vet staticcheck
	GORACE="atexit_sleep_ms=10 $(GORACE)" $(GO) test -p $(TEST_P) -race -count=1 -timeout 30m $(TEST_PKGS)

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Benchmarks recorded in docs/benchmarks.md (median of 10 runs; see benchstat).
BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
# BENCH_PKGS narrows the run, e.g. make bench BENCH_PKGS=./schema
BENCH_PKGS ?= ./...
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 10 $(BENCH_PKGS) | tee bench.out
	$(GO) run $(BENCHSTAT) bench.out

# A short fuzz run of every parser (package:target).
FUZZ_TARGETS := ./schema:FuzzParse ./schema:FuzzPropertyString ./schema:FuzzMatch ./schema:FuzzECMAPattern ./schema:FuzzParseVolumeID ./pve:FuzzParseUPID \
	./keys:FuzzParseToken ./config:FuzzParse ./journal:FuzzRedactText ./journal:FuzzFitText ./journal:FuzzSplitRow ./plan:FuzzPlanCanonical \
	./schema:FuzzDecodeInotify ./transport:FuzzIdOf ./cluster:FuzzCheck ./host:FuzzCleanPath ./host:FuzzDecodeRequest ./host:FuzzExecArgs ./breakglass:FuzzSignedRequest
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== fuzz $$name in $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg || exit 1; \
	done

# The outside clients of the end-to-end tests, from the npm registry at the
# versions the lock files pin: the official MCP TypeScript SDKs v1 and v2
# (tests/e2e/node) and the MCP conformance suite with the Node 22 it needs
# (tests/conformance). Without them those tests skip; CI
# (PMCP_REQUIRE_E2E=1) fails instead.
e2e-deps:
	cd tests/e2e/node && npm ci --no-audit --no-fund
	cd tests/conformance && npm ci --no-audit --no-fund

# The Debian package (docs/packaging.md): $(DIST)/proxmox-mcp_<version>_<arch>.deb,
# built by dpkg-deb from this tree, reproducibly. VERSION (else git describe),
# DEB_REVISION, GOARCH and SOURCE_DATE_EPOCH say which version, for which
# architecture and with which time; lint-deb also runs lintian on it (no error
# and no warning may remain; packaging/debian/lintian-overrides says why each
# override is there).
DIST ?= dist
DEB_ENV = GO="$(GO)" VERSION="$(VERSION)" DEB_REVISION="$(DEB_REVISION)" GOARCH="$(GOARCH)" SOURCE_DATE_EPOCH="$(SOURCE_DATE_EPOCH)"
deb:
	$(DEB_ENV) sh packaging/build-deb.sh $(DIST)

lint-deb:
	@deb=$$($(DEB_ENV) sh packaging/build-deb.sh $(DIST)) && echo "$$deb" && \
		lintian --fail-on error,warning --display-info "$$deb"

clean:
	rm -rf bin bench.out dist
