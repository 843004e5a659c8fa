# SidecarSet operator: build, test and run on a local simulated cluster.
#
# Everything this Makefile needs is built from the Go module proxy into bin/
# (no Docker, no downloads of release binaries). The first `make test` on a
# fresh machine builds the Kubernetes control plane twice, 1.37 and the
# supported floor 1.35 (make dev builds 1.37 only); later calls reuse bin/
# and the Go build cache.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

LOCALBIN ?= $(CURDIR)/bin
K8S_VERSION ?= 1.37.1
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_BIN := $(LOCALBIN)/k8s
K8S_LDFLAGS := -X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(K8S_MINOR)

KUBE_APISERVER := $(K8S_BIN)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(K8S_BIN)/kube-controller-manager
KUBE_SCHEDULER := $(K8S_BIN)/kube-scheduler
KUBECTL := $(K8S_BIN)/kubectl
# The kubectl of the deployment targets (install, deploy, undeploy, purge,
# build-installer): the one on PATH when there is one, so that they build
# nothing; else bin/k8s/kubectl, built from source. Set it to choose.
DEPLOY_KUBECTL ?= $(or $(shell command -v kubectl 2>/dev/null),$(KUBECTL))
# What the deployment targets need built: bin/k8s/kubectl only if they use it.
DEPLOY_KUBECTL_DEP := $(filter $(KUBECTL),$(DEPLOY_KUBECTL))
ETCD := $(K8S_BIN)/etcd
CONTROLLER_GEN := $(LOCALBIN)/controller-gen
KWOK := $(LOCALBIN)/kwok
KWOKCTL := $(LOCALBIN)/kwokctl
GOLANGCI_LINT := $(LOCALBIN)/golangci-lint

# Each tool group is built once per content of its pinning module: the stamp
# names the hash of go.mod and go.sum, so a restored bin/ (CI cache) is
# reused whatever its file times, and a version bump rebuilds. The stamps are
# defined here, before any rule names them: make expands a rule's
# prerequisites when it reads the rule, so a stamp defined later would be
# empty there (that left `make tools` and `make dev` with nothing to build on
# a fresh clone; test/freshclone guards it).
tools_hash = $(shell cat $(1)/go.mod $(1)/go.sum | sha256sum | cut -c1-16)
K8S_STAMP := $(K8S_BIN)/.built-k8s-$(call tools_hash,test/tools/k8s)
ETCD_STAMP := $(K8S_BIN)/.built-etcd-$(call tools_hash,test/tools/etcd)
TOOLS_STAMP := $(LOCALBIN)/.built-tools-$(call tools_hash,test/tools)
LINT_STAMP := $(LOCALBIN)/.built-lint-$(call tools_hash,test/tools)
# Prometheus and promtool (the alerts' rule tests and the e2e Prometheus),
# pinned by test/monitoring, the module of the monitoring checks.
PROMETHEUS_BIN := $(LOCALBIN)/prometheus
PROMETHEUS := $(PROMETHEUS_BIN)/prometheus
PROMTOOL := $(PROMETHEUS_BIN)/promtool
PROMETHEUS_STAMP := $(PROMETHEUS_BIN)/.built-prometheus-$(call tools_hash,test/monitoring)
# What the dev cluster needs (the linter is not part of it).
CLUSTER_TOOLS := $(K8S_STAMP) $(ETCD_STAMP) $(TOOLS_STAMP)

# The real node (make dev-node, and the e2e suites' real-node specs): the
# kubelet from the control plane's module, containerd, runc and the CNI
# plugins from modules of their own, and two Debian packages, fetched into
# bin/ without installing them: libseccomp-dev (runc links it statically) and
# busybox-static (the shell of the node's images).
NODE_BIN := $(LOCALBIN)/node
KUBELET := $(K8S_BIN)/kubelet
KUBELET_STAMP := $(K8S_BIN)/.built-kubelet-$(call tools_hash,test/tools/k8s)
CONTAINERD_STAMP := $(NODE_BIN)/.built-containerd-$(call tools_hash,test/tools/containerd)
RUNC_STAMP := $(NODE_BIN)/.built-runc-$(call tools_hash,test/tools/runc)
CNI_STAMP := $(NODE_BIN)/.built-cni-$(call tools_hash,test/tools/cni)
DEBS_STAMP := $(NODE_BIN)/.fetched-debs
NODE_TOOLS := $(KUBELET_STAMP) $(CONTAINERD_STAMP) $(RUNC_STAMP) $(CNI_STAMP) $(DEBS_STAMP)

