"""The default path needs no network: tiktoken's file and the embedding model come from packages."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
from conftest import PAPERS, ROOT

from rag.corpus.chunking import chunk_paper
from rag.corpus.tokens import CL100K_URL, install_tiktoken_cache
from rag.records import Paper


def test_tiktoken_cache_file_is_named_as_tiktoken_looks_for_it(tmp_path):
    install_tiktoken_cache(tmp_path)
    expected = tmp_path / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    assert expected.is_file() and expected.stat().st_size > 1_000_000


@pytest.mark.slow
def test_plain_get_encoding_works_in_a_fresh_process_with_no_network(tmp_path):
    # An unroutable proxy makes any download attempt fail fast instead of succeeding somewhere.
    script = (
        "from rag.index.offline import prepare; prepare();"
        "import tiktoken; print(len(tiktoken.get_encoding('cl100k_base').encode('hello world')))"
    )
    env = {"PATH": "/usr/bin:/bin", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "TIKTOKEN_CACHE_DIR": str(tmp_path / "tiktoken")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"


def test_short_abstracts_stay_whole_and_long_ones_split_with_the_title_first():
    short = Paper(id="s", title="A Title", abstract="One sentence about a method. " * 10)
    long = Paper(id="l", title="Long One", abstract="This sentence is about attention heads. " * 120)
    assert len(chunk_paper(short)) == 1
    pieces = chunk_paper(long, chunk_size=128, chunk_overlap=16)
    assert len(pieces) > 3
    assert all(c.text.startswith("Long One. ") for c in pieces)
    assert [c.position for c in pieces] == list(range(len(pieces)))
    assert len({c.id for c in pieces}) == len(pieces)


@pytest.mark.semantic
def test_onnx_and_torch_runtimes_give_the_same_vectors(embeddings, tmp_path):
    # One index serves both runtimes only because their vectors agree.
    import numpy as np

    from rag.index.embeddings import make_embeddings
    from rag.settings import Settings

    texts = ["Mixture-of-head attention routes tokens to heads.", "Regret bounds for bandits with interference."]
    torch_vectors = np.asarray(make_embeddings(Settings(embedding_runtime="torch")).embed_documents(texts))
    onnx_vectors = np.asarray(make_embeddings(Settings(embedding_runtime="onnx")).embed_documents(texts))
    assert onnx_vectors.shape == (2, 384)
    assert np.allclose((torch_vectors * onnx_vectors).sum(axis=1), 1.0, atol=1e-4)


@pytest.mark.semantic
def test_batching_by_token_budget_changes_no_vector_and_keeps_the_order(monkeypatch):
    # Mixed lengths: the short ones share a run, the long ones run alone, padded to their own width.
    # The float model: int8 scales its activations by the whole run's range (the next test).
    import numpy as np

    from rag.corpus.reading import load_corpus
    from rag.index.embeddings import make_embeddings
    from rag.settings import Settings

    abstracts = [p.abstract for p in load_corpus(PAPERS).papers[:6]]
    texts = ["Bandits.", abstracts[0], "Attention heads as experts.", *abstracts[1:], "LoRA in a flat region."]
    model = make_embeddings(Settings(embedding_runtime="onnx")).model.base  # MiniLM, under the cross-lingual wrapper
    runs = []
    original = model._run
    monkeypatch.setattr(model, "_run", lambda encoded: runs.append(len(encoded)) or original(encoded))
    together = np.asarray(model.embed_documents(texts))
    monkeypatch.undo()
    alone = np.asarray([model.embed_query(t) for t in texts])
    assert np.allclose((together * alone).sum(axis=1), 1.0, atol=1e-5), "padding to a batch's width changes nothing"
    assert runs[0] == 3 and max(runs) < len(texts) and sum(runs) == len(texts)


@pytest.mark.semantic
def test_the_int8_model_is_made_once_offline_and_indexes_apart(embeddings, tmp_path):
    # Quantized vectors are close to the float model's but not equal: an index holds one kind.
    import numpy as np

    from rag.corpus.reading import load_corpus
    from rag.errors import EmbeddingMismatchError
    from rag.index.embeddings import make_embeddings
    from rag.index.store import Index
    from rag.settings import Settings

    settings = Settings(data_dir=tmp_path, embedding_runtime="onnx-int8", backend="extractive", model_cache_dir=tmp_path / "models")
    quantized = make_embeddings(settings)
    floats = make_embeddings(Settings(embedding_runtime="onnx"))
    texts = [p.abstract for p in load_corpus(PAPERS).papers[:5]]
    cosines = (np.asarray(quantized.embed_documents(texts)) * np.asarray(floats.embed_documents(texts))).sum(axis=1)
    assert (tmp_path / "models" / "all-MiniLM-L6-v2-onnx" / "model-int8.onnx").is_file()
    assert cosines.min() > 0.98 and cosines.max() < 0.99999
    # Activations are quantized by their run's range, so a text's vector moves a little with
    # the texts it runs with; no more than int8 moves it from the float model.
    alone = np.asarray([quantized.embed_query(t) for t in texts])
    together = (alone * np.asarray(quantized.embed_documents(texts))).sum(axis=1)
    assert together.min() > 0.98
    index = Index(settings, quantized)
    index.ingest(load_corpus(PAPERS))
    assert index.model_id.endswith("(onnx int8)")
    with pytest.raises(EmbeddingMismatchError, match="onnx int8"):
        Index(Settings(data_dir=tmp_path, embedding_runtime="onnx"), floats)
