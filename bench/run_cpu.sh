#!/usr/bin/env bash
# CPU benchmarks of the engine (not tests): bench-model on the shipped model and the largest golden
# model, then throughput of C concurrent requests with and without a shared prompt prefix.
# Usage: bash bench/run_cpu.sh [build dir]. Results go to stdout; record them in bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build}/myriad
echo "# $(date -u +%F) $(uname -m), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for model in models/myriad-tiny build/goldens/kimi_k2; do
    echo "## bench-model $model"
    $bin -q bench-model $model --batch 1,4,16 --prompt-len 128 --decode-steps 32
    for c in 1 4 16; do
        for prefix in 0 96; do
            printf "concurrency %-2s shared prefix %-3s: " $c $prefix
            $bin -q generate $model --concurrency $c --requests $((c * 4)) --input-len 128 \
                --shared-prefix $prefix --max-tokens 32
        done
    done
done