# The pinned versions, for the build announcements.
mod_version = $(shell awk '$$1 == "require" { $$1 = "" ; $$0 = $$0 } $$1 == "$(2)" { print $$2; exit }' $(1)/go.mod)
ETCD_VERSION := $(call mod_version,test/tools/etcd,go.etcd.io/etcd/server/v3)
PROMETHEUS_VERSION := $(call mod_version,test/monitoring,github.com/prometheus/prometheus)
KWOK_VERSION := kwok $(call mod_version,test/tools,sigs.k8s.io/kwok)
CONTROLLER_TOOLS_VERSION := controller-tools $(call mod_version,test/tools,sigs.k8s.io/controller-tools)
GOLANGCI_LINT_VERSION := $(call mod_version,test/tools,github.com/golangci/golangci-lint/v2)
CONTAINERD_VERSION := $(call mod_version,test/tools/containerd,github.com/containerd/containerd/v2)
RUNC_VERSION := $(call mod_version,test/tools/runc,github.com/opencontainers/runc)
CNI_VERSION := $(call mod_version,test/tools/cni,github.com/containernetworking/plugins)

# The oldest Kubernetes minor the operator supports (docs/supported-versions.md):
# its kube-apiserver and kubectl, built from a module of their own, for the
# envtest suites' second run (make test-integration); etcd is bin/k8s's.
K8S_OLDEST_MOD := test/tools/k8s-1.35
K8S_OLDEST_VERSION := $(patsubst v%,%,$(call mod_version,$(K8S_OLDEST_MOD),k8s.io/kubernetes))
K8S_OLDEST_BIN := $(LOCALBIN)/k8s-1.35
K8S_OLDEST_LDFLAGS := -X k8s.io/component-base/version.gitVersion=v$(K8S_OLDEST_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_OLDEST_VERSION)))
K8S_OLDEST_STAMP := $(K8S_OLDEST_BIN)/.built-k8s-$(call tools_hash,$(K8S_OLDEST_MOD))
KUBE_APISERVER_OLDEST := $(K8S_OLDEST_BIN)/kube-apiserver
KUBECTL_OLDEST := $(K8S_OLDEST_BIN)/kubectl

# The go command that builds the tools, and the Debian commands that fetch
# and unpack packages (the freshclone test sets them to true).
GO ?= go
APT_GET ?= apt-get
DPKG_DEB ?= dpkg-deb

# envtest finds kube-apiserver and etcd here (controller-runtime's lookup).
export KUBEBUILDER_ASSETS := $(K8S_BIN)

# The release version, MAJOR.MINOR.PATCH: the one source of the version the
# binaries (package version, through VERSION_LDFLAGS), the images' labels,
# the bundle and the release (make release) carry (docs/releases.md).
VERSION ?= 0.1.0
IMG ?= ghcr.io/sidecarset-operator/sidecarset-operator:v$(VERSION)
GINKGO_FLAGS ?=

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD (trimmed by hack/crd), RBAC and webhook manifests from the Go markers.
	$(CONTROLLER_GEN) rbac:roleName=sidecarset-operator-manager crd webhook paths="./..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	go run ./hack/crd --file=config/crd/bases/apps.kruise.io_sidecarsets.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate the deepcopy code.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: docs
docs: ## Generate the API reference (docs/reference/api.md) from the CRD's schema.
	go run ./hack/apidocs

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -l -w $$(git ls-files '*.go' | grep -v '^test/tools/')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and fix what it can.
	$(GOLANGCI_LINT) run --fix ./...

