# kernel-mcp — build and test. `make test` is what CI runs (through .ci/run).
GO        ?= go
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
STATICCHECK_VERSION ?= v0.8.2

# The Python whose ipykernel runs user code: PYTHON_MCP_INTERPRETER if set.
PYTHON ?= $(or $(PYTHON_MCP_INTERPRETER),python3)

# The one version: VERSION, which --version reports.
VERSION := $(shell cat VERSION)
LDFLAGS := -X main.version=$(VERSION)

# The release build's Python tools (packaging/python/build-requirements.txt:
# hatchling for the wheels, uv for their tests), in a venv of their own,
# which .ci/run makes.
DIST_VENV ?= $(or $(KERNEL_MCP_TEST_DIST_VENV),$(HOME)/.cache/kernel-mcp/venv-dist)
DIST_PYTHON ?= $(DIST_VENV)/bin/python

.PHONY: all build run test vet staticcheck cross tracked bench context soak fuzz clean dist dist-venv

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/kernel-mcp ./cmd/kernel-mcp

# Run the server over stdio, first installing ipykernel for $(PYTHON) if it
# is missing. Extra flags: make run ARGS="--transport streamable-http".
# Over stdio, stdout is the protocol stream: everything else goes to stderr.
run:
	@$(GO) build -ldflags "$(LDFLAGS)" -o bin/kernel-mcp ./cmd/kernel-mcp 1>&2
	@$(PYTHON) -c 'import ipykernel' 2>/dev/null || $(PYTHON) -m pip install ipykernel 1>&2
	@PYTHON_MCP_INTERPRETER=$$($(PYTHON) -c 'import sys; print(sys.executable)') ./bin/kernel-mcp $(ARGS)

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

vet:
	$(GO) vet ./...

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

# Users run this on macOS and Windows too: every platform must build, and
# vet type-checks their test files, which no build here compiles.
# -trimpath: the release build's flags, so its cross builds (internal/dist,
# internal/mcpb) reuse these compiles.
cross:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -trimpath ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) vet ./...
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build -trimpath ./...

# No build output, log or binary is ever committed: a tracked file over 1 MB
# or a compiled binary fails the suite.
tracked:
	bash scripts/check-tracked.sh

# The whole suite: static checks, cross builds, and every test with the race
# detector against real kernels.
test: tracked vet staticcheck cross
	$(GO) test -race -count=1 -timeout 25m ./...
	# Fuzz budgets are counts, not durations: with a duration, Go 1.26's
	# fuzzing coordinator can report "context deadline exceeded" at the
	# deadline on a loaded machine though nothing failed (go.dev/issue/75804).
	# Each count is ~10-15 s of fuzzing on these 2-core machines.
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 300000x ./kernel/wire/
	$(GO) test -run '^$$' -fuzz FuzzDecodeStream -fuzztime 150000x ./kernel/
	$(GO) test -run '^$$' -fuzz FuzzOpen -fuzztime 100000x ./history/

# The soak (integration/soak_test.go): four servers, several clients, mixed
# work and random faults for SOAK_MINUTES (default 10), then checks that
# nothing was lost. SOAK_SEED (random by default) is printed, so a failure
# can be replayed. Its 60 s version, with a fixed seed, runs in `make test`.
# Needs what the integration tests need (npm ci in integration/, the Kernel
# Gateway venv, bwrap). See docs/reliability.md.
SOAK_MINUTES ?= 10
soak:
	SOAK_MINUTES=$(SOAK_MINUTES) SOAK_SEED=$(SOAK_SEED) CI=$(or $(CI),true) $(GO) test -race -count=1 -v -run '^TestSoak$$' \
		-timeout $$(awk 'BEGIN { print int($(SOAK_MINUTES) * 60 + 1200) }')s ./integration/

# kernel-mcp against jupyter_client on the same kernel and against the MCP
# servers it replaces (installed from PyPI into a cached virtualenv), in one
# run; prints a Markdown report. See bench/mcpbench.
bench:
	$(GO) run ./bench/mcpbench

# The context a session costs the assistant: a fixed 20-call data analysis
# through the official MCP Python SDK (bench/context/requirements.txt, in a
# venv of its own made here when missing), with characters of tools/list and
# of each result's content and structured content, against the numbers
# measured before the results were trimmed (bench/context/before.json). Not
# part of `make test`. Another binary: make context KERNEL_MCP_BIN=path;
# CONTEXT_ARGS="--json out.json" keeps the figures. See docs/context.md.
CONTEXT_VENV ?= $(HOME)/.cache/kernel-mcp/venv-context
CONTEXT_BIN := $(or $(KERNEL_MCP_BIN),bin/kernel-mcp)
CONTEXT_ARGS ?= --compare bench/context/before.json

context: $(CONTEXT_VENV)/.installed
ifeq ($(CONTEXT_BIN),bin/kernel-mcp)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/kernel-mcp ./cmd/kernel-mcp
endif
	$(CONTEXT_VENV)/bin/python bench/context/context.py --bin $(CONTEXT_BIN) --python $(PYTHON) $(CONTEXT_ARGS)

# Remade when the pinned SDK changes.
$(CONTEXT_VENV)/.installed: bench/context/requirements.txt
	rm -rf $(CONTEXT_VENV)
	python3 -m venv $(CONTEXT_VENV)
	$(CONTEXT_VENV)/bin/python -m pip install --disable-pip-version-check -q -r bench/context/requirements.txt
	cp bench/context/requirements.txt $@

# The release files, reproducibly, into dist/: the archives, the wheels, the
# Claude Desktop bundle and SHA256SUMS (internal/dist; every binary gets
# -X main.version=$(VERSION) there). Timestamps: SOURCE_DATE_EPOCH, else the
# commit time of HEAD. docs/install.md says what the release workflow adds.
dist: $(DIST_PYTHON)
	$(GO) run ./internal/dist -out dist -python $(DIST_PYTHON)

dist-venv: $(DIST_PYTHON)

$(DIST_PYTHON):
	python3 -m venv $(DIST_VENV)
	$(DIST_PYTHON) -m pip install --disable-pip-version-check -q -r packaging/python/build-requirements.txt

clean:
	rm -rf bin dist
