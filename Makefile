# dl-charts: every entry point a contributor or CI needs. `make help` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST := $(VENV)/bin/pytest
HELM3 := helm-v3.18.0
STAMP := $(VENV)/.installed

.PHONY: help setup tools test test-unit test-render test-render-helm3 test-properties test-cluster test-example \
        lint snapshots demo docs clean

help:  ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

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

tools: $(STAMP)  ## install the pinned helm 4, helm 3 and kubectl (sha256-verified) into .tools/
	$(PY) -m dlcharts.toolchain

test: setup  ## every tier CI runs
	$(PYTEST) tests examples -p no:cacheprovider --junitxml=reports/junit.xml
	$(PYTEST) tests/render -p no:cacheprovider --dlcharts-helm $(HELM3) --junitxml=reports/junit-helm3.xml

test-unit: setup  ## unit tier
	$(PYTEST) tests/unit

test-render: setup  ## render tier (every chart x scenario x Kubernetes version)
	$(PYTEST) tests/render

test-render-helm3: setup  ## render tier under Helm 3
	$(PYTEST) tests/render --dlcharts-helm $(HELM3)

test-properties: setup  ## property tier (hypothesis over values)
	$(PYTEST) tests/properties

lint: setup  ## ruff + mypy + helm lint --strict on every scenario
	$(VENV)/bin/ruff check src tests examples ci
	$(VENV)/bin/mypy src

snapshots: setup  ## re-record golden snapshots after an intended chart change
	$(VENV)/bin/dlcharts snapshot --update

docs: $(DOCS_GEN)  ## regenerate every chart README's parameter table from its values.yaml annotations
	for chart in charts/*/; do [ -f "$$chart/README.md" ] && grep -q '@param' "$$chart/values.yaml" && \
	  $(DOCS_GEN) --values "$$chart/values.yaml" --readme "$$chart/README.md" >/dev/null; done; true

clean:  ## remove the virtualenv, tools and caches
	rm -rf $(VENV) .tools reports .pytest_cache .hypothesis
