# DDS — developer entry points. `make` (or `make help`) lists the targets.
#
# `make run` and `make test` work on a fresh Debian 12 machine: deploy/install.sh installs what is
# missing (cached under $(DDS_CACHE)), deploy/stack.sh runs PostgreSQL + pgvector, the Temporal
# dev server and MinIO under .dds/ in the repository.

# Pinned tool versions, used by `make generate` and `make lint` only (not by run or test).
# The versions of the Temporal CLI and MinIO that run the stack are pinned in deploy/install.sh.
BUF_VERSION                   := v1.75.0
PROTOC_GEN_GO_VERSION         := v1.36.12
PROTOC_GEN_CONNECT_GO_VERSION := v1.21.1
GOLANGCI_LINT_VERSION         := v2.15.0

SHELL       := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS   += --no-print-directory

DDS_CACHE ?= $(HOME)/.cache/dds
export DDS_CACHE
TOOLS := $(DDS_CACHE)/bin
# Node 22 from deploy/install.sh comes first, so npm, npx and the tests' node run on it.
export PATH := $(DDS_CACHE)/node/bin:$(PATH)

# Overridable: `make test PKGS=./auth/... GO_TEST_FLAGS='-count=1 -run TestScopes -v'`.
PKGS          ?= ./...
GO_TEST_FLAGS ?= -count=1 -p 2 -timeout 20m
BENCH_ARGS    ?=

# MinIO is started for `make run` only when the s3 file storage driver is chosen.
RUN_MINIO := $(if $(filter s3,$(FILE_STORAGE_DRIVER)),--with-minio,)
# `make run` needs no browser (only the console's browser test does).
INSTALL_RUN_FLAGS := --no-browser --no-pgbouncer $(if $(RUN_MINIO),,--no-minio)

.PHONY: help
help: ## Show this list
	@awk 'BEGIN { FS = ":.*## " } \
		/^##@/ { printf "\n%s\n", substr($$0, 5) } \
		/^[a-zA-Z0-9_-]+:.*## / { printf "  %-13s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

##@ Run and test

.PHONY: install
install: ## Install what is missing: PostgreSQL 15, pgvector, Temporal CLI, MinIO (cached)
	@bash deploy/install.sh --with-hydra

.PHONY: run
run: ## Install, start the stack, migrate, then server + worker in one process (Ctrl-C stops all)
	@bash deploy/install.sh $(INSTALL_RUN_FLAGS)
	@mkdir -p bin && go build -o bin/dds ./cmd/dds
	@bash deploy/with-stack.sh $(RUN_MINIO) --profile run -- bin/dds dev

.PHONY: test
test: ## Install, start the stack (with MinIO, PgBouncer, Hydra and a read replica), run every test incl. fuzz seed corpora
	@bash deploy/install.sh --with-hydra
	@bash deploy/with-stack.sh --with-minio --with-pgbouncer --with-hydra --with-replica --profile test --db dds_test -- \
		go test $(GO_TEST_FLAGS) $(PKGS)

.PHONY: cluster-check
# It restarts Postgres and the Temporal server on purpose, so it runs a stack of its own (state in
# .dds/cluster, its own ports), never the one `make run` and `make test` use; the Temporal server
# (built and cached on first use, about 3 minutes) replaces the dev server there. Needs root for
# the network namespace (deploy/cluster-net.sh). About 5 minutes warm.
CLUSTER_STACK := DDS_STATE_DIR=$(CURDIR)/.dds/cluster DDS_PG_PORT=54339 DDS_PGBOUNCER_PORT=64339 DDS_TEMPORAL_SERVER_PORT=7433 DDS_PG_REPLICA_PORT=54340

cluster-check: ## Run the production topology (2 servers behind HAProxy, 2 workers, PgBouncer, a read replica, Temporal server) and break it on purpose
	@bash deploy/install.sh --no-browser --no-minio --with-cluster
	@mkdir -p bin && go build -o bin/dds ./cmd/dds
	@$(CLUSTER_STACK) bash deploy/with-stack.sh --with-pgbouncer --with-replica --with-temporal-server --no-temporal-dev --profile run -- \
		go run ./deploy/clustercheck -bin bin/dds

.PHONY: cluster-bench
# The scaling table over the same stack as cluster-check (bench/cluster): read throughput through
# HAProxy with 1-3 servers, without and with the replica, and the write path through PgBouncer.
cluster-bench: ## Benchmark the production topology: servers and a replica behind HAProxy, writes through PgBouncer vs direct
	@bash deploy/install.sh --no-browser --no-minio --with-cluster
	@mkdir -p bin && go build -o bin/dds ./cmd/dds
	@$(CLUSTER_STACK) bash deploy/with-stack.sh --with-pgbouncer --with-replica --with-temporal-server --no-temporal-dev --profile run -- \
		go run ./bench/cluster -bin bin/dds

.PHONY: fresh-check
fresh-check: ## As root: run `make run`, the README's first calls and `make test` in a fresh Debian root
	@bash deploy/fresh-check.sh

