# Nodewright: `make run` (the main job on the local cloud) and `make test` (every test).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
# The local cloud's tools (etcd, Kubernetes, kwok, a link to moto) live outside the tree.
TOOLS ?= $(or $(NODEWRIGHT_TOOLS),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nodewright/tools)
export NODEWRIGHT_TOOLS := $(TOOLS)
# The CDK's jsii kernel runs on Node 20 here; its end-of-life banner is noise.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: all test lint unit fuzz chaos bench bench-karpenter bench-read bench-e2e bench-scale generate run tools cloud synth

all: test

## test: every test (lint, unit and integration tests, fuzz smoke run)
test: tools lint unit fuzz

## lint: gofmt check and go vet
lint:
	@echo "==> gofmt"; out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@echo "==> go vet"; $(GO) vet ./...

## unit: go test of every package
unit:
	@echo "==> go test ./..."; $(GO) test -count=1 -timeout=30m ./...

## fuzz: short fuzz runs of the parsers (CI runs them too). Budgets are counts of inputs, not durations: Go 1.26's
## coordinator can fail a duration budget with a bare "context deadline exceeded" when a loaded machine delays a
## worker at the deadline (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline and is the same on every machine
fuzz:
	@echo "==> fuzz (short)"
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=100000x ./shared/apis
	$(GO) test -run='^$$' -fuzz=FuzzIntersection -fuzztime=100000x ./shared/requirements
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeInterruption$$' -fuzztime=100000x ./shared/trigger
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeProvision$$' -fuzztime=100000x ./shared/trigger
	$(GO) test -run='^$$' -fuzz='^FuzzHandle$$' -fuzztime=50000x ./shared/webhook
	$(GO) test -run='^$$' -fuzz=FuzzRead -fuzztime=5000x ./shared/snapshot
	$(GO) test -run='^$$' -fuzz=FuzzSolveQuantities -fuzztime=40000x ./shared/scheduling
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=5000x ./test/scenario

## chaos: the fault suite (test/faults) beyond the bounded set `make test` runs: SCHEDULES random schedules (default
## 300, seeds 1..N) of the flows interleaved call by call with crashes and the services' errors, each checked against
## the invariants; ends with "N schedules, C crash points, I interleavings: every invariant held" (or the violations,
## each with the command that replays it); FROM is the first seed (default 1), to split a long run over processes
SCHEDULES ?= 300
FROM ?= 1
chaos:
	@cd test/faults && $(GO) test -count=1 -timeout=0 -run '^TestFaults$$' -schedules=$(SCHEDULES) -from=$(FROM)

## synth: the CDK app's cloud assembly in cdk.out, offline (no AWS credentials, no npm);
## CLUSTER and CONFIG choose the cluster name and the configuration directory
CLUSTER ?= demo-cluster
CONFIG ?= infra/config
synth:
	@echo "==> cdk synth: cluster $(CLUSTER), configuration $(CONFIG) -> cdk.out"; rm -rf cdk.out; \
	  CDK_OUTDIR=cdk.out CDK_CONTEXT_JSON='{"nodewright:cluster":"$(CLUSTER)","nodewright:config":"$(CONFIG)"}' $(GO) run ./infra; \
	  ls cdk.out/*.template.json cdk.out/nodewright/*/*.yaml

## bench: scheduler benchmarks (the cost suite's shapes: price / lower bound per shape; diverse workloads of 1k-20k
## pods, synthetic and real catalog) and a summary of their figures
bench:
	@echo "==> go test -bench ./test/bench (one solve per workload; pods/s is wall clock, cpu-s the process's CPU time)"
	@out=$$(mktemp); trap 'rm -f "$$out"' EXIT; \
	  $(GO) test -run='^$$' -bench=. -benchmem -benchtime=1x -timeout=30m ./test/bench/ | tee "$$out"; \
	  awk -f test/bench/summary.awk "$$out"

