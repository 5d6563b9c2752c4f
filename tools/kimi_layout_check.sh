#!/usr/bin/env bash
# On the GPU machine (one H200): a checkpoint in the exact layout of nvidia/Kimi-K2.5-NVFP4 at the
# real shapes, end to end (issue 25 item 3). For each layer count (default 2 and 4: 16.4 and
# 36 GB): write it with make_kimi_checkpoint (page cache dropped, so that loads read the disk),
# time a plain sequential read of its shards (the disk's rate; cache dropped again), `myriad
# plan` on it, then tests/python/test_kimi_layout.py (layout, tokenizer, plan, and `myriad serve`
# under the openai client: chat, streaming, TypeScript tool declarations, tool_choice required and
# named, reasoning) at TP 1 and at TP 8 with the ranks on GPU 0, each serve starting cold. The
# load rate of each serve ("weights: ... loaded in ... s") lands beside the disk's.
#   bash tools/kimi_layout_check.sh
# OUT (default .gpu-out): where kimi_report.txt and the logs go. KIMI_LAYERS (default "2 4"),
# KIMI_TP (default "1 8"), KIMI_WRITER_FLAGS (more make_kimi_checkpoint flags: "--ci" for a
# smoke run of this script without a GPU), KIMI_DIR (default /tmp/kimi-layout: the disk measured; each
# checkpoint is removed after its runs, so 36 GB free suffice). Needs build-gpu/ with myriad and
# make_kimi_checkpoint and .gpu-venv/ (tools/gpu_run.sh makes both; this script runs it, without
# its GPU tests and benchmarks, when they are missing).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-$root/.gpu-out}
mkdir -p "$OUT"
report=$OUT/kimi_report.txt
: >"$report"
say() { echo "$*" | tee -a "$report"; }
calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }  # no bc on a bare host
layers_list=${KIMI_LAYERS:-2 4}
tp_list=${KIMI_TP:-1 8}
dir_root=${KIMI_DIR:-/tmp/kimi-layout}
start=$(date +%s)

if [ ! -x build-gpu/myriad ] || [ ! -x build-gpu/make_kimi_checkpoint ] ||
   [ ! -e build-gpu/tokenizers/o200k_base/tiktoken.model ]; then
    say "kimi_layout_check: building myriad and make_kimi_checkpoint (tools/gpu_run.sh, no GPU tests)"
    GPU_TESTS=0 GPU_PY=0 GPU_BENCH= OUT=$OUT/gpu_run bash tools/gpu_run.sh >"$OUT/gpu_run.log" 2>&1
    say "kimi_layout_check: built after $(( $(date +%s) - start )) s"
fi
[ -x build-gpu/make_kimi_checkpoint ] || { say "no build-gpu/make_kimi_checkpoint (see $OUT/gpu_run.log)"; exit 1; }
if [ ! -x .gpu-venv/bin/python ] || ! .gpu-venv/bin/python -c "import openai, pytest, tiktoken" 2>/dev/null; then
    python3 -m venv --system-site-packages .gpu-venv >/dev/null 2>&1 &&
        .gpu-venv/bin/pip install --quiet --no-index --find-links .gpu-bundle/whl \
            openai anthropic pytest requests tiktoken jinja2 jsonschema >"$OUT/pip.log" 2>&1 ||
        say "kimi_layout_check: no venv with openai (see pip.log)"
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a "$report"
df -h "$(dirname "$dir_root")" | tail -1 | tee -a "$report"

# Drops the files' pages from the page cache (dd's nocache: posix_fadvise DONTNEED).
uncache() { for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done; }

rc=0
for layers in $layers_list; do
    dir=$dir_root/kimi-k2.5-nvfp4-${layers}l
    rm -rf "$dir"
    mkdir -p "$dir_root"
    t0=$(date +%s.%N)
    build-gpu/make_kimi_checkpoint --out "$dir" --layers "$layers" --drop-cache --force \
        ${KIMI_WRITER_FLAGS:-} \
        >"$OUT/write_${layers}l.log" 2>&1 || { say "write ${layers} layers failed:"; tail -5 "$OUT/write_${layers}l.log" | tee -a "$report"; rc=1; continue; }
    say "$(tail -1 "$OUT/write_${layers}l.log") [wall $(calc "$(date +%s.%N) - $t0") s]"
    shards=("$dir"/model-*.safetensors)
    bytes=$(du -cb "${shards[@]}" | tail -1 | cut -f1)
    uncache "${shards[@]}"
    t0=$(date +%s.%N)
    for f in "${shards[@]}"; do dd if="$f" of=/dev/null bs=16M iflag=nocache status=none; done
    secs=$(calc "$(date +%s.%N) - $t0")
    disk_rate=$(calc "$bytes / 1e9 / $secs")
    say "disk: sequential read of ${#shards[@]} shards, $(calc "$bytes / 1e9") GB in ${secs} s = ${disk_rate} GB/s (dd, page cache dropped)"
    build-gpu/myriad inspect "$dir" --read-speed 2>&1 | tee -a "$report"
    build-gpu/myriad plan "$dir" >"$OUT/plan_${layers}l.txt" 2>&1
    say "myriad plan (${layers} layers): exit $?"
    sed 's/^/  /' "$OUT/plan_${layers}l.txt" | tee -a "$report" >/dev/null
    for tp in $tp_list; do
        flags=""
        [ "$tp" = 1 ] || flags="--tp $tp --devices $(printf '0,%.0s' $(seq "$tp") | sed 's/,$//')"
        flags="$flags --disk-read-rate $disk_rate"  # serve's load line: the load against dd's rate
        uncache "${shards[@]}"
        log=$OUT/py_kimi_${layers}l_tp${tp}.log
        MYRIAD_TEST_GPU_MEMORY_UTILIZATION=${MYRIAD_TEST_GPU_MEMORY_UTILIZATION:-0.9} \
        MYRIAD_BINARY=$root/build-gpu/myriad MYRIAD_KIMI_CHECKPOINT=$dir MYRIAD_KIMI_SERVE_FLAGS="$flags" \
            MYRIAD_KIMI_PLAN_FLAGS="" MYRIAD_KIMI_REPORT=$report \
            timeout 360 .gpu-venv/bin/python -m pytest -q -p no:cacheprovider \
            tests/python/test_kimi_layout.py >"$log" 2>&1
        prc=$?
        say "test_kimi_layout ${layers} layers, serve ${flags:-(TP 1)}: exit $prc, $(grep -E "passed|failed|error" "$log" | tail -1) [$(( $(date +%s) - start )) s so far]"
        [ "$prc" = 0 ] || { rc=1; grep -E "^(FAILED|ERROR|E )" "$log" | head -20 | tee -a "$report"; }
    done
    rm -rf "$dir"
done
say "kimi_layout_check: done in $(( $(date +%s) - start )) s, exit $rc"
exit $rc
