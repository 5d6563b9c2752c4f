#!/usr/bin/env python3
"""Sums Nsight Compute's per-kernel durations by kernel name, costliest first.

On the GPU host (ncu is in the CUDA toolkit; leave the clocks alone):
  MYRIAD_KERNELS=graphs=0 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
      --page raw -k 'regex:^(?!.*synth)' ./build-gpu/myriad bench-model --random moonlight \
      --format nvfp4 --batch 1 --decode-steps 8 --check-layers 0 --device cuda > ncu.csv
  python3 tools/ncu_summary.py ncu.csv [TOP]

Prints total, share, calls and time per call of the TOP (default 25) kernel names. Durations
are taken in the unit ncu's second CSV row names (nanoseconds, microseconds or milliseconds).
"""

import collections
import csv
import sys

SCALE_TO_US = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    header = None
    scale = 1e-3
    total = collections.defaultdict(float)
    calls = collections.Counter()
    with open(sys.argv[1], newline="") as f:
        for row in csv.reader(f):
            if header is None:
                if "Kernel Name" in row and "gpu__time_duration.sum" in row:
                    header = row
                    name_at = row.index("Kernel Name")
                    value_at = row.index("gpu__time_duration.sum")
                continue
            unit = row[value_at] if value_at < len(row) else ""
            if unit in SCALE_TO_US:  # the units row
                scale = SCALE_TO_US[unit]
                continue
            try:
                us = float(row[value_at].replace(",", "")) * scale
            except (ValueError, IndexError):
                continue
            name = row[name_at][:100]
            total[name] += us
            calls[name] += 1
    if not total:
        sys.exit(f"{sys.argv[1]}: no kernel durations (was ncu run with "
                 "--metrics gpu__time_duration.sum --csv --page raw?)")
    whole = sum(total.values())
    print(f"total {whole:.1f} us over {sum(calls.values())} kernels")
    for name, us in sorted(total.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{us:11.1f} us {100 * us / whole:5.1f}% {calls[name]:7d}x "
              f"{us / calls[name]:9.2f} us/call  {name}")


if __name__ == "__main__":
    main()
