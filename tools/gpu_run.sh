#!/usr/bin/env bash
# On an offline GPU host: unpack .gpu-bundle (tools/gpu_bundle.sh) into a prefix, configure and
# build the GPU tests and myriad with CUDA, run the GPU tests (ctest -L gpu) and a short
# benchmark, and write logs and a summary under $OUT (default .gpu-out).
#   bash tools/gpu_run.sh [ctest -R regex]
# GPU_TESTS=0 skips building and running the GPU tests (benchmarks only); GPU_NOGRAPHS=0 and
# GPU_MODELS=0 skip the second pass of the whole-model tests without graphs and their summary;
# GPU_SANITIZER=0 skips compute-sanitizer over the op tests (GPU_SANITIZER_FILTER: a gtest
# filter instead of all of them; GPU_SANITIZER_TIMEOUT: seconds); GPU_PY=0 skips the server's Python
# (openai client) tests on the GPU (GPU_PY_FILES: which tests/python files, default four;
# GPU_PY_ARGS: more pytest arguments, e.g. "-k tp8"; GPU_PY_TIMEOUT: seconds a file, 300). GPU_NCU: bench-model runs to profile per kernel with Nsight
# Compute (graphs off), ';'-separated argument lists (leading NAME=value words set the run's
# environment; --launch-skip N --launch-count N choose its kernels), each summed by kernel name
# into ncu.txt (empty, the default: none); GPU_NCU_ARGS: more ncu options for every run.
# GPU_NCU_DETAIL: one kernel's full report (see below). GPU_TRACE: kernel timelines with graphs
# (see below).
# Logs go into logs.tar.xz at the end (the device tool returns at most 8 files).
# GPU_BENCH: the bench-model --random runs, ';'-separated argument lists (default below; empty
# for none), each cut off after GPU_BENCH_TIMEOUT seconds (default 150).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
OUT=${OUT:-$root/.gpu-out}
mkdir -p "$OUT"
bundle=$root/.gpu-bundle
prefix=$bundle/prefix
lib=$prefix/usr/lib/x86_64-linux-gnu
rm -rf "$prefix" && mkdir -p "$prefix"
for deb in "$bundle"/deb/*.deb; do
    case $(basename "$deb") in
        libgtest-dev_*) [ -e /usr/lib/x86_64-linux-gnu/libgtest.a ] && continue ;;
        pkgconf*|libpkgconf*) command -v pkg-config >/dev/null && continue ;;
    esac
    dpkg -x "$deb" "$prefix"
done
if ! pkg-config --exists icu-uc 2>/dev/null && [ -e "$bundle/icu-headers.tar.xz" ]; then
    tar -C "$prefix" -xJf "$bundle/icu-headers.tar.xz"
fi
export LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-}
if ! command -v pkg-config >/dev/null; then
    export PKG_CONFIG=$prefix/usr/bin/pkgconf
    ln -sf pkgconf "$prefix/usr/bin/pkg-config"
    export PATH=$prefix/usr/bin:$PATH
fi
sed -i "s|^prefix=/usr|prefix=$prefix/usr|; s|^includedir=/usr/include|includedir=$prefix/usr/include|" \
    "$lib"/pkgconfig/*.pc
# libcurl and libcrypto: the host has the runtimes (libcurl.so.4, libcrypto.so.3); the bundle's
# libcurl.so link dangles there and its libcurl.a does not link, so the runtimes are named.
rm -f "$lib/libcurl.a" "$lib/libcurl.so"
cat > "$lib/pkgconfig/libcurl.pc" <<PC
Name: libcurl
Description: host libcurl with bundled headers
Version: 7.88.1
Libs: -l:libcurl.so.4
Cflags: -I$prefix/usr/include/x86_64-linux-gnu
PC
if ! pkg-config --exists libcrypto 2>/dev/null; then
    cat > "$lib/pkgconfig/libcrypto.pc" <<PC
Name: libcrypto
Description: host OpenSSL libcrypto
Version: 3.0.0
Libs: -l:libcrypto.so.3
Cflags:
PC
fi
# ICU: the host has the runtime only. The bundle's headers are another version; ICU renames its
# symbols by version (u_foo_72), so the headers are pointed at the host's suffix and the host's
# libraries are linked by name.
if [ -e "$prefix/usr/include/unicode/uvernum.h" ]; then
    v=$(ls /usr/lib/x86_64-linux-gnu/libicuuc.so.* 2>/dev/null | sed -n 's/.*libicuuc\.so\.\([0-9][0-9]*\)$/\1/p' | head -1)
    sed -i "s/^#define U_ICU_VERSION_SUFFIX _[0-9]*/#define U_ICU_VERSION_SUFFIX _$v/" \
        "$prefix/usr/include/unicode/uvernum.h"
    rm -f "$lib"/pkgconfig/icu-*.pc
    cat > "$lib/pkgconfig/icu-uc.pc" <<PC
