# Skein's build. A fresh machine needs only Go; everything else a target
# needs it fetches itself.

GO       ?= go
FUZZTIME ?= 10s

.PHONY: all build test fuzz-short fuzz bench fmt install clean

all: build

# skein is built without cgo: a static binary starts 2-3 ms sooner than one
# linked against libc (its dynamic loading), once for skein and once for
# the keeper its tasks start through. Nothing in Skein needs cgo.
#
# TAGS=temporal builds the skein that has the Temporal engine (skein worker,
# --engine temporal); the default one links neither Temporal's SDK nor gRPC
# (docs/temporal.md): make build TAGS=temporal, make install TAGS=temporal.
TAGS ?=

# GO_LDFLAGS: the built skein leaves out its DWARF and symbol table (-s -w:
# 63 MB -> 44 MB; panics still print their stacks); GO_LDFLAGS= keeps them,
# for a debugger. (Not -trimpath: it would compile every package again,
# not sharing go test's build cache, for no smaller binary.)
# bench/NOTES.md has what each part of the binary costs.
GO_LDFLAGS ?= -s -w

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(GO_LDFLAGS)' -tags '$(TAGS)' -o bin/skein ./cmd/skein

# The README's test command, and what CI runs: vet, staticcheck, the
# flows' formatting, the race-enabled suite (and the tests counting bytes
# allocated or building huge values, without it), the examples' flow tests, then
# each fuzz target briefly.
test:
	$(GO) vet ./...
	$(GO) vet -tags temporal ./cmd/skein
	$(MAKE) --no-print-directory staticcheck
	$(MAKE) --no-print-directory fmt-check
	$(GO) test -race ./...
	$(GO) test -count=1 -run '$(MEMORY_TESTS)|$(BIG_TESTS)' ./vm ./stdlib
	$(GO) run ./cmd/skein test examples
	$(MAKE) --no-print-directory fuzz-short

# Tests that count the bytes a run allocates, run again without the race
# detector (its runtime allocates differently: they skip under -race).
MEMORY_TESTS = ^(TestResultJSONEscapesOnce|TestResultJSONSizedOnce|TestMaskValueMap|TestMapBuilder|TestSmallDictOneAllocation)$$

# Tests that build values of many megabytes to prove a bound skip under
# -race (15-70 times slower there, about 150 s of make test's CPU, with one
# goroutine for the detector to watch) and run here without it.
# TestBigTestsListed (vm) fails when a test that skips is missing here.
BIG_TESTS = ^(TestAgentTooBig|TestRuntimeHugeValue|TestLLMStepReplyTooBig|TestResultJSON|TestLongBackEdgeLoopMemory|TestJSONTooBig|TestFromStoredJSON|TestJSONWalkNotStricter|FuzzJSONDecodeDifferential|TestBoundedDepth)$$

# staticcheck, at the version go.mod pins with its tool directive (go get
# -tool honnef.co/go/tools/cmd/staticcheck@VERSION changes it); checks are
# chosen in staticcheck.conf when there is one, else its defaults.
.PHONY: staticcheck
staticcheck:
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags temporal ./cmd/skein

# The repository's flows stay formatted (skein fmt -w PATH fixes them). The
# annotated checker tests, testdata/check/*.star, are left out on purpose:
# each holds several flows separated by "---" lines (so no parser reads the
# file as one), some meant not to parse, with positions in their # want
# messages.
FMT_PATHS = examples testdata/check/valid testdata/check/sub stdlib/std

.PHONY: fmt-check
fmt-check:
	$(GO) run ./cmd/skein fmt --check $(FMT_PATHS)

# The fuzz targets, as PACKAGE:TARGET:EXECUTIONS; fuzz-short runs each for
# that many executions, fuzz for FUZZTIME. fuzz-short's budgets are counts,
# not durations: with a duration, Go 1.26's fuzz coordinator can report its
# own deadline as a failure ("context deadline exceeded", golang/go#75804)
# on a loaded machine, and a count has no deadline to race. Each count is
# about two seconds of fuzzing here, after the seed corpus.
FUZZ_TARGETS = lang:FuzzLoad:15000 check:FuzzCheck:8000 \
	graphir:FuzzTemplate:25000 lang:FuzzFormat:10000 lsp:FuzzServe:50000 \
	vm:FuzzEval:1000 vm:FuzzResultJSON:2000 stdlib:FuzzJSONModule:15000 \
	stdlib:FuzzJSONDecodeDifferential:5000 stdlib:FuzzQuotedString:20000 \
	stdlib:FuzzInputsFile:20000 stdlib:FuzzRe:5000 \
	graphir:FuzzInputValue:15000 vm/keeper:FuzzKeeperMessage:10000 \
	vm/store:FuzzSideJournal:5000 graphir:FuzzBoundLiterals:5000 \
	stdlib:FuzzIntText:20000 lsp:FuzzFrames:2000

