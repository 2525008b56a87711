# Every target installs what it needs first and is safe to run again.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
CORPUS  ?= data/papers.jsonl
# Where make bench-scale grows its index (kept: make bench-update changes it).
SCALE_INDEX ?= $(HOME)/.local/share/paperchat/bench-scale

.PHONY: install install-local run run-cli ingest lint test test-fast reliability bench bench-ingest bench-ingest-profile bench-ask bench-scale bench-update bench-memory bench-load bench-map bench-verifier bench-table eval eval-forms eval-grades eval-verifier calibrate calibrate-rerank eval-benchmarks train-verifier train-crosslingual eval-chinese clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first and pinned: left to the resolver it would pull a multi-GB CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Optional: the local GGUF backend and llama.cpp's OpenAI-compatible server (llama-cpp-python
# builds from source, ~5 minutes on 2 cores).
install-local: install
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip install --quiet -e '.[local]'

ingest: install
	$(BIN)/paperchat ingest $(CORPUS)

# The main job: index the bundled corpus, then open the chat in the browser, offline.
run: ingest
	$(BIN)/paperchat ui

# The same in the terminal.
run-cli: ingest
	$(BIN)/paperchat chat

# The library's lint, format and types (configured in pyproject.toml).
lint: install
	$(BIN)/ruff check rag
	$(BIN)/ruff format --check rag
	$(BIN)/mypy

# Lint, then everything, for real; then the reliability table (bench/reliability.py) from the same run.
test: lint
	$(BIN)/python -m pytest -q --junitxml=tests/artifacts/junit.xml
	$(BIN)/python bench/reliability.py --junit tests/artifacts/junit.xml

# Only the tests of issue 11's failure classes, and their table.
reliability: install
	$(BIN)/python bench/reliability.py

# The unit tests alone, for the edit-test loop: under a minute where `make test` takes many, since
# nothing marked slow (processes, servers, the app) or semantic runs and a fake embeds, not MiniLM.
test-fast: install
	$(BIN)/python -m pytest -q -m "not slow and not semantic" --fake-embedder

bench: install
	$(BIN)/python bench/bench_ingest_ask.py --scale

# Ingest of the 13,687 scale abstracts as it runs by default (sentence vectors on) against the
# model alone, float (before issue 38) and int8 (the default since), and their ratio (about 40
# minutes; `python bench/bench_ingest.py --limit N` for the first N, without --sentence-vectors
# also with them off).
bench-ingest: install
	$(BIN)/python bench/bench_ingest.py --sentence-vectors on

# Each step's own share of one ingest of the scale corpus (issue 38).
bench-ingest-profile: install
	$(BIN)/python bench/profile_ingest.py

# `ask` latency over the 13,687 scale abstracts, sentence vectors read from the index against
# embedded per question (the index is made once, as for eval-forms).
bench-ask: install
	$(BIN)/python bench/bench_ask.py

# The verifier's throughput, and `ask` over the 13,687 scale abstracts with and without its reranking.
bench-verifier: install
	$(BIN)/python bench/bench_verifier.py

# Growth: ingest rate, disk, start-up, retrieval and ask p50/p95, peak RSS at 1k, 10k, 13,687 and
# 100k papers (100k: the scale corpus copied, with its vectors reused), and bench/scale.png.
# About an hour on 2 cores.
bench-scale: install
	$(BIN)/python bench/bench_scale.py --data-dir $(SCALE_INDEX)

bench-update: install
	$(BIN)/python bench/bench_update.py --data-dir $(SCALE_INDEX)

# Peak RSS and time of `paperchat ingest` on 2k, 20k and 200k tiny papers with a fake embedder,
# sentence vectors on and off, against reading the file alone and Chroma alone (about 20 minutes;
# `python bench/bench_ingest_memory.py --sizes 2000,20000` for a few).
bench-memory: install
	$(BIN)/python bench/bench_ingest_memory.py

# 8 browser sessions (headless Chromium) asking 5 questions each at once of one `paperchat ui`
# over the bundled papers: errors, answer p50/p95, the server's RSS before and after (~1 minute).
bench-load: install
	$(BIN)/python bench/load_ui.py

