# Two commands do all set-up on a fresh machine:
#   make demo   creates/refreshes .venv, then runs the demo experiment (replacing runs/demo)
#   make test   creates/refreshes .venv, installs Debian's chromium when missing
#               (the browser tests drive it), then checks lint, formatting and types
#               (ruff, mypy), builds the documentation site strictly (a broken link or
#               a page missing from the navigation fails) and runs the test suite,
#               stopping at the first that fails
#   make docs   builds the documentation site into site/ (open site/index.html)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.fedmosaic-installed
# Test workers: one per core, and at least 4: the Flower tests mostly wait on their processes
# (polls, heartbeats), and on a 2-core machine the other workers use the cores meanwhile.
JOBS ?= $(shell n=$$(nproc); [ $$n -lt 4 ] && n=4; echo $$n)

CHROMIUM := /usr/bin/chromium

.PHONY: demo test docs bench clean chromium

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c requirements.lock -e ".[test]"
	# openmined-psi (private row alignment of vertical tables) pins protobuf==6.30.2, which the
	# gRPC health check Flower needs (>=6.33.5) rules out; it runs on 6.33 unchanged, so it is
	# installed without its dependencies.
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -c requirements.lock openmined-psi
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/fedmosaic demo --overwrite

# The browser tests drive Debian's chromium through Playwright (never `playwright install`).
chromium:
	@test -x $(CHROMIUM) || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

# Static checks first (seconds; mypy keeps its cache in .mypy_cache), then the suite. fedmosaic's
# sources are compiled once first: the suite starts many Python processes (nodes, workers, commands) that import
# them, and none writes bytecode where PYTHONDONTWRITEBYTECODE is set.
test: $(STAMP) chromium
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m pytest -n $(JOBS) --dist loadgroup --doctest-modules src tests

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python benchmarks/engine_overhead.py
	$(BIN)/python benchmarks/fedavg_vs_centralized.py
	$(BIN)/python benchmarks/graph_fusion.py
	$(BIN)/python benchmarks/fcm_grid_time.py
	$(BIN)/python benchmarks/fedcfa_step_cost.py
	$(BIN)/python benchmarks/vfl_bytes.py
	$(BIN)/python benchmarks/engines.py
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/kill_resume.py
	$(BIN)/python benchmarks/many_clients.py
	$(BIN)/python benchmarks/own_data.py
	$(BIN)/python benchmarks/parallel_engine.py
	$(BIN)/python benchmarks/robustness.py
	$(BIN)/python benchmarks/devices.py
	$(BIN)/python benchmarks/secure_aggregation.py
	$(BIN)/python benchmarks/startup.py

clean:
	rm -rf $(VENV) runs site .mypy_cache .ruff_cache