Name: icu-uc
Description: host ICU $v with bundled headers
Version: $v
Libs: -l:libicuuc.so.$v -l:libicudata.so.$v
Cflags: -I$prefix/usr/include
PC
    echo "gpu_run: ICU headers from the bundle against the host's ICU $v"
fi
export PKG_CONFIG_PATH=$lib/pkgconfig
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"

start=$(date +%s)
# gcc 13's -Wdangling-reference misfires on functions returning a reference to a member of an
# argument (seen in src/model/gguf_weights.cpp); CI's gcc 12 has no such warning.
extra=""
if g++ -Wno-dangling-reference -x c++ -c -o /dev/null /dev/null 2>/dev/null; then
    extra="-Wno-dangling-reference"
fi
# -O3 (Release) makes gcc's -Wrestrict misfire inside std::string (seen with gcc 12).
extra="$extra -Wno-restrict"
rm -f build-gpu/CMakeCache.txt  # pkg-config results are cached; the prefix is rebuilt each run
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMYRIAD_CUDA=ON \
    -DCMAKE_CXX_FLAGS="$extra" -DCMAKE_PREFIX_PATH="$prefix/usr" >"$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
cuda_start=$(date +%s)
ninja -C build-gpu -j"$(nproc)" myriad_ops_cuda >"$OUT/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$OUT/build.log" | head -60; exit 1; }
echo "gpu_run: CUDA library built in $(( $(date +%s) - cuda_start )) s"
if [ "${GPU_TESTS:-1}" = 1 ]; then
ninja -C build-gpu -j"$(nproc)" myriad_gpu_tests >>"$OUT/build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$OUT/build.log" | head -60; exit 1; }
echo "gpu_run: GPU tests built after $(( $(date +%s) - start )) s"
fi
ninja -C build-gpu -j"$(nproc)" myriad make_kimi_checkpoint tokenizer_fixtures >>"$OUT/build.log" 2>&1 && have_myriad=1 || {
    have_myriad=0; echo "gpu_run: myriad (with the server) did not build; see build.log"; }

rc=0
if [ "${GPU_TESTS:-1}" = 1 ]; then  # GPU_TESTS=0: build myriad and benchmark only
MYRIAD_KERNELS=sync=1 ctest --test-dir build-gpu -L gpu ${1:+-R "$1"} --output-on-failure -j 8 --timeout 300 \
    >"$OUT/ctest.log" 2>&1
rc=$?
grep -E "tests passed|Failed|\*\*\*|Total Test" "$OUT/ctest.log" | tail -40
# The whole-model tests again without CUDA graphs (every decode step op by op); GPU_NOGRAPHS=0
# skips this second pass.
if [ "${GPU_NOGRAPHS:-1}" = 1 ]; then
MYRIAD_KERNELS=graphs=0,sync=1 ctest --test-dir build-gpu -L gpu -R "Golden|KvCache|Graphs" \
    --output-on-failure -j 8 --timeout 300 >"$OUT/ctest_nographs.log" 2>&1 || rc=1
echo "without graphs: $(grep -E "tests passed" "$OUT/ctest_nographs.log")"
fi
build-gpu/tests/myriad_gpu_tests --gtest_filter='GpuGraphs.*' 2>&1 | grep -E "^graphs|FAILED|OK \]" | tee "$OUT/graphs.txt"
# The whole-model lines (error and greedy agreement per checkpoint).
[ "${GPU_MODELS:-1}" = 1 ] && MYRIAD_KERNELS=sync=1 build-gpu/tests/myriad_gpu_tests \
    --gtest_filter='*Golden*:*KvCache*' 2>&1 | grep -E "worst|FAILED" | tee "$OUT/models.txt"
# compute-sanitizer memcheck over the op tests (small shapes; GPU_SANITIZER=0 skips it).
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ "${GPU_SANITIZER:-1}" = 1 ] && [ -x "$sanitizer" ]; then
    timeout "${GPU_SANITIZER_TIMEOUT:-300}" "$sanitizer" --tool memcheck --error-exitcode 3 \
        build-gpu/tests/myriad_gpu_tests --gtest_filter="${GPU_SANITIZER_FILTER:-GpuOpsTest.*:*GpuLinear*:*GpuCache*:*GpuRoute*:*GpuExperts*:*GpuNaiveAttention*:GpuFusedCollectivesSmall.OneRank*}" \
        >"$OUT/memcheck.log" 2>&1
    mc=$?
    echo "memcheck: exit $mc ($(grep -E "ERROR SUMMARY" "$OUT/memcheck.log" | tail -1)); $(grep -E "tests? ran|PASSED|FAILED" "$OUT/memcheck.log" | tail -2 | tr '\n' ' ')"
    [ "$mc" = 0 ] || rc=1
