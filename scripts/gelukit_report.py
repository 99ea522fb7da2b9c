#!/usr/bin/env python3
"""Markdown summary of a gelukit_bench Google Benchmark JSON file.

Usage:
    build/bench/gelukit_bench --benchmark_out=build/report/bench.json --benchmark_out_format=json
    .venv/bin/python3 scripts/gelukit_report.py build/report/bench.json --out build/report/report.md \
        [--plots-dir build/report/plots] [--ulp-profile "erf acc=build/report/ulp/erf_acc.csv" ...]

With --plots-dir, PNG plots (scripts/report_plots.py, matplotlib) are written there and linked
from the markdown: GELU throughput per schedule and size, GELU relative to oneDNN, FFN GFLOP/s
against the measured FMA peak, and the ULP error against x of each --ulp-profile (CSV "x,ulp"
from gelukit_accuracy --profile; the label's first word is the GELU form).

Benchmark names follow one grammar per family (see bench/gelukit_bench.cpp):
    <family>/<positional fields...>/<variant>/<key>:<value>/...
e.g. gelu/forward/f32/erf/acc_hand/N:1572864/threads:1. Rows are grouped by every field except
the variant; each group lists its variants with ns/element, GB/s and the throughput relative to
the group's `onednn` row (onednn ns / variant ns: > 1 means faster than oneDNN). Families are
declared in FAMILIES below; rows of other families, aggregates other than the median, and names
that do not fit their family's grammar are skipped (and counted). The markdown needs the standard
library only; the plots need matplotlib.

Malformed input (a file that cannot be read, is not JSON or CSV of the expected shape, or holds a
value the tables and plots cannot use, such as a time that is not a positive number) and an output
path that cannot be written are reported as one line "gelukit_report: error: <what, where>" on
stderr with exit status 2, argparse's status for bad usage, never as a traceback.
"""

import argparse
import csv
import json
import math
import os
import statistics
import sys

# family -> names of the positional fields between the family and the variant. A new family
# (e.g. "ffn") is one line here once its benchmark names are fixed; its key:value fields (N,
# threads, M, ...) are picked up from the names themselves.
FAMILIES = {
    "gelu": ["direction", "dtype", "form"],
    "ffn": ["dtype", "form"],
}

# Variant every group is compared against.
BASELINE = "onednn"

# Suffixes Google Benchmark appends to a registered name (UseRealTime, MinTime, Iterations,
# Repetitions); they are not part of the gelukit grammar.
_GB_SUFFIX_KEYS = ("min_time", "min_warmup_time", "iterations", "repeats")
_GB_SUFFIX_WORDS = ("real_time", "manual_time")

# Name keys whose values gelukit_bench writes as integers; the tables sort them and the plots
# parse them as numbers, so another value is an error rather than a row drawn at a wrong place.
_INTEGER_KEYS = ("N", "threads", "M", "d_model", "d_ff")

# Context keys of the measured float32 FMA peak, one per thread count (bench/ffn_bench.cpp).
_PEAK_PREFIX = "fma_peak_gflops_threads:"


class ReportError(Exception):
    """A malformed input or an output that cannot be written. main() prints the message as one
    line "gelukit_report: error: <message>" and exits with status 2: the user needs to know which
    file, row and field is wrong, not where in this script it was noticed."""


def _show(value, limit=60):
    """A JSON value as it appears in the file (strings quoted, NaN as NaN), shortened for a
    one-line message."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _json_type(value):
    """The JSON name of a parsed value's type, for messages."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):  # before int: bool is an int in Python
        return "a boolean"
    if value is None:
        return "null"
    return "a number"


def _is_integer(text):
    """A decimal integer as gelukit_bench writes it (str.isdigit alone also takes e.g. "²")."""
    return text.isascii() and text.isdigit()


def _os_reason(e, path):
    """The reason of an OSError, with the path it concerns where that is not `path` itself (e.g. a
    parent directory of --out that is a file)."""
    reason = e.strerror or str(e)
    return f"{reason} ({e.filename})" if e.filename and str(e.filename) != str(path) else reason


