# patrold: two commands to start (`make run`, `make test`), a few more to work.
GO       ?= go
BIN      := bin/patrold
# Releases are tags v0.x.y; between tags git describe gives v0.x.y-N-gHASH,
# and before the first tag v0.0.0-N-gHASH (never a bare commit hash).
VERSION  ?= $(shell git describe --tags --match 'v[0-9]*.[0-9]*.[0-9]*' --dirty 2>/dev/null || \
              echo v0.0.0-$$(git rev-list --count HEAD 2>/dev/null || echo 0)-g$$(git rev-parse --short HEAD 2>/dev/null || echo 0))
DIST     ?= ./dist
# File dates in the .deb: the commit time, so a build is reproducible.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
RUN_ENV  := PATROLD_SCHEDULE_CRON="@every 1m" PATROLD_SCHEDULE_STARTUP_DELAY=1s \
            PATROLD_SOURCE_DEMO_CHANGE_EVERY=2m PATROLD_SOURCE_DEMO_FAULT_RATE=0.2 PATROLD_LOG_LEVEL=info
BENCH    ?= .
FUZZTIME ?= 20s
MUTATE_SAMPLE ?= 6
CHAOS_COUNT ?= 10
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: build run test test-race bench fuzz lint vet clean mutate mutate-sample dist chaos

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/patrold

## dist: a stripped, version-stamped binary, man pages and completions from
## the command tree, and the .deb (internal/dist, nfpm as a library).
dist:
	rm -rf $(DIST) && mkdir -p $(DIST)/completions
	CGO_ENABLED=1 $(GO) build -buildmode=pie -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(DIST)/patrold ./cmd/patrold
	$(DIST)/patrold man --dir $(DIST)/man
	for sh in bash zsh fish; do $(DIST)/patrold completion $$sh > $(DIST)/completions/patrold.$$sh || exit 1; done
	$(GO) run ./internal/dist/mkdeb -version $(VERSION) -mtime $(SOURCE_DATE_EPOCH) -dir $(DIST) -repo .

## run: the daemon on embedded defaults (demo fleet, embedded NATS, SQLite
## under ./var, no model), with a short schedule so findings appear at once.
run: build
	$(RUN_ENV) ./$(BIN) serve --config /dev/null

## test: the whole suite (unit, integration, doc guards, fuzz seeds).
test: lint
	$(GO) test -count=1 -timeout 9m ./...

test-race:
	$(GO) test -race -count=1 -timeout 20m ./agent/... ./findings/... ./store/... ./patrol/... ./daemon/... ./cluster/... ./bus/... ./api/... ./assistant/... ./cmd/...

## chaos: the partition test (docs/CLUSTER.md "Partitions and bounds"),
## CHAOS_COUNT runs in a row, each under a minute: three `patrold serve`
## on a three-node JetStream cluster, the writer's server cut off and
## healed while operators act, every answer and database checked.
chaos:
	CHAOS=1 $(GO) test -count=$(CHAOS_COUNT) -failfast -timeout 30m -run '^TestClusterPartitionHeals$$' -v ./cmd/patrold

bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -timeout 30m ./...

fuzz:
	for f in FuzzDecode FuzzDecodeMatchesV1 FuzzMetricsJSON; do $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./snapshot || exit 1; done
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime $(FUZZTIME) ./config
	$(GO) test -run '^$$' -fuzz FuzzNeutraliseDocument -fuzztime $(FUZZTIME) ./model/prompt
	$(GO) test -run '^$$' -fuzz FuzzFileText -fuzztime $(FUZZTIME) ./assistant
	for f in FuzzReadFigures FuzzExtractClaims; do $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./model/ground || exit 1; done
	$(GO) test -run '^$$' -fuzz FuzzDecodeTags -fuzztime $(FUZZTIME) ./store
	$(GO) test -run '^$$' -fuzz FuzzIndented -fuzztime $(FUZZTIME) ./cmd/patrold
	for f in FuzzClusterResources FuzzDisks FuzzSmart FuzzTasksAndLog FuzzBackupsAndJobs FuzzAgent FuzzNodeStatus FuzzClusterStatus FuzzHAStatus FuzzRecentTasks FuzzSnapshots FuzzReplication FuzzCertificates FuzzUpdates FuzzNotBackedUp; do $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./snapshot/proxmox || exit 1; done

## mutate: every marked mutation (docs/MUTATIONS.md): each safety rule
## (the gate, the net and matching, registry pre-checks, fencing, message
## authentication, provenance) removed in turn must fail a test.
mutate:
	$(GO) run ./scripts/mutate $(if $(MUTATE_JOBS),-j $(MUTATE_JOBS))

## mutate-sample: a fixed sample of the marked mutations, for CI (a few
## minutes); `make mutate` runs them all.
mutate-sample:
	$(GO) run ./scripts/mutate -sample $(MUTATE_SAMPLE)

lint: vet
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || (echo "gofmt needed" && exit 1)
	$(GO) run $(STATICCHECK) ./...

## vet: go vet, then again for macOS without cgo: a Linux-only or
## cgo-only call must live in a file with a build constraint.
vet:
	$(GO) vet ./...
	GOOS=darwin CGO_ENABLED=0 $(GO) vet ./...

clean:
	rm -rf bin var $(DIST)
