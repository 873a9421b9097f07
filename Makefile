# drover — see `make help`.
SHELL := /bin/bash
GO ?= go
BIN := bin/drover
PKGS := ./...
export CGO_ENABLED ?= 0

.PHONY: help build build-nvml dev test test-short lint bench fuzz ui e2e images deps

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-11s %s\n", $$1, $$2}'

build: ## build bin/drover (static, stripped, UI embedded) and bin/drover-executor (the small per-task supervisor)
	$(GO) build -trimpath -ldflags "-s -w" -o $(BIN) .
	$(GO) build -trimpath -ldflags "-s -w" -o $(dir $(BIN))drover-executor ./drivers/executor/cmd/drover-executor

# go-nvml's cgo calls NVML functions nvml.h marks deprecated: gcc would warn
# about each one (Go's own default CGO_CFLAGS are -O2 -g).
NVML_CFLAGS := -O2 -g -Wno-deprecated-declarations

build-nvml: ## build bin/drover-nvml for GPU hosts: NVML support through go-nvml (cgo, links libc dynamically)
	CGO_ENABLED=1 CGO_CFLAGS="$(NVML_CFLAGS)" $(GO) build -trimpath -tags nvml -ldflags=-extldflags=-Wl,-z,lazy -o bin/drover-nvml .

dev: build ## build and run the dev agent (server + client, API and UI on 127.0.0.1:4646)
	./$(BIN) agent -dev

deps: ## install the test dependencies with apt (when root); under CI=true a missing one fails
	bash .ci/deps

images: build ## build the test images (busybox OCI archive, VM kernel + initramfs) into build/images
	$(GO) run ./drivers/drivertest/testimage/mkimages -out build/images

test: deps build images ## install test dependencies (as root) and run every test
	DROVER_TEST_BIN=$(CURDIR)/$(BIN) DROVER_TEST_IMAGES=$(CURDIR)/build/images DROVER_UI_SCREENSHOTS=$(CURDIR)/build/ui-screenshots \
		$(GO) test -count=1 -timeout 40m $(PKGS)
	CGO_ENABLED=1 CGO_CFLAGS="$(NVML_CFLAGS)" $(GO) test -count=1 -tags nvml ./agent/fingerprint/nvidia/
	bash .ci/leftovers $(CURDIR)/bin

test-short: ## run the fast unit tests only
	$(GO) test -short -count=1 $(PKGS)

lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)

# BENCH_SUMMARY turns `go test -bench` output into one line per figure:
# name, value, unit, target (and ok/MISS where the project sets one).
BENCH_SUMMARY = BEGIN { \
	t["Service1000 placements/s"] = ">= 12000"; t["Batch10000 placements/s"] = ">= 50000"; \
	t["DevAgentStart start-ms"] = "<= 100"; t["DevAgentIdleRSS idle-RSS-MB"] = "<= 30"; \
	t["RawExec100 run100-s"] = "<= 3.5"; t["RawExec100 helpers-RSS-MB"] = "<= 300"; t["RawExec100 helpers-PSS-MB"] = "<= 300"; \
	t["GPUFragmentation whole-free-%"] = ">= 97"; t["GPUNVLinkShare seq214-nvlinked-%"] = ">= 100"; \
	t["FairShare share-error-%"] = "<= 5"; t["FairShare late-queue-rounds"] = "<= 1"; \
	t["Placements10x10000 placements/s"] = ">= 3750"; t["Placements10x10000 missed-heartbeats"] = "<= 0"; \
	t["C1M placements/s"] = ">= 10000"; t["C1M missed-heartbeats"] = "<= 0"; \
	t["OpenB alloc-100-%"] = ">= 96"; t["OpenB first-fail-%"] = ">= 95"; t["OpenB replay-s"] = "<= 30"; \
	t["Elastic paid-ratio-%"] = "<= 60"; t["Elastic pending-p95-s"] = "<= 120"; t["Elastic gangs-partial"] = "<= 0"; t["Elastic work-lost"] = "<= 0"; \
	t["LeaderFailover leader-ms"] = "<= 1500"; t["LeaderFailover writes-lost"] = "<= 0"; t["LeaderFailover live-nodes-down"] = "<= 0" } \
	/^Benchmark/ { name = $$1; sub(/-[0-9]+$$/, "", name); sub(/^Benchmark/, "", name); nodes = ""; \
	for (i = 3; i < NF; i += 2) if ($$(i+1) == "nodes") nodes = sprintf("(%d nodes used)", $$i); \
	for (i = 3; i < NF; i += 2) { u = $$(i+1); v = $$i; \
		if (u == "ns/op" || u == "B/op" || u == "allocs/op" || u == "nodes") continue; \
		k = name " " u; tg = (k in t) ? t[k] : "-"; verdict = ""; \
		if (tg != "-") { split(tg, p, " "); verdict = ((p[1] == ">=" && v + 0 >= p[2] + 0) || (p[1] == "<=" && v + 0 <= p[2] + 0)) ? "ok" : "MISS" } \
		printf "%-16s %12.6g %-15s target %-9s %-4s %s\n", name, v, u, tg, verdict, (u == "placements/s" ? nodes : "") } }