define newline


endef
# fuzz-one runs the target $(1) (PACKAGE:TARGET:...) for the budget $(2).
fuzz-one = $(GO) test -run '^$$' -fuzz '^$(word 2,$(subst :, ,$(1)))$$' -fuzztime $(2) ./$(word 1,$(subst :, ,$(1)))

fuzz-short:
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz-one,$(t),$(word 3,$(subst :, ,$(t)))x)$(newline))

# Longer fuzzing: make fuzz FUZZTIME=10m
fuzz:
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz-one,$(t),$(FUZZTIME))$(newline))

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The Temporal engine's command line in a skein built with -tags temporal
# (its scripts and tests in cmd/skein), then the server tests
# (engine/temporal/servertest, a module of its own): skein workers and runs,
# built with -tags temporal, against the Temporal CLI's dev server. Installs the CLI
# (into GOBIN, else GOPATH/bin) when neither $TEMPORAL_CLI, PATH nor that
# directory has it: a cold build (modules downloaded, empty build cache)
# takes about 360 s of CPU and 1.9 GB of memory, once. Runs in CI
# after make test; make test never builds any of it.
TEMPORAL_CLI_VERSION = v1.5.1
TEMPORAL_CMD_TESTS = TestScripts/(run|check)_engine_temporal$$|TestListRunsPages|TestRunsCutNote

.PHONY: test-temporal
test-temporal:
	@set -e; \
	gobin=$$($(GO) env GOBIN); [ -n "$$gobin" ] || gobin=$$($(GO) env GOPATH)/bin; \
	cli=$${TEMPORAL_CLI:-$$(command -v temporal || echo "$$gobin/temporal")}; \
	if [ ! -x "$$cli" ]; then \
		echo "installing the Temporal CLI $(TEMPORAL_CLI_VERSION) into $$gobin (a few minutes, once)"; \
		$(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION); \
		cli=$$gobin/temporal; \
	fi; \
	echo "Temporal CLI: $$cli"; \
	$(GO) test -race -count=1 -tags temporal -run '$(TEMPORAL_CMD_TESTS)' ./cmd/skein; \
	cd engine/temporal/servertest && TEMPORAL_CLI="$$cli" $(GO) test -race -count=1 -timeout 30m ./...

# The web UI of skein serve in a real Chromium, headless, driven by chromedp
# (engine/serve's browser_test.go, build tag browser): starting, watching,
# approving, rejecting and resuming runs from the pages, each page's console
# free of errors. Needs Chromium: $SKEIN_CHROMIUM, else chromium on PATH
# (Debian's chromium package; .ci/run installs it when missing). Runs in CI
# after test-temporal; make test never starts a browser. SKEIN_SCREENSHOTS=DIR
# writes the screenshots of the run and approvals pages there (docs/img).
.PHONY: test-browser
test-browser:
	$(GO) test -tags browser -race -count=1 -run '^TestBrowser' ./engine/serve/

# A run exported as an OpenTelemetry trace to a real Jaeger (built once
# from the Go module proxy into ~/.cache/skein-otel) and read back through
# its API; SKEIN_SCREENSHOTS=docs/img also photographs the trace in its UI
# with Chromium. Opt-in: not in make test or CI.
.PHONY: test-otel
test-otel:
	GO='$(GO)' bash test/otel/run.sh

# Model steps against llama.cpp's own llama-server (built once from the source
# inside the node-llama-cpp npm package: ~45 min on two busy cores, cached in
# test/llm-engine/.work; SKEIN_LLAMA_SERVER=/path/to/llama-server skips it)
# serving a tiny random-weight model made by a script; needs npm, python3,
# git and curl (cmake, g++ and numpy come from apt when missing). Opt-in: not
# in make test or CI.
.PHONY: test-llm-engine
test-llm-engine:
	GO='$(GO)' bash test/llm-engine/run.sh

# Skein next to LangGraph.js and XState (needs node and npm; fetches the pinned
# packages into bench/peers/node_modules) -> bench/RESULTS.md. See bench/README.md.
.PHONY: bench-peers
bench-peers:
	$(GO) run ./bench/peers/harness -go '$(GO)'

# skein run as a user runs it: whole processes side by side, ratios to the
# in-process VM and to bash -> bench/CLI.md. See bench/README.md.
.PHONY: bench-cli
bench-cli:
	$(GO) run ./bench/cli -go '$(GO)'

fmt:
	gofmt -w $$(git ls-files '*.go')

install:
	CGO_ENABLED=0 $(GO) install -ldflags '$(GO_LDFLAGS)' -tags '$(TAGS)' ./cmd/skein

clean:
	rm -rf bin
