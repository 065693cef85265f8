# kernel-mcp — build and test. `make test` is what CI runs (through .ci/run).
GO        ?= go
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
STATICCHECK_VERSION ?= v0.8.2

# The Python whose ipykernel runs user code: PYTHON_MCP_INTERPRETER if set.
PYTHON ?= $(or $(PYTHON_MCP_INTERPRETER),python3)

# The one version: VERSION, which --version reports.
VERSION := $(shell cat VERSION)
LDFLAGS := -X main.version=$(VERSION)

# The build tag of the Claude Desktop bundle's binaries, which read the
# chart libraries and view pages from its server/assets instead of
# embedding them (internal/assets). Checked and tested here too.
ASSETS_TAG := kernelmcp_external_assets

# The release build's Python tools (packaging/python/build-requirements.txt:
# hatchling for the wheels, uv for their tests), in a venv of their own,
# which .ci/run makes.
DIST_VENV ?= $(or $(KERNEL_MCP_TEST_DIST_VENV),$(HOME)/.cache/kernel-mcp/venv-dist)
DIST_PYTHON ?= $(DIST_VENV)/bin/python

.PHONY: all build run test tasks-rmcp vet staticcheck cross tracked bench context soak soak-check fuzz clean dist dist-venv

# Node packages, each folder's from its package-lock.json, installed by
# `npm ci` when missing or when the lock file is newer than npm's record of
# the install (node_modules/.package-lock.json, which npm ci writes; an
# `npm ci` run by hand, as .ci/run does, counts too).
NPM ?= npm
NPM_CI = PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(NPM) ci --no-audit --no-fund --loglevel=error
# integration/: the TypeScript MCP SDK, the Inspector CLI, the conformance
# suite with the Node 22 it runs on, playwright-core (never a browser).
INTEGRATION_NODE := integration/node_modules/.package-lock.json
# packaging/mcpb: the mcpb command that packs the Claude Desktop bundle.
MCPB_NODE := packaging/mcpb/node_modules/.package-lock.json
# integration/oauth: JupyterHub's proxy for the sign-in tests.
OAUTH_NODE := integration/oauth/node_modules/.package-lock.json

NPM_CHECK = @command -v $(NPM) >/dev/null || { echo "make: npm is missing (it installs $(patsubst %/node_modules,%,$(@D))/package-lock.json); install Node.js with npm (https://nodejs.org or your package manager), then run make again" >&2; exit 1; }

$(INTEGRATION_NODE): integration/package-lock.json
	$(NPM_CHECK)
	cd integration && $(NPM_CI)
	touch $@

$(MCPB_NODE): packaging/mcpb/package-lock.json
	$(NPM_CHECK)
	cd packaging/mcpb && $(NPM_CI)
	touch $@

$(OAUTH_NODE): integration/oauth/package-lock.json
	$(NPM_CHECK)
	cd integration/oauth && $(NPM_CI)
	touch $@

# integration/tasks-rmcp: a client of MCP tasks (SEP-2663) written with the
# Rust SDK rmcp, from crates.io at the versions Cargo.lock pins; the
# integration test integration/tasks_test.go runs it.
CARGO ?= cargo
TASKS_RMCP := integration/tasks-rmcp/target/release/tasks-rmcp

$(TASKS_RMCP): integration/tasks-rmcp/Cargo.toml integration/tasks-rmcp/Cargo.lock integration/tasks-rmcp/src/main.rs
	@command -v $(CARGO) >/dev/null || { echo "make: cargo is missing (it builds integration/tasks-rmcp); install Rust (https://rustup.rs or your package manager), then run make again" >&2; exit 1; }
	cd integration/tasks-rmcp && $(CARGO) build --release --locked --quiet
	touch $@

all: build

tasks-rmcp: $(TASKS_RMCP)

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
	$(GO) vet -tags $(ASSETS_TAG) ./...

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags $(ASSETS_TAG) ./...

# Users run this on macOS and Windows too: every platform must build, and
# vet type-checks their test files, which no build here compiles.
# -trimpath: the release build's flags, so its cross builds (internal/dist,
# internal/mcpb) reuse these compiles.
cross:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -trimpath ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -trimpath ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) vet ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) vet -tags $(ASSETS_TAG) ./...
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build -trimpath ./...

# No build output, log or binary is ever committed: a tracked file over 1 MB
# or a compiled binary fails the suite.
tracked:
	bash scripts/check-tracked.sh