def _as_float(value):
    """value as a float where it is a JSON number, else None. A JSON true is not a number (bool is
    an int in Python), and an integer beyond the float range is not one we can use."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def _counter(row, key, where, positive):
    """row[key], a Google Benchmark counter, as a float: a finite JSON number, > 0 where positive
    (times and rates: a ratio or a log axis of 0, a negative value or NaN means nothing) and >= 0
    otherwise. Google Benchmark writes NaN/Infinity only for a broken measurement."""
    value = row[key]
    number = _as_float(value)
    if number is None or not math.isfinite(number) or number < 0 or (positive and number == 0):
        kind = "a positive" if positive else "a non-negative"
        raise ReportError(f'{where}: "{key}" must be {kind}, finite number, got {_show(value)}')
    return number


def _optional(row, key, kind, where):
    """Checks that row[key], where present, has the JSON type the report reads it as."""
    if key in row and not isinstance(row[key], kind):
        expected = {str: "a string", bool: "a boolean"}[kind]
        raise ReportError(f'{where}: "{key}" must be {expected}, got {_show(row[key])}')


def parse_name(name):
    """Splits a benchmark name into (family, positional fields, variant, [(key, value)]) or None."""
    parts = name.split("/")
    while parts and (parts[-1] in _GB_SUFFIX_WORDS or parts[-1].split(":", 1)[0] in _GB_SUFFIX_KEYS):
        parts.pop()
    if not parts or parts[0] not in FAMILIES:
        return None
    family = parts[0]
    fields = FAMILIES[family]
    keys = []
    rest = parts[1:]
    while rest and ":" in rest[-1]:
        key, value = rest.pop().split(":", 1)
        keys.insert(0, (key, value))
    if len(rest) != len(fields) + 1 or not all(rest):
        return None
    return family, tuple(rest[:-1]), rest[-1], tuple(keys)


def ns_per_elem(row, where):
    """Nanoseconds per element: the ns_per_elem counter, else from items_per_second."""
    if "ns_per_elem" in row:
        return _counter(row, "ns_per_elem", where, positive=True)
    if row.get("items_per_second"):
        return 1e9 / _counter(row, "items_per_second", where, positive=True)
    return None


def sort_value(text):
    """Numeric fields sort as numbers, the rest as text."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def _unreadable(e, path):
    """The ReportError for a file that cannot be read (OSError) or is not UTF-8 text."""
    if isinstance(e, UnicodeDecodeError):
        return ReportError(f"{path} is not UTF-8 text (byte 0x{e.object[e.start]:02x}: {e.reason})")
    return ReportError(f"cannot read {path}: {_os_reason(e, path)}")


