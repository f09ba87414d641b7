# oncepost — see README.md. Needs only Go for build/test/bench.
SHELL     := /bin/bash
GO        ?= go
PKGS      := ./...
BENCHTIME ?= 2s
BENCHCOUNT ?= 5

.PHONY: all build run test test-short lint asl bench tidy-check clean

all: lint test

build:
	$(GO) build $(PKGS)

## run: build oncepost and run the demo workspace on the embedded store (Ctrl-C to stop).
run:
	@mkdir -p bin
	$(GO) build -o bin/oncepost ./cmd/oncepost
	./bin/oncepost run --demo

## test: lint, validate the state machines, then every test with the race detector (what CI runs).
test: lint asl
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## test-short: the fast tests, no race detector.
test-short:
	$(GO) test -short -count=1 $(PKGS)

## lint: gofmt check and go vet.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## asl: validate infra/statemachine/*.asl.json with asl-validator (npm, installed into infra/emulators/node_modules).
ASL_VALIDATOR := infra/emulators/node_modules/.bin/asl-validator
$(ASL_VALIDATOR): infra/emulators/package.json infra/emulators/package-lock.json
	npm ci --prefix infra/emulators --no-audit --no-fund --loglevel=error
	@touch $@

asl: $(ASL_VALIDATOR)
	@for f in infra/statemachine/*.asl.json; do $(ASL_VALIDATOR) --json-path $$f || exit 1; done

## bench: throughput, write counts, scheduling lateness, and a restart and an idle runtime on
## 1,000,000 scheduled posts; median with `benchstat` if installed.
bench:
	@mkdir -p var
	set -o pipefail; { $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./shared/sqlitestore/ ./shared/publishing/ && \
	$(GO) test -run '^$$' -bench SchedulingLateness -benchtime 500x -count $(BENCHCOUNT) ./cmd/oncepost/ && \
	$(GO) test -run '^$$' -bench 'RestartWithManyScheduled|IdleRuntimeCPU' -benchtime 1x -count $(BENCHCOUNT) -timeout 30m ./cmd/oncepost/; } | tee var/bench.txt

tidy-check:
	$(GO) mod tidy && git diff --exit-code go.mod go.sum

clean:
	rm -rf bin var
