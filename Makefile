# oncepost — see README.md. Needs only Go for build/test/bench.
SHELL     := /bin/bash
GO        ?= go
PKGS      := ./...
BENCHTIME ?= 2s
BENCHCOUNT ?= 5

.PHONY: all build test test-short lint bench tidy-check clean

all: lint test

build:
	$(GO) build $(PKGS)

## test: lint, then every test with the race detector (what CI runs).
test: lint
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## test-short: the fast tests, no race detector.
test-short:
	$(GO) test -short -count=1 $(PKGS)

## lint: gofmt check and go vet.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## bench: the throughput and write-count benchmarks; median with `benchstat` if installed.
bench:
	@mkdir -p var
	set -o pipefail; $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./shared/sqlitestore/ ./shared/publishing/ | tee var/bench.txt

tidy-check:
	$(GO) mod tidy && git diff --exit-code go.mod go.sum

clean:
	rm -rf bin var
