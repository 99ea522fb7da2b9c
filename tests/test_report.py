#!/usr/bin/env python3
"""ctest gelukit_report.plots: scripts/gelukit_report.py on a small fixture (tests/data/
bench_fixture.json) plus a ULP profile written by gelukit_accuracy --profile (the real tool):
the markdown has the expected ratios and links one PNG per plot, each a real, non-trivial PNG.

Usage: test_report.py <source dir> <gelukit_accuracy> <scratch dir>
"""

import os
import re
import shutil
import struct
import subprocess
import sys


def main():
    source, accuracy, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    profile = os.path.join(work, "erf_acc.csv")
    tool = subprocess.run([accuracy, "--form", "erf", "--samples", "4096", "--profile", profile,
                           "--profile-range", "-6", "6", "--profile-points", "2001"],
                          check=True, capture_output=True, text=True)
    print(tool.stdout, end="")
    tool_lines = tool.stdout.splitlines()
    out = os.path.join(work, "report.md")
    subprocess.run([sys.executable, os.path.join(source, "scripts", "gelukit_report.py"),
                    os.path.join(source, "tests", "data", "bench_fixture.json"), "--out", out,
                    "--plots-dir", os.path.join(work, "plots"), "--ulp-profile", f"erf acc={profile}"],
                   check=True, stdout=subprocess.DEVNULL)
    text = open(out, encoding="utf-8").read()
    failures = []
    # The fixture's acc_hand takes twice oneDNN's time at both sizes: ratio 0.50x; FFN 32/40 ms.
    if len(re.findall(r"\| acc_hand \| [0-9.]+ \| [0-9.]+ \| 0\.50x \|", text)) != 2:
        failures.append("GELU ratio 0.50x of acc_hand vs onednn not found twice")
    if "| ffn_hand | 40.000 | 120.0 | 70.6 | 0.80x |" not in text:
        failures.append("FFN row with 0.80x vs onednn_fused not found")
    # The 768 -> 3072 exact-GELU shape is named after the model it stands for.
    if not re.search(r"^\| BERT-base \| f32 \| erf \| 512 \| 768 \| 3072 \| 1 \| ffn_hand \|", text, re.M):
        failures.append("FFN row not labelled with its workload (BERT-base)")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)
    # throughput N=4096 and N=1572864, ratio N=4096 and N=1572864, FFN, ULP profile
    if len(links) != 6:
        failures.append(f"expected 6 plot links, found {len(links)}: {links}")
    for link in links:
        path = os.path.join(work, link)
        if not os.path.isfile(path):
            failures.append(f"missing plot {path}")
            continue
        with open(path, "rb") as f:
            head = f.read(8)
        size = os.path.getsize(path)
        if head != b"\x89PNG\r\n\x1a\n" or size < 5000:
            failures.append(f"{path}: not a plausible PNG ({size} bytes)")
    # The ULP profile of the accurate erf kernel: every point within 1 ULP (its contract).
    with open(profile, encoding="utf-8") as f:
        rows = f.read().splitlines()[1:]
    if len(rows) != 2001 or max(int(r.split(",")[1]) for r in rows) > 1:
        failures.append(f"profile: {len(rows)} points, max ULP above 1")
    # The tool's contract: its last line is "max_ulp=<v> x=0x<bits>", also with --profile, and
    # the profile line states the grid's own maximum (the CSV's), which the plot shows.
    hex_bits = re.fullmatch(r".*max_ulp=[0-9]+ x=0x([0-9A-F]{8})", tool_lines[-1]) if tool_lines else None
    if not hex_bits:
        failures.append(f"gelukit_accuracy's last line is not max_ulp=<v> x=<hex>: {tool_lines[-1:]}")
    worst = [line for line in tool_lines if line.startswith("worst input")]
    if len(worst) != 1 or len(tool_lines) < 2 or tool_lines[-2] != worst[0] or not hex_bits:
        failures.append(f"the line before the last is not the worst input in decimal: {tool_lines[-2:]}")
    else:
        want = struct.unpack("<f", struct.pack("<I", int(hex_bits.group(1), 16)))[0]
        got = float(worst[0].split("x=")[1])
        if struct.pack("<f", got) != struct.pack("<f", want):
            failures.append(f"worst input {got!r} is not the float of 0x{hex_bits.group(1)} ({want!r})")
    grid = [line for line in tool_lines if line.startswith("profile:")]
    grid_max = max(int(r.split(",")[1]) for r in rows) if rows else -1
    if len(grid) != 1 or not grid[0].endswith(f"their max_ulp={grid_max} (grid points only)"):
        failures.append(f"profile line does not state the CSV's maximum {grid_max}: {grid}")
    for failure in failures:
        print("FAIL:", failure)
    print(f"gelukit_report test: {len(links)} plots, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
