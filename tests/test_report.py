#!/usr/bin/env python3
"""ctest gelukit_report.plots: scripts/gelukit_report.py on a small fixture (tests/data/
bench_fixture.json) plus a ULP profile written by gelukit_accuracy --profile (the real tool):
the markdown has the expected ratios and links one PNG per plot, each a real, non-trivial PNG.
Then malformed inputs (bad JSON, CSV and output paths): each must be refused with exit status 2
and one line "gelukit_report: error: ..." naming what is wrong, never a Python traceback.

Usage: test_report.py <source dir> <gelukit_accuracy> <scratch dir>
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys


# A valid gelu row and a valid ffn row, in Google Benchmark's JSON form, for the malformed cases.
GELU_ROW = {"name": "gelu/forward/f32/erf/acc_hand/N:4096/threads:1/real_time", "run_type": "iteration",
            "ns_per_elem": 2.0, "bytes_per_second": 4e9}
FFN_ROW = {"name": "ffn/f32/erf/ffn_hand/M:512/d_model:768/d_ff:3072/threads:1/real_time",
           "run_type": "iteration", "ms": 40.0, "GFLOPs": 120.0, "pct_peak": 70.6}


def bench(*rows, **fields):
    """The text of a benchmark JSON file with these rows (and top-level fields)."""
    return json.dumps({"context": {}, "benchmarks": list(rows), **fields})


def gelu(**counters):
    return {**GELU_ROW, **counters}


def run_report(source, args):
    return subprocess.run([sys.executable, os.path.join(source, "scripts", "gelukit_report.py"), *args],
                          capture_output=True, text=True)


def check_malformed(source, work, fixture, failures):
    """Every case: exit status 2, nothing on stdout (refused before the report is printed), one
    stderr line "gelukit_report: error: ..." that contains `expect` (the file, row or field at
    fault), no traceback. Returns the number of cases."""
    bad = os.path.join(work, "malformed")
    os.makedirs(bad)

    def write(name, content):
        path = os.path.join(bad, name)
        with open(path, "wb") as f:
            f.write(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    good_csv = write("good.csv", "x,ulp\n-1,0\n1,1\n")
    plots = ["--plots-dir", os.path.join(bad, "plots")]
    csvs = {name: write(name, text) for name, text in (
        ("abc.csv", "x,ulp\n1,abc\n"), ("empty.csv", ""), ("header.csv", "x,ulp\n"), ("nox.csv", "a,ulp\n1,0\n"),
        ("nan.csv", "x,ulp\nnan,inf\n"), ("short.csv", "x,ulp\n1\n"))}
    cases = [  # (what, arguments, expected part of the message)
        ("missing file", [os.path.join(bad, "none.json")], "none.json"),
        ("directory as the JSON", [bad], "cannot read"),
        ("truncated JSON", [write("trunc.json", '{"benchmarks": [')], "not valid JSON"),
        ("non-UTF-8 file", [write("latin1.json", b"\xff\xfe{}")], "not UTF-8"),
        ("top-level array", [write("array.json", "[1, 2, 3]")], "got an array"),
        ("no benchmarks", [write("empty_object.json", "{}")], '"benchmarks"'),
        ("benchmarks an object", [write("bench_obj.json", '{"benchmarks": {"a": 1}}')],
         '"benchmarks" must be an array'),
        ("row not an object", [write("rows_scalar.json", bench(GELU_ROW, 1))], "benchmarks[1]"),
        ("integer name", [write("name_int.json", '{"benchmarks": [{"name": 5}]}')], '"name"'),
        ("context an array", [write("ctx_list.json", '{"context": [], "benchmarks": []}')], '"context"'),
        ("FMA peak not a number", [write("peak_str.json", bench(context={"fma_peak_gflops_threads:1": "abc"}))],
         "fma_peak_gflops_threads:1"),
        ("ns_per_elem a string", [write("ns_str.json", bench(gelu(ns_per_elem="fast")))], '"ns_per_elem"'),
        ("ns_per_elem NaN", [write("ns_nan.json", bench(gelu(ns_per_elem=float("nan"))))], "got NaN"),
        ("ns_per_elem negative", [write("ns_neg.json", bench(gelu(ns_per_elem=-2)))], "got -2"),
        ("ns_per_elem zero", [write("ns_zero.json", bench(gelu(ns_per_elem=0)))], "got 0"),
        ("bytes_per_second a string", [write("bps_str.json", bench(gelu(bytes_per_second="1")))],
         '"bytes_per_second"'),
        ("N not an integer", [write("n_abc.json", bench(gelu(name="gelu/forward/f32/erf/acc_hand/N:abc/threads:1")))],
         '"N:abc"'),
        ("FFN ms a string", [write("ffn_ms.json", bench({**FFN_ROW, "ms": "x"}))], '"ms"'),
        ("--out a directory", [fixture, "--out", bad], "--out"),
        ("--plots-dir a file", [fixture, "--plots-dir", good_csv], "--plots-dir"),
        ("--ulp-profile without --plots-dir", [fixture, "--ulp-profile", f"erf acc={good_csv}"], "--plots-dir"),
        ("--ulp-profile without a label", [fixture, *plots, "--ulp-profile", f"={good_csv}"], "LABEL"),
        ("--ulp-profile without =", [fixture, *plots, "--ulp-profile", good_csv], "LABEL=CSV"),
        ("--ulp-profile missing CSV", [fixture, *plots, "--ulp-profile", f"erf acc={bad}/none.csv"], "none.csv"),
        ("CSV non-numeric cell", [fixture, *plots, "--ulp-profile", f"erf acc={csvs['abc.csv']}"],
         "line 2"),
        ("CSV empty", [fixture, *plots, "--ulp-profile", f"erf acc={csvs['empty.csv']}"], "empty.csv: empty"),
        ("CSV header only", [fixture, *plots, "--ulp-profile", f"erf acc={csvs['header.csv']}"],
         "no data rows"),
        ("CSV without x column", [fixture, *plots, "--ulp-profile", f"erf acc={csvs['nox.csv']}"],
         "no column x"),
        ("CSV NaN row", [fixture, *plots, "--ulp-profile", f"erf acc={csvs['nan.csv']}"],
         "finite"),
        ("CSV short row", [fixture, *plots, "--ulp-profile", f"erf acc={csvs['short.csv']}"],
         "no ulp value"),
    ]
    for what, args, expect in cases:
        result = run_report(source, args)
        lines = result.stderr.splitlines()
        if (result.returncode != 2 or "Traceback" in result.stderr or len(lines) != 1
                or not lines[0].startswith("gelukit_report: error: ") or expect not in lines[0] or result.stdout):
            failures.append(f"malformed input, {what}: rc {result.returncode}, stdout {len(result.stdout)} chars, "
                            f"stderr {result.stderr!r} (expected rc 2 and one error line with {expect!r})")
    # Counters are checked in the rows that are used only: Google Benchmark's stddev aggregate
    # next to a median is 0 when the repetitions agree, and the report must accept that file.
    aggregates = [gelu(run_type="aggregate", aggregate_name=name, ns_per_elem=value)
                  for name, value in (("mean", 2.0), ("median", 2.0), ("stddev", 0.0), ("cv", 0.0))]
    result = run_report(source, [write("aggregates.json", bench(*aggregates))])
    if result.returncode != 0 or "| acc_hand | 2.000 | 4.00 | n/a |" not in result.stdout:
        failures.append(f"valid aggregates (stddev 0) refused: rc {result.returncode}, stderr {result.stderr!r}")
    return len(cases) + 1


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
    fixture = os.path.join(source, "tests", "data", "bench_fixture.json")
    subprocess.run([sys.executable, os.path.join(source, "scripts", "gelukit_report.py"),
                    fixture, "--out", out,
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
    # Contention check: the fixture (an idle run) has no warning; a 2-thread row 100x slower than
    # its 1-thread row, and one 1.5x slower (below the 2x threshold), give exactly one listed row.
    if "## Warning: multi-thread rows" in text:
        failures.append("the fixture's report warns about contention")
    slow = os.path.join(work, "contended.json")
    with open(slow, "w", encoding="utf-8") as f:
        f.write(bench(gelu(), gelu(name=GELU_ROW["name"].replace("threads:1", "threads:2"), ns_per_elem=200.0),
                      FFN_ROW, {**FFN_ROW, "name": FFN_ROW["name"].replace("threads:1", "threads:2"), "ms": 60.0}))
    result = run_report(source, [slow])
    listed = re.findall(r"^- `([^`]+)` threads:2: ", result.stdout, re.M)
    if (result.returncode != 0 or "## Warning: multi-thread rows slower than one thread" not in result.stdout
            or listed != ["gelu/forward/f32/erf/acc_hand/N:4096"] or "warning: 1 multi-thread rows" not in result.stderr):
        failures.append(f"contended run: rc {result.returncode}, listed {listed}, stderr {result.stderr!r}")
    # The ratio plot marks contended rows: with oneDNN rows beside them, the plot of N = 4096
    # is captioned with one contended row (acc_hand at 2 threads; its baseline is not contended).
    onednn = {**GELU_ROW, "name": GELU_ROW["name"].replace("acc_hand", "onednn"), "ns_per_elem": 1.0}
    with open(slow, "w", encoding="utf-8") as f:
        f.write(bench(gelu(), gelu(name=GELU_ROW["name"].replace("threads:1", "threads:2"), ns_per_elem=200.0),
                      onednn, {**onednn, "name": onednn["name"].replace("threads:1", "threads:2"), "ns_per_elem": 0.6}))
    result = run_report(source, [slow, "--plots-dir", os.path.join(work, "contended_plots")])
    if result.returncode != 0 or "### GELU relative to onednn, N = 4096 (1 row measured under contention, grey)" \
            not in result.stdout or not os.path.isfile(os.path.join(work, "contended_plots", "gelu_vs_onednn_N4096.png")):
        failures.append(f"contended ratio plot not marked: rc {result.returncode}, stderr {result.stderr!r}")
    # FMA peak scaling: 2 threads at 1.9x the 1-thread peak passes; at 1.02x (a trial beside
    # another run, 2026-12-08) the report warns, on the console too.
    for two, warned in ((219.0, False), (116.0, True)):
        path = os.path.join(work, f"peak_{int(two)}.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(bench(gelu(), context={"fma_peak_gflops_threads:1": "114.0", "fma_peak_gflops_threads:2": str(two)}))
        result = run_report(source, [path])
        has = "## Warning: the FMA peak did not scale with the threads" in result.stdout
        if result.returncode != 0 or has != warned or ("the FMA peak at 2 threads" in result.stderr) != warned:
            failures.append(f"peak {two} at 2 threads: rc {result.returncode}, warned {has}, stderr {result.stderr!r}")
    malformed = check_malformed(source, work, fixture, failures)
    for failure in failures:
        print("FAIL:", failure)
    print(f"gelukit_report test: {len(links)} plots, {malformed} malformed-input cases, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