# The map of the corpus (the app's Map page) at 20 and 13,687 papers: making it, reading it back,
# the page and the chart's data, and ways of placing the papers compared (a few minutes; the
# 13,687-paper index is made once, from bench-scale's vectors where that index is there).
bench-map: install
	$(BIN)/python bench/corpus_map.py --projections

# Answer quality on the seed questions, offline (reports under <data dir>/eval-reports/).
eval: ingest
	$(BIN)/paperchat eval --set eval/sets/seed.jsonl

# The answer forms on the report halves of their sets (never tuned on): over the bundled papers,
# and over the 13,687-abstract scale corpus in ../shared (indexed once, about 20 minutes).
eval-forms: ingest
	for set in seed-unanswerable seed-how-result seed-collection scale-unanswerable scale-how-result scale-collection; do \
	  $(BIN)/paperchat eval --set eval/sets/$$set.jsonl --split report || exit 1; \
	done

# Issue 35's sets, on their report halves, offline: the grades (answers / best match / not found)
# of lookups in users' words, unanswerable questions, false premises and collections by meaning,
# over the bundled papers and the 13,687 scale abstracts (the seed set whole, for regressions);
# then follow-ups (references, topic switches) and the research table's cells with their grades.
eval-grades: ingest
	$(BIN)/paperchat eval --set eval/sets/seed.jsonl
	for set in seed-lay seed-reworded seed-unanswerable seed-premise-use seed-premise seed-collection-meaning scale-lay scale-collection-meaning; do \
	  $(BIN)/paperchat eval --set eval/sets/$$set.jsonl --split report || exit 1; \
	done
	$(BIN)/python eval/eval_followups.py --split report
	$(BIN)/python eval/eval_table_cells.py --split report

# The research table: 50 papers x 4 columns over the 13,687 scale abstracts, offline.
bench-table: install
	$(BIN)/python bench/bench_table.py

# The verifier (rag/models/verifier.py): fine-tuned from the bundled MiniLM on data/verifier/pairs.jsonl.gz,
# on the CPU with a fixed seed, exported to float ONNX in data/verifier/model/ with its held-out
# figures (data/verifier/MODEL_CARD.md). About an hour on 2 cores left to it (90 minutes shared):
# one pass over every pair, and more of a second as fits 80 minutes.
train-verifier: install
	$(BIN)/python eval/train_verifier.py

# The map that carries a Chinese question's multilingual-e5 vector into MiniLM's space
# (rag/index/crosslingual.py): fitted on English texts of the scale corpus no question set names,
# into data/crosslingual/ (MODEL_CARD.md). About 6 minutes on 2 cores.
train-crosslingual: install
	$(BIN)/python eval/train_crosslingual.py

# The Chinese questions (issue 37) and the same in English, on their report halves, offline.
eval-chinese: ingest
	for set in zh-seed zh-seed-en zh-scale zh-scale-en; do \
	  $(BIN)/paperchat eval --set eval/sets/$$set.jsonl --split report || exit 1; \
	done

# The answer questions written for issue 24 (reworded lookups, false premises) on their report halves.
eval-verifier: ingest
	for set in seed-reworded seed-premise; do \
	  $(BIN)/paperchat eval --set eval/sets/$$set.jsonl --split report || exit 1; \
	done

# The answerability and collection bars, on the calibration halves only.
calibrate: install
	$(BIN)/python eval/calibrate_answerability.py --scale

# The verifier's reranking against the fusion, by weight and depth, on the calibration halves of
# known-item, SciFact train and the reworded lookups (it indexes what eval-benchmarks does).
calibrate-rerank: install
	$(BIN)/python eval/make_known_item.py
	$(BIN)/python eval/calibrate_rerank.py

# Retrieval on the report halves of the generated known-item set and of SciFact train (the fusion
# was chosen on the calibration halves), each ranker alone and fused. The first run indexes
# 13,687 + 5,183 abstracts (about 25 minutes on 2 cores); later runs reuse them.
eval-benchmarks: install
	$(BIN)/python eval/make_known_item.py
	for set in eval/sets/known-item ../shared/benchmarks/scifact; do \
	  for r in hybrid bm25 dense; do $(BIN)/paperchat eval --set $$set --split report --retrieval-only --retriever $$r || exit 1; done; \
	done

clean:
	rm -rf $(VENV) .pytest_cache
