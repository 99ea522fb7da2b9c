#!/usr/bin/env python3
"""Does a Halide target feature change the code of a kernel? (cmake/GelukitKernels.cmake)

Runs a host-built gelukit generator twice, for <base target> and <base target>-<feature>,
emits assembly, removes the target name from symbol names and strings, and compares.
  --expect same     exit 1 if the feature changes the code (then it must become a sub-target)
  --expect differs  exit 1 if it does not (the sub-target would be a useless copy)
  --feature-only RE exit 1 unless the regular expression matches some line of the feature's
                    assembly and none of the base's (e.g. the native fp16 conversion instruction)
Example:
  check_target_features.py --generator build/generators/gelukit_gelu_generator -g gelu_forward \\
      --base arm-64-linux --feature arm_dot_prod --expect same -- form=erf x.type=float16 y.type=float16
"""
import argparse
import difflib
import pathlib
import re
import subprocess
import sys
import tempfile


def assembly(generator, name, target, params, out):
    subprocess.run([generator, "-g", name, "-f", "kernel", "-e", "assembly", "-o", str(out),
                    f"target={target}-no_runtime", *params],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    text = (out / "kernel.s").read_text()
    # The target string is embedded in names (mangled with ___ for '-') and in metadata strings.
    text = text.replace(target, "TARGET").replace(target.replace("-", "___"), "TARGET")
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith((".file", ".ident")):
            continue
        # Target strings Halide embeds (metadata): its canonical spelling orders the features
        # alphabetically, so "<base>-<feature>" above does not always match them.
        if ".asciz" in line and "no_runtime" in line:
            line = '.asciz "TARGET-STRING"'
        line = re.sub(r"\s*//.*$", "", line)          # comments (alignment varies with names)
        line = re.sub(r"\.size\s+\.Lstr\.\d+, \d+", ".size STR", line)  # length of name strings
        lines.append(line.rstrip())
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generator", required=True)
    ap.add_argument("-g", dest="name", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--feature", required=True)
    ap.add_argument("--expect", choices=["same", "differs"], required=True)
    ap.add_argument("--feature-only", help="regex that must match only the feature's assembly")
    ap.add_argument("params", nargs="*")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        (d / "a").mkdir()
        (d / "b").mkdir()
        base = assembly(a.generator, a.name, a.base, a.params, d / "a")
        with_feature = assembly(a.generator, a.name, f"{a.base}-{a.feature}", a.params, d / "b")
    diff = [l for l in difflib.unified_diff(base, with_feature, lineterm="", n=0)
            if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    same = not diff
    print(f"{a.name} {' '.join(a.params)}: {a.base} vs +{a.feature}: "
          f"{'identical code' if same else f'{len(diff)} assembly lines differ'} "
          f"({len(base)} lines)")
    if diff:
        print("\n".join(diff[:12]))
    ok = same if a.expect == "same" else not same
    if not ok:
        print(f"FAIL: expected the code to be {a.expect} with {a.feature}", file=sys.stderr)
    if a.feature_only:
        rx = re.compile(a.feature_only)
        n_feature = sum(1 for l in with_feature if rx.search(l))
        n_base = sum(1 for l in base if rx.search(l))
        print(f"/{a.feature_only}/: {n_feature} lines with {a.feature}, {n_base} without")
        if n_feature == 0 or n_base != 0:
            print(f"FAIL: expected /{a.feature_only}/ only in the {a.feature} code", file=sys.stderr)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
