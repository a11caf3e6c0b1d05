#!/usr/bin/env python3
"""Each kernel's time inside a model against the tuner's time for it alone.

Reads the per-kernel table of `loomrun MODEL --db DB --bench N` (ms per run, uses, label) and the
log of the `autotune --model MODEL --db DB` run that tuned it (its closing lines: "LABEL: re-timed
... best #N, X ms", else "LABEL: best G GFLOP/s, X ms"), and prints both sums and the kernels
that lose the most in the model, largest loss first. The tuner times a kernel alone, the same call
repeated with its data in cache; inside the model its weights and inputs may come from memory
(bench/RESULTS.md, session 40). A kernel with no line in the log counts as 0 alone.

Usage: bench/models/kernel_gap.py LOOMRUN_OUTPUT AUTOTUNE_LOG [--top 25]
"""

import argparse
import re


def isolated_latencies(log_path):
    """Label -> the tuner's best latency in ms (the re-timed one where the log has it)."""
    retimed, first = {}, {}
    with open(log_path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"(.*\)): re-timed .* best #\d+, ([0-9.]+) ms", line)
            if m:
                retimed[m.group(1)] = float(m.group(2))
                continue
            m = re.match(r"(.*\)): best [0-9.]+ GFLOP/s, ([0-9.]+) ms", line)
            if m:
                first[m.group(1)] = float(m.group(2))
    return {**first, **retimed}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("loomrun_output", help="stdout of loomrun --bench")
    ap.add_argument("autotune_log", help="stdout of the autotune --model run")
    ap.add_argument("--top", type=int, default=25, help="kernels listed (default 25)")
    args = ap.parse_args()
    alone = isolated_latencies(args.autotune_log)
    rows, in_model, alone_sum = [], 0.0, 0.0
    with open(args.loomrun_output, encoding="utf-8") as f:
        for line in f:
            if line.startswith("latency"):
                print(line.strip())
            m = re.match(r"\d+\s+([0-9.]+)\s+[0-9.]+%\s+(\d+)\s+(\w+)\s+(.*)$", line)
            if not m:
                continue
            ms, uses, sched, label = float(m.group(1)), int(m.group(2)), m.group(3), m.group(4).strip()
            solo = alone.get(label, 0.0) * uses
            in_model += ms
            alone_sum += solo
            rows.append((ms - solo, ms, solo, uses, sched, label))
    print(f"kernels in the model: {in_model:.3f} ms per run; alone (tuner, x uses): {alone_sum:.3f} ms")
    print(f"{'in model':>9} {'alone':>8} {'loss':>8} uses schedule kernel")
    for loss, ms, solo, uses, sched, label in sorted(rows, reverse=True)[:args.top]:
        print(f"{ms:9.4f} {solo:8.4f} {loss:+8.4f} {uses:4d} {sched:8s} {label}")


if __name__ == "__main__":
    main()
