# The two commands a newcomer needs: `make demo` and `make test`. Everything else is a step of those.
SHELL := /usr/bin/env bash
GO ?= go
CACHE := $(CURDIR)/.cache
# Built tools, keyed by version, in the per-user cache outside the checkout (hack/cache-dir.sh).
TOOLCACHE := $(shell hack/cache-dir.sh)
GOLANGCI_VERSION := v2.15.0
GOLANGCI := $(TOOLCACHE)/golangci-lint-$(GOLANGCI_VERSION)/golangci-lint
# Test timeout of each package's test binary (the operator suite is the longest, about 39
# minutes on a 2-core machine); CI has 90 minutes including builds.
TEST_TIMEOUT ?= 55m
# What the binaries and the image say they are (internal/version): a tag, else the commit,
# -dirty with uncommitted changes. `make image VERSION=v0.3.0` sets it by hand.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS := -X github.com/valkey-fsm/valkey-operator/internal/version.Version=$(VERSION) \
	-X github.com/valkey-fsm/valkey-operator/internal/version.Commit=$(COMMIT)

.PHONY: all test fuzz fuzz-short race unit e2e-test bench chaos chaos-e2e demo dev-cluster generate verify-generate lint fmt vet \
	kube-binaries valkey valkey-9.1 tools plugin operator image helm versitygw promtool prometheus krew release cert-manager \
	deploy-operator undeploy-operator run registry lint-workflows

all: test

## Installs Valkey 8 from Debian bookworm-backports when valkey-server is missing.
valkey:
	@hack/install-valkey.sh

## Builds etcd and the Kubernetes control plane from the Go module proxy (cached by version in ~/.cache/valkey-fsm/bin).
kube-binaries:
	@hack/kube-binaries.sh >/dev/null

## Builds helm (for the chart tests and the demo) from the Go module proxy (cached by version in ~/.cache/valkey-fsm/bin).
helm:
	@hack/helm.sh --path >/dev/null

## Builds Valkey 9.1 from Debian's source package (cached by version; about 10 minutes the first time).
valkey-9.1:
	@hack/valkey-9.1.sh >/dev/null

## Builds versitygw (the S3 server the backup tests store into) from the Go module proxy (cached by version).
versitygw:
	@hack/versitygw.sh >/dev/null

## Builds cert-manager's controllers (the local cluster's real cert-manager) from the Go module proxy (cached by version).
cert-manager:
	@hack/cert-manager.sh >/dev/null

## Builds promtool (the alerting rules' tests) from the Go module proxy (cached by version).
promtool:
	@hack/promtool.sh >/dev/null

## Builds the Prometheus server (the e2e suite's Prometheus pod) from the Go module proxy (cached by version).
prometheus:
	@hack/prometheus.sh >/dev/null

## Builds krew and its manifest validator (make release checks the krew manifest with them).
krew:
	@hack/krew.sh >/dev/null

## A release (hack/release), all of it in dist/release: the operator's image for IMAGE_PLATFORMS
## (default linux/amd64,linux/arm64; layout image/oci and archive valkey-operator-image_VERSION.oci.tar),
## both charts packaged with appVersion VERSION (the operator chart's image is this release's),
## valkey-operator-crds.yaml, kubectl-valkey for linux, darwin and windows on amd64 and arm64 with
## the krew manifest plugins/valkey.yaml (checked with krew's validator and installed from each
## archive with krew), an SPDX SBOM and checksums.txt; reproducible from the commit.
## IMAGE_PUSH=ghcr.io/valkey-fsm/valkey-operator:VERSION pushes the image (docker login),
## CHART_PUSH=oci://ghcr.io/valkey-fsm/charts the charts (helm registry login).
## VERSION must be a release version: make release VERSION=v0.3.0.
RELEASE_DEFAULT_PLATFORMS := linux/amd64,linux/arm64
RELEASE_IMAGE_PLATFORMS := $(or $(IMAGE_PLATFORMS),$(RELEASE_DEFAULT_PLATFORMS))
release: krew helm
	$(GO) run ./hack/release -version "$(VERSION)" -commit "$(COMMIT)" -out dist/release -krew "$$(hack/krew.sh | paste -sd, -)" \
	  -helm "$$(hack/helm.sh --path)" -image-platforms "$(RELEASE_IMAGE_PLATFORMS)" -image-push "$(IMAGE_PUSH)" -chart-push "$(CHART_PUSH)"

## Builds the CNCF distribution registry (the release test pushes to it on loopback) from the Go module proxy (cached by version).
registry:
	@hack/registry.sh >/dev/null

