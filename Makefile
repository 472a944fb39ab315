# vecset: `make run` trains the main job on the shipped data, `make test` runs the suite.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# two threads on a shared 2-core machine: PASSIVE avoids a large slowdown when another
# process takes a core (measured, see DESIGN.md)
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: run test lint install clean docs

# the exact torch trio of constraints.txt (pyproject allows the tested range)
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PY) -m pip install -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/multitask.yaml

# two pytest-xdist workers, one torch thread each (tests/conftest.py), for the two cores the suite
# is sized for; a file's tests stay in one worker (they share module-scoped trained models)
TEST_WORKERS ?= 2
# the Festival, espeak-ng and Flite synthesis tests (which draw their sentences from WordNet) skip,
# saying why, where the synthesizer, its voices or WordNet's data is missing: as root with apt-get,
# `make test` installs the missing ones first so they run (Festival: the program and the kal, ked
# and slt voices of the default speech corpus)
test: $(STAMP)
	-@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		pkgs=""; v=/usr/share/festival/voices; \
		command -v festival >/dev/null || pkgs="festival"; \
		[ -d $$v/english/kal_diphone ] || pkgs="$${pkgs:+$$pkgs }festvox-kallpc16k"; \
		[ -d $$v/english/ked_diphone ] || pkgs="$${pkgs:+$$pkgs }festvox-kdlpc16k"; \
		[ -d $$v/us/cmu_us_slt_arctic_hts ] || pkgs="$${pkgs:+$$pkgs }festvox-us-slt-hts"; \
		ldconfig -p | grep -q libespeak-ng.so.1 || pkgs="$${pkgs:+$$pkgs }espeak-ng libespeak-ng1"; \
		{ command -v flite >/dev/null && ldconfig -p | grep -q libflite_cmu_us_rms.so.1; } || pkgs="$${pkgs:+$$pkgs }flite"; \
		[ -f /usr/share/wordnet/data.verb ] || pkgs="$${pkgs:+$$pkgs }wordnet-base"; \
		if [ -n "$$pkgs" ]; then echo "installing $$pkgs for their tests"; \
		DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q $$pkgs >/dev/null \
		|| echo "$$pkgs could not be installed: their tests will skip"; fi; fi
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf runs lightning_logs site

# the docs site, offline, into site/ (open site/index.html): the guides, the README and the API
# reference from the docstrings; warnings are errors
docs: $(STAMP)
	$(PY) -m pip install -c constraints.txt -e '.[docs]'
	$(PY) scripts/build_docs.py --site-dir site

# CPU benchmarks: tables printed, JSON in bench/results/, collected into BENCHMARKS.md
BENCH_CPU := bench/attention.py bench/long_speech.py bench/features.py bench/training.py bench/conv.py
.PHONY: bench
bench: $(STAMP)
	for b in $(BENCH_CPU); do $(PY) $$b || exit 1; done
	$(PY) bench/report.py
# molecules (issue 5): FreeSolv 5 splits + solubility, random forest vs our model (about 25 min on 2 cores)
.PHONY: bench-molecules
bench-molecules: $(STAMP)
	$(PY) bench/molecule_baselines.py

# text / seq2seq (issue 6): G2P jobs (about 30 minutes each on 2 CPU cores)
.PHONY: g2p g2p-bahdanau
g2p: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/g2p.yaml

g2p-bahdanau: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/g2p_bahdanau.yaml
# image classification (issue 3): the digits jobs and their baselines
.PHONY: digits digits-pixel bench-digits
digits: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/digits.yaml

digits-pixel: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/digits_pixel.yaml

bench-digits: $(STAMP)
	$(PY) bench/digits_baselines.py
# --- speech frame labeling (issue #4) -----------------------------------------------------
# The full multi-voice corpus (2000 utterances, WordNet's example sentences; issue #30): 30
# speakers of six voice families, Festival's kal, ked, slt and espeak-ng's en-us, en-us+f3 and
# en-us+klatt (5 speakers each, speaker-disjoint splits that hear every family) with
# leave-one-voice-out lists under data/speech_full/lovo/<family>/ (not committed); installs the
# Debian packages (festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts wordnet-base,
# espeak-ng libespeak-ng1) when run as root and they are missing.
SPEECH_VOICES ?= kal,ked,slt,espeak:en-us,espeak:en-us+f3,espeak:en-us+klatt
.PHONY: speech-corpus speech-sample speech speech-bench
speech-corpus: $(STAMP)
	$(PY) scripts/make_speech_corpus.py --out data/speech_full --utterances 2000 --speakers 30 --jobs 2 \
		--voices $(SPEECH_VOICES) --rotations --install --force

# Regenerates the shipped sample exactly (seed 0, 240 utterances, FLAC): the first 240
# utterances of the full corpus.
speech-sample: $(STAMP)
	$(PY) scripts/make_speech_corpus.py --out data/speech --utterances 240 --speakers 15 --jobs 2 --format flac --install --force

speech: $(STAMP)
	$(VENV)/bin/vecset fit --config configs/speech_frames.yaml

speech-bench: $(STAMP)
	$(PY) bench/speech_baselines.py
# --- Fashion-MNIST (issue #17) ----------------------------------------------------------------
# The data: Debian's dataset-fashion-mnist (installed with apt-get when run as root and missing;
# otherwise the message says which package to install), checked by reading it.
.PHONY: fashion-mnist fashion-mnist-fit bench-images
fashion-mnist: $(STAMP)
	$(PY) scripts/get_fashion_mnist.py --install

fashion-mnist-fit: fashion-mnist
	$(VENV)/bin/vecset fit --config configs/fashion_mnist.yaml

# sklearn baselines, self-attention and the CNN on the same split and budget (about 65 minutes)
bench-images: fashion-mnist
	$(PY) bench/image_baselines.py
# --- what the backbone's switches do (issue #19) -----------------------------------------------
# One switch at a time from each job's config (score, normalize, positions, window, heads, graph
# attention) plus length generalization; about 2.2 hours on an idle 2-core machine, resumable
# (finished runs are skipped); `python bench/ablations.py --plan` prints the plan first.
.PHONY: ablations ablations-quick
ablations: $(STAMP) fashion-mnist
	$(PY) bench/ablations.py

# a smoke run in minutes on tiny data (bench/results/tmp/ablations/, not committed)
ablations-quick: $(STAMP)
	$(PY) bench/ablations.py --quick

# the shipped predictors (vecset.pretrained, vecset predict --model NAME): each trained from its
# config, then written with its model card to vecset/models/<name>/ (scripts/ship_predictors.py;
# docs/molecules.md#shipped-predictors); MODELS picks some, e.g. make models MODELS=freesolv;
# fashion_mnist trains for its config's 30 minutes and needs Debian's dataset-fashion-mnist
MODELS ?= freesolv solubility digits b3db g2p fashion_mnist speech_frames
.PHONY: models
models: $(STAMP)
	$(PY) scripts/ship_predictors.py --train $(MODELS)
