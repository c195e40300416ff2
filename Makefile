# Gridweave: one command for the tests (`make test`).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PY_SOURCES := gridweave_controller gridweave_runtime gridweave_clients kuberay_service job_gateway \
	credit_service metering_service faucet_service platform_service chain_service registry_service gridweave gridweave_allinone gridweave_cli tests bench
# Only the folders that exist: the layout grows issue by issue.
CHECK_PATHS = $(wildcard $(PY_SOURCES))

.PHONY: help builds checks install up sandbox cluster-tools cluster-demo kubeapi cometbft registry prometheus vllm lint typecheck layers shellcheck chromium web-deps web-schema web-schema-check web-build web pytest test bench clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[server,models,dev]'
	touch $(STAMP)

install: $(STAMP)  ## create .venv and install Gridweave with its server, models and dev extras

up: install web-build sandbox prometheus  ## the whole platform on this machine until Ctrl-C (data in GRIDWEAVE_STATE_DIR, default ~/.gridweave)
	$(BIN)/gridweave up

# command:Debian package (the package of the same name when no package is given); iptables,
# ip and nsenter wire a job container's egress network (GATEWAY_JOB_NETWORK=egress, pip builds)
SANDBOX_TOOLS = runc mmdebstrap umoci skopeo iptables ip:iproute2 nsenter:util-linux
sandbox:  ## the job sandbox: runc, mmdebstrap, umoci, skopeo, iptables and iproute2 from Debian (installed when missing) and the default job image (cached outside the repo)
	@missing=$$(for entry in $(SANDBOX_TOOLS); do tool=$${entry%%:*}; package=$${entry#*:}; \
		command -v $$tool >/dev/null || echo $$package; done); \
	[ -z "$$missing" ] || { \
		[ "$$(id -u)" = 0 ] || { echo "*** install" $$missing "(apt-get install" $$missing")"; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; }
	@tools/sandbox-image/build.sh >/dev/null || { \
		echo "*** the default job image could not be built: jobs cannot run, the sandbox tests will skip"; \
		[ "$$CI" != "true" ]; }

# The test cluster (tests/support/cluster): namespaces, userspace WireGuard, a Docker daemon
# per node; command:Debian package, as SANDBOX_TOOLS (tests/support/cluster/prerequisites.py
# lists the same). --no-install-recommends: docker.io and wireguard recommend a kernel.
CLUSTER_TOOLS = unshare:util-linux nsenter:util-linux ip:iproute2 iptables-save:iptables \
	wg:wireguard-tools wg-quick:wireguard-tools wireguard-go dockerd:docker.io containerd runc curl openssl
cluster-tools:  ## the test cluster's tools: WireGuard (userspace), Docker's daemon, iproute2 (installed when missing)
	@missing=$$(for entry in $(CLUSTER_TOOLS); do tool=$${entry%%:*}; package=$${entry#*:}; \
		command -v $$tool >/dev/null || echo $$package; done | sort -u); \
	[ -z "$$missing" ] || { \
		[ "$$(id -u)" = 0 ] || { echo "*** install" $$missing "(apt-get install" $$missing")"; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $$missing >/dev/null; }

cluster-demo: install sandbox kubeapi cluster-tools  ## a master and two GPU nodes in namespaces: join, jobs on each node, a node killed, all stopped
	$(BIN)/python -m tests.support.cluster.demo

kubeapi:  ## build the Kubernetes API server + etcd used by the tests (cached outside the repo)
	@tools/kubeapi/build.sh >/dev/null || { \
		echo "*** the test Kubernetes API server could not be built: real-server tests will skip"; \
		[ "$$CI" != "true" ]; }

cometbft:  ## build CometBFT for the audit-chain tests (pinned in tools/cometbft, cached outside the repo)
	@tools/cometbft/build.sh >/dev/null || { \
		echo "*** CometBFT could not be built: the anchoring tests will skip"; \
		[ "$$CI" != "true" ]; }

registry:  ## build the image registry and the crane and oras clients its tests drive (pinned in tools/registry*, cached outside the repo)
	@{ tools/registry/build.sh >/dev/null && tools/registry-clients/build.sh >/dev/null; } || { \
		echo "*** the image registry or its clients could not be built: the registry tests will skip"; \
		[ "$$CI" != "true" ]; }

prometheus:  ## build Prometheus for gridweave up and the admin console's tests (pinned in tools/prometheus, cached outside the repo)
	@tools/prometheus/build.sh >/dev/null || { \
		echo "*** Prometheus could not be built: gridweave up draws no charts, the console tests will skip"; \
		[ "$$CI" != "true" ]; }

vllm:  ## build the virtualenv of vLLM's CPU build for the vllm endpoint tests (pinned in tools/vllm, cached outside the repo)
	@tools/vllm/build.sh >/dev/null || { \
		echo "*** vLLM's virtualenv could not be built: the vllm endpoint tests will skip"; \
		[ "$$CI" != "true" ]; }

lint: install  ## ruff lint and format check
	$(BIN)/ruff check $(CHECK_PATHS)
	$(BIN)/ruff format --check $(CHECK_PATHS)

typecheck: install  ## mypy strict
	$(BIN)/mypy $(CHECK_PATHS)

layers: install  ## the import-linter contracts: the layers, no service importing another
	$(BIN)/lint-imports --no-logo

SHELL_SCRIPTS = $(wildcard deploy/*.sh deploy/lib/*.sh tests/support/cluster/standins/* tools/images/*.sh tools/test-suite.sh)
shellcheck:  ## shellcheck the deploy scripts (installs Debian's shellcheck when missing)
	@command -v shellcheck >/dev/null || { \
		[ "$$(id -u)" = 0 ] || { echo "*** install shellcheck (apt-get install shellcheck)"; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck >/dev/null; }
	shellcheck -x $(SHELL_SCRIPTS)

# The dashboard (web/): its TypeScript types come from the platform's OpenAPI document.
OPENAPI_DUMP = $(BIN)/python -c 'from platform_service.openapi import main; main()'
web/node_modules/.installed-stamp: web/package.json web/package-lock.json
	cd web && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
	touch $@

web-deps: web/node_modules/.installed-stamp  ## npm ci in web/ (never downloads a browser)

web-schema: install web-deps  ## regenerate web/src/api/schema.d.ts from the platform's routes
	@tmp=$$(mktemp -d) && $(OPENAPI_DUMP) > $$tmp/openapi.json && \
		web/node_modules/.bin/openapi-typescript $$tmp/openapi.json -o web/src/api/schema.d.ts --silent; \
		status=$$?; rm -rf $$tmp; exit $$status

web-schema-check: install web-deps  ## fail when web/src/api/schema.d.ts is not what the routes generate
	@tmp=$$(mktemp -d) && $(OPENAPI_DUMP) > $$tmp/openapi.json && \
		web/node_modules/.bin/openapi-typescript $$tmp/openapi.json -o $$tmp/schema.d.ts --silent && \
		{ cmp -s $$tmp/schema.d.ts web/src/api/schema.d.ts || { \
			diff -u web/src/api/schema.d.ts $$tmp/schema.d.ts | head -40; rm -rf $$tmp; \
			echo "*** web/src/api/schema.d.ts is stale: run make web-schema and commit it"; exit 1; }; }; \
		rm -rf $$tmp

chromium:  ## Debian's Chromium for the browser tests (installed when missing; Playwright never downloads one)
	@command -v chromium >/dev/null || { \
		[ "$$(id -u)" = 0 ] || { echo "*** install chromium (apt-get install chromium)"; exit 1; }; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

web-build: web-deps  ## build the dashboard into web/dist (what gridweave up serves on port 3000)
	cd web && node_modules/.bin/vite build --logLevel warn

web: web-deps web-schema-check chromium  ## the dashboard: typecheck, component tests, build (the browser tests run in pytest)
	cd web && node_modules/.bin/tsc -b
	cd web && node_modules/.bin/vitest run
	cd web && node_modules/.bin/vite build --logLevel warn

# Two passes: the tests that need the machine to themselves in one process, then the rest
# on pytest-xdist's workers, each with its own API server, PostgreSQL and Ray, a module whole
# and the Ray modules together on one (tests/support/parallel.py). Both passes run whatever
# the first's outcome, so one run shows every failure; each lists its slowest tests. A
# pass's failures, TEST_RERUNS or fewer, run once more by themselves (tools/test-suite.sh).
# TEST_WORKERS=0 runs the second pass in one process too; TEST_RERUNS=0 runs nothing again.
TEST_WORKERS ?= 3
TEST_RERUNS ?= 3
pytest: install sandbox kubeapi cometbft registry prometheus vllm cluster-tools  ## the test suite (real apiserver and PostgreSQL included)
	@tools/test-suite.sh $(BIN)/pytest $(TEST_WORKERS) $(TEST_RERUNS)

# What the tests need built that installs nothing with the system's package manager: run at
# once, so pip's downloads overlap the Go compilers (a cold `make test` saves the sum of the
# shorter ones); each keeps its own log lines together.
BUILDS := install kubeapi cometbft registry prometheus vllm
builds:  ## build the virtualenv and the pinned servers the tests need, all at once
	@$(MAKE) --no-print-directory -j$(words $(BUILDS)) --output-sync=target $(BUILDS)

# The checks that install nothing with apt, or only one thing (web's Chromium), two at a
# time: mypy runs on one core, the dashboard's build and tests on the other. shellcheck
# (which may install shellcheck with apt) runs before them, never beside another apt-get.
CHECKS := lint typecheck layers web
checks: install  ## lint, types, the import layers and the dashboard, two at a time
	@$(MAKE) --no-print-directory -j2 --output-sync=target $(CHECKS)

test: builds shellcheck checks pytest  ## everything CI runs

bench: install sandbox kubeapi cometbft registry prometheus vllm cluster-tools  ## the benchmarks in bench/ (figures go to docs/benchmarks.md)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python -m bench.$$(basename $$b .py) || exit 1; done

clean:  ## remove the virtualenv and caches (not the apiserver build cache)
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .import_linter_cache web/node_modules web/dist
