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
"""

import argparse
import json
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


def ns_per_elem(row):
    """Nanoseconds per element: the ns_per_elem counter, else from items_per_second."""
    if "ns_per_elem" in row:
        return float(row["ns_per_elem"])
    if row.get("items_per_second"):
        return 1e9 / float(row["items_per_second"])
    return None


def sort_value(text):
    """Numeric fields sort as numbers, the rest as text."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def load(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    rows = doc.get("benchmarks", [])
    # With --benchmark_repetitions, use the median aggregate where present; otherwise the median
    # of the iteration rows of the same name.
    samples = {}  # name -> list of (ns, GB/s)
    ffn = {}  # parsed name -> row (FFN rows keep their counters: ms, GFLOPs, pct_peak, max_abs_err)
    medians = {}
    errors = {}
    skipped = 0
    for row in rows:
        parsed = parse_name(row.get("run_name", row.get("name", "")))
        if parsed is None:
            skipped += 1
            continue
        if row.get("error_occurred"):
            errors[parsed] = row.get("error_message", "error")
            continue
        if parsed[0] == "ffn":
            if row.get("run_type") != "aggregate" or row.get("aggregate_name") == "median":
                ffn[parsed] = row
            continue
        ns = ns_per_elem(row)
        gbs = float(row["bytes_per_second"]) / 1e9 if "bytes_per_second" in row else None
        if ns is None:
            skipped += 1
            continue
        if row.get("run_type") == "aggregate":
            if row.get("aggregate_name") == "median":
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
    return doc.get("context", {}), results, ffn, errors, skipped


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

    peaks = [f"{k.split(':')[1]} threads {float(v):.0f} GFLOP/s" for k, v in context.items()
             if k.startswith("fma_peak_gflops_threads:")]
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
    """Writes the PNG plots and returns their markdown section (paths relative to the report)."""
    import report_plots  # matplotlib only when plots are asked for

    made = []
    made += report_plots.gelu_throughput(results, plots_dir)
    made += report_plots.gelu_vs_baseline(results, plots_dir, BASELINE)
    made += report_plots.ffn_vs_peak(ffn, context, plots_dir)
    made += report_plots.ulp_profiles(profiles, plots_dir)
    base = os.path.dirname(os.path.abspath(out_path)) if out_path else os.getcwd()
    lines = ["## Plots", ""]
    for title, path in made:
        lines += [f"### {title}", "", f"![{title}]({os.path.relpath(os.path.abspath(path), base)})", ""]
    return lines, made


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", help="Google Benchmark JSON (--benchmark_out_format=json)")
    parser.add_argument("--out", help="write the markdown here as well (directories are created)")
    parser.add_argument("--plots-dir", help="write PNG plots here and link them from the markdown")
    parser.add_argument("--ulp-profile", action="append", default=[], metavar="LABEL=CSV",
                        help="ULP-error profile to plot (gelukit_accuracy --profile); repeatable")
    args = parser.parse_args(argv)
    profiles = []
    for item in args.ulp_profile:
        label, sep, path = item.partition("=")
        if not sep or not os.path.isfile(path):
            parser.error(f"--ulp-profile {item!r}: expected LABEL=CSV with an existing file")
        profiles.append((label, path))
    context, results, ffn, errors, skipped = load(args.json)
    text = render(context, results, ffn, errors, skipped, args.json)
    if args.plots_dir:
        lines, made = render_plots(context, results, ffn, args.plots_dir, profiles, args.out)
        text += "\n" + "\n".join(lines)
        print(f"gelukit_report: {len(made)} plots in {args.plots_dir}", file=sys.stderr)
    print(text)
    if args.out:
        directory = os.path.dirname(args.out)
        if directory:
            os.makedirs(directory, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
