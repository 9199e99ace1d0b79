# dl-charts: every entry point a contributor or CI needs. `make help` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
HELM3 := helm-v3.18.0
STAMP := $(VENV)/.installed
# Tiers without a cluster run on every core (pytest-xdist): helm processes dominate them and are independent.
PARALLEL ?= -n auto

.PHONY: help packages machine-check setup tools dist control-plane operators test test-fast test-charts test-charts-helm3 test-identity test-properties test-images test-cluster test-example \
        lint snapshots demo docs clean repo repo-oci release-check bench bench-render bench-results

help:  ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# The Debian packages: the real node's and the images' tools are listed once, in
# src/dlcharts/host/host-packages.txt (what `dlcharts demo` and the cluster check before they start); the tests'
# and lint's are here. The one install step for `make demo`, `make test` and .ci/run: apt-get only what is missing.
HOST_PACKAGES := src/dlcharts/host/host-packages.txt
DEV_PACKAGES := gpg:gnupg shellcheck:shellcheck
packages:  ## the Debian packages the real node, the local images, the tests and lint use (apt-get, as root; only what is missing)
	@missing=$$( { awk '!/^#/ && NF {print $$1, $$2}' $(HOST_PACKAGES); printf '%s\n' $(DEV_PACKAGES) | tr : ' '; } | \
	  while read -r tool package; do \
	    if [[ $$tool == /* ]]; then [[ -e $$tool ]] || echo "$$package"; \
	    else command -v "$$tool" >/dev/null || echo "$$package"; fi; \
	  done | sort -u | xargs); \
	if [[ -z $$missing ]]; then echo "packages: every Debian package needed is installed"; exit 0; fi; \
	if [[ $$(id -u) != 0 ]]; then \
	  echo "packages: missing $$missing; install them as root: apt-get install $$missing" >&2; exit 1; fi; \
	echo "packages: installing $$missing (apt-get; about a minute)"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing

# The demo needs the harness with its cluster extra only; the tests add their tools and TensorFlow (a test
# dependency, not the demo's: its image brings its own).
DEMO_STAMP := $(VENV)/.installed-demo
$(DEMO_STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[cluster]'
	touch $@

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,tf]'
	touch $(STAMP)

DOCS_GEN := ci/docs/node_modules/.bin/readme-generator

$(DOCS_GEN): ci/docs/package.json ci/docs/package-lock.json
	npm ci --prefix ci/docs --no-audit --no-fund --silent
	touch $(DOCS_GEN)

setup: $(STAMP) tools $(DOCS_GEN)  ## virtualenv with the harness, pinned helm/kubectl, the README generator

tools: $(STAMP)  ## pinned helm 4, helm 3 and kubectl (sha256-verified) into .tools/, links in .tools/bin; the in-process renderers (built once)
	$(VENV)/bin/dlcharts tools | tail -n 1
	mkdir -p .tools/bin
	ln -sfn ../helm-v4.3.1/helm .tools/bin/helm
	ln -sfn ../$(HELM3)/helm .tools/bin/helm3
	ln -sfn ../kubectl-v1.37.1/kubectl .tools/bin/kubectl
	@echo 'helm (4), helm3 and kubectl are in .tools/bin; to use them: export PATH="$$PWD/.tools/bin:$$PATH"'

dist: $(STAMP)  ## the harness's wheels into dist/: pure Python, and this platform's with the Go helpers (native/wheels.py; PLATFORMS=--all for every one)
	$(PY) native/wheels.py $(PLATFORMS)

# Go lives in /usr/local/go/bin on the project's machines; the control-plane build needs it.
export PATH := $(PATH):/usr/local/go/bin

control-plane: setup  ## build (once, cached in ~/.cache/dlcharts) kube-apiserver, controller-manager, scheduler, etcd, kwok, kubelet, coredns, registry, crane; the oldest supported Kubernetes' API server, controller-manager, scheduler and validator; the add-ons Kueue and coscheduling
	$(VENV)/bin/dlcharts cluster build default oldest addons

operators: setup  ## bench only (python -m bench.operators; not in control-plane or test): build (once, cached) the training operators our charts are compared with: training-operator v1, mpi-operator, JobSet, Kubeflow Trainer v2
	$(VENV)/bin/dlcharts cluster build operators

demo: packages $(DEMO_STAMP)  ## the main job: tensorflow-dist --set worker=4 trains for real on the embedded cluster's real node (CPU), then GPU placement on fake nodes (checks the machine, then builds only what it needs)
	$(VENV)/bin/dlcharts demo

# The test tiers are folders (tests/README.md): tests/fast/<part>/ needs no cluster and runs on every core
# (pytest-xdist); tests/cluster/<part>/ runs on the embedded cluster.
FAST := tests/fast examples
# The cluster tier as two sessions side by side (ci/together.sh), each on an embedded cluster of its own, because
# much of their time is spent waiting for pods: the real nodes' training (tests/cluster/training, on 2 real nodes:
# every chart across hosts, and node faults) beside every other folder of tests/cluster (every chart installed on
# fake GPU nodes, the API-parity test, the queueing tests on a third cluster of fake GPU nodes, the repository, the
# images, ...). With 2 real nodes the training alone took 1,270 s of a 1,486 s session (API parity 104 s, queueing
# 112 s), the other session 1,038 s: those two moved over. With jax-dist and deepspeed-dist (session 18) the
# training session took 1,495 s (the sweep's test 77 s of it, the imported job's 19 s) and the other 1,329 s: the
# sweep's test went back to the other. The CPU is the limit: a third session (tried: chart
# installs alone) made every session slower, by more than it took from the longest.
REAL_TRAINING := tests/cluster/training tests/cluster/cli/test_import_run.py
OTHER_CLUSTER := tests/cluster $(addprefix --ignore=,$(REAL_TRAINING))
# $(call session,NAME,CLUSTER,TESTS): one pytest session on the embedded cluster CLUSTER, its report in reports/
session = DLCHARTS_CLUSTER_NAME=$(2) $(PYTEST) $(3) --dlcharts-cluster-name $(2) -p no:cacheprovider \
  --junitxml=reports/junit-$(1).xml
CLUSTER_SESSIONS = bash ci/together.sh \
  real-training 'DLCHARTS_REAL_NODES=2 $(call session,real-training,dlcharts,$(REAL_TRAINING))' \
  other-cluster '$(call session,other-cluster,dlcharts-other,$(OTHER_CLUSTER))'

# Everything `make test` builds is checked for first (root, packages, Go, ports, disk): a problem is found in
# seconds, not after an hour of builds.
machine-check: $(STAMP)
	$(VENV)/bin/dlcharts cluster check default oldest addons tools

test: packages machine-check setup control-plane  ## every tier CI runs: fast, cluster (two sessions side by side), the charts again under Helm 3
	$(PYTEST) $(PARALLEL) $(FAST) -p no:cacheprovider --junitxml=reports/junit.xml
	$(CLUSTER_SESSIONS)
	$(PYTEST) $(PARALLEL) tests/fast/charts -p no:cacheprovider --dlcharts-helm $(HELM3) --junitxml=reports/junit-helm3.xml

test-fast: setup  ## fast tier: tests/fast and examples, no cluster, on every core
	$(PYTEST) $(PARALLEL) $(FAST)

test-charts: setup  ## the charts' own tests (tests/fast/charts): every chart x scenario x Kubernetes version, refusals, docs
	$(PYTEST) $(PARALLEL) tests/fast/charts

test-charts-helm3: setup  ## tests/fast/charts under Helm 3
	$(PYTEST) $(PARALLEL) tests/fast/charts --dlcharts-helm $(HELM3)

test-identity: setup  ## the in-process renderer vs the helm binary, byte for byte: every chart x scenario x Kubernetes version, both helms
	$(PYTEST) $(PARALLEL) tests/fast/identity

test-properties: setup  ## property tests (hypothesis over values; tests/fast/properties)
	$(PYTEST) $(PARALLEL) tests/fast/properties

test-images: packages setup  ## local registry and helper image (tests/cluster/images: mmdebstrap, umoci, crane; as root)
	$(VENV)/bin/dlcharts cluster build images >/dev/null
	$(PYTEST) tests/cluster/images

test-cluster: packages machine-check setup control-plane  ## cluster tier (tests/cluster): the two sessions of `make test`, side by side
	$(CLUSTER_SESSIONS)

lint: packages setup  ## ruff (lint + format), mypy --strict, shellcheck of the chart scripts; helm lint --strict runs in the render tier
	$(VENV)/bin/ruff check src tests examples ci bench native charts/dl-common
	$(VENV)/bin/ruff format --check src tests examples ci bench native charts/dl-common
	$(VENV)/bin/mypy src
	@command -v shellcheck >/dev/null || { echo "make lint: shellcheck is missing; install the Debian package shellcheck" >&2; exit 2; }
	shellcheck charts/*/scripts/*.sh

snapshots: setup  ## re-record golden snapshots after an intended chart change
	$(VENV)/bin/dlcharts snapshot --update

docs: $(DOCS_GEN)  ## regenerate every chart README's parameter table from its values.yaml annotations
	for chart in charts/*/; do [ -f "$$chart/README.md" ] && grep -q '@param' "$$chart/values.yaml" && \
	  $(DOCS_GEN) --values "$$chart/values.yaml" --readme "$$chart/README.md" >/dev/null; done; true

# The chart repository (README: "Using the chart repository"). Sign with a maintainer's key:
#   make repo SIGN_KEY='dl-charts releases' KEYRING=secring.gpg [PASSPHRASE_FILE=pass.txt]
# or try the whole flow with a throwaway key (written to build/repo-key/; never publish with it):
#   make repo SIGN=throwaway
REPO_DIR ?= build/repo
# Where the repository will be served; empty = relative URLs in index.yaml (valid on any server). Set it once, here
# or on the command line, when publishing: make repo REPO_URL=https://<your-host>/<path>
REPO_URL ?=
SIGN ?=
SIGN_KEY ?=
KEYRING ?=
PASSPHRASE_FILE ?=
BASE ?=

SIGNING = $(if $(SIGN_KEY),--sign-key '$(SIGN_KEY)' --keyring '$(KEYRING)') \
  $(if $(PASSPHRASE_FILE),--passphrase-file '$(PASSPHRASE_FILE)') $(if $(filter throwaway,$(SIGN)),--throwaway-key build/repo-key)

repo: tools  ## package every chart (dl-common vendored) into build/repo + index.yaml; sign: SIGN_KEY=.. KEYRING=.. or SIGN=throwaway
	$(VENV)/bin/dlcharts repo build charts --out '$(REPO_DIR)' $(if $(REPO_URL),--url '$(REPO_URL)') $(SIGNING)

# The same packages as OCI artifacts (README: "Using the chart repository"), into build/oci and then pushed with
# their .prov files. By default to the local registry (`dlcharts registry up`: HTTPS from a throwaway CA, a
# login), started when it is not running, at oci://<its address>/dl-charts. To a real one:
#   make repo-oci SIGN_KEY=.. KEYRING=.. OCI_REPO=oci://ghcr.io/<org>/dl-charts OCI_USER=<user> OCI_PASSWORD_FILE=token.txt
# (OCI_CA_FILE=ca.crt when the system does not trust its certificate). A version the registry holds with other
# content is refused before anything is pushed.
OCI_REPO ?=
OCI_USER ?=
OCI_PASSWORD_FILE ?=
OCI_CA_FILE ?=

repo-oci: tools  ## package, sign and helm push every chart to an OCI registry (default: the local one, TLS + login); prints references and digests
	$(VENV)/bin/dlcharts repo push charts --out build/oci $(if $(OCI_REPO),--to '$(OCI_REPO)') \
	  $(if $(OCI_USER),--username '$(OCI_USER)' --password-file '$(OCI_PASSWORD_FILE)') \
	  $(if $(OCI_CA_FILE),--ca-file '$(OCI_CA_FILE)') $(SIGNING)

release-check: tools  ## version bumps vs BASE (default: merge-base with origin/main, else main), Chart.yaml schema, yamllint, appVersion, artifacthub, CHANGELOG
	$(VENV)/bin/dlcharts release-check charts $(if $(BASE),--base '$(BASE)')

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) tools  ## benchmarks (validation vs kubeconform, render, scale, scheduling, test tiers, images) -> bench/data, bench/results.md, bench/plots
	$(PY) -m bench.run

bench-render: $(BENCH_STAMP) tools  ## in-process renderer vs helm binary vs helm-unittest, tiers, chart to verdict -> bench/results.md section 10
	$(PY) -m bench.renderers

bench-results: $(STAMP)  ## bench/results.md again from bench/data/*.json (after editing a section's data by hand); measures nothing
	$(PY) -m bench.results

clean:  ## remove the virtualenv, tools and caches
	rm -rf $(VENV) .tools reports .pytest_cache .hypothesis
