#!/usr/bin/env python3
"""Per-step critical-path shares from a CUPTI kernel timeline (tools/cupti_trace.cpp).

    python3 tools/trace_summary.py TRACE.csv [TOP] [--step-start REGEX]

Kernels are grouped into steps: a step starts at each kernel whose name matches --step-start
(default: the embedding kernel, the first of every forward step), separately for each CUDA graph
(graph_id) and for kernels launched outside graphs (graph 0). For each group it prints the mean
step time and, per kernel name, its calls and mean duration per step and its share of the step's
critical path: walking the kernels in start order, a kernel is charged the part of its run that
extends past every earlier kernel's end, and the idle time before it (a gap) is charged to
"(idle)". The charges of a step add up to its wall time, so they say what to shorten even when
programmatic dependent launch overlaps kernels. The median time from one step's start to the
next one's adds what the host does between steps.
"""
import csv
import re
import sys
from collections import defaultdict


def main():
    args = sys.argv[1:]
    start_re = "embed"
    if "--step-start" in args:
        i = args.index("--step-start")
        start_re = args[i + 1]
        del args[i:i + 2]
    path = args[0]
    top = int(args[1]) if len(args) > 1 else 30
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            rows.append((int(r["start_ns"]), int(r["end_ns"]), int(r["graph_id"]), r["name"],
                         int(r["grid"]), int(r["block"]), int(r["registers"])))
    rows.sort()
    by_graph = defaultdict(list)
    for r in rows:
        by_graph[r[2]].append(r)
    pat = re.compile(start_re)
    for gid, recs in sorted(by_graph.items()):
        steps, cur = [], []
        for r in recs:
            if pat.search(r[3]) and cur:
                steps.append(cur)
                cur = []
            cur.append(r)
        if cur:
            steps.append(cur)
        # Steps before the first step-start kernel (set-up work) are dropped.
        steps = [s for s in steps if pat.search(s[0][3])]
        if not steps:
            continue
        # Only the steps of the most common kernel count (a group may mix step shapes).
        counts = defaultdict(int)
        for s in steps:
            counts[len(s)] += 1
        n_kernels = max(counts, key=counts.get)
        steps = [s for s in steps if len(s) == n_kernels]
        charge = defaultdict(float)
        dur = defaultdict(float)
        calls = defaultdict(int)
        shape = {}
        wall = 0.0
        for s in steps:
            t0 = s[0][0]
            reach = t0
            for (b, e, _, name, grid, block, regs) in s:
                if b > reach:
                    charge["(idle)"] += b - reach
                if e > reach:
                    charge[name] += e - max(b, reach)
                    reach = e
                dur[name] += e - b
                calls[name] += 1
                shape[name] = (grid, block, regs)
            wall += reach - t0
        n = len(steps)
        # From one step's first kernel to the next one's: the wall time plus what the host adds
        # between steps (inputs, launch, the sampled ids copied back).
        starts = [s[0][0] for s in steps]
        gaps = [b - a for a, b in zip(starts, starts[1:])]
        period = sorted(gaps)[len(gaps) // 2] / 1e3 if gaps else 0.0
        label = "outside graphs" if gid == 0 else f"graph {gid}"
        print(f"== {label}: {n} steps of {n_kernels} kernels, {wall / n / 1e3:.1f} us a step "
              f"(sum of kernel times {sum(dur.values()) / n / 1e3:.1f} us; median step start to "
              f"start {period:.1f} us)")
        print(f"  {'critical us':>11} {'share':>6} {'calls':>6} {'mean us':>8}  "
              f"{'grid':>6} {'block':>5} {'regs':>4}  kernel")
        order = sorted(charge.items(), key=lambda kv: -kv[1])[:top]
        for name, c in order:
            g, b, r = shape.get(name, (0, 0, 0))
            per_call = dur[name] / calls[name] / 1e3 if calls[name] else 0.0
            print(f"  {c / n / 1e3:11.1f} {100 * c / wall:5.1f}% {calls[name] / n:6.0f} "
                  f"{per_call:8.2f}  {g:6d} {b:5d} {r:4d}  {name[:110]}")


if __name__ == "__main__":
    main()
