# ragcanary — build, generate, test and run.
#
# Every tool comes from the Go module proxy and is built into bin/ (never
# committed). Targets that need a tool depend on its file, so a second run
# rebuilds nothing.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN := $(abspath bin)
GO ?= go
export GOTOOLCHAIN := local
# vet, the tests and the images (and the binaries tests build) compile the
# project's packages the same way: pure Go, without local paths. So one cold
# compile serves all of them; before, the images' -trimpath, cgo-free builds
# compiled the whole dependency graph a second time.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath $(GOFLAGS)

KUBERNETES_VERSION := v1.37.2
CONTROLLER_TOOLS_VERSION := v0.23.0
HELM_VERSION := v3.22.0

KUBE_APISERVER := $(BIN)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(BIN)/kube-controller-manager
ETCD := $(BIN)/etcd
KUBECTL := $(BIN)/kubectl
CONTROLLER_GEN := $(BIN)/controller-gen
HELM := $(BIN)/helm
SPICEDB := $(BIN)/spicedb
OPENFGA := $(BIN)/openfga
GITEA := $(BIN)/gitea
HYDRA := $(BIN)/hydra
KUBELET := $(BIN)/kubelet
KUBE_SCHEDULER := $(BIN)/kube-scheduler
KUBE_PROXY := $(BIN)/kube-proxy
CONTAINERD := $(BIN)/containerd
COREDNS := $(BIN)/coredns
CNI_BRIDGE := $(BIN)/cni/bridge