elif [ "${GPU_SANITIZER:-1}" = 1 ]; then
    echo "memcheck: no compute-sanitizer on this host"
fi
fi
# The server's openai-client tests with the GPU build (its default device here is the GPU), in
# a venv over the host's Python with the bundle's wheels (GPU_PY=0 skips them).
if [ "$have_myriad" = 1 ] && [ "${GPU_PY:-1}" = 1 ]; then
    python3 -m venv --system-site-packages "$root/.gpu-venv" >/dev/null 2>&1 &&
        "$root/.gpu-venv/bin/pip" install --quiet --no-index --find-links "$bundle/whl" \
            openai anthropic pytest requests tiktoken jinja2 jsonschema \
            >"$OUT/pip.log" 2>&1 || echo "gpu_run: no venv with openai (see pip.log)"
    for t in ${GPU_PY_FILES:-test_serve test_serve_real_model test_chat test_generate_chat}; do
        # shellcheck disable=SC2086  # GPU_PY_ARGS is a word list (e.g. -k tp8)
        MYRIAD_BINARY=$root/build-gpu/myriad timeout "${GPU_PY_TIMEOUT:-300}" \
            "$root/.gpu-venv/bin/python" -m pytest "tests/python/$t.py" -q -s -p no:cacheprovider \
            ${GPU_PY_ARGS:-} >"$OUT/py_$t.log" 2>&1
        prc=$?
        echo "python $t: exit $prc, $(grep -E "passed|failed|error" "$OUT/py_$t.log" | tail -1)"
        [ "$prc" = 0 ] || { rc=1; tail -15 "$OUT/py_$t.log"; }
    done
