"""Make the default path run with no network: bundled model files, no hub, no telemetry.

tiktoken fetches its BPE file on first use and the Hugging Face stack may ask the hub for
updates; on a laptop on a plane both fail. `prepare()` runs once at every entry point, before
any of those libraries loads a model.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

from rag.corpus.tokens import ensure_tiktoken
from rag.errors import ModelNotFoundError


def prepare() -> None:
    """Point every library at local files and switch off the calls home."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "HF_HUB_DISABLE_PROGRESS_BARS"):
        os.environ.setdefault(name, "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    ensure_tiktoken()
    # numpy's BLAS pool and torch's each default to every core; on 2 cores they fight and
    # query latency rose tenfold at p95. The BLAS work here is small (BM25, cosine): one thread.
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


ONNX_FILES = ("config.json", "tokenizer.json")


def onnx_minilm(weights: Path, cache_dir: Path) -> Path:
    """A folder with model.onnx and the tokenizer files of the bundled MiniLM, made once.

    The package ships the weights and tokenizer but no model.onnx, so the bundled weights are
    exported with torch the first time (about 10 s); afterwards nothing imports torch.
    """
    target = cache_dir / "all-MiniLM-L6-v2-onnx"
    if (target / "model.onnx").is_file() and all((target / f).is_file() for f in ONNX_FILES):
        return target
    target.mkdir(parents=True, exist_ok=True)
    for name in ONNX_FILES:
        shutil.copyfile(weights / name, target / name)
    partial = target / f"model.onnx.{os.getpid()}.tmp"
    _export_bert(weights, partial)
    # Atomic, so a second process never reads half a file.
    partial.replace(target / "model.onnx")
    return target


def onnx_minilm_int8(weights: Path, cache_dir: Path) -> Path:
    """model-int8.onnx beside the export: each MatMul's weights quantized to int8 per output
    channel, activations quantized at run time. Made once, from the export.

    Per channel, because per tensor moved the vectors too far from the float model's. On SciFact
    train nDCG@10 is 0.7123 against 0.7118 (docs/benchmarks.md).
    """
    folder = onnx_minilm(weights, cache_dir)
    target = folder / "model-int8.onnx"
    if target.is_file():
        return target
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    partial = folder / f"model-int8.onnx.{os.getpid()}.tmp"
    # The quantizer advises pre-processing on the root logger; it changes nothing for this graph.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            folder / "model.onnx", partial, per_channel=True, op_types_to_quantize=["MatMul"], weight_type=QuantType.QInt8
        )
    finally:
        root.setLevel(level)
    partial.replace(target)
    return target


def _export_bert(weights: Path, path: Path) -> None:
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ModelNotFoundError(
            f"exporting the embedding model to ONNX needs torch and transformers: {exc}",
            hint="run `make install`, or set PAPERCHAT_EMBEDDING_RUNTIME=torch",
        ) from exc

    class LastHiddenState(torch.nn.Module):
        # The exporter passes inputs by position; BertModel's positional order is not these three.
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    model = LastHiddenState(AutoModel.from_pretrained(str(weights), local_files_only=True).eval())
    ids = torch.ones(2, 16, dtype=torch.long)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
    axes = {name: {0: "batch", 1: "sequence"} for name in [*inputs, "last_hidden_state"]}
    # The tracer warns about branches that are constant for an encoder without a cache; they are.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            tuple(inputs.values()),
            str(path),
            input_names=list(inputs),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
