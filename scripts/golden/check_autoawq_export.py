"""Checks an `fsq export --format autoawq` folder with the reference Python code of the
format's owners (run through check_autoawq_transformers.sh, which sets up the venv).

For every quantized linear of the packed checkpoint, AutoAWQ's own dequantize_gemm (from
awq/utils/packing_utils.py of the pinned autoawq release, loaded on its own so none of
AutoAWQ's GPU kernels are needed) must give, bit for bit, fsq's dequantized weights: decoded
here from the packed checkpoint as lib/formats/FORMAT.md specifies, transposed to AutoAWQ's
[in, out], and rounded to fp16 as AutoAWQ's fp16 arithmetic rounds them. The tensors must
load into AutoAWQ's WQLinear_GEMM module (strict state dict: names, shapes, dtypes), and
transformers' AwqConfig must parse config.json's quantization_config. Dense tensors must
equal the source's, converted to fp16.

Usage: python check_autoawq_export.py PACKED_DIR AWQ_DIR
"""

import importlib.util
import json
import pathlib
import sys
import types

import numpy as np
import torch
from safetensors.torch import load_file
from transformers import AwqConfig


def load_autoawq_modules():
    """AutoAWQ's packing_utils and WQLinear_GEMM without running the packages' __init__.py
    files (which import its CUDA kernels and model zoo): the packages are registered empty,
    with their folders as search paths, so only the modules asked for are executed."""
    spec = importlib.util.find_spec("awq")
    root = pathlib.Path(spec.submodule_search_locations[0])
    for name in ("awq", "awq.utils", "awq.modules", "awq.modules.linear"):
        package = types.ModuleType(name)
        package.__path__ = [str(root.joinpath(*name.split(".")[1:]))]
        sys.modules[name] = package
    packing = importlib.import_module("awq.utils.packing_utils")
    if int(torch.__version__.split(".")[0]) < 2:
        # Debian's torch 1.13 indexes with int64 only; AutoAWQ builds its column-order index
        # with dtype=torch.int32 (fine on torch 2). Same values, int64 index: logic untouched.
        class Torch1Shim:
            def __getattr__(self, name):
                return getattr(torch, name)

            @staticmethod
            def arange(*args, dtype=None, **kwargs):
                return torch.arange(*args, **kwargs)

        packing.torch = Torch1Shim()
    return packing, importlib.import_module("awq.modules.linear.gemm")


def fsq_dequantize(tensors, name, rows, cols, group):
    """FORMAT.md: code j of a row is bits [4j, 4j + 4) of the row's little-endian bit stream;
    w = (q - qzeros[r, g]) * scales[r, g] in float32."""
    words = tensors[name + ".qweight"].numpy().view(np.uint32)
    shifts = np.arange(8, dtype=np.uint32) * 4
    codes = ((words[:, :, None] >> shifts) & 0xF).reshape(rows, -1)[:, :cols].astype(np.float32)
    zeros = np.repeat(tensors[name + ".qzeros"].numpy().astype(np.float32), group, axis=1)
    scales = np.repeat(tensors[name + ".scales"].numpy().astype(np.float32), group, axis=1)
    return (codes - zeros) * scales


def main(packed_dir, awq_dir):
    packed_dir, awq_dir = pathlib.Path(packed_dir), pathlib.Path(awq_dir)
    manifest = json.loads((packed_dir / "fsq.json").read_text())
    config = json.loads((awq_dir / "config.json").read_text())
    packed = load_file(packed_dir / "model.safetensors")
    awq = load_file(awq_dir / "model.safetensors")
    packing, gemm = load_autoawq_modules()

    qc = config["quantization_config"]
    parsed = AwqConfig.from_dict(qc)
    assert (parsed.bits, parsed.group_size, parsed.zero_point) == (4, qc["group_size"], True), parsed
    assert str(parsed.version).lower().endswith("gemm"), parsed.version
    assert config["torch_dtype"] == "float16"
    group = qc["group_size"]

    linear_tensors = set()
    for name, entry in sorted(manifest["linears"].items()):
        rows, cols = entry["shape"]
        expected = torch.from_numpy(fsq_dequantize(packed, name, rows, cols, group).T.copy()).half()
        qweight, qzeros, scales = (awq[f"{name}.{k}"] for k in ("qweight", "qzeros", "scales"))
        got = packing.dequantize_gemm(qweight, qzeros, scales, 4, group)
        assert got.dtype == torch.float16 and torch.equal(got, expected), f"{name}: AutoAWQ decodes other weights"

        bias = awq.get(name + ".bias")
        module = gemm.WQLinear_GEMM(4, group, cols, rows, bias is not None, "cpu")
        state = {"qweight": qweight, "qzeros": qzeros, "scales": scales}
        if bias is not None:
            state["bias"] = bias
        module.load_state_dict(state, strict=True)
        for key, value in state.items():
            assert getattr(module, key).dtype == value.dtype, f"{name}.{key}: dtype"
        linear_tensors |= {f"{name}.{k}" for k in ("qweight", "qzeros", "scales")}
        print(f"ok  {name}  [{rows} x {cols}]  {entry['quant_type']}")

    dense = sorted(set(packed) - {f"{n}.{k}" for n in manifest["linears"] for k in ("qweight", "qzeros", "scales")})
    for name in dense:
        assert awq[name].dtype == torch.float16, name
        # float32 -> float16 rounds to nearest even in numpy, as fsq does (bf16 widens exactly).
        expected = packed[name].float().numpy().astype(np.float16)
        assert np.array_equal(awq[name].numpy().view(np.uint16), expected.view(np.uint16)), name
    assert set(awq) == linear_tensors | set(dense), sorted(set(awq) ^ (linear_tensors | set(dense)))
    print(f"ok  {len(manifest['linears'])} linears decode bit-exactly with AutoAWQ's dequantize_gemm, "
          f"{len(dense)} dense tensors are the source in fp16, transformers parses the config")


if __name__ == "__main__":
    main(*sys.argv[1:3])