.PHONY: verify
verify: manifests generate docs ## Fail if generated files are out of date.
	@git diff --exit-code -- api config docs/reference/api.md || { echo "generated files are stale: run 'make manifests generate docs' and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- api config); [ -z "$$untracked" ] || { echo "the generators wrote files that are not committed:"; echo "$$untracked"; exit 1; }

##@ Test

.PHONY: test
test: tools verify vet lint test-unit test-rules test-integration test-e2e ## Run every test: unit, envtest integration, e2e on kwok and on a real node (root).

.PHONY: test-unit
test-unit: ## Run the unit tests (including the fuzz seed corpora and test/images, which builds the release images).
	go test $$(go list ./... | grep -v -e /test/integration -e '/test/e2e$$' -e /test/e2e/incluster -e /test/e2e/lifecycle) -count=1 -timeout 20m

.PHONY: test-integration
test-integration: $(KUBE_APISERVER) $(KUBECTL) $(ETCD) $(KUBE_APISERVER_OLDEST) $(KUBECTL_OLDEST) ## Run the envtest suites on a real kube-apiserver and etcd: the newest Kubernetes (bin/k8s), then the oldest supported minor (bin/k8s-1.35).
	@echo ">> envtest suites on Kubernetes v$(K8S_VERSION) ($(K8S_BIN))"
	SIDECARSET_K8S_BIN_DIR=$(K8S_BIN) go test ./test/integration/... -count=1 -timeout 20m $(if $(GINKGO_FLAGS),-args $(GINKGO_FLAGS))
	@echo ">> envtest suites on Kubernetes v$(K8S_OLDEST_VERSION) ($(K8S_OLDEST_BIN))"
	SIDECARSET_K8S_BIN_DIR=$(K8S_OLDEST_BIN) go test ./test/integration/... -count=1 -timeout 20m $(if $(GINKGO_FLAGS),-args $(GINKGO_FLAGS))

# The e2e suites run what a kubelet decides on a real node joined to their
# kwok clusters (test/node), which needs root; REAL_NODE=off leaves those
# specs out. One real node runs per machine: the suites run one at a time.
REAL_NODE ?= on

.PHONY: test-rules
test-rules: $(PROMTOOL) ## Check the monitoring (test/monitoring): the shipped ServiceMonitor and PrometheusRule decode strictly, promtool's rule tests, the runbooks, and the Grafana dashboard's queries.
	cd test/monitoring && PROMTOOL=$(PROMTOOL) go test ./... -count=1

.PHONY: test-e2e
test-e2e: tools ## Run the end-to-end suites on a kwok cluster (binary runtime) and its real node (root; REAL_NODE=off without).
	@rm -f $(LOCALBIN)/e2e*/real-node-timings.txt; status=0; SIDECARSET_REAL_NODE=$(REAL_NODE) go test ./test/e2e/... -p 1 -count=1 -timeout 60m $(if $(GINKGO_FLAGS),-args $(GINKGO_FLAGS)) || status=$$?; \
	for f in $(LOCALBIN)/e2e*/real-node-timings.txt; do [ -f "$$f" ] && { echo ">> real-node timings ($$f)"; cat "$$f"; }; done; \
	exit $$status

##@ Benchmarks (on the dev cluster; each result is a ratio to a floor measured in the same run)

.PHONY: bench
bench: bench-webhook bench-rollout ## Run the webhook and rollout benchmarks (bench-scale needs a larger cluster).

.PHONY: bench-webhook
bench-webhook: dev ## Pod admission latency and throughput with 0, 1, 100 and 1000 SidecarSets, against no webhook.
	go run ./test/bench webhook --kubeconfig=$(DEV_DIR)/kubeconfig --manager-pid-file=$(DEV_DIR)/manager.pid

# The scale benchmark's cluster: 10 000 pods need 100 kwok nodes (110 pods each).
SCALE_NODES ?= 100

.PHONY: bench-scale
bench-scale: $(CLUSTER_TOOLS) build ## 10 000 pods and 5 000 SidecarSets: admission, rollouts, manager memory and start (on a dev cluster of SCALE_NODES nodes).
	go run ./test/devenv up --bin-dir=$(LOCALBIN) --dir=$(DEV_DIR) --nodes=$(SCALE_NODES) --manager-pprof=127.0.0.1:8082
	go run ./test/bench scale --kubeconfig=$(DEV_DIR)/kubeconfig --manager-pid-file=$(DEV_DIR)/manager.pid \
		--pods=2000 --creators=20 --sidecarsets=0,1,1000,5000 --rounds=3 \
		--manager-pprof=127.0.0.1:8082 --profile-dir=$(DEV_DIR)/bench-profiles --figures=test/bench/scale-figures.json

.PHONY: bench-rollout
bench-rollout: dev ## In-place rollout of 200 and 1000 pods, and resize of 1000, at maxUnavailable 100% and 10%, against trivial clients making the same calls.
	go run ./test/bench rollout --kubeconfig=$(DEV_DIR)/kubeconfig --manager-pid-file=$(DEV_DIR)/manager.pid

##@ Build

# The version and commit stamped into the binaries (package version).
VERSION_LDFLAGS = -X github.com/sidecarset-operator/sidecarset-operator/version.version=$(VERSION) \
	-X github.com/sidecarset-operator/sidecarset-operator/version.revision=$(REVISION)

.PHONY: build
build: kubectl-sidecarset ## Build the manager binary and the kubectl plugin.
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(LOCALBIN)/manager ./cmd/manager

.PHONY: kubectl-sidecarset
kubectl-sidecarset: ## Build the kubectl plugin (bin/kubectl-sidecarset: `kubectl sidecarset explain|inject|rollout|version` with bin/ on the PATH).
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(LOCALBIN)/kubectl-sidecarset ./cmd/kubectl-sidecarset

.PHONY: run
run: ## Run the manager against the current kubeconfig.
	go run ./cmd/manager --metrics-bind-address=:8080 --metrics-secure=false

.PHONY: docker-build
docker-build: ## Build the manager image with a container engine (`make image` needs none): the same files and labels.
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the manager image built by docker-build.
	docker push $(IMG)

##@ Deployment

.PHONY: install
install: $(DEPLOY_KUBECTL_DEP) ## Install the CRD into the cluster of the current kubeconfig.
	$(DEPLOY_KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: $(DEPLOY_KUBECTL_DEP) ## Remove the CRD (and every SidecarSet) from the cluster.
	$(DEPLOY_KUBECTL) delete --ignore-not-found -k config/crd

.PHONY: deploy
deploy: $(DEPLOY_KUBECTL_DEP) ## Deploy the operator (image IMG) into the cluster of the current kubeconfig.
	cd config/manager && $(DEPLOY_KUBECTL) kustomize . >/dev/null
	$(DEPLOY_KUBECTL) kustomize config/default | sed 's|ghcr.io/sidecarset-operator/sidecarset-operator:v0.1.0|$(IMG)|' | $(DEPLOY_KUBECTL) apply -f -

# undeploy removes the operator (config/operator) and keeps the CRD, every
# SidecarSet, the namespace, the ControllerRevisions and kruise-configuration.
# The webhook configurations go first, so that no pod creation or SidecarSet
# write (or delete) is sent to a manager that is going away
# (docs/uninstall.md; e2e spec "make undeploy").
.PHONY: undeploy
undeploy: $(DEPLOY_KUBECTL_DEP) ## Remove the operator; keep the CRD, every SidecarSet and the namespace (docs/uninstall.md).
	$(DEPLOY_KUBECTL) delete --ignore-not-found -k config/webhook
	$(DEPLOY_KUBECTL) delete --ignore-not-found -k config/operator

# purge also deletes every SidecarSet and the CRD, and the namespace only
# with PURGE_NAMESPACE=yes (OpenKruise may share it).
PURGE_NAMESPACE ?= no
.PHONY: purge
purge: $(DEPLOY_KUBECTL_DEP) ## undeploy, then delete every SidecarSet and the CRD: make purge CONFIRM=yes [PURGE_NAMESPACE=yes].
	@[ "$(CONFIRM)" = yes ] || { echo "make purge deletes every SidecarSet and the SidecarSet CRD; run: make purge CONFIRM=yes (docs/uninstall.md)" >&2; exit 1; }
	$(MAKE) --no-print-directory undeploy DEPLOY_KUBECTL=$(DEPLOY_KUBECTL)
	$(DEPLOY_KUBECTL) delete --ignore-not-found -k config/crd
	@[ "$(PURGE_NAMESPACE)" != yes ] || $(DEPLOY_KUBECTL) delete --ignore-not-found namespace kruise-system

.PHONY: build-installer
build-installer: $(DEPLOY_KUBECTL_DEP) ## Write dist/install.yaml, the whole install in one file.
	@mkdir -p dist
	$(DEPLOY_KUBECTL) kustomize config/default | sed 's|ghcr.io/sidecarset-operator/sidecarset-operator:v0.1.0|$(IMG)|' > dist/install.yaml

##@ OLM bundle

# The bundle image, and the container engine that builds it.
BUNDLE_IMG ?= ghcr.io/sidecarset-operator/sidecarset-operator-bundle:v$(VERSION)
CONTAINER_TOOL ?= docker
# bundlegen's defaults: the latest release of config/manifests/releases.yaml
# (its version and createdAt), the config/manager image tagged v<version>, the
# channel candidate. VERSION and IMG override them only when given on the
# command line or in the environment (make bundle VERSION=0.2.0
# CREATED_AT=2027-01-31T00:00:00Z); CHANNELS and DEFAULT_CHANNEL when set.
BUNDLE_GEN_FLAGS = $(if $(filter command line environment,$(origin VERSION)),--version=$(VERSION)) \
	$(if $(CREATED_AT),--created-at=$(CREATED_AT)) \
	$(if $(filter command line environment,$(origin IMG)),--image=$(IMG)) \
	$(if $(CHANNELS),--channels=$(CHANNELS)) $(if $(DEFAULT_CHANNEL),--default-channel=$(DEFAULT_CHANNEL))

.PHONY: bundle
bundle: ## Generate the OLM bundle (bundle/, bundle.Dockerfile) from config/manifests and check it offline.
	go run ./hack/bundle/cmd/bundlegen $(BUNDLE_GEN_FLAGS)
	go run ./hack/bundle/cmd/bundlevalidate --apiserver=false

.PHONY: bundle-validate
bundle-validate: $(KUBE_APISERVER) $(ETCD) ## Validate the bundle (OperatorHub's rules and ours); the CRD and its example go to a real kube-apiserver.
	go run ./hack/bundle/cmd/bundlevalidate

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG with a container engine, its CSV naming IMG by tag (`make bundle-image` needs none and pins it by digest).
	@command -v $(CONTAINER_TOOL) >/dev/null || { echo "bundle-build needs a container engine: $(CONTAINER_TOOL) is not installed"; exit 1; }
	@# The context is just the bundle (.dockerignore, written for the manager image, excludes bundle/).
	tar -cf - bundle.Dockerfile bundle | $(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) -

.PHONY: bundle-push
bundle-push: ## Push the bundle image built by bundle-build (needs a container engine).
	@command -v $(CONTAINER_TOOL) >/dev/null || { echo "bundle-push needs a container engine: $(CONTAINER_TOOL) is not installed"; exit 1; }
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)

##@ Release images (no container engine: OCI image layouts under bin/images, pushed to any registry)

# hack/image builds the three images OLM needs from Go: the manager (a static
# binary on an empty base, one image per platform under one index), the
# bundle (bundle/ with the CSV's manager image pinned to IMG's repository at
# the manager's digest) and the file-based catalog (the bundle pinned to
# BUNDLE_IMG's repository at its digest). Every time in them is the last
# commit's, so the same commit gives the same digests. Pushing uses the
# docker config's credentials (~/.docker/config.json), not a docker engine.
IMAGES_DIR := $(LOCALBIN)/images
PLATFORMS ?= linux/amd64,linux/arm64
CATALOG_IMG ?= ghcr.io/sidecarset-operator/sidecarset-operator-catalog:v$(VERSION)
# Earlier releases' bundle images the catalog keeps in its upgrade graph
# (space-separated; pulled).
PREVIOUS_BUNDLES ?=
# Evaluated once per make (not at each use), so that every artifact of one
# run names the same commit; exported, so that a sub-make keeps them.
ifeq ($(origin SOURCE_DATE_EPOCH),undefined)
SOURCE_DATE_EPOCH := $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
endif
ifeq ($(origin REVISION),undefined)
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
endif
export SOURCE_DATE_EPOCH REVISION
IMAGE_FLAGS = --platforms=$(PLATFORMS) --source-date-epoch=$(SOURCE_DATE_EPOCH) --revision=$(REVISION)

.PHONY: image
image: ## Build the manager image (PLATFORMS) into bin/images/manager.
	go run ./hack/image manager $(IMAGE_FLAGS) --version=$(VERSION) --image=$(IMG) --out=$(IMAGES_DIR)/manager

.PHONY: image-push
image-push: image ## Push the manager image to IMG.
	go run ./hack/image push --layout=$(IMAGES_DIR)/manager --image=$(IMG)

.PHONY: bundle-image
bundle-image: image ## Build the bundle image of bundle/ into bin/images/bundle, the manager pinned to IMG's repository by digest.
	go run ./hack/image bundle $(IMAGE_FLAGS) --manager-layout=$(IMAGES_DIR)/manager --manager-image=$(IMG) \
		--image=$(BUNDLE_IMG) --out=$(IMAGES_DIR)/bundle

.PHONY: bundle-image-push
bundle-image-push: bundle-image ## Push the bundle image to BUNDLE_IMG.
	go run ./hack/image push --layout=$(IMAGES_DIR)/bundle --image=$(BUNDLE_IMG)

.PHONY: catalog
catalog: bundle-image ## Build the file-based catalog image into bin/images/catalog, the bundle pinned to BUNDLE_IMG's repository by digest.
	go run ./hack/image catalog $(IMAGE_FLAGS) --bundle-layout=$(IMAGES_DIR)/bundle --bundle-image=$(BUNDLE_IMG) \
		$(addprefix --previous-bundle=,$(PREVIOUS_BUNDLES)) --image=$(CATALOG_IMG) --out=$(IMAGES_DIR)/catalog

.PHONY: catalog-push
catalog-push: catalog ## Push the catalog image to CATALOG_IMG.
	go run ./hack/image push --layout=$(IMAGES_DIR)/catalog --image=$(CATALOG_IMG)

.PHONY: release-push
release-push: image-push bundle-image-push catalog-push ## Build and push the three images (IMG, BUNDLE_IMG, CATALOG_IMG).

# make release SNAPSHOT=true takes the notes from CHANGELOG.md's Unreleased
# section, to try a release before its section exists.
SNAPSHOT ?=

.PHONY: release
release: catalog ## Write a release into dist/: the plugin's archives (linux, darwin x amd64, arm64), the krew manifest, install.yaml, the notes, the images by digest, checksums.
	rm -rf dist
	$(MAKE) --no-print-directory build-installer
	go run ./hack/release --version=$(VERSION) --revision=$(REVISION) --source-date-epoch=$(SOURCE_DATE_EPOCH) --dist=dist \
		--image=manager=$(IMAGES_DIR)/manager=$(IMG) --image=bundle=$(IMAGES_DIR)/bundle=$(BUNDLE_IMG) \
		--image=catalog=$(IMAGES_DIR)/catalog=$(CATALOG_IMG) $(if $(filter true,$(SNAPSHOT)),--snapshot)
	@ls -l dist

##@ Local simulated cluster

DEV_DIR := $(LOCALBIN)/dev

.PHONY: dev
dev: $(CLUSTER_TOOLS) build ## Start (or refresh) the kwok dev cluster with the operator and the seed example.
	go run ./test/devenv up --bin-dir=$(LOCALBIN) --dir=$(DEV_DIR)

.PHONY: demo
demo: dev ## Run the user manual's walkthrough on the dev cluster, checking each step.
	go run ./test/demo/cmd --kubeconfig=$(DEV_DIR)/kubeconfig --kubectl=$(KUBECTL) --dir=$(DEV_DIR)/demo

.PHONY: dev-node
dev-node: root $(NODE_TOOLS) ## Join a real node (kubelet, containerd, runc) to the dev cluster, beside the kwok nodes (needs root; make dev first).
	go run ./test/devenv node-up --bin-dir=$(LOCALBIN) --dir=$(DEV_DIR)

.PHONY: dev-down
dev-down: ## Stop the operator, remove the real node and every host change it made, and delete the dev cluster.
	go run ./test/devenv down --bin-dir=$(LOCALBIN) --dir=$(DEV_DIR)

.PHONY: root
root:
	@[ "$$(id -u)" = 0 ] || { echo "the real node needs root (it runs containerd and a kubelet, and makes cgroups, mounts and a bridge): run as root"; exit 1; }

##@ Tools

.PHONY: tools
tools: $(CLUSTER_TOOLS) $(NODE_TOOLS) $(LINT_STAMP) $(K8S_OLDEST_STAMP) $(PROMETHEUS_STAMP) ## Build every tool into bin/ (once; later calls do nothing).

$(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(KUBECTL): $(K8S_STAMP)
$(KUBELET): $(KUBELET_STAMP)
$(KUBE_APISERVER_OLDEST) $(KUBECTL_OLDEST): $(K8S_OLDEST_STAMP)
$(ETCD): $(ETCD_STAMP)
$(CONTROLLER_GEN) $(KWOK) $(KWOKCTL): $(TOOLS_STAMP)
$(GOLANGCI_LINT): $(LINT_STAMP)
$(PROMETHEUS) $(PROMTOOL): $(PROMETHEUS_STAMP)

# Each recipe says what it builds and how long that takes on a cold module
# cache, then hides go's "go: downloading" lines (hundreds on a fresh machine);
# errors still show.
QUIET_DOWNLOADS := 2> >(grep -v '^go: downloading' >&2)

# k8s.io/kubernetes has no checksum-database answer here; its go.sum is committed.
$(K8S_STAMP):
	@echo ">> building kube-apiserver, kube-controller-manager, kube-scheduler and kubectl v$(K8S_VERSION) from the Go module proxy (about 5 minutes on two cores, cold module cache)"
	@mkdir -p $(K8S_BIN)
	cd test/tools/k8s && GONOSUMDB=k8s.io/kubernetes $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(K8S_BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl $(QUIET_DOWNLOADS)
	@rm -f $(K8S_BIN)/.built-k8s-* && touch $@

$(K8S_OLDEST_STAMP):
	@echo ">> building kube-apiserver and kubectl v$(K8S_OLDEST_VERSION) from the Go module proxy (about 7 minutes on two cores, cold build cache)"
	@mkdir -p $(K8S_OLDEST_BIN)
	cd $(K8S_OLDEST_MOD) && GONOSUMDB=k8s.io/kubernetes $(GO) build -ldflags "$(K8S_OLDEST_LDFLAGS)" -o $(K8S_OLDEST_BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl $(QUIET_DOWNLOADS)
	@rm -f $(K8S_OLDEST_BIN)/.built-k8s-* && touch $@

$(ETCD_STAMP):
	@echo ">> building etcd $(ETCD_VERSION) from the Go module proxy (about half a minute on two cores)"
	@mkdir -p $(K8S_BIN)
	cd test/tools/etcd && $(GO) build -o $(ETCD) go.etcd.io/etcd/server/v3 $(QUIET_DOWNLOADS)
	@rm -f $(K8S_BIN)/.built-etcd-* && touch $@

$(PROMETHEUS_STAMP):
	@echo ">> building prometheus and promtool $(PROMETHEUS_VERSION) from the Go module proxy (about 8 minutes on two cores, cold build cache)"
	@mkdir -p $(PROMETHEUS_BIN)
	cd test/monitoring && $(GO) build -o $(PROMETHEUS_BIN)/ github.com/prometheus/prometheus/cmd/prometheus \
		github.com/prometheus/prometheus/cmd/promtool $(QUIET_DOWNLOADS)
	@rm -f $(PROMETHEUS_BIN)/.built-prometheus-* && touch $@

$(TOOLS_STAMP):
	@echo ">> building kwok, kwokctl and controller-gen ($(KWOK_VERSION), $(CONTROLLER_TOOLS_VERSION)) from the Go module proxy (about a minute and a half on two cores)"
	@mkdir -p $(LOCALBIN)
	cd test/tools && $(GO) build -o $(LOCALBIN)/ sigs.k8s.io/controller-tools/cmd/controller-gen \
		sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl $(QUIET_DOWNLOADS)
	@rm -f $(LOCALBIN)/.built-tools-* && touch $@

$(KUBELET_STAMP):
	@echo ">> building kubelet v$(K8S_VERSION) from the Go module proxy (about 6 minutes on two cores, cold build cache)"
	@mkdir -p $(K8S_BIN)
	cd test/tools/k8s && GONOSUMDB=k8s.io/kubernetes $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(K8S_BIN)/ \
		k8s.io/kubernetes/cmd/kubelet $(QUIET_DOWNLOADS)
	@rm -f $(K8S_BIN)/.built-kubelet-* && touch $@

# containerd's own release tags: no cgo, no storage drivers the node does not use.
CONTAINERD_TAGS := urfave_cli_no_docs no_btrfs no_devmapper no_zfs osusergo netgo static_build
CONTAINERD_LDFLAGS := -X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION)

$(CONTAINERD_STAMP):
	@echo ">> building containerd $(CONTAINERD_VERSION), containerd-shim-runc-v2 and ctr from the Go module proxy (about 2 minutes on two cores)"
	@mkdir -p $(NODE_BIN)
	cd test/tools/containerd && CGO_ENABLED=0 $(GO) build -tags "$(CONTAINERD_TAGS)" -ldflags "$(CONTAINERD_LDFLAGS)" -o $(NODE_BIN)/ \
		github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr $(QUIET_DOWNLOADS)
	cd test/tools/containerd && CGO_ENABLED=0 $(GO) build -tags "$(CONTAINERD_TAGS) no_grpc" -ldflags "$(CONTAINERD_LDFLAGS)" -o $(NODE_BIN)/ \
		github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 $(QUIET_DOWNLOADS)
	@rm -f $(NODE_BIN)/.built-containerd-* && touch $@

# Debian packages the node needs, downloaded with apt-get (no install, no
# root) and unpacked under bin/node/debs: libseccomp-dev for runc, and
# busybox-static, the shell and commands of the node's images. The -dev
# package's libseccomp.so names the runtime package's library, which is not
# unpacked: without it the linker takes the static archive.
DEBS_DIR := $(NODE_BIN)/debs
$(DEBS_STAMP):
	@echo ">> fetching the Debian packages libseccomp-dev and busybox-static into $(DEBS_DIR) (about 3 seconds on two cores: 1 MB)"
	@rm -rf $(DEBS_DIR) && mkdir -p $(DEBS_DIR)/root
	cd $(DEBS_DIR) && $(APT_GET) download libseccomp-dev busybox-static
	for deb in $(DEBS_DIR)/*.deb; do $(DPKG_DEB) -x "$$deb" $(DEBS_DIR)/root; done
	rm -f $(DEBS_DIR)/root/usr/lib/*/libseccomp.so
	@touch $@

$(RUNC_STAMP): $(DEBS_STAMP)
	@echo ">> building runc $(RUNC_VERSION) with seccomp from the Go module proxy (about 45 seconds on two cores)"
	@mkdir -p $(NODE_BIN)
	cd test/tools/runc && multiarch=$$(gcc -print-multiarch) && CGO_ENABLED=1 \
		PKG_CONFIG_PATH=$(DEBS_DIR)/root/usr/lib/$$multiarch/pkgconfig PKG_CONFIG_SYSROOT_DIR=$(DEBS_DIR)/root \
		$(GO) build -tags "seccomp urfave_cli_no_docs" -o $(NODE_BIN)/runc github.com/opencontainers/runc $(QUIET_DOWNLOADS)
	@rm -f $(NODE_BIN)/.built-runc-* && touch $@

$(CNI_STAMP):
	@echo ">> building the CNI plugins bridge, host-local and loopback $(CNI_VERSION) from the Go module proxy (about 30 seconds on two cores)"
	@mkdir -p $(NODE_BIN)/cni
	cd test/tools/cni && CGO_ENABLED=0 $(GO) build -o $(NODE_BIN)/cni/ github.com/containernetworking/plugins/plugins/main/bridge \
		github.com/containernetworking/plugins/plugins/ipam/host-local github.com/containernetworking/plugins/plugins/main/loopback $(QUIET_DOWNLOADS)
	@rm -f $(NODE_BIN)/.built-cni-* && touch $@

$(LINT_STAMP):
	@echo ">> building golangci-lint $(GOLANGCI_LINT_VERSION) from the Go module proxy (about a minute on two cores)"
	@mkdir -p $(LOCALBIN)
	cd test/tools && $(GO) build -o $(LOCALBIN)/ github.com/golangci/golangci-lint/v2/cmd/golangci-lint $(QUIET_DOWNLOADS)
	@rm -f $(LOCALBIN)/.built-lint-* && touch $@

.PHONY: controller-gen kubectl kwokctl golangci-lint envtest setup-envtest
controller-gen: $(CONTROLLER_GEN) ## Build controller-gen.
kubectl: $(KUBECTL) ## Build kubectl v$(K8S_VERSION).
kwokctl: $(KWOKCTL) ## Build kwok and kwokctl.
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint.
envtest setup-envtest: $(KUBE_APISERVER) $(ETCD) ## Build the envtest binaries (kube-apiserver, etcd) into bin/k8s.

.PHONY: clean
clean: ## Remove bin/ (the tools are rebuilt by the next make).
	rm -rf $(LOCALBIN)