# The whole-path benchmarks (agent/sim: server processes + simulated nodes)
# run once each; DROVER_BENCH_C1M=1 adds the 1,000,000-alloc run (minutes).
# OpenB replays the Alibaba GPU trace (server/testdata/openb, FGD's method;
# DROVER_OPENB_SEEDS seeds, DROVER_OPENB_PODS/NODES other lists of its shape).
# SupervisorJSON, HostileNesting and HeapHugePages measure what three
# hand-written pieces buy against the library way (each package's doc.go).
bench: build ## run the benchmarks; print placements/s, start-up, memory, 100-task, whole-path and hand-written-code figures (also to build/bench.txt)
	@mkdir -p build && { $(GO) test -run '^$$' -bench . -benchtime 3x -benchmem ./server/scheduler/ && \
		$(GO) test -run '^$$' -bench 'Benchmark(OpenB|Elastic|SpillDecision)$$' -benchtime 1x -timeout 30m ./server/ && \
		DROVER_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench 'Benchmark(DevAgentStart|DevAgentIdleRSS|RawExec100)$$' -benchtime 3x -timeout 20m ./agent/ && \
		$(GO) test -run '^$$' -bench 'Benchmark(SupervisorJSON|HostileNesting|HeapHugePages)$$' -benchtime 1x -timeout 10m \
			./drivers/executor/supervisor/ ./jobspec/ ./agent/hugepages/ && \
		$(GO) test -run '^$$' -bench 'BenchmarkCrossRegionGET$$' -benchtime 1x ./agent/http/ && \
		DROVER_TEST_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./agent/sim/; } \
		> build/bench.out 2>&1 || { cat build/bench.out; exit 1; }
	@awk '$(BENCH_SUMMARY)' build/bench.out | tee build/bench.txt

FUZZ_TARGETS := jobspec:FuzzParse api:FuzzScoresDecode server/fsm:FuzzApply server/fsm:FuzzRestore agent/http:FuzzDecodeBody \
	agent/http:FuzzNodeRegisterBody agent/http:FuzzClientRoutes agent/http:FuzzParseGrant \
	agent/client:FuzzFSPath drivers/executor/supervisor:FuzzParseJSON server/autoscale:FuzzDecodeExternal \
	agent/http:FuzzDecodeVariable agent/http:FuzzVariablePath
FUZZTIME ?= 30s

fuzz: ## fuzz every decoder a stranger can reach: HCL, JSON bodies, Raft commands, snapshots, fs paths (FUZZTIME each)
	@set -e; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; echo "== $$fn ($$pkg)"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./$$pkg/; done

ui: build ## run the browser tests of the web UI and save screenshots to build/ui-screenshots
	DROVER_TEST_BIN=$(CURDIR)/$(BIN) DROVER_UI_SCREENSHOTS=$(CURDIR)/build/ui-screenshots $(GO) test -count=1 -run TestUI ./ui/...

e2e: build images ## run the end-to-end tests against the built binary
	DROVER_TEST_BIN=$(CURDIR)/$(BIN) DROVER_TEST_IMAGES=$(CURDIR)/build/images $(GO) test -count=1 -run 'E2E' ./agent/...