fi
if [ "$have_myriad" = 1 ]; then
    ./build-gpu/myriad generate models/myriad-tiny --device cuda --prompt-ids 1,2,3 --max-tokens 8 \
        --ids 2>&1 | tail -3 | tee "$OUT/generate.txt"
    ./build-gpu/myriad bench-model models/myriad-tiny --device cuda --batch 1,8,32 2>&1 | tail -6 \
        | tee "$OUT/bench.txt"
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee -a "$OUT/gpu.txt"
    default_bench="--random moonlight --format nvfp4;--random moonlight --format bf16 --batch 1,64"
    default_bench="$default_bench;--random kimi-k2 --layers 4 --format nvfp4 --batch 1,8,64"
    IFS=';' read -ra runs <<<"${GPU_BENCH-$default_bench}"
    for spec in "${runs[@]}"; do  # leading NAME=value words set the run's environment
        envs=() args=()
        for w in $spec; do
            if [ ${#args[@]} -eq 0 ] && [[ $w == [A-Z]*=* ]]; then envs+=("$w"); else args+=("$w"); fi
        done
        echo "== ${envs[*]} bench-model ${args[*]}" | tee -a "$OUT/bench.txt"
        timeout "${GPU_BENCH_TIMEOUT:-150}" env "${envs[@]}" ./build-gpu/myriad bench-model \
            "${args[@]}" --device cuda >"$OUT/bench_run.log" 2>&1
        tail -40 "$OUT/bench_run.log" | tee -a "$OUT/bench.txt" | tail -24
    done
fi
if [ "$have_myriad" = 1 ] && [ -n "${GPU_NCU:-}" ]; then
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    : >"$OUT/ncu.txt"
    IFS=';' read -ra profiles <<<"$GPU_NCU"
    n=0
    for spec in "${profiles[@]}"; do
        # Leading NAME=value words set the run's environment; --launch-skip N and --launch-count N
        # go to ncu (after GPU_NCU_ARGS); the rest to bench-model.
        envs=() args=() window=()
        set -- $spec
        while [ $# -gt 0 ]; do
            if [ ${#args[@]} -eq 0 ] && [[ $1 == [A-Z]*=* ]]; then envs+=("$1")
            elif [[ $1 == --launch-skip || $1 == --launch-count ]]; then window+=("$1" "$2"); shift
            else args+=("$1"); fi
            shift
        done
        n=$((n + 1))
        # Graphs off (ncu times kernels launched one by one), after the run's own overrides.
        kernels=graphs=0
        for e in "${envs[@]}"; do
            [[ $e == MYRIAD_KERNELS=* ]] && kernels="${e#MYRIAD_KERNELS=},graphs=0"
        done
        # shellcheck disable=SC2086  # GPU_NCU_ARGS is a word list
        env "${envs[@]}" MYRIAD_KERNELS="$kernels" timeout "${GPU_BENCH_TIMEOUT:-150}" "$ncu" \
            --clock-control none ${GPU_NCU_ARGS:-} "${window[@]}" \
            --metrics gpu__time_duration.sum --csv --page raw -k 'regex:^(?!.*synth)' \
            ./build-gpu/myriad bench-model "${args[@]}" --check-layers 0 --device cuda \
            >"$OUT/ncu_$n.csv" 2>"$OUT/ncu_$n.log"
        echo "== ncu: ${envs[*]} bench-model ${args[*]} ${window[*]} (exit $?)" | tee -a "$OUT/ncu.txt"
        python3 tools/ncu_summary.py "$OUT/ncu_$n.csv" 40 2>&1 | tee -a "$OUT/ncu.txt"
    done
fi
# GPU_TRACE: bench-model runs (';'-separated argument lists, leading NAME=value words set the
# environment) traced through CUPTI with graphs as they are (tools/cupti_trace.cpp), summed per
# step into trace.txt by tools/trace_summary.py: each kernel's share of a step's critical path.
if [ "$have_myriad" = 1 ] && [ -n "${GPU_TRACE:-}" ]; then
    : >"$OUT/trace.txt"
    if ninja -C build-gpu myriad_cupti_trace >>"$OUT/build.log" 2>&1; then
        IFS=';' read -ra traces <<<"$GPU_TRACE"
        n=0
        for spec in "${traces[@]}"; do
            envs=() args=()
            for w in $spec; do
                if [ ${#args[@]} -eq 0 ] && [[ $w == [A-Z]*=* ]]; then envs+=("$w"); else args+=("$w"); fi
            done
            n=$((n + 1))
            env "${envs[@]}" CUDA_INJECTION64_PATH="$root/build-gpu/libmyriad_cupti_trace.so" \
                MYRIAD_TRACE_OUT="$OUT/trace_$n.csv" timeout "${GPU_BENCH_TIMEOUT:-150}" \
                ./build-gpu/myriad bench-model "${args[@]}" --check-layers 0 --device cuda \
                >"$OUT/trace_$n.log" 2>&1
            echo "== trace: ${envs[*]} bench-model ${args[*]} (exit $?)" | tee -a "$OUT/trace.txt"
            grep -E "tok/s|cupti_trace" "$OUT/trace_$n.log" | tail -8 >>"$OUT/trace.txt"
            python3 tools/trace_summary.py "$OUT/trace_$n.csv" 45 >>"$OUT/trace.txt" 2>&1
            xz -f "$OUT/trace_$n.csv"
        done
        head -c 3000 "$OUT/trace.txt"
    else
        echo "gpu_run: no CUPTI here (myriad_cupti_trace did not build); see build.log"
    fi
fi
# GPU_NCU_DETAIL: kernels' full Nsight Compute reports (speed of light, occupancy, launch, warp
# stalls, memory), ';'-separated "KERNEL_REGEX SKIP bench-model args..." (the SKIP-th matching
# launch, graphs off) into ncu_detail.txt.
if [ "$have_myriad" = 1 ] && [ -n "${GPU_NCU_DETAIL:-}" ]; then
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    : >"$OUT/ncu_detail.txt"
    IFS=';' read -ra details <<<"$GPU_NCU_DETAIL"
    for spec in "${details[@]}"; do
        set -- $spec
        kre=$1 skip=$2
        shift 2
        MYRIAD_KERNELS=graphs=0 timeout "${GPU_BENCH_TIMEOUT:-150}" "$ncu" --clock-control none \
            --section SpeedOfLight --section Occupancy --section LaunchStats \
            --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
            -k "regex:$kre" --launch-skip "$skip" --launch-count 1 \
            ./build-gpu/myriad bench-model "$@" --check-layers 0 --device cuda \
            >>"$OUT/ncu_detail.txt" 2>&1
        echo "== ncu detail: $kre (skip $skip): exit $?, $(wc -l <"$OUT/ncu_detail.txt") lines in ncu_detail.txt"
    done
fi
# One archive of everything but the .txt summaries, so that those come back beside it.
(cd "$OUT" && find . -maxdepth 1 -type f ! -name '*.txt' ! -name logs.tar.xz -printf '%f\n' |
    tar -cJf logs.tar.xz --remove-files -T - 2>/dev/null)
exit $rc