K8S_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(KUBERNETES_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37

# envtest finds kube-apiserver and etcd here.
export KUBEBUILDER_ASSETS := $(BIN)

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code and the driver contract client/server.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(GO) generate ./...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from markers.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=ragcanary-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac
	@# The chart ships the same CRDs and RBAC rules; make verify catches drift.
	rm -f charts/ragcanary/crds/*.yaml
	cp config/crd/bases/*.yaml charts/ragcanary/crds/
	cp config/rbac/role.yaml charts/ragcanary/files/role.yaml

.PHONY: fmt
fmt: ## Format Go code.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet.
	$(GO) vet ./...

.PHONY: verify
verify: generate manifests ## Regenerate everything and fail if anything differs from what is committed.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags cluster ./test/cluster
	@git diff --exit-code -- api config internal cmd controllers charts || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- api config internal charts)" || { echo "untracked generated files:"; git status --porcelain -- api config internal charts; exit 1; }

.PHONY: test
test: envtest-assets $(KUBECTL) $(HELM) $(SPICEDB) $(OPENFGA) $(HYDRA) gitea-tools prometheus-tools chromium-tools postgres-tools ldap-tools pglite-tools python-tools image-tools test-alerts test-fuzz ## Run every test: unit, envtest, alert rules, chart and Prometheus end-to-end, SpiceDB permissions, the HTML report in Chromium, PostgreSQL primaries and standbys, the eval baseline in Python, a bounded fuzz of every reply parser, then the chart on a real one-node cluster (builds or installs its tools on first use).
	$(GO) test ./... -count=1 -timeout 30m -parallel 4
	$(MAKE) --no-print-directory test-cluster

.PHONY: test-unit
test-unit: ## Run the unit tier: the packages whose tests start no server and need no tool in bin/ (hack/unit-packages.sh); the edit loop. make test runs these and everything else.
	$(GO) test -count=1 $$(hack/unit-packages.sh)

# The chart installed on a real one-node Kubernetes built here (needs root:
# network namespaces, cgroups, mounts). The cluster's tests carry the build
# tag "cluster", so go test ./... leaves them to this target. Its images are
# built from the work tree, uncommitted edits included, so the cluster runs
# the change under test; their revision is marked -dirty when the tree
# differs from HEAD, and make image-push refuses them (make image builds a
# commit, reproducibly). They are built for this machine's platform only
# (the node runs nothing else; a second platform cost minutes of cross
# compiling on a cold cache) into their own folder, so bin/images stays
# make image's release build.
CLUSTER_TEST_IMAGES := $(BIN)/cluster-test-images
.PHONY: test-cluster
test-cluster: cluster-tools image-tools prometheus-tools ## Install the chart on a one-node cluster (kubelet, containerd, kube-proxy, CoreDNS) from images of the work tree: restricted Pod, SLOMet, metrics via the Service, Pod death mid-run, leader handover, upgrade, uninstall, teardown.
	$(GO) run ./hack/image build --worktree --images manager,ragtarget,pause --platforms linux/$$($(GO) env GOARCH) --out $(CLUSTER_TEST_IMAGES)
	$(GO) test -tags cluster ./test/cluster -count=1 -v -timeout 30m

# Every parser of what a target or a tenant sends, fuzzed for a bounded
# time on top of the seed corpora go test runs: HTTP driver replies,
# PostgreSQL server errors, connection strings, text shown from targets.
# A count, not a duration: a duration's deadline races the Go 1.26 fuzz
# coordinator, which then fails a target that found nothing
# (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline to race.
FUZZ_TIME ?= 20000x
FUZZ_TARGETS := ./internal/driver/http:FuzzDecodeReplies ./internal/driver/postgres:FuzzServerErrorMessages \
	./internal/driver/postgres:FuzzDSNSettingsAgreeWithPgx ./internal/safetext:FuzzClean

.PHONY: test-fuzz
test-fuzz: ## Fuzz every reply and input parser for FUZZ_TIME executions each (a bounded part of make test).
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzzing $$fn in $$pkg for $(FUZZ_TIME)"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZ_TIME) -parallel 2 || exit 1; \
	done

.PHONY: test-alerts
test-alerts: prometheus-tools ## Unit-test the alert rules with promtool.
	promtool check rules charts/ragcanary/files/alerts.yaml
	promtool test rules test/prometheus/alerts_test.yaml

.PHONY: test-e2e
test-e2e: envtest-assets $(KUBECTL) $(HELM) prometheus-tools ## Run only the end-to-end tests (control plane, ragtarget, manager, Prometheus, chart).
	$(GO) test ./test/... -count=1 -v -timeout 30m

.PHONY: bench
bench: envtest-assets ## Run the benchmarks once and print their figures (several minutes; the million-case ones need ~4 GB). The long fleet benchmarks are separate: bench-canaries, bench-shards.
	$(GO) test ./internal/ragtarget/ -run '^$$' -bench BenchmarkSearch -benchtime 200x -timeout 20m
	$(GO) test ./internal/scoring/ -run '^$$' -bench BenchmarkEvaluateMillion -benchtime 1x -timeout 30m
	$(GO) test ./cmd/ragcanary/ -run '^$$' -bench BenchmarkEvalCLIMillion -benchtime 1x -timeout 30m
	$(GO) test ./internal/suite/ -run '^$$' -bench BenchmarkLiveSuite -benchtime 1x -timeout 10m
	$(MAKE) --no-print-directory bench-eval
	$(GO) test ./internal/probe/ -run '^$$' -bench BenchmarkProbeSchedules -benchtime 1x -timeout 20m
	$(GO) test ./internal/metrics/ -run '^$$' -bench BenchmarkScrape10000Canaries -benchtime 5x -timeout 10m
	$(GO) test ./internal/shard/ -run '^$$' -bench BenchmarkShardIndex10000 -benchtime 3x -timeout 10m

BENCH_CANARIES ?= 1000
BENCH_FOR ?= 3m
# e.g. BENCH_CANARIES_FLAGS=--controls=false (one probe per round), --targets 2, --child-nice 10 (the manager first)
BENCH_CANARIES_FLAGS ?=

.PHONY: bench-canaries
bench-canaries: envtest-assets ## Benchmark BENCH_CANARIES (1,000; try 10000) active canaries (5 s probe interval) against ragtarget for BENCH_FOR: RSS, memory per canary, lag, writes, API server load.
	$(GO) run ./hack/bench/canaries --canaries $(BENCH_CANARIES) --for $(BENCH_FOR) $(BENCH_CANARIES_FLAGS)

# Not part of `make bench`: at 9,000 canaries the two setups take about 15 minutes each.
# A quick look: make bench-shards BENCH_SHARDS_FLAGS='--canaries 300 --for 1m'
BENCH_SHARDS_FLAGS ?=

.PHONY: bench-shards
bench-shards: envtest-assets ## Benchmark 9,000 canaries on 3 sharded manager processes against 1 (side by side), SIGKILL one halfway: per-replica RSS/CPU/lag/owned, API server load, re-probe time, double probes, lost or duplicated runs (long: ~40 min; BENCH_SHARDS_FLAGS).
	$(GO) run ./hack/bench/shards $(BENCH_SHARDS_FLAGS)

# make bench-eval BENCH_EVAL_ARGS='--cases 200000 --formats v1 --runs 1' for a quick look.
BENCH_EVAL_ARGS ?= --cases 200000,1000000 --formats v1,v2 --runs 3

.PHONY: bench-eval
bench-eval: python-tools ## ragcanary eval vs a plain-Python baseline (hack/bench/eval) on 200,000 and 1,000,000 cases, v1 and v2: wall, CPU, peak RSS, ratios (about 10 min on 2 cores; exits 1 if they disagree).
	$(GO) run ./hack/bench/eval $(BENCH_EVAL_ARGS)

.PHONY: python-tools
python-tools: ## Install Debian's python3 for the eval benchmark's baseline, if missing (needs root or sudo).
	hack/bench/eval/install-python.sh

##@ Build

.PHONY: build
build: ## Build the manager, ragcanary, ragtarget and kubectl-ragcanary binaries into bin/.
	$(GO) build -o $(BIN)/manager ./cmd/manager
	$(GO) build -o $(BIN)/ragcanary ./cmd/ragcanary
	$(GO) build -o $(BIN)/ragtarget ./cmd/ragtarget
	$(GO) build -o $(BIN)/kubectl-ragcanary ./cmd/kubectl-ragcanary

# make image builds a committed tree (IMAGE_REV, default HEAD), never
# uncommitted edits; two runs on one commit give the same digests.
IMAGE_DIR := $(BIN)/images
IMAGE_REV ?= HEAD

.PHONY: image-tools
image-tools: ## Install Debian's ca-certificates (the images' CA bundle, and the image tests' base), if missing (needs root or sudo).
	hack/image/install-ca-certificates.sh

.PHONY: image
image: image-tools ## Build the manager and ragtarget images (linux/amd64+arm64, SBOM) into bin/images/ without a Docker engine.
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct $(IMAGE_REV) --) $(GO) run ./hack/image build --out $(IMAGE_DIR) --rev $(IMAGE_REV)

.PHONY: image-push
image-push: ## Push the manager image built by make image: make image-push IMAGE=host/repo:tag [RAGTARGET_IMAGE=host/repo:tag].
	@test -n "$(IMAGE)" || { echo "usage: make image-push IMAGE=host/repo:tag"; exit 2; }
	$(GO) run ./hack/image push --out $(IMAGE_DIR) --image $(IMAGE) $(if $(RAGTARGET_IMAGE),--ragtarget-image $(RAGTARGET_IMAGE))

.PHONY: run
run: manifests ## Run the manager against the cluster in $KUBECONFIG (default: the local control plane).
	KUBECONFIG=$${KUBECONFIG:-$(abspath .local/kubeconfig)} $(GO) run ./cmd/manager --metrics-bind-address 127.0.0.1:8080 --metrics-secure=false --health-probe-bind-address 127.0.0.1:8081

.PHONY: localcluster
localcluster: envtest-assets ## Start the local control plane in the foreground (Ctrl-C stops it); kubeconfig at .local/kubeconfig.
	$(GO) run ./hack/localcluster up

.PHONY: demo
demo: envtest-assets $(KUBECTL) build ## Local control plane + CRDs + ragtarget + manager + samples; Ctrl-C stops everything.
	$(GO) run ./hack/demo $(DEMO_ARGS)

.PHONY: demo-postgres
demo-postgres: envtest-assets $(KUBECTL) build postgres-tools ## The canaries against a local PostgreSQL primary and a standby applying WAL 5s late (DEMO_ARGS=--apply-delay=10s); Ctrl-C stops everything.
	$(GO) run ./hack/postgres-demo $(DEMO_ARGS)

##@ One-node cluster

CLUSTER_DIR ?= $(abspath .local/cluster)

.PHONY: cluster-tools
cluster-tools: envtest-assets $(KUBECTL) $(HELM) $(KUBELET) $(KUBE_SCHEDULER) $(KUBE_PROXY) $(CONTAINERD) $(COREDNS) $(CNI_BRIDGE) ## Build the node's parts (kubelet, kube-scheduler, kube-proxy, containerd, CoreDNS, CNI plugins) and install Debian's runc and iptables.
	hack/cluster/install-host-tools.sh

.PHONY: cluster-images
cluster-images: image ## Build the images the cluster runs: make image's manager and ragtarget, and the pause image (host platform only).
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct $(IMAGE_REV) --) $(GO) run ./hack/image build --images pause --platforms linux/$$($(GO) env GOARCH) --out $(BIN)/cluster-images --rev $(IMAGE_REV)

.PHONY: cluster-up
cluster-up: cluster-tools cluster-images ## Start the one-node cluster (in CLUSTER_DIR) and wait until its node is Ready; it keeps running. KUBECONFIG=$(CLUSTER_DIR)/kubeconfig.
	$(GO) run ./hack/cluster up --dir $(CLUSTER_DIR)

.PHONY: cluster-wait
cluster-wait: ## Wait until the running one-node cluster's node is Ready.
	$(GO) run ./hack/cluster wait --dir $(CLUSTER_DIR)

.PHONY: demo-cluster
demo-cluster: cluster-tools cluster-images ## The one-node cluster, ragtarget and the chart as Pods from the images built here, the sample canary and suite; prints the canary table as runs complete; Ctrl-C tears everything down.
	$(GO) run ./hack/cluster demo --dir $(CLUSTER_DIR) $(DEMO_ARGS)

.PHONY: cluster-down
cluster-down: ## Tear the one-node cluster down: every process, container, mount, network namespace, iptables chain, cgroup and file it made.
	$(GO) run ./hack/cluster down --dir $(CLUSTER_DIR)

##@ Tools

.PHONY: tools
tools: envtest-assets $(KUBECTL) $(HELM) $(SPICEDB) $(OPENFGA) $(HYDRA) gitea-tools $(CONTROLLER_GEN) $(KUBELET) $(KUBE_SCHEDULER) $(KUBE_PROXY) $(CONTAINERD) $(COREDNS) $(CNI_BRIDGE) ## Build every tool the tests need into bin/ (cached; make -j2 tools builds two at a time).

.PHONY: envtest-assets
envtest-assets: $(KUBE_APISERVER) $(ETCD) $(KUBE_CONTROLLER_MANAGER) ## Build kube-apiserver, kube-controller-manager and etcd into bin/ (cached; the other Kubernetes binaries come from the same go build).

# The Kubernetes binaries come from one module graph: one go build compiles
# the packages they share once and links them side by side (built one by
# one under make -j2, two builds compiled the same packages at once). The
# local control plane runs kube-controller-manager too, so garbage
# collection and namespace deletion behave as in a cluster; the node of the
# one-node cluster (make test-cluster) is the same release, so the
# version-skew policy holds trivially.
K8S_COMMANDS := kube-apiserver kube-controller-manager kubectl kubelet kube-scheduler kube-proxy
$(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBECTL) $(KUBELET) $(KUBE_SCHEDULER) $(KUBE_PROXY) &: hack/tools/kube-apiserver/go.mod
	@echo "building $(K8S_COMMANDS) $(KUBERNETES_VERSION) from Go modules (first time: 10-20 min)"
	cd hack/tools/kube-apiserver && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(K8S_LDFLAGS)" -o $(BIN)/ $(addprefix k8s.io/kubernetes/cmd/,$(K8S_COMMANDS))

# containerd without cgo: the snapshotters that need it are not used here.
CONTAINERD_TAGS := no_btrfs no_devmapper no_zfs
$(CONTAINERD): hack/tools/containerd/go.mod
	@echo "building containerd, containerd-shim-runc-v2 and ctr from Go modules"
	cd hack/tools/containerd && CGO_ENABLED=0 $(GO) build -trimpath -tags "$(CONTAINERD_TAGS)" -ldflags "-s -w" -o $(BIN)/containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
	cd hack/tools/containerd && CGO_ENABLED=0 $(GO) build -trimpath -tags "$(CONTAINERD_TAGS)" -ldflags "-s -w" -o $(BIN)/ctr github.com/containerd/containerd/v2/cmd/ctr
	cd hack/tools/containerd && CGO_ENABLED=0 $(GO) build -trimpath -tags "$(CONTAINERD_TAGS)" -ldflags "-s -w" -o $@ github.com/containerd/containerd/v2/cmd/containerd

$(COREDNS): hack/tools/coredns/go.mod hack/tools/coredns/main.go
	@echo "building CoreDNS (cluster names only) from Go modules"
	cd hack/tools/coredns && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $@ .

$(CNI_BRIDGE): hack/tools/cni/go.mod
	@echo "building the CNI plugins from Go modules"
	mkdir -p $(BIN)/cni
	cd hack/tools/cni && for p in ipam/host-local main/loopback meta/portmap main/bridge; do \
		CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $(BIN)/cni/$${p##*/} github.com/containernetworking/plugins/plugins/$$p; done