## Checks the CI workflows in .github/workflows with actionlint (built from the Go module proxy,
## cached by version): they run only on the forge, so this is their test here.
lint-workflows:
	"$$(hack/actionlint.sh)" -no-color

tools: valkey valkey-9.1 kube-binaries helm versitygw promtool prometheus krew cert-manager registry

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

$(GOLANGCI):
	@mkdir -p $(dir $(GOLANGCI))
	@echo "building golangci-lint $(GOLANGCI_VERSION) (once; cached)"
	GOBIN=$(dir $(GOLANGCI)) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

lint: $(GOLANGCI) lint-workflows
	$(GOLANGCI) run ./...

## Regenerates every generated file (deepcopy, CRDs, RBAC, the state diagram, the charts' values schemas,
## the API reference in docs/api.md).
generate:
	hack/controller-gen.sh
	$(GO) run ./hack/chartschema
	$(GO) run ./hack/apidocs -crds charts/valkey-operator/files/crds -doc docs/api.md
	$(GO) run ./machine/cmd/render-diagram > docs/state-machine.md
	$(GO) run ./machine/cmd/render-diagram -readme README.md
	$(GO) run ./hack/benchtable -doc docs/measurements.md

GENERATED := README.md docs/state-machine.md docs/api.md docs/measurements.md charts/valkey-operator/files apis/v1alpha1/zz_generated.deepcopy.go apis/v1beta1/zz_generated.deepcopy.go \
	charts/valkey-operator/values.schema.json charts/valkey-cluster/values.schema.json
## Fails when a generated file differs from what `make generate` writes (untracked files too).
verify-generate: generate
	@out=$$(git status --porcelain -- $(GENERATED)); if [ -n "$$out" ]; then echo "generated files drifted: run make generate and commit"; echo "$$out"; git --no-pager diff -- $(GENERATED) | head -50; exit 1; fi

## Everything CI runs. The seeded chaos exploration runs for CHAOS_BUDGET on every core and
## prints its report (schedules and ticks per second, the table edges taken).
CHAOS_BUDGET ?= 20s
test: tools fmt vet lint verify-generate
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -skip '^TestChaosExploration$$' ./...
	$(GO) test -count=1 -v -run '^TestChaosExploration$$' ./machine/sim -chaos.budget=$(CHAOS_BUDGET)
	$(MAKE) --no-print-directory fuzz-short
	$(MAKE) --no-print-directory race

## Native Go fuzzing of every parser of input from outside the operator (a backup's RDB files,
## LZF and manifest; RESP replies; INFO and CLUSTER NODES text; the journal API's parameters;
## the objects the API server sends for conversion between versions), one target after the
## other: FUZZTIME each (`make fuzz`), FUZZ_SHORT each in `make test`.
FUZZ_TARGETS := ./actuators/backup:FuzzReadRDBKeys ./actuators/backup:FuzzLZF ./actuators/backup:FuzzManifest \
	./internal/resp:FuzzReadReply ./actuators/valkey:FuzzParseInfo ./actuators/valkey:FuzzParseClusterNodes \
	./actuators/valkey:FuzzParseSeal ./operator/journal:FuzzPageQuery ./apis/v1alpha1:FuzzConversionRoundTrips
## FUZZMINIMIZE bounds the minimizing of each new input (Go's default is 60s, which a short run
## would spend on the RDB seeds alone on a busy machine). FUZZ_SHORT is a count of executions,
## not a time: a time budget races Go's fuzzing coordinator at its deadline, which then fails the
## target with "context deadline exceeded" and no failing input (golang/go#51484; seen in CI).
FUZZTIME ?= 5m
FUZZ_SHORT ?= 10000x
FUZZMINIMIZE ?= 60s
fuzz:
	@for t in $(FUZZ_TARGETS); do echo "fuzz $$t ($(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) "$${t%%:*}" || exit 1; done
fuzz-short:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZ_SHORT) FUZZMINIMIZE=1s

## The race detector on the operator's packages, and on the end-to-end tests that run the
## operator in-process through failover, re-creation, live configuration, a crash during
## bootstrap, refused writes and a Sentinel topology (reconciles run in parallel, surveys fan out
## per node and per sentinel).
RACE_E2E := TestPrimaryNodeLostFails|TestReCreationOnKept|TestLiveConfigChange|TestFailoverGoesOn|TestOperatorKilledDuringBootstrap|TestTheStatefulSet|TestAPodThatDoesNot|TestAFailingActionBacksOff|TestAStatusWriteTheAPIServer|TestRealActuatorsConform|TestSentinelTopologyKeepsItsSentinels
race:
	$(GO) test -race -count=1 ./operator/... ./actuators/... ./machine
	$(GO) test -race -count=1 -timeout 20m ./e2e/operatorsuite -run '$(RACE_E2E)'