# The whole suite: static checks, cross builds, and every test with the race
# detector against real kernels. The Node packages it installs itself; the
# rest (README.md, Set up) .ci/run installs, and a test missing them skips
# (fails with CI=true).
test: tracked vet staticcheck cross $(INTEGRATION_NODE) $(MCPB_NODE) $(OAUTH_NODE) $(TASKS_RMCP)
	$(GO) test -race -count=1 -timeout 25m ./...
	# The packages whose files change with the tag (their external halves);
	# the whole external binary is tested from the bundle (internal/mcpb).
	$(GO) test -race -count=1 -tags $(ASSETS_TAG) ./chartlib/ ./internal/assets/
	# Fuzz budgets are counts, not durations: with a duration, Go 1.26's
	# fuzzing coordinator can report "context deadline exceeded" at the
	# deadline on a loaded machine though nothing failed (go.dev/issue/75804).
	# Each count is ~10-15 s of fuzzing on these 2-core machines.
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 300000x ./kernel/wire/
	$(GO) test -run '^$$' -fuzz FuzzDecodeStream -fuzztime 150000x ./kernel/
	$(GO) test -run '^$$' -fuzz FuzzOpen -fuzztime 100000x ./history/

# The soak (integration/soak_test.go): six servers, several clients, mixed
# work and random faults for SOAK_MINUTES (default 10), then checks that
# nothing was lost. SOAK_SEED (random by default) is printed, so a failure
# can be replayed. Its 60 s version, with a fixed seed, runs in `make test`.
# It installs the Node packages of integration/ and integration/oauth, the
# Kernel Gateway venv and the JupyterHub venv when missing; for the Python
# packages of python3 and for bwrap it stops at once, before installing
# anything, with the command that installs them.
# See docs/reliability.md.
SOAK_MINUTES ?= 10
# The Kernel Gateway venv of the gateway tests and the soak
# (internal/gatewaytest), as .ci/run makes it.
KG_VENV ?= $(or $(KERNEL_MCP_TEST_KG_VENV),$(HOME)/.cache/kernel-mcp/venv-kg)

# The JupyterHub venv of the sign-in and hub-kernel tests and the soak's hub
# leg (integration/oauth_test.go), as .ci/run makes it.
HUB_VENV ?= $(or $(KERNEL_MCP_TEST_HUB_VENV),$(HOME)/.cache/kernel-mcp/venv-hub)

soak: soak-check $(INTEGRATION_NODE) $(OAUTH_NODE) $(KG_VENV)/.installed $(HUB_VENV)/.installed
	SOAK_MINUTES=$(SOAK_MINUTES) SOAK_SEED=$(SOAK_SEED) CI=$(or $(CI),true) KERNEL_MCP_TEST_KG_VENV=$(KG_VENV) KERNEL_MCP_TEST_HUB_VENV=$(HUB_VENV) \
		$(GO) test -race -count=1 -v -run '^TestSoak$$' \
		-timeout $$(awk 'BEGIN { print int($(SOAK_MINUTES) * 60 + 1200) }')s ./integration/

# What the soak needs that make does not install.
soak-check:
	@python3 -c 'import ipykernel, pandas, matplotlib, nbformat' 2>/dev/null || { echo "make soak: python3 lacks a package its kernels use; run: python3 -m pip install ipykernel pandas matplotlib nbformat" >&2; exit 1; }
	@command -v bwrap >/dev/null || { echo "make soak: bwrap is missing (one server runs under --sandbox); run: sudo apt-get install bubblewrap" >&2; exit 1; }

# The packages are .ci/run's; a venv it made is completed, not remade.
$(KG_VENV)/.installed:
	[ -x $(KG_VENV)/bin/python ] || python3 -m venv $(KG_VENV)
	$(KG_VENV)/bin/python -m pip install --disable-pip-version-check -q jupyter_kernel_gateway jupyter_server ipykernel
	$(KG_VENV)/bin/jupyter-kernelgateway --version >/dev/null
	touch $@

$(HUB_VENV)/.installed:
	[ -x $(HUB_VENV)/bin/python ] || python3 -m venv $(HUB_VENV)
	$(HUB_VENV)/bin/python -m pip install --disable-pip-version-check -q 'jupyterhub>=6,<7' 'mcp==2.3.0' \
		'jupyter_server==2.21.1' 'ipykernel==7.4.0' 'jupyterhub-idle-culler==2.0.0' 'pandas==3.1.1'
	$(HUB_VENV)/bin/jupyterhub --version >/dev/null
	touch $@

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
# CONTEXT_ARGS="--json out.json" keeps the figures; CONTEXT_ARGS="--compare
# bench/context/before.json --charts" adds three charts (Plotly, Altair,
# matplotlib), reported apart. See docs/context.md.
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
# It installs the dist venv and the mcpb command when missing.
dist: $(DIST_VENV)/.installed $(MCPB_NODE)
	$(GO) run ./internal/dist -out dist -python $(DIST_PYTHON)

dist-venv: $(DIST_VENV)/.installed

# Remade when the pinned tools change (the venv itself is kept: .ci/run
# may have made it).
$(DIST_VENV)/.installed: packaging/python/build-requirements.txt
	[ -x $(DIST_PYTHON) ] || python3 -m venv $(DIST_VENV)
	$(DIST_PYTHON) -m pip install --disable-pip-version-check -q -r packaging/python/build-requirements.txt
	cp packaging/python/build-requirements.txt $@

clean:
	rm -rf bin dist
