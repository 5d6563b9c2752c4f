#!/usr/bin/env bash
# On a GPU host after tools/gpu_run.sh built build-gpu: issue 19's divergence study. Makes the
# checkpoints of tools/divergence_case.py (transformers' greedy tokens), then runs the
# differential GPU tests over random configs and over those folders; logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/.gpu-out}
div=${DIV_DIR:-/tmp/div}
PYTHONUNBUFFERED=1 python3 tools/divergence_case.py --out "$div" --seeds "${DIV_SEEDS:-1,2,3,4,5}" \
    >"$OUT/divergence_case.log" 2>&1 || { echo "divergence_case.py failed"; tail -20 "$OUT/divergence_case.log"; }
grep -E "FAIL|Error|error" "$OUT/divergence_case.log" | tail -10
python3 tools/divergence_case.py --out "$div" --compare build-gpu/myriad >"$OUT/generate_vs_hf.log" 2>&1
grep -v "same as transformers" "$OUT/generate_vs_hf.log" | cut -c1-300 | head -20
dirs=$(ls -d "$div"/*/ 2>/dev/null | sed 's|/$||' | tr '\n' ':')
MYRIAD_DIFF_DIRS=${dirs%:} timeout 300 build-gpu/tests/myriad_gpu_tests \
    --gtest_filter='GpuDifferential.CheckpointFolders' >"$OUT/diff_folders.log" 2>&1
echo "folders: exit $?"
grep -E "FAIL|first greedy difference at position [0-9]" "$OUT/diff_folders.log" | cut -c1-300 | head -20
grep -cE "first greedy difference at position -1" "$OUT/diff_folders.log" | sed 's/$/ prompts with no greedy difference/' 
for t in ExactModeRandomConfigs DefaultModeRandomConfigs; do
    timeout 400 build-gpu/tests/myriad_gpu_tests --gtest_filter="GpuDifferential.$t" \
        >"$OUT/diff_$t.log" 2>&1
    echo "$t: exit $?"
    grep -E "FAIL|did not load|cases failed" "$OUT/diff_$t.log" | cut -c1-300 | head -20
done
