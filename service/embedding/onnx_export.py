"""Export the packaged sentence-transformers model to ONNX, offline.

Run as `python -m service.embedding.onnx_export MODEL_DIR OUT_FILE [--int8]`:
in its own process, because the export needs PyTorch while a service running
the ONNX backend should not load it at all (its memory is the point). Only
the transformer is exported (token ids → last hidden state); mean pooling and
normalisation run in numpy (onnx_backend.py), exactly as the model's
sentence-transformers modules do.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "last_hidden_state"
OPSET = 17


def export_fp32(model_dir: Path, out_file: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    transformer: Any = st[0]
    bert = transformer.auto_model.eval()

    class HiddenStates(torch.nn.Module):
        """Keyword call: transformers 5's forward takes more positional args."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            return self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state

    ids = torch.ones((2, 8), dtype=torch.long)
    with torch.no_grad():
        # The TorchScript exporter: the dynamo one needs onnxscript, one more dependency.
        torch.onnx.export(
            HiddenStates().eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out_file),
            input_names=list(INPUTS), output_names=[OUTPUT], opset_version=OPSET, dynamo=False,
            dynamic_axes={name: {0: "batch", 1: "sequence"} for name in (*INPUTS, OUTPUT)},
        )


def quantize_int8(fp32_file: Path, out_file: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-channel int8 weights of the MatMuls only: quantising every op lost
    # more (cosine to PyTorch 0.88-0.97 on test sentences, against 0.98-0.996).
    quantize_dynamic(
        str(fp32_file), str(out_file), weight_type=QuantType.QInt8, per_channel=True,
        op_types_to_quantize=["MatMul"],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.embedding.onnx_export")
    parser.add_argument("model_dir", type=Path)
    parser.add_argument("out_file", type=Path)
    parser.add_argument("--int8", action="store_true", help="also quantise (weights int8)")
    args = parser.parse_args(argv)
    out: Path = args.out_file
    out.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target and rename: a concurrent start never reads half a file.
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        fp32 = Path(tmp) / "model.onnx"
        export_fp32(args.model_dir, fp32)
        final = fp32
        if args.int8:
            final = Path(tmp) / "model-int8.onnx"
            quantize_int8(fp32, final)
        os.replace(final, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