## Benchmarks: prints tables with figures and ratios against references measured in the same run,
## and records the figures the docs state in docs/measurements.json (make generate renders them
## into docs/measurements.md).
bench: tools
	@hack/bench.sh

## Builds the kubectl plugin into bin/ (put it on $PATH, then: kubectl valkey status NAME).
plugin:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/kubectl-valkey ./plugin

## Builds the operator binary into bin/.
operator:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/valkey-operator ./operator

## Builds the operator's OCI image without Docker (hack/image; README "The image"): an index of
## IMAGE_PLATFORMS (default linux/amd64,linux/arm64) as an OCI layout in dist/image/oci and an
## archive dist/image/valkey-operator.oci.tar, tagged as the chart pulls it;
## IMAGE_PUSH=registry/repo:tag also pushes it (credentials from docker login).
image:
	VERSION="$(VERSION)" COMMIT="$(COMMIT)" IMAGE_PLATFORMS="$(IMAGE_PLATFORMS)" IMAGE_PUSH="$(IMAGE_PUSH)" $(GO) run ./hack/image -out dist/image

## The operator on the cluster of the current kubeconfig context (hack/deploy-operator.sh;
## docs/operator.md, "Install"): deploy-operator installs or upgrades the chart into
## OPERATOR_NAMESPACE and waits for it, running the chart's image (the release's) or
## IMAGE=repository:tag; HELM_ARGS adds helm arguments. undeploy-operator removes what it
## installed, the namespace and the CRDs included when it created them (KEEP_CRDS=1 keeps them).
OPERATOR_NAMESPACE ?= valkey-operator-system
OPERATOR_RELEASE ?= valkey-operator
KUBECTL ?= kubectl
DEPLOY_ENV = KUBECTL="$(KUBECTL)" OPERATOR_NAMESPACE="$(OPERATOR_NAMESPACE)" OPERATOR_RELEASE="$(OPERATOR_RELEASE)"
deploy-operator: helm
	$(DEPLOY_ENV) IMAGE="$(IMAGE)" HELM_ARGS="$(HELM_ARGS)" hack/deploy-operator.sh deploy
undeploy-operator: helm
	$(DEPLOY_ENV) KEEP_CRDS="$(KEEP_CRDS)" hack/deploy-operator.sh undeploy

## The operator built from this tree and run here, outside the cluster, against the current
## kubeconfig context until Ctrl-C. It dials every Valkey pod at its pod IP, so the pods' network
## must be reachable from this machine (the local cluster's is). Nothing outside the cluster can
## serve webhooks, so there are none; the CRDs are installed when missing (v1beta1 only); the
## leader election Lease is in OPERATOR_NAMESPACE, so an operator deployed there keeps leading
## and this one waits. Metrics (plain HTTP) and health on loopback; RUN_ARGS adds flags.
RUN_ARGS ?=
run: operator
	$(DEPLOY_ENV) hack/deploy-operator.sh run-setup
	bin/valkey-operator run --leader-election-namespace=$(OPERATOR_NAMESPACE) \
	  --webhook-bind-address= --journal-bind-address= --journal-path=$(CACHE)/run/journal.db \
	  --metrics-bind-address=127.0.0.1:8080 --metrics-secure=false --health-probe-bind-address=127.0.0.1:8081 \
	  $(RUN_ARGS)

## A longer chaos run of the simulated world on every core; fails on a violation and when a
## transition table edge is never taken.
CHAOS_SCHEDULES ?= 100000
chaos:
	$(GO) run ./plugin simulate -schedules $(CHAOS_SCHEDULES) -steps 200 -every-edge

## A longer chaos run against real processes on the local cluster (docs/development/chaos.md): 50 rapid-drawn
## fault schedules of 3 to 8 faults; prints faults, schedules and violations with the shrunk schedule.
CHAOS_CHECKS ?= 50
chaos-e2e: tools
	$(GO) test ./e2e/chaos -run TestChaos -v -count=1 -chaos.long -rapid.checks=$(CHAOS_CHECKS) -timeout 3h

## A local cluster that stays up until Ctrl-C.
dev-cluster: tools
	$(GO) run ./e2e/cmd/dev-cluster

## The demo: a local cluster, the operator installed from its chart, a replicated ValkeyCluster.
demo: tools
	$(GO) run ./e2e/cmd/dev-cluster -operator -apply testdata/s3/versitygw.yaml,config/samples/replication.yaml -wait demo