$(ETCD): hack/tools/etcd/go.mod
	@echo "building etcd from Go modules (first time: about 1-2 min)"
	cd hack/tools/etcd && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $@ go.etcd.io/etcd/server/v3

# helm's default Kubernetes version for 'helm template' comes from ldflags;
# set it to the control plane we build so kubeVersion checks are meaningful.
$(HELM):
	@echo "building helm $(HELM_VERSION) from Go modules"
	GOBIN=$(BIN) CGO_ENABLED=0 $(GO) install -trimpath -ldflags "-s -w \
		-X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
		-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 \
		-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37" \
		helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

.PHONY: prometheus-tools
prometheus-tools: ## Install prometheus and promtool from Debian's packages (needs root or sudo).
	hack/install-prometheus.sh

# SpiceDB, the authorization engine the permissions tests run against (the
# tests start it on loopback with telemetry and release checks off).
$(SPICEDB): hack/tools/spicedb/go.mod
	@echo "building spicedb from Go modules (first time: about 2-7 min)"
	cd hack/tools/spicedb && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $@ github.com/authzed/spicedb/cmd/spicedb

# OpenFGA, the relationship-based authorization server the OpenFGA tests run
# against (internal/dev/openfgatest starts it on loopback, playground and
# tracing off).
$(OPENFGA): hack/tools/openfga/go.mod
	@echo "building openfga from Go modules (first time: about 4-8 min)"
	cd hack/tools/openfga && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $@ github.com/openfga/openfga/cmd/openfga