.PHONY: bench
# Each program measures one capability next to its baselines, in the same run,
# over the same Postgres; each bounds its own time. BENCHES=files runs just one.
# bench/rest and bench/graphql (in-process load, for profiling) run only when named.
BENCHES ?= cmd/ddsbench files webhooks jobs tenants events replicas

bench: ## Install, start the stack, run the benchmarks (BENCHES=files for one); prints ratios to baselines
	@bash deploy/install.sh --no-minio --with-bench
	@bash deploy/with-stack.sh --with-replica --profile run --db dds_bench -- bash -c 'set -e; \
		for b in $(BENCHES); do echo; echo "=== bench/$$b"; go run ./bench/$$b $(BENCH_ARGS); done'

.PHONY: bench-tenants-1m
# The tenant lifecycle at 1,000,000 records (export, import, delete against COPY TO, COPY FROM and
# DROP TABLE of the same rows, peak RSS of server and worker): a few minutes, so not in `make bench`.
bench-tenants-1m: ## Benchmark export, import and delete of a tenant of 1,000,000 records
	@$(MAKE) --no-print-directory bench BENCHES=tenants BENCH_ARGS=-rows=1000000

.PHONY: stack-up
stack-up: ## Start the stack (Postgres, Temporal, MinIO) and leave it running; env in .dds/env
	@bash deploy/install.sh --with-hydra
	@bash deploy/stack.sh up --with-minio

.PHONY: stack-down
stack-down: ## Stop the services stack-up/run/test started
	@bash deploy/stack.sh down

.PHONY: stack-status
stack-status: ## Show which services of the stack are running
	@bash deploy/stack.sh status

##@ Code

.PHONY: build
build: ## Build the dds binary into bin/dds
	@mkdir -p bin
	go build -o bin/dds ./cmd/dds

.PHONY: ui
ui: ## Rebuild the web console (ui/ to ui/dist, embedded in the binary) from the pinned npm packages
	cd ui && npm ci --no-audit --no-fund && npm run build

.PHONY: fmt
fmt: ## gofmt every Go file
	gofmt -w $$(find . -name '*.go' -not -path './.dds/*' -not -path '*/node_modules/*')

.PHONY: lint
lint: $(TOOLS)/.golangci-lint-$(GOLANGCI_LINT_VERSION) ## gofmt check, go vet, golangci-lint (.golangci.yml); reports all three
	@fail=0; \
	out=$$(gofmt -l $$(find . -name '*.go' -not -path './.dds/*' -not -path '*/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed (run make fmt):"; echo "$$out"; fail=1; fi; \
	echo "go vet ./..."; go vet ./... || fail=1; \
	echo "golangci-lint run ./..."; $(TOOLS)/golangci-lint run ./... || fail=1; \
	exit $$fail

.PHONY: generate
generate: tools ## Regenerate code from proto/ with buf (pinned buf and plugins)
	@test -f proto/buf.gen.yaml || { echo "proto/buf.gen.yaml missing"; exit 1; }
	cd proto && PATH="$(TOOLS):$$PATH" buf generate

GEN_TOOLS := $(TOOLS)/.buf-$(BUF_VERSION) $(TOOLS)/.protoc-gen-go-$(PROTOC_GEN_GO_VERSION) \
	$(TOOLS)/.protoc-gen-connect-go-$(PROTOC_GEN_CONNECT_GO_VERSION)

.PHONY: tools
tools: $(GEN_TOOLS) ## Install the pinned code generators (buf, protoc-gen-go, -connect-go)

# One stamp file per tool version: changing a pin above reinstalls that tool.
$(TOOLS)/.buf-$(BUF_VERSION):
	@mkdir -p $(TOOLS)
	cd / && GOBIN=$(TOOLS) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	@touch $@
$(TOOLS)/.protoc-gen-go-$(PROTOC_GEN_GO_VERSION):
	@mkdir -p $(TOOLS)
	cd / && GOBIN=$(TOOLS) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	@touch $@
$(TOOLS)/.protoc-gen-connect-go-$(PROTOC_GEN_CONNECT_GO_VERSION):
	@mkdir -p $(TOOLS)
	cd / && GOBIN=$(TOOLS) go install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(PROTOC_GEN_CONNECT_GO_VERSION)
	@touch $@
$(TOOLS)/.golangci-lint-$(GOLANGCI_LINT_VERSION):
	@mkdir -p $(TOOLS)
	cd / && GOBIN=$(TOOLS) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	@touch $@

.PHONY: clean
clean: ## Remove build output and coverage files (keeps .dds/ data and the cache)
	rm -rf bin coverage.out coverage.html *.coverprofile

.PHONY: clean-stack
clean-stack: ## Stop the stack and delete its data (.dds/)
	@bash deploy/stack.sh down
	@if [ -L .dds/pg ]; then rm -rf "$$(readlink -f .dds/pg)"; fi
	rm -rf .dds