def read_json(path):
    """The parsed JSON document at path; a file that cannot be read or parsed is a ReportError."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError) as e:
        raise _unreadable(e, path) from None
    except json.JSONDecodeError as e:
        raise ReportError(f"{path} is not valid JSON: {e}") from None
    except RecursionError:
        raise ReportError(f"{path} is not a benchmark file: its JSON is nested too deeply") from None


def check_context(context, path):
    """Checks the "context" object where the report reads more than its text: the FMA peaks are
    printed and plotted as numbers. Google Benchmark writes custom context values as strings
    ("117.012685"); a number is accepted as well."""
    if not isinstance(context, dict):
        raise ReportError(f'{path}: "context" must be an object, got {_json_type(context)}')
    for key, value in context.items():
        if not key.startswith(_PEAK_PREFIX):
            continue
        threads = key[len(_PEAK_PREFIX):]
        if not _is_integer(threads):
            raise ReportError(f'{path}: context key "{key}": expected {_PEAK_PREFIX}<thread count>')
        try:
            peak = float(value) if isinstance(value, str) else _as_float(value)
        except ValueError:
            peak = None
        if peak is None or not math.isfinite(peak) or peak <= 0:
            raise ReportError(f'{path}: context "{key}" must be a positive number of GFLOP/s, got {_show(value)}')


def check_row(row, index, path):
    """Checks one entry of "benchmarks" where the report reads it, and returns its name and the
    prefix of messages about it. Counters are checked later, only in the rows that are used:
    the stddev/cv aggregates beside a median may legitimately hold 0."""
    where = f"{path}: benchmarks[{index}]"
    if not isinstance(row, dict):
        raise ReportError(f"{where} must be an object (one benchmark run), got {_json_type(row)}")
    if not isinstance(row.get("name"), str):
        got = _show(row["name"]) if "name" in row else "none"
        raise ReportError(f'{where}: "name" must be a string, got {got}')
    for key in ("run_name", "run_type", "aggregate_name", "error_message"):
        _optional(row, key, str, where)
    _optional(row, "error_occurred", bool, where)
    name = row.get("run_name", row["name"])
    return name, f"{where} ({_show(name, 100)})"


def check_keys(parsed, where):
    """The key:value fields that are numbers by construction must be decimal integers."""
    for key, value in parsed[3]:
        if key in _INTEGER_KEYS and not _is_integer(value):
            raise ReportError(f'{where}: name field "{key}:{value}" must be a non-negative integer')


def load(path):
    doc = read_json(path)
    # Google Benchmark's JSON (--benchmark_out_format=json) is an object with a "context" object
    # (gelukit_bench adds its own keys to it) and a "benchmarks" array of run objects.
    if not isinstance(doc, dict):
        raise ReportError(f"{path}: expected a Google Benchmark JSON object, got {_json_type(doc)}")
    if "benchmarks" not in doc:
        raise ReportError(f'{path}: no "benchmarks" array (not a --benchmark_out_format=json file?)')
    rows = doc["benchmarks"]
    if not isinstance(rows, list):
        raise ReportError(f'{path}: "benchmarks" must be an array of benchmark runs, got {_json_type(rows)}')
    context = doc.get("context", {})
    check_context(context, path)
    # With --benchmark_repetitions, use the median aggregate where present; otherwise the median
    # of the iteration rows of the same name.
    samples = {}  # name -> list of (ns, GB/s)
    ffn = {}  # parsed name -> row (FFN rows keep their counters: ms, GFLOPs, pct_peak, max_abs_err)
    medians = {}
    errors = {}
    skipped = 0
    for index, row in enumerate(rows):
        name, where = check_row(row, index, path)
        parsed = parse_name(name)
        if parsed is None:
            skipped += 1
            continue
        check_keys(parsed, where)
        if row.get("error_occurred"):
            errors[parsed] = row.get("error_message", "error")
            continue
        used = row.get("run_type") != "aggregate" or row.get("aggregate_name") == "median"
        if parsed[0] == "ffn":
            if used:
                # The table and plot divide by ms and draw GFLOP/s and % peak on a (log) axis.
                if "ms" in row:
                    _counter(row, "ms", where, positive=True)
                for key in ("GFLOPs", "pct_peak"):
                    if key in row:
                        _counter(row, key, where, positive=False)
                # max_abs_err is printed only; NaN or Infinity there is a finding (the kernel's
                # output was not finite), so any number is shown as it is.
                if "max_abs_err" in row and _as_float(row["max_abs_err"]) is None:
                    raise ReportError(f'{where}: "max_abs_err" must be a number, got {_show(row["max_abs_err"])}')
                ffn[parsed] = row
            continue
        # A row without a time per element is not understood (counted), whatever its run type.
        if "ns_per_elem" not in row and not row.get("items_per_second"):
            skipped += 1
            continue
        if not used:
            continue
        ns = ns_per_elem(row, where)
        gbs = _counter(row, "bytes_per_second", where, positive=False) / 1e9 if "bytes_per_second" in row else None
        if row.get("run_type") == "aggregate":
            medians[parsed] = (ns, gbs)
            continue
        samples.setdefault(parsed, []).append((ns, gbs))
    results = dict(medians)
    for key, values in samples.items():
        if key in results:
            continue
        ns = statistics.median(v[0] for v in values)
        gb = [v[1] for v in values if v[1] is not None]
        results[key] = (ns, statistics.median(gb) if gb else None)
    return context, results, ffn, errors, skipped


def load_ulp_profile(path):
    """The points of a gelukit_accuracy --profile CSV (header "x,ulp", one row per grid point) as
    (xs, ys). Read and checked before anything is written, so that a bad file is an error message
    rather than a half-drawn figure: x must be finite (it is binned), ulp finite and >= 0."""
    xs, ys = [], []
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None:
                raise ReportError(f"{path}: empty file, expected a CSV with the header x,ulp")
            missing = [c for c in ("x", "ulp") if c not in reader.fieldnames]
            if missing:
                raise ReportError(f"{path}: no column {' or '.join(missing)} in the header "
                                  f"{','.join(reader.fieldnames)!r} (expected x,ulp)")
            for row in reader:
                values = []
                for column in ("x", "ulp"):
                    cell = row[column]
                    if cell is None:  # the row has fewer cells than the header
                        raise ReportError(f"{path}, line {reader.line_num}: no {column} value")
                    try:
                        value = float(cell)
                    except ValueError:
                        value = math.nan
                    if not math.isfinite(value) or (column == "ulp" and value < 0):
                        kind = "a non-negative" if column == "ulp" else "a"
                        raise ReportError(f"{path}, line {reader.line_num}: {column} must be {kind} finite number, "
                                          f"got {cell!r}")
                    values.append(value)
                xs.append(values[0])
                ys.append(values[1])
    except (OSError, UnicodeDecodeError) as e:
        raise _unreadable(e, path) from None
    except csv.Error as e:
        raise ReportError(f"{path} is not a valid CSV file: {e}") from None
    if not xs:
        raise ReportError(f"{path}: no data rows under the header x,ulp")
    return xs, ys


def workload_name(d_model, d_ff, form):
    """The model a benchmarked FFN shape stands for (bench/ffn_bench.cpp, workloads())."""
    shape = (str(d_model), str(d_ff))
    if shape == ("384", "1536"):
        return "MiniLM-L6 (real weights)"
    if shape == ("768", "2048"):
        return "GeGLU (T5 v1.1 base)"
    if shape == ("768", "3072"):
        return "GPT-2" if form == "tanh" else "BERT-base"
    return "synthetic"


def fmt(value, digits):
    return "n/a" if value is None else f"{value:.{digits}f}"


def render_ffn(rows):
    """FFN table: one group per (dtype, form, M, d_model, d_ff, threads), ratio to onednn_fused."""
    out = ["## ffn", "",
           "ratio = onednn_fused ms / variant ms (> 1 is faster than oneDNN's fused matmul + GELU post-op). "
           "% peak = GFLOP/s / the measured float32 FMA peak at that thread count; bf16 rows can exceed "
           "100%: a bf16 dot-product instruction (AVX512_BF16 `vdpbf16ps`) does two multiply-adds per "
           "float32 lane, and oneDNN's bf16 matmul uses AMX tiles where the CPU has them. "
           "max_abs_err: MiniLM rows (layer 0, real weights), against the double-precision reference.", "",
           "| workload | dtype | form | M | d_model | d_ff | threads | variant | ms | GFLOP/s | % peak | vs onednn_fused | max_abs_err |",
           "|---|---|---|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    groups = {}
    for (fam, pos, variant, keys), row in rows.items():
        groups.setdefault((pos, keys), []).append((variant, row))

    def order(item):
        (pos, keys), _ = item
        return tuple(sort_value(p) for p in pos) + tuple(sort_value(v) for _, v in keys)

    for (pos, keys), variants in sorted(groups.items(), key=order):
        k = dict(keys)
        base = next((float(r["ms"]) for v, r in variants if v == "onednn_fused" and "ms" in r), None)
        for variant, r in sorted(variants, key=lambda item: float(item[1].get("ms", 1e30))):
            ms = float(r["ms"]) if "ms" in r else None
            # Only the same operation is compared: the whole block (ffn_*) with oneDNN's block;
            # linear_gelu_* (first layer only) and geglu_* have no oneDNN row.
            same_op = variant.startswith("ffn_") or variant.startswith("onednn")
            ratio = f"{base / ms:.2f}x" if base and ms and same_op else "n/a"
            err = f"{float(r['max_abs_err']):.2e}" if "max_abs_err" in r else ""
            cells = ([workload_name(k.get("d_model"), k.get("d_ff"), pos[1])] + list(pos)
                     + [k.get("M", ""), k.get("d_model", ""), k.get("d_ff", ""), k.get("threads", ""),
                        variant, fmt(ms, 3), fmt(r.get("GFLOPs"), 1), fmt(r.get("pct_peak"), 1), ratio, err])
            out.append("| " + " | ".join(str(c) for c in cells) + " |")
    out.append("")
    return out


# A row at t > 1 threads that takes more than this many times its 1-thread time. More threads can
# fail to help, but on an idle machine they do not make a kernel several times slower; when
# another process keeps the cores busy, OpenMP peers (oneDNN) spin at their barriers and their
# multi-threaded rows become 1000x slower (seen on the 2-vCPU VM with a build beside the bench).
CONTENTION_FACTOR = 2.0


def _threads_of(keys):
    value = dict(keys).get("threads")
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _slow_rows(results, ffn):
    """Rows whose multi-thread time exceeds CONTENTION_FACTOR x the same row at 1 thread, as
    (key in results or ffn, name, threads, time at t, time at 1 thread, unit)."""
    times = {}  # (family, pos, variant, keys without threads) -> {threads: (time, unit, key)}
    rows = [(key, ns, "ns/elem") for key, (ns, _gbs) in results.items()]
    rows += [(key, float(row["ms"]), "ms") for key, row in ffn.items() if "ms" in row]
    for key, value, unit in rows:
        fam, pos, variant, keys = key
        t = _threads_of(keys)
        if t is not None:
            rest = tuple(kv for kv in keys if kv[0] != "threads")
            times.setdefault((fam, pos, variant, rest), {})[t] = (value, unit, key)
    out = []
    for (fam, pos, variant, rest), by_threads in times.items():
        if 1 not in by_threads:
            continue
        one, unit, _ = by_threads[1]
        for t, (value, _, key) in by_threads.items():
            if t > 1 and one > 0 and value > CONTENTION_FACTOR * one:
                name = "/".join([fam, *pos, variant] + [f"{k}:{v}" for k, v in rest])
                out.append((key, name, t, value, one, unit))
    return out


def contended_keys(results):
    """The keys of the GELU rows that contention_suspects lists: the ratio plot marks them."""
    return {row[0] for row in _slow_rows(results, {})}


def contention_suspects(results, ffn):
    """Rows whose multi-thread time exceeds CONTENTION_FACTOR x the same row at 1 thread, as
    (name, threads, time at t, time at 1 thread, unit), slowest ratio first."""
    return sorted((row[1:] for row in _slow_rows(results, ffn)), key=lambda s: s[2] / s[3], reverse=True)


def render_contention(suspects):
    if not suspects:
        return []
    out = ["## Warning: multi-thread rows slower than one thread", "",
           f"{len(suspects)} rows took more than {CONTENTION_FACTOR:g}x their own 1-thread time with more threads. "
           "That is the sign of other processes using the cores during the run (OpenMP peers such as "
           "oneDNN spin at barriers when a core is taken): their multi-thread figures and ratios are not "
           "trustworthy. Re-run the benchmark on an idle machine. Worst rows:", ""]
    for name, t, value, one, unit in suspects[:10]:
        out.append(f"- `{name}` threads:{t}: {value:.4g} {unit} vs {one:.4g} {unit} at 1 thread ({value / one:.0f}x)")
    out.append("")
    return out


# The FMA peak at t threads below this fraction of t x the 1-thread peak. The peak loop is pure
# register FMAs with no memory traffic, so on an idle machine it scales with the cores (Zen 4 VM:
# 115 / 233 GFLOP/s at 1 / 2 threads); a busy core halves it without touching the 2x rule above
# (a new-user trial beside another run, 2026-12-08: 114 / 116 GFLOP/s, and every 2-thread f32
# FFN row then showed 158-187% of "peak").
PEAK_SCALING_FLOOR = 0.75


def fma_peaks(context):
    """The measured FMA peaks, {threads: GFLOP/s} in thread order (check_context validated them)."""
    return dict(sorted((int(key[len(_PEAK_PREFIX):]), float(value)) for key, value in context.items()
                       if key.startswith(_PEAK_PREFIX)))


def peak_scaling_suspects(context):
    """(threads, peak at t, peak at 1) for every measured FMA peak at t > 1 threads below
    PEAK_SCALING_FLOOR x t x the 1-thread peak."""
    peaks = fma_peaks(context)
    one = peaks.get(1)
    if not one or one <= 0:
        return []
    return [(t, peak, one) for t, peak in sorted(peaks.items()) if t > 1 and peak < PEAK_SCALING_FLOOR * t * one]


def render_peak_scaling(suspects):
    if not suspects:
        return []
    out = ["## Warning: the FMA peak did not scale with the threads", ""]
    for t, peak, one in suspects:
        out.append(f"- {t} threads: {peak:.0f} GFLOP/s, {peak / one:.2f}x the 1-thread {one:.0f} GFLOP/s "
                   f"(an idle machine gives ~{t}x)")
    out += ["", "Other processes used the cores while the peak was measured: the % peak of rows at those "
            "thread counts is wrong (it can exceed 100%), and their times may be disturbed too. Re-run "
            "the benchmark on an idle machine.", ""]
    return out


def render(context, results, ffn, errors, skipped, source):
    out = ["# gelukit benchmark report", ""]
    out.append(f"Source: `{source}`")
    out.append("")
    ctx_keys = ["date", "host_name", "num_cpus", "mhz_per_cpu", "library_build_type", "gelukit_dispatched_isa",
                "gelukit_max_isa", "halide_targets", "halide_features", "onednn_version", "onednn_cpu_runtime"]
    for key in ctx_keys:
        if key in context:
            out.append(f"- {key}: {context[key]}")
    out.append("")
    out.append(f"ratio = {BASELINE} ns/element / variant ns/element (throughput relative to {BASELINE}; "
               f"> 1 is faster). GB/s counts bytes read + written.")
    out.append("")

    suspects = contention_suspects(results, ffn)
    out.extend(render_contention(suspects))
    if suspects:
        print(f"gelukit_report: warning: {len(suspects)} multi-thread rows are over {CONTENTION_FACTOR:g}x slower "
              "than at 1 thread (other processes on the cores?): see the report's warning", file=sys.stderr)

    peak_suspects = peak_scaling_suspects(context)
    out.extend(render_peak_scaling(peak_suspects))
    if peak_suspects:
        print(f"gelukit_report: warning: the FMA peak at {peak_suspects[0][0]} threads is "
              f"{peak_suspects[0][1] / peak_suspects[0][2]:.2f}x the 1-thread peak (other processes on the cores?): "
              "see the report's warning", file=sys.stderr)

    peaks = [f"{t} threads {peak:.0f} GFLOP/s" for t, peak in fma_peaks(context).items()]
    if peaks:
        out.append(f"Float32 FMA peak ({context.get('fma_peak_isa', '?')}, measured): " + ", ".join(peaks) + ".")
        out.append("")

    for family, fields in FAMILIES.items():
        if family == "ffn":
            if ffn:
                out.extend(render_ffn(ffn))
            continue
        rows = {k: v for k, v in results.items() if k[0] == family}
        if not rows:
            continue
        key_names = []
        for (_, _, _, keys) in rows:
            for name, _ in keys:
                if name not in key_names:
                    key_names.append(name)
        groups = {}
        for (fam, pos, variant, keys), value in rows.items():
            groups.setdefault((pos, keys), []).append((variant, value))

        def group_order(item):
            (pos, keys), _ = item
            return tuple(sort_value(p) for p in pos) + tuple(sort_value(v) for _, v in keys)

        out.append(f"## {family}")
        out.append("")
        header = fields + key_names + ["variant", "ns/elem", "GB/s", f"vs {BASELINE}"]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join("---" if i < len(fields) + len(key_names) + 1 else "---:"
                                  for i in range(len(header))) + "|")
        for (pos, keys), variants in sorted(groups.items(), key=group_order):
            key_map = dict(keys)
            base = next((v[0] for name, v in variants if name == BASELINE), None)
            for variant, (ns, gbs) in sorted(variants, key=lambda item: item[1][0]):
                ratio = f"{base / ns:.2f}x" if base is not None and ns > 0 else "n/a"
                cells = list(pos) + [key_map.get(k, "") for k in key_names]
                cells += [variant, fmt(ns, 3), fmt(gbs, 2), ratio]
                out.append("| " + " | ".join(cells) + " |")
        out.append("")

    if errors:
        out.append("## Skipped with error")
        out.append("")
        for (family, pos, variant, keys), message in sorted(errors.items()):
            name = "/".join([family, *pos, variant] + [f"{k}:{v}" for k, v in keys])
            out.append(f"- `{name}`: {message}")
        out.append("")
    if skipped:
        out.append(f"({skipped} rows not understood by this report were skipped.)")
        out.append("")
    return "\n".join(out)


def render_plots(context, results, ffn, plots_dir, profiles, out_path):
    """Writes the PNG plots and returns their markdown section (paths relative to the report).
    profiles: [(label, xs, ys)] from load_ulp_profile."""
    try:
        import report_plots  # matplotlib only when plots are asked for
    except ImportError as e:
        raise ReportError(f"--plots-dir needs matplotlib (scripts/bootstrap.sh installs it into .venv): {e}") from None

    made = []
    try:
        made += report_plots.gelu_throughput(results, plots_dir)
        made += report_plots.gelu_vs_baseline(results, plots_dir, BASELINE, contended_keys(results))
        made += report_plots.ffn_vs_peak(ffn, context, plots_dir)
        made += report_plots.ulp_profiles(profiles, plots_dir)
    except OSError as e:
        raise ReportError(f"cannot write the plots in {plots_dir}: {_os_reason(e, plots_dir)}") from None
    base = os.path.dirname(os.path.abspath(out_path)) if out_path else os.getcwd()
    lines = ["## Plots", ""]
    for title, path in made:
        lines += [f"### {title}", "", f"![{title}]({os.path.relpath(os.path.abspath(path), base)})", ""]
    return lines, made


def read_profiles(items):
    """[(label, xs, ys)] of the --ulp-profile LABEL=CSV arguments; the label's first word is the
    GELU form, the panel the curve is drawn in, so it must have one."""
    profiles = []
    for item in items:
        label, sep, path = item.partition("=")
        if not sep or not path:
            raise ReportError(f"--ulp-profile {item!r}: expected LABEL=CSV")
        if not label.split():
            raise ReportError(f"--ulp-profile {item!r}: empty LABEL (its first word is the GELU form: \"erf acc\")")
        profiles.append((label, *load_ulp_profile(path)))
    return profiles


def run(args):
    """The report for parsed arguments; raises ReportError on bad input."""
    # The profiles are only drawn: without --plots-dir they would be ignored without a word.
    if args.ulp_profile and not args.plots_dir:
        raise ReportError("--ulp-profile is only used in the plots: add --plots-dir")
    # Output paths that cannot work are refused before anything is read, drawn or printed.
    if args.out and os.path.isdir(args.out):
        raise ReportError(f"--out {args.out} is a directory, expected a file name")
    if args.plots_dir and os.path.exists(args.plots_dir) and not os.path.isdir(args.plots_dir):
        raise ReportError(f"--plots-dir {args.plots_dir} exists and is not a directory")
    profiles = read_profiles(args.ulp_profile)
    context, results, ffn, errors, skipped = load(args.json)
    text = render(context, results, ffn, errors, skipped, args.json)
    if args.plots_dir:
        lines, made = render_plots(context, results, ffn, args.plots_dir, profiles, args.out)
        text += "\n" + "\n".join(lines)
        print(f"gelukit_report: {len(made)} plots in {args.plots_dir}", file=sys.stderr)
    print(text)
    if args.out:
        try:
            directory = os.path.dirname(args.out)
            if directory:
                os.makedirs(directory, exist_ok=True)
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        except OSError as e:
            raise ReportError(f"cannot write --out {args.out}: {_os_reason(e, args.out)}") from None
    return 0


def main(argv=None):
    # prog: argparse's own usage errors then start "gelukit_report: error:" like ours.
    parser = argparse.ArgumentParser(prog="gelukit_report", description=__doc__.splitlines()[0])
    parser.add_argument("json", help="Google Benchmark JSON (--benchmark_out_format=json)")
    parser.add_argument("--out", help="write the markdown here as well (directories are created)")
    parser.add_argument("--plots-dir", help="write PNG plots here and link them from the markdown")
    parser.add_argument("--ulp-profile", action="append", default=[], metavar="LABEL=CSV",
                        help="ULP-error profile to plot (gelukit_accuracy --profile); repeatable; needs --plots-dir")
    args = parser.parse_args(argv)
    try:
        return run(args)
    except ReportError as e:
        # One line whatever the input held (a name or path with a newline included).
        print(f"{parser.prog}: error: " + " ".join(str(e).splitlines()), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
