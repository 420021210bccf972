# Skein's build. A fresh machine needs only Go; everything else a target
# needs it fetches itself.

GO       ?= go
FUZZTIME ?= 10s

.PHONY: all build test fuzz-short fuzz bench fmt install clean

all: build

build:
	$(GO) build -o bin/skein ./cmd/skein

# The README's test command, and what CI runs: vet, the race-enabled suite,
# then each fuzz target briefly.
test:
	$(GO) vet ./...
	$(GO) test -race ./...
	$(MAKE) --no-print-directory fuzz-short

fuzz-short:
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 5s ./lang

# Longer fuzzing: make fuzz FUZZTIME=10m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./lang

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

install:
	$(GO) install ./cmd/skein

clean:
	rm -rf bin
