# kernel-mcp — build and test. `make test` is what CI runs (through .ci/run).
GO        ?= go
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
STATICCHECK_VERSION ?= v0.8.2

.PHONY: all build test vet staticcheck cross bench fuzz clean

all: build

build:
	$(GO) build -o bin/kernel-mcp ./cmd/kernel-mcp

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

vet:
	$(GO) vet ./...

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

# Users run this on macOS and Windows too: every platform must build.
cross:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build ./...
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build ./...

# The whole suite: static checks, cross builds, and every test with the race
# detector against real kernels.
test: vet staticcheck cross
	$(GO) test -race -count=1 -timeout 25m ./...
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 20s ./kernel/wire/

bench:
	$(GO) test -run '^$$' -bench . -benchtime 300x ./kernel/
	python3 bench/jupyter_client_bench.py

clean:
	rm -rf bin
