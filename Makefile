# oncepost — see README.md. Needs only Go for build/test/bench.
SHELL     := /bin/bash
GO        ?= go
PKGS      := ./...
BENCHTIME ?= 2s
BENCHCOUNT ?= 5

.PHONY: all build run test test-short lint asl emulators rie bench tidy-check clean

all: lint test

build:
	$(GO) build $(PKGS)

## run: build oncepost and run the demo workspace on the embedded store (Ctrl-C to stop).
run:
	@mkdir -p bin
	$(GO) build -o bin/oncepost ./cmd/oncepost
	./bin/oncepost run --demo

## test: lint, validate the state machines, then every test with the race detector (what CI runs).
## The AWS adapters' tests run against the npm emulators; ONCEPOST_EMULATORS=required makes a
## missing emulator fail them instead of skipping them.
test: lint asl emulators rie
	ONCEPOST_EMULATORS=required $(GO) test -race -count=1 -timeout 20m $(PKGS)

## test-short: the fast tests, no race detector.
test-short:
	$(GO) test -short -count=1 $(PKGS)

## lint: gofmt check and go vet.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

## emulators: install the npm test tooling pinned in infra/emulators (asl-validator; dynalite and
## fauxqs, which shared/emulatortest starts) into the git-ignored infra/emulators/node_modules.
EMULATORS := infra/emulators/node_modules/.oncepost-installed
$(EMULATORS): infra/emulators/package.json infra/emulators/package-lock.json
	npm ci --prefix infra/emulators --no-audit --no-fund --loglevel=error
	@touch $@

emulators: $(EMULATORS)

## rie: install the Lambda Runtime Interface Emulator (what `sam local invoke` runs the function
## under) from the Go module proxy into the git-ignored infra/emulators/bin.
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := infra/emulators/bin/aws-lambda-rie
$(RIE):
	GOBIN=$(CURDIR)/infra/emulators/bin $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

rie: $(RIE)

## asl: validate infra/statemachine/*.asl.json with asl-validator (npm, installed into infra/emulators/node_modules).
ASL_VALIDATOR := infra/emulators/node_modules/.bin/asl-validator
asl: $(EMULATORS)
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
