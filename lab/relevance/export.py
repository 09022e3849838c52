"""The trained cross-encoder as one ONNX graph (token ids → logits), fp32 and int8.

The graph holds the whole model, pooling and output included, so the service
needs only onnxruntime and the tokenizer (service/relevance/model.py). int8 is
onnxruntime's dynamic quantisation of the MatMuls, as the embedding backend's
(service/embedding/onnx_export.py), and of the word-piece table (Gather): that
table is most of the model's bytes (30522 × 384 floats, 47 MB in fp32) and the
shipped file must stay under 30 MB.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from service.relevance.model import INPUTS, OUTPUT

OPSET = 17


def export_fp32(model: Any, out_file: Path) -> None:
    import torch
    from torch.jit._trace import TracerWarning

    ids = torch.ones((2, 8), dtype=torch.long)
    # The TorchScript exporter, on purpose: the dynamo one needs onnxscript, one more
    # dependency; its deprecation notice says nothing about this graph. The tracer's warnings
    # are about shape checks that hold for every input; what matters, that padding is masked
    # out, transformers keeps under tracing, and the held-out check compares the graph with
    # PyTorch on padded batches (lab/relevance/command.py).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "You are using the legacy TorchScript-based ONNX export",
                                DeprecationWarning)
        warnings.filterwarnings("ignore", category=TracerWarning)
        warnings.filterwarnings("ignore", "Exporting aten::index operator", UserWarning)  # no negative index here
        torch.onnx.export(
            model.eval(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(out_file),
            input_names=list(INPUTS), output_names=[OUTPUT], opset_version=OPSET, dynamo=False,
            dynamic_axes={**{name: {0: "batch", 1: "sequence"} for name in INPUTS}, OUTPUT: {0: "batch"}},
        )


def quantize_int8(fp32_file: Path, out_file: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(fp32_file), str(out_file), weight_type=QuantType.QInt8, per_channel=True,
        op_types_to_quantize=["MatMul", "Gather"],
    )
