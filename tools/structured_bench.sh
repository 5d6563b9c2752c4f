#!/usr/bin/env bash
# On the GPU machine: what structured output costs (issue 27 item 4). bench-model times decode
# steps with and without every sequence constrained to bench/data/edit_tool_schema.json (the
# shipped model, and the Moonlight shape with DeepSeek-V3's vocabulary), at batch 1 and 64; then
# `myriad serve` (the shipped model) is loaded by `myriad bench` at concurrency 1 and 64, with and
# without response_format json_schema. Everything lands in $OUT/structured_report.txt.
#   bash tools/structured_bench.sh        (after tools/gpu_run.sh has built build-gpu/)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/.gpu-out}
mkdir -p "$OUT"
bin=${MYRIAD:-build-gpu/myriad}
schema=bench/data/edit_tool_schema.json
report=$OUT/structured_report.txt
: >"$report"
say() { echo "$*" | tee -a "$report"; }
[ -x "$bin" ] || { say "no $bin: run tools/gpu_run.sh first"; exit 1; }

say "== bench-model, shipped model, --json-schema $schema"
timeout 200 "$bin" bench-model --device cuda --json-schema "$schema" --batch 1,64 \
    --decode-steps 64 2>&1 | tee -a "$report"
say "== bench-model, random moonlight nvfp4, --json-schema $schema (deepseek_v3 vocabulary)"
timeout 200 "$bin" bench-model --random moonlight --format nvfp4 --device cuda \
    --json-schema "$schema" --tokenizer build-gpu/tokenizers/deepseek_v3 --batch 1,64 \
    --decode-steps 64 2>&1 | tee -a "$report"

port=$((20000 + RANDOM % 20000))
"$bin" serve --port "$port" --gpu-memory-utilization 0.5 >"$OUT/structured_serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null' EXIT
for _ in $(seq 120); do
    python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" \
        2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || { say "serve exited:"; tail -5 "$OUT/structured_serve.log" | tee -a "$report"; exit 1; }
    sleep 0.5
done
# The engine's decode-only steps (no prefill chunk joined them) from /metrics: their count, mean
# batch and mean time, which compare the per-token cost of constraints without the staggered
# finishes of constrained requests (whose replacements' prefills join more steps).
decode_stats() {
    python3 - "$port" <<'PY'
import sys, urllib.request
m = {}
for line in urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode().splitlines():
    if line.startswith("myriad_engine_decode_step"):
        k, v = line.split()
        m[k] = float(v)
print(m["myriad_engine_decode_steps_total"], m["myriad_engine_decode_step_sequences_total"],
      m["myriad_engine_decode_step_seconds_total"])
PY
}
for c in 1 64; do
    n=$((c == 1 ? 16 : 256))
    for constrained in no yes; do
        extra=()
        [ "$constrained" = yes ] && extra=(--json-schema "$schema")
        say "== myriad bench, shipped model on the GPU, concurrency $c, $n requests, json schema: $constrained"
        read -r s0 q0 t0 < <(decode_stats)
        timeout 200 "$bin" bench "http://127.0.0.1:$port" --endpoint chat --concurrency "$c" \
            --requests "$n" --input-len 64 --output-len 128 "${extra[@]}" 2>&1 | tee -a "$report"
        read -r s1 q1 t1 < <(decode_stats)
        say "$(python3 -c "s=$s1-$s0; q=$q1-$q0; t=$t1-$t0; print(f'decode-only steps: {s:.0f}, mean batch {q/max(s,1):.1f}, {1e3*t/max(s,1):.3f} ms a step, {1e6*t/max(q,1):.1f} us a sequence-token')")"
    done
done