## bench-karpenter: Karpenter's own scheduler (test/karpenter, its own go.mod, pinned version) on every shape of the
## cost suite and on the diverse workload, beside Nodewright's plan: prices and times side by side; records
## Karpenter's figures in test/bench/testdata/karpenter.json for the tests. Not part of `make test`.
KARPENTER_DIVERSE ?= 1000,10000
bench-karpenter:
	@echo "==> Karpenter $$(sed -n 's/^const Version = "\(.*\)"/\1/p' test/karpenter/karpenter.go) vs Nodewright (test/karpenter)"
	cd test/karpenter && $(GO) test -v -count=1 -timeout=60m -run='^TestCompareWithKarpenter$$' . \
	  -args -record ../bench/testdata/karpenter.json -diverse=$(KARPENTER_DIVERSE) | grep -Ev '^(=== RUN|--- PASS|PASS$$|ok )'

## bench-read: the provision function's cluster read (shared/kube's Cache) on the local cloud at 1k, 10k and
## 50k pods, cold and warm (about 10 minutes: most of it creating the pods)
bench-read: tools
	$(GO) test -run='^$$' -bench=. -benchtime=3x -timeout=60m ./test/readbench/

## bench-e2e: the provision function's scale-out on the local cloud, driven by webhook hints as on AWS: 100 and
## 1,000 pods; pod created -> CreateFleet p50/p99, scale -> every NodeClaim launched, CreateFleet calls, scale -> Running;
## and an invocation in a new container against the next (cold start); and each function's init duration (its process's
## start to its first request for an event, the part of a cold start a binary's size decides; no local cloud)
bench-e2e: tools
	$(GO) test -run='^$$' -bench='ScaleOut|ColdStart' -benchtime=1x -timeout=30m ./test/provision/
	$(GO) test -run='^$$' -bench=Init -benchtime=20x ./test/coldstart/

## bench-scale: the scale benchmark (test/scale): a fraction of a 5,000-node, 150,000-pod cluster on the local cloud at
## each of SIZES (percentages), built once into a snapshot (~/.cache/nodewright/scale; REBUILD=1 builds again) and
## restored; each function's pass measured cold and warm (wall, CPU, peak heap, API requests and bytes, DynamoDB
## units, a 1,000-pod burst's latencies); writes the tables and plot into docs/benchmarks.md and docs/scale.svg and the
## figures into test/scale/testdata/figures.json. Within 60 minutes here once the snapshots exist. Not part of `make test`
SIZES ?= 2,10,30,100
REBUILD ?=
bench-scale: tools
	cd test/scale && $(GO) test -v -count=1 -run='^$$' -bench='^BenchmarkScale$$' -benchtime=1x -timeout=0 . \
	  -args -sizes=$(SIZES) $(if $(REBUILD),-rebuild)

## generate: regenerate committed generated code (instance catalog, NodePool and EC2NodeClass CRDs)
generate:
	$(GO) generate ./...

## tools: build the local cloud's tools into $(TOOLS) (only what is missing or changed) and check moto
tools:
	@test/tools/build.sh "$(TOOLS)"

## cloud: bring the local cloud up, print its kubeconfig and endpoints; Ctrl-C stops it
cloud: tools
	$(GO) run ./test/localcloud/cmd/localcloud

## run: a scenario on the local cloud (default test/scenarios/default.yaml: inflate 0 -> 30, a spot interruption,
## a scale down to 3, consolidation), with the three functions run as AWS runs them; a live timeline, a summary,
## report.json and report.html in an output directory it names; non-zero exit when an expectation does not hold.
## SCENARIO=path.yaml plays another; flags in ARGS (e.g. make run ARGS="-replicas 100 -keep"; ARGS=-h lists them)
SCENARIO ?= test/scenarios/default.yaml
ARGS ?=
run: tools
	$(GO) run ./test/cmd/run -scenario $(SCENARIO) $(ARGS)
