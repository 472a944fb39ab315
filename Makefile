# vecset: `make run` trains the main job on the shipped data, `make test` runs the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# two threads on a shared 2-core machine: PASSIVE avoids a large slowdown when another
# process takes a core (measured, see DESIGN.md)
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: run test lint install clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/debug.yaml

test: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf runs lightning_logs

# image classification (issue 3): the digits jobs and their baselines
.PHONY: digits digits-pixel bench-digits
digits: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/digits.yaml

digits-pixel: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/digits_pixel.yaml

bench-digits: $(STAMP)
	$(PY) bench/digits_baselines.py
