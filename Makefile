# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
HOST ?= 127.0.0.1
PORT ?= 8000
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: run test install install-dev browser capture migrate catalog engine bench check-deploy clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip==25.3

$(VENV)/.installed: $(BIN)/python requirements.txt requirements.lock
	$(BIN)/pip install --quiet -r requirements.txt -c requirements.lock
	touch $@

# llama-cpp-python compiles llama.cpp for this CPU. Its AMX kernels segfault on the first token on
# Sapphire-Rapids-class Xeons (ggml-org/llama.cpp#20824), so x86_64 builds leave AMX out. The engine is built
# without pip's wheel cache: a wheel cached from a build with other flags would be reused silently.
AMX_OFF := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE_ARGS := $(if $(filter x86_64,$(shell uname -m)),-DCMAKE_C_FLAGS="$(AMX_OFF)" -DCMAKE_CXX_FLAGS="$(AMX_OFF)")

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt requirements-engine.txt requirements.lock
	CMAKE_ARGS='$(LLAMA_CMAKE_ARGS)' $(BIN)/pip install --quiet --no-cache-dir -r requirements-engine.txt -c requirements.lock
	$(BIN)/pip install --quiet -r requirements-dev.txt -c requirements.lock
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev browser

# Browser tests drive Debian's Chromium; Playwright never downloads a browser of its own.
browser:
	@command -v chromium >/dev/null 2>&1 || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium)

# benchmarks/sweep_accuracy.py measures every tool against a packet capture of the loopback interface.
capture:
	@command -v tcpdump >/dev/null 2>&1 || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq tcpdump)

migrate: install
	$(PY) manage.py migrate --noinput

# Reports every field it changes in existing rows; `make catalog KEEP_EDITS=1` leaves edits made since alone.
catalog: migrate
	$(PY) manage.py load_catalog $(if $(KEEP_EDITS),--keep-edits)

# Loads the catalog on the first run only; `make catalog` refreshes it (and restores fixture rows edited since).
run: migrate
	$(PY) manage.py load_catalog --if-empty
	$(BIN)/python bin/serve.py --host $(HOST) --port $(PORT)

# Uses the PostgreSQL and Redis that answer (DATABASE_URL / REDIS_URL, else the default ports) or starts
# throw-away ones for the run, installing Debian's packages when missing (bin/with_services.py).
# PYTEST_ADDOPTS narrows the run, e.g. PYTEST_ADDOPTS='tests/core' make test.
test: install-dev
	$(PY) bin/with_services.py -- $(BIN)/pytest

engine: catalog $(VENV)/.installed-dev
	$(PY) manage.py engine_demo

BENCHMARKS := pages api probe_accuracy engine_probe probe_pages probe_summaries recommendations sweep_accuracy

# Each script prints its figures and writes benchmarks/results/<name>.md; collect.py rebuilds RESULTS.md.
bench: install-dev capture
	for script in $(BENCHMARKS); do $(PY) benchmarks/$$script.py || exit 1; done
	$(PY) benchmarks/pages.py --sqlite
	$(PY) benchmarks/pages.py --scale 10
	$(PY) benchmarks/api.py --scale 10
	$(PY) benchmarks/sweep_accuracy.py --streams
	$(PY) benchmarks/sweep_accuracy.py --streams --burn
	$(PY) benchmarks/collect.py

check-deploy: install
	DJANGO_SETTINGS_MODULE=config.settings.production DJANGO_SECRET_KEY=$$(openssl rand -hex 40) \
		DJANGO_ALLOWED_HOSTS=atlas.example.org $(PY) manage.py check --deploy --fail-level WARNING

clean:
	rm -rf $(VENV) var staticfiles