# Ory Hydra, the OAuth2 server the credential-revocation tests run against:
# JWT access tokens by client credentials, which ragtarget verifies by its
# keys (internal/dev/hydratest starts it on loopback on its own PostgreSQL,
# anonymous usage reports off).
$(HYDRA): hack/tools/hydra/go.mod
	@echo "building hydra from Go modules (first time: about 2-4 min)"
	cd hack/tools/hydra && CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o $@ github.com/ory/hydra/v2

.PHONY: gitea-tools
gitea-tools: $(GITEA) ## Build Gitea into bin/gitea with its options, templates and public files in bin/gitea-assets (cached).

# Gitea, the Git forge the REST source's end-to-end tests plant canaries in
# (internal/dev/testutil/giteatest starts it on loopback with its own
# PostgreSQL). The pure-Go build has neither SQLite nor bundled assets, so its
# options, templates and public files are copied beside it; they go first, so
# that bin/gitea existing means both are in place.
$(GITEA): hack/tools/gitea/go.mod
	@echo "building gitea from Go modules (first time: about 3-6 min)"
	cd hack/tools/gitea && dir=$$($(GO) list -f '{{.Dir}}' code.gitea.io/gitea) && \
		rm -rf $(BIN)/gitea-assets && mkdir -p $(BIN)/gitea-assets && \
		cp -R $$dir/options $$dir/templates $$dir/public $(BIN)/gitea-assets/ && chmod -R u+w,a+rX $(BIN)/gitea-assets
	cd hack/tools/gitea && CGO_ENABLED=0 $(GO) build -trimpath \
		-ldflags "-s -w -X main.Version=$$($(GO) list -f '{{.Module.Version}}' code.gitea.io/gitea | sed 's/^v//')" \
		-o $@ code.gitea.io/gitea

.PHONY: chromium-tools
chromium-tools: ## Install chromium from Debian's packages for the HTML report test (needs root or sudo).
	hack/install-chromium.sh

.PHONY: postgres-tools
postgres-tools: ## Install Debian's PostgreSQL 15 server for the Postgres driver tests (needs root or sudo; they start their own servers).
	hack/postgres-tools.sh

.PHONY: ldap-tools
ldap-tools: ## Install Debian's slapd and ldap-utils for the directory tests, never leaving the distro's slapd running (needs root or sudo; they start their own servers on loopback).
	hack/ldap-tools.sh

.PHONY: pglite-tools
pglite-tools: ## Install PGlite with pgvector from npm into bin/pglite for the filtered vector search test.
	hack/postgres-pglite.sh

$(CONTROLLER_GEN):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
