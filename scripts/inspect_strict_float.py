#!/usr/bin/env python3
"""What Halide 21's strict_float(e) does to x86 code (the note in README and common/gelu_math.h).

Compiles two tiny pipelines to AVX2+FMA assembly with the venv's Halide and counts instructions:
 1. a degree-6 Horner polynomial after a sub-expression, with and without strict_float on that
    sub-expression: if strict_float made the whole pipeline strict, the Horner steps would lose
    their FMAs (vfmadd) and become vmulps + vaddps;
 2. the FMA-based error-free product lo = a*b - strict_float(a*b): if LLVM kept the fast product
    apart from the strict one, lo would be one vfmsub; if it merges them, lo is a constant 0.
Usage: .venv/bin/python3 scripts/inspect_strict_float.py [out_dir]   (dev-only; prints counts)
"""
import os
import re
import sys
import tempfile

import halide as hl

TARGET = hl.Target("x86-64-linux-avx2-fma-f16c-no_runtime-no_asserts-no_bounds_query")


def count(path, pattern):
    with open(path) as f:
        return sum(1 for line in f if re.search(pattern, line))


def horner(out_dir, strict):
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Float(32), 1, "inp")
    f = hl.Func("f")
    v = inp[x]
    e = v * v - hl.f32(0.5)
    if strict:
        e = hl.strict_float(e)
    p = e
    for c in (0.125, 0.25, 0.375, 0.5, 0.625, 0.75):
        p = p * v + hl.f32(c)
    f[x] = p
    f.vectorize(x, 8)
    path = os.path.join(out_dir, "horner_%s.s" % ("strict" if strict else "fast"))
    f.compile_to_assembly(path, [inp], "f", TARGET)
    return path


def exact_product(out_dir):
    x = hl.Var("x")
    a = hl.ImageParam(hl.Float(32), 1, "a")
    b = hl.ImageParam(hl.Float(32), 1, "b")
    f = hl.Func("f")
    hi = hl.strict_float(a[x] * b[x])
    f[x] = hl.Tuple([hi, a[x] * b[x] - hi])
    f.vectorize(x, 8)
    path = os.path.join(out_dir, "exact_product.s")
    f.compile_to_assembly(path, [a, b], "f", TARGET)
    return path


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="strict_float_")
    os.makedirs(out_dir, exist_ok=True)
    for strict in (False, True):
        s = horner(out_dir, strict)
        print("horner, %-6s sub-expression: %2d vfmadd/vfmsub, %2d vmulps/vaddps/vsubps  (%s)"
              % ("strict" if strict else "fast", count(s, r"\bvfn?m(add|sub)"),
                 count(s, r"\bv(mul|add|sub)ps\b"), s))
    s = exact_product(out_dir)
    print("a*b - strict_float(a*b): %d vfmsub, %d vxorps (a zeroed register: the difference folded to 0)  (%s)"
          % (count(s, r"\bvfn?msub"), count(s, r"\bvxorps\b"), s))


if __name__ == "__main__":
    main()
