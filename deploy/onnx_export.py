"""The ONNX graph of a deterministic policy, and the checks every exported file must pass.

The graph is normalizer -> [GRU/LSTM] -> MLP -> action mean -> clip to [-1, 1], with input ``obs``
[batch, obs_dim] and output ``actions`` [batch, num_actions]; a recurrent policy adds its state as explicit
inputs and outputs (``h_in``/``h_out``, and ``c_in``/``c_out`` for an LSTM), each [batch, num_layers, hidden_dim].
Every input and output is float32 with a symbolic batch axis 0 (an fp16 graph casts inside, after the
normalizer), opset 18, IR version 9 (readable by onnxruntime >= 1.16), all weights inside the one file, and
horde's metadata embedded. The bundle around it is :mod:`horde.deploy.bundle`.
"""

from __future__ import annotations

import json
import logging
import warnings
from pathlib import Path

import torch
from torch import nn

from horde.policies import InferencePolicy, RecurrentInferencePolicy
from horde.policies.inference import ONNX_IR_VERSION as IR_VERSION
from horde.policies.inference import ONNX_OPSET as OPSET

EXAMPLE_BATCH = 4
"""Batch of the example inputs: >= 2, or the exporter may specialise the batch axis (recurrent models) to 1."""

Policy = InferencePolicy | RecurrentInferencePolicy


class ExportError(RuntimeError):
    """Export or verification failed; the message is one line."""


def io_spec(policy: Policy, num_actions: int) -> dict:
    """Names, shapes and dtypes of the graph's inputs and outputs, and how recurrent state pairs them."""
    state = []
    if policy.is_recurrent:
        for name in policy.state_names:
            state.append({"input": f"{name}_in", "output": f"{name}_out",
                          "shape": ["batch", policy.num_layers, policy.hidden_dim], "dtype": "float32",
                          "initial_value": 0.0})
    inputs = [{"name": "obs", "shape": ["batch", policy.obs_dim], "dtype": "float32"}]
    outputs = [{"name": "actions", "shape": ["batch", num_actions], "dtype": "float32"}]
    inputs += [{"name": s["input"], "shape": s["shape"], "dtype": "float32"} for s in state]
    outputs += [{"name": s["output"], "shape": s["shape"], "dtype": "float32"} for s in state]
    return {"inputs": inputs, "outputs": outputs, "state": state}


class _GRUGraph(nn.Module):
    """Fixed-arity view of a GRU policy for the exporter: ``(obs, h_in) -> (actions, h_out)``."""

    def __init__(self, policy: RecurrentInferencePolicy) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, obs: torch.Tensor, h_in: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.policy(obs, h_in)


class _LSTMGraph(nn.Module):
    """Fixed-arity view of an LSTM policy: ``(obs, h_in, c_in) -> (actions, h_out, c_out)``."""

    def __init__(self, policy: RecurrentInferencePolicy) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, obs: torch.Tensor, h_in: torch.Tensor, c_in: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.policy(obs, h_in, c_in)


def _nodes(graph):
    """Every node of ``graph`` and of the graphs inside its nodes (If, Loop, Scan bodies)."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from _nodes(g)


def export_onnx(policy: Policy, path: Path, io: dict, metadata: dict) -> None:
    """Write ``policy`` to ``path`` as one ONNX file and check it (:func:`check_onnx`)."""
    import onnx

    logging.getLogger("torch.onnx").setLevel(logging.ERROR)  # torchvision-op registration chatter
    module: nn.Module = policy
    if policy.is_recurrent:
        module = _LSTMGraph(policy) if policy.rnn_type == "lstm" else _GRUGraph(policy)
    example = (torch.zeros(EXAMPLE_BATCH, policy.obs_dim), *policy.initial_state(EXAMPLE_BATCH))
    batch = torch.export.Dim("batch", min=1, max=1 << 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FutureWarning/UserWarning chatter of the dynamo exporter
        program = torch.onnx.export(
            module, example, input_names=[i["name"] for i in io["inputs"]],
            output_names=[o["name"] for o in io["outputs"]], opset_version=OPSET, dynamo=True,
            dynamic_shapes=tuple({0: batch} for _ in example), external_data=False, verbose=False,
        )
    model = program.model_proto
    model.ir_version = min(model.ir_version, IR_VERSION)
    del model.metadata_props[:]
    for node in _nodes(model.graph):  # the exporter's debug notes: this machine's source paths and stack traces
        del node.metadata_props[:]
    for k, v in metadata.items():
        entry = model.metadata_props.add()
        entry.key, entry.value = k, v if isinstance(v, str) else json.dumps(v)
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(path), save_as_external_data=False)
    check_onnx(path, io)


def check_onnx(path: Path, io: dict) -> None:
    """Raise :class:`ExportError` unless ``path`` is one self-contained opset-18, IR<=9 file whose inputs and
    outputs are exactly ``io``'s, float32, with one symbolic batch axis 0 shared by all of them."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    if model.ir_version > IR_VERSION:
        raise ExportError(f"{path}: IR version {model.ir_version} > {IR_VERSION} (onnxruntime < 1.18 rejects it)")
    opset = {o.domain: o.version for o in model.opset_import}.get("", None)
    if opset != OPSET:
        raise ExportError(f"{path}: default-domain opset {opset}, expected {OPSET}")
    external = [t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    if external or any(p.name != path.name and p.name.startswith(path.name) for p in path.parent.iterdir()):
        raise ExportError(f"{path}: weights stored outside the file ({external[:3]}); a robot given only "
                          f"{path.name} could not load it")
    batch_names = set()
    for kind, got, want in (("input", model.graph.input, io["inputs"]), ("output", model.graph.output, io["outputs"])):
        if [v.name for v in got] != [w["name"] for w in want]:
            raise ExportError(f"{path}: {kind}s {[v.name for v in got]}, expected {[w['name'] for w in want]}")
        for v, w in zip(got, want):
            t = v.type.tensor_type
            if t.elem_type != onnx.TensorProto.FLOAT:
                raise ExportError(f"{path}: {kind} '{v.name}' is {onnx.TensorProto.DataType.Name(t.elem_type)}, "
                                  f"expected FLOAT")
            dims = t.shape.dim
            if len(dims) != len(w["shape"]) or not dims[0].dim_param or dims[0].HasField("dim_value"):
                raise ExportError(f"{path}: batch axis of {kind} '{v.name}' is not symbolic after export "
                                  f"({dims[0] if dims else None})")
            fixed = [d.dim_value for d in dims[1:]]
            if fixed != list(w["shape"][1:]):
                raise ExportError(f"{path}: {kind} '{v.name}' has shape [batch, {fixed}], expected {w['shape']}")
            batch_names.add(dims[0].dim_param)
    if len(batch_names) != 1:
        raise ExportError(f"{path}: inputs and outputs use different batch axes {sorted(batch_names)}")
