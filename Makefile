# Casebook: two commands do everything on a fresh machine.
#   make run    set up, prepare the demo data, indexes and model, start the app on 127.0.0.1:8501
#   make test   set up, then run the whole suite (lint, types, fast and slow tests)
# Iterating: make test-fast (no slow tests, no lint).

PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat requirements.txt constraints-cpu.txt 2>/dev/null | sha1sum | cut -c1-12)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PYTHONUNBUFFERED := 1

.PHONY: setup prepare run serve test test-fast lint bench bench-pgvector bench-corpus browser-deps pg orthanc clean viewer

setup: $(STAMP)

$(STAMP): requirements.txt constraints-cpu.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# the CPU build of torch first (local wheel, CPU index or a refused CUDA pin: see the script);
	# constraints-cpu.txt makes every CUDA package (nvidia-*, triton) unresolvable for all installs
	scripts/install_torch_cpu.sh $(PY)
	$(PY) -m pip install -q -c constraints-cpu.txt -r requirements.txt
	$(PY) -c "import sys, torch; sys.exit('error: a CUDA build of torch got installed; see scripts/install_torch_cpu.sh' if torch.version.cuda else 0)"
	rm -f $(VENV)/.installed-*
	touch $@

prepare: setup ocr-deps
	$(PY) -m core setup

run: prepare
	$(VENV)/bin/streamlit run app.py

# the same app under Streamlit's ASGI server, with the session cookie HttpOnly (serve.py)
serve: prepare
	$(VENV)/bin/streamlit run serve.py

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# PostgreSQL tests run against a private server started by scripts/pg_setup.sh (as root it builds
# pgvector and starts PostgreSQL 15 on 127.0.0.1:5499; otherwise they are skipped, with a message).
# PACS tests (marker `pacs`) run against a private Orthanc started by scripts/orthanc_setup.sh (as root
# it installs orthanc + orthanc-dicomweb and starts it on 127.0.0.1:8642 with authentication on).
test: setup lint browser-deps ocr-deps
	$(PY) -m core setup
	CASEBOOK_TEST_PG_URL="$${CASEBOOK_TEST_PG_URL:-$$(scripts/pg_setup.sh)}" \
	CASEBOOK_TEST_ORTHANC_URL="$${CASEBOOK_TEST_ORTHANC_URL:-$$(scripts/orthanc_setup.sh)}" \
	$(PY) -m pytest -q -p no:cacheprovider

test-fast: setup
	$(PY) -m pytest -q -m "not slow and not browser" -p no:cacheprovider

browser-deps:
	@if [ -x /usr/bin/chromium ]; then :; \
	 elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-noto-color-emoji >/dev/null; \
	 else echo "chromium missing: browser tests will be skipped (sudo apt-get install chromium)"; fi
	@# axe-core (the accessibility check of tests/test_browser_workstation.py) from the npm registry, pinned by the lock file
	@if [ -f components/viewer/frontend/node_modules/axe-core/axe.min.js ]; then :; \
	 elif command -v npm >/dev/null; then cd components/viewer/frontend && npm ci --no-audit --no-fund --loglevel=error; \
	 else echo "npm missing: the axe-core check of the workstation browser test will fail (install node 20 and npm)"; fi

# OCR of burned-in text in DICOM pixels (core/imaging/burnedin.py): Debian's tesseract-ocr, as root like browser-deps
ocr-deps:
	@if command -v tesseract >/dev/null; then :; \
	 elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null; \
	 else echo "tesseract missing: DICOM imports without BurnedInAnnotation are refused (sudo apt-get install tesseract-ocr)"; fi

bench: setup
	$(PY) bench/similar_cases.py

bench-pgvector: setup
	CASEBOOK_TEST_PG_URL="$${CASEBOOK_TEST_PG_URL:-$$(scripts/pg_setup.sh)}" $(PY) bench/similar_cases_pgvector.py

bench-corpus: setup
	nice -n 10 $(PY) -m bench.corpus_scale --n 100000

pg:
	scripts/pg_setup.sh

orthanc:
	scripts/orthanc_setup.sh

# the viewer component's bundle (committed; rebuild after changing components/viewer/frontend)
viewer:
	PYTHON=$(PY) scripts/build_viewer.sh

clean:
	rm -rf $(VENV) data indexes/cases indexes/kb_* models
