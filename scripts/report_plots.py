"""PNG plots for scripts/gelukit_report.py (matplotlib, Agg backend; installed into .venv by
scripts/bootstrap.sh).

Each function takes the data gelukit_report.load() returns (ulp_profiles: the points
gelukit_report.load_ulp_profile read) and writes one or more PNG files, returning [(title, path)]
for the markdown report.
"""

import os

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402


_COLORS = {}


def _color(variant):
    """One colour per variant name in every figure of a report (tab20, in order of first use)."""
    if variant not in _COLORS:
        _COLORS[variant] = plt.cm.tab20(len(_COLORS) % 20)
    return _COLORS[variant]


def _save(fig, path, rect=(0, 0, 1, 1)):
    """tight_layout inside rect (room for a figure legend below), write the PNG, free the figure."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def gelu_throughput(results, plots_dir):
    """GB/s per schedule (variant) and size N: one figure per (N, threads), one panel per
    (direction, dtype), bars per form and variant; the memcpy of the same bytes (the memory
    bound) is drawn as a line per form, not a bar."""
    out = []
    gelu = {k: v for k, v in results.items() if k[0] == "gelu"}
    sizes = sorted({dict(k[3]).get("N") for k in gelu if dict(k[3]).get("N")}, key=float)
    for n in sizes:
        for threads in sorted({dict(k[3]).get("threads", "1") for k in gelu}):
            rows = {k: v for k, v in gelu.items()
                    if dict(k[3]).get("N") == n and dict(k[3]).get("threads", "1") == threads and v[1]}
            if not rows:
                continue
            panels = sorted({k[1][:2] for k in rows})  # (direction, dtype)
            variants = sorted({k[2] for k in rows if k[2] != "memcpy"})
            cols = 3
            nrows = (len(panels) + cols - 1) // cols
            fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
            colors = {v: _color(v) for v in variants}
            has_memcpy = any(k[2] == "memcpy" for k in rows)
            for p_index, panel in enumerate(panels):
                ax = axes[p_index // cols][p_index % cols]
                forms = sorted({k[1][2] for k in rows if k[1][:2] == panel})
                width = 0.8 / max(1, len(variants))
                for i, variant in enumerate(variants):
                    xs, ys = [], []
                    for j, form in enumerate(forms):
                        value = next((v[1] for k, v in rows.items()
                                      if k[1] == (*panel, form) and k[2] == variant), None)
                        if value is not None:
                            xs.append(j + i * width)
                            ys.append(value)
                    ax.bar(xs, ys, width, color=colors[variant])
                for j, form in enumerate(forms):
                    mem = next((v[1] for k, v in rows.items() if k[1] == (*panel, form) and k[2] == "memcpy"), None)
                    if mem is not None:
                        ax.hlines(mem, j - width / 2, j + 0.8 - width / 2, colors="black", linestyles="--")
                ax.set_xticks([j + 0.4 - width / 2 for j in range(len(forms))])
                ax.set_xticklabels(forms)
                ax.set_title(" ".join(panel), fontsize=10)
                ax.set_ylabel("GB/s")
                ax.set_xlabel("GELU form", fontsize=8)
            for p_index in range(len(panels), nrows * cols):
                axes[p_index // cols][p_index % cols].axis("off")
            handles = [Patch(color=colors[v], label=v) for v in variants]
            if has_memcpy:
                handles.append(Line2D([0], [0], color="black", linestyle="--", label="memcpy (x -> y)"))
            fig.legend(handles=handles, loc="lower center", ncol=min(8, len(handles)), fontsize=8)
            fig.suptitle(f"GELU throughput per schedule, N = {n}, {threads} thread(s) (GB/s of bytes read + written"
                         + ("; dashed: memcpy of one tensor into another, the rate a memory-bound kernel can reach)"
                            if has_memcpy else ")"))
            path = os.path.join(plots_dir, f"gelu_throughput_N{n}_t{threads}.png")
            _save(fig, path, rect=(0, 0.06, 1, 0.95))
            out.append((f"GELU throughput, N = {n}, {threads} thread(s)", path))
    return out


def gelu_vs_baseline(results, plots_dir, baseline, contended=frozenset()):
    """Throughput relative to the baseline (oneDNN) for every variant and group, per size, on a
    log axis (ratios are multiplicative: 0.5x and 2x lie equally far from 1x). Rows in
    `contended` (keys whose multi-thread time is over twice their 1-thread time: other processes
    on the cores, gelukit_report.contended_keys) make the ratio meaningless whether they are the
    variant's or the baseline's; their bars are grey and hatched, and the title counts them."""
    out = []
    gelu = {k: v for k, v in results.items() if k[0] == "gelu"}
    base = {(k[1], k[3]): v[0] for k, v in gelu.items() if k[2] == baseline}
    sizes = sorted({dict(k[3]).get("N") for k in gelu if dict(k[3]).get("N")}, key=float)
    for n in sizes:
        bars = []
        for k, v in sorted(gelu.items()):
            # memcpy is the memory bound (in the throughput plot), not a GELU implementation.
            if k[2] in (baseline, "memcpy") or dict(k[3]).get("N") != n or (k[1], k[3]) not in base:
                continue
            suspect = k in contended or ("gelu", k[1], baseline, k[3]) in contended
            bars.append(("/".join(k[1]) + " " + k[2] + f" t{dict(k[3]).get('threads', '1')}"
                         + (" [contended]" if suspect else ""), base[(k[1], k[3])] / v[0], suspect))
        if not bars:
            continue
        fig, ax = plt.subplots(figsize=(9, max(4, 0.18 * len(bars))))
        values = [b[1] for b in bars]
        colors = ["lightgrey" if b[2] else "tab:green" if b[1] >= 1 else "tab:red" for b in bars]
        # Bars grow from 1x (parity) to the ratio: left for slower, right for faster.
        drawn = ax.barh(range(len(bars)), [v - 1.0 for v in values], left=1.0, color=colors)
        for bar, b in zip(drawn, bars):
            if b[2]:
                bar.set_hatch("//")
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_xscale("log")
        trusted = [b[1] for b in bars if not b[2]]
        if trusted:  # the axis spans the trustworthy ratios; contended bars are cut at its ends
            ax.set_xlim(min(0.5, 0.8 * min(trusted)), max(2.0, 1.25 * max(trusted)))
        ratio_label = FuncFormatter(lambda x, _pos: f"{x:g}x")
        ax.xaxis.set_major_formatter(ratio_label)
        ax.xaxis.set_minor_formatter(ratio_label)
        ax.tick_params(axis="x", which="minor", labelsize=7)
        ax.set_yticks(range(len(bars)))
        ax.set_yticklabels([b[0] for b in bars], fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel(f"throughput / {baseline} throughput (log scale; > 1: faster than {baseline})")
        n_bad = sum(b[2] for b in bars)
        note = f" ({n_bad} row{'s' if n_bad != 1 else ''} measured under contention, grey)" if n_bad else ""
        ax.set_title(f"GELU vs {baseline}, N = {n}{note}", fontsize=9 if n_bad else None)
        path = os.path.join(plots_dir, f"gelu_vs_{baseline}_N{n}.png")
        _save(fig, path)
        out.append((f"GELU relative to {baseline}, N = {n}{note}", path))
    return out


def ffn_vs_peak(ffn, context, plots_dir):
    """FFN GFLOP/s per workload and variant, one panel per storage dtype, with the measured
    float32 FMA peak of that thread count as a line (bf16 peers may pass it: oneDNN uses AMX)."""
    if not ffn:
        return []
    from gelukit_report import workload_name  # (imported here: gelukit_report imports this module)
    out = []
    for threads in sorted({dict(k[3]).get("threads", "1") for k in ffn}):
        rows = {k: r for k, r in ffn.items() if dict(k[3]).get("threads", "1") == threads and "GFLOPs" in r}
        if not rows:
            continue

        def workload(k):
            d = dict(k[3])
            return (f"{workload_name(d.get('d_model'), d.get('d_ff'), k[1][1])}\n"
                    f"{k[1][1]} M{d.get('M', '?')} {d.get('d_model', '?')}/{d.get('d_ff', '?')}")

        dtypes = sorted({k[1][0] for k in rows})
        variants = sorted({k[2] for k in rows})
        colors = {v: _color(v) for v in variants}
        peak = context.get(f"fma_peak_gflops_threads:{threads}")
        fig, axes = plt.subplots(len(dtypes), 1, figsize=(11, 4 * len(dtypes)), squeeze=False)
        for d_index, dtype in enumerate(dtypes):
            ax = axes[d_index][0]
            sub = {k: r for k, r in rows.items() if k[1][0] == dtype}
            workloads = sorted({workload(k) for k in sub})
            width = 0.8 / len(variants)
            bars = []  # (x, GFLOP/s, variant)
            for i, variant in enumerate(variants):
                for j, w in enumerate(workloads):
                    value = next((float(r["GFLOPs"]) for k, r in sub.items() if workload(k) == w and k[2] == variant),
                                 None)
                    if value is not None and value > 0:
                        bars.append((j + i * width, value, variant))
            # The naive schedule runs at ~0.05 GFLOP/s, 3-4 decades below the others: an
            # invisible bar on a linear axis. Where a panel spans more than 20x, a log axis with
            # the bars drawn up from a floor below the smallest value; otherwise linear from 0.
            values = [v for _, v, _ in bars]
            log_axis = bool(values) and max(values) / min(values) > 20
            floor = min(values) / 2 if log_axis else 0.0
            for x, value, variant in bars:
                ax.bar([x], [value - floor], width, bottom=floor, color=colors[variant])
            if log_axis:
                ax.set_yscale("log")
                ax.set_ylim(bottom=floor)
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            if peak:
                ax.axhline(float(peak), color="black", linestyle="--", linewidth=1)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))])
            ax.set_xticklabels(workloads, fontsize=8)
            ax.set_xlabel("workload: model, GELU form, M tokens, d_model/d_ff", fontsize=8)
            ax.set_ylabel("GFLOP/s (log scale)" if log_axis else "GFLOP/s")
            ax.set_title(f"{dtype} feed-forward blocks, {threads} thread(s)")
        handles = [Patch(color=colors[v], label=v) for v in variants]
        if peak:
            handles.append(Line2D([0], [0], color="black", linestyle="--",
                                  label=f"float32 FMA peak {float(peak):.0f} GFLOP/s ({context.get('fma_peak_isa', '?')}; "
                                        "bf16 dot products and AMX tiles can exceed it)"))
        fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8)
        path = os.path.join(plots_dir, f"ffn_gflops_t{threads}.png")
        _save(fig, path, rect=(0, 0.08, 1, 1))
        out.append((f"FFN GFLOP/s against the FMA peak, {threads} thread(s)", path))
    return out


def ulp_profiles(profiles, plots_dir, bins=240):
    """ULP error against x, one panel per GELU form; profiles: [(label, xs, ys)] with labels
    '<form> <anything>' and the points of a gelukit_accuracy --profile file (read and checked by
    gelukit_report.load_ulp_profile: at least one point, all finite). Each curve is the maximum
    error in each of `bins` equal slices of the x range (the raw points alternate between 0 and
    the maximum too quickly to read)."""
    if not profiles:
        return []
    forms = []
    for label, _, _ in profiles:
        form = label.split()[0]
        if form not in forms:
            forms.append(form)
    fig, axes = plt.subplots(len(forms), 1, figsize=(9, 2.8 * len(forms)), squeeze=False)
    for label, xs, ys in profiles:
        lo, hi = min(xs), max(xs)
        step = (hi - lo) / bins or 1.0
        worst = [0.0] * bins
        for x, y in zip(xs, ys):
            b = min(bins - 1, int((x - lo) / step))
            worst[b] = max(worst[b], y)
        centers = [lo + (b + 0.5) * step for b in range(bins)]
        ax = axes[forms.index(label.split()[0])][0]
        # The 0-1 ULP curves (acc math) are drawn thicker and on top: they lie along the bottom.
        accurate = max(ys) <= 1
        ax.step(centers, worst, where="mid", linewidth=1.8 if accurate else 1.0, zorder=3 if accurate else 2,
                label=f"{label} (max {max(ys):.0f})")
    for i, form in enumerate(forms):
        ax = axes[i][0]
        # symlog: linear in [0, 1] (the acc kernels' 0 and 1), logarithmic above (the fast forms
        # reach ~200); the axis starts a little below 0 so that a curve at 0 is not hidden by it.
        top = max([1.0] + [max(line.get_ydata()) for line in ax.get_lines()])
        ax.set_yscale("symlog", linthresh=1, linscale=1.5)
        ax.set_ylim(-0.15, top * 1.5)
        ticks = [t for t in (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if t <= top * 1.5]
        ax.set_yticks(ticks)
        ax.set_yticklabels([str(t) for t in ticks])
        ax.set_ylabel("max ULP error")
        ax.set_title(f"GELU {form} (float32 forward): error against the double-precision reference")
        ax.legend(fontsize=7)
        ax.grid(True, linewidth=0.3)
    axes[-1][0].set_xlabel("x")
    path = os.path.join(plots_dir, "gelu_ulp_vs_x.png")
    _save(fig, path)
    return [("GELU ULP error against x", path)]
