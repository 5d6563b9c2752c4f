# The two commands of README.md: `make run` and `make test`. Both share one build in build/.
BUILD := build
CMAKE_FLAGS ?=
MODEL ?= models/myriad-tiny
FUZZ_RUNS ?= 400000

.PHONY: all deps test-deps configure build myriad install release gpu-test run test unit-test fuzz bench format clean

all: build

deps:
	@bash tools/install_deps.sh

test-deps:
	@bash tools/install_deps.sh --test

# The CUDA kernels: `make build` (and so `make test`) compiles them wherever nvcc is found, as CI
# does; `make run` only where a GPU answers (nvidia-smi) or MYRIAD_CUDA=ON asks for them.
HAVE_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo yes)
BUILD_CUDA := $(or $(MYRIAD_CUDA),AUTO)
RUN_CUDA := $(or $(MYRIAD_CUDA),$(if $(HAVE_GPU),AUTO,OFF))

# Configures build/ once, and again only when the CUDA choice changes.
define configure_with
	@grep -qx 'MYRIAD_CUDA:STRING=$(1)' $(BUILD)/CMakeCache.txt 2>/dev/null && [ -f $(BUILD)/build.ninja ] || \
	  cmake -S . -B $(BUILD) -G Ninja -DMYRIAD_CUDA=$(1) $(CMAKE_FLAGS)
endef

configure:
	$(call configure_with,$(BUILD_CUDA))

build: deps configure
	@if grep -q myriad_ops_cuda $(BUILD)/build.ninja; then \
	   start=$$(date +%s); cmake --build $(BUILD) --target myriad_ops_cuda || exit 1; \
	   echo "build: CUDA kernels $$(( $$(date +%s) - start )) s"; fi
	@start=$$(date +%s); cmake --build $(BUILD); echo "build: $$(( $$(date +%s) - start )) s"

# The CUDA kernels for Hopper, Blackwell datacenter and Blackwell workstation (sm_90a, sm_100a,
# sm_120a) in a separate build folder.
release:
	cmake -S . -B $(BUILD)-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DMYRIAD_CUDA_RELEASE=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD)-release --target myriad

# On a GPU host (offline): build and run the GPU tests and a benchmark (tools/gpu_run.sh; the
# bundle it unpacks comes from tools/gpu_bundle.sh).
gpu-test:
	bash tools/gpu_run.sh

# The server binary alone: what `make run` and `make install` need.
myriad: deps
	$(call configure_with,$(RUN_CUDA))
	@start=$$(date +%s); cmake --build $(BUILD) --target myriad || exit 1; \
	 echo "build: myriad $$(( $$(date +%s) - start )) s"

# PREFIX/bin/myriad (what `myriad service install` then puts in ExecStart).
PREFIX ?= /usr/local
install: myriad
	cmake --install $(BUILD) --prefix $(PREFIX)

PORT ?= 8000
run: myriad
	@echo "myriad serve: http://127.0.0.1:$(PORT)/v1 (Ctrl-C stops it). Try:"
	@echo "  curl http://127.0.0.1:$(PORT)/v1/chat/completions -H 'Content-Type: application/json' \\"
	@echo "    -d '{\"model\": \"myriad-tiny\", \"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}], \"max_tokens\": 32}'"
	./$(BUILD)/myriad serve $(MODEL) --served-model-name myriad-tiny --port $(PORT)

unit-test:
	@start=$$(date +%s); ctest --test-dir $(BUILD) -LE gpu --output-on-failure -j $$(nproc); \
	 rc=$$?; echo "ctest: $$(( $$(date +%s) - start )) s"; exit $$rc

# libFuzzer targets need clang: a separate small build of the parsers only.
fuzz:
	@start=$$(date +%s); \
	 cmake -S fuzz -B $(BUILD)/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ >/dev/null && \
	 cmake --build $(BUILD)/fuzz || exit 1; \
	 for t in $(BUILD)/fuzz/fuzz_*; do \
	   [ -f $$t ] && [ -x $$t ] || continue; \
	   name=$$(basename $$t); mkdir -p $(BUILD)/fuzz/corpus-$$name; \
	   runs=$$(sed -n "s/^$$name //p" fuzz/runs.txt); \
	   $$t -runs=$${runs:-$(FUZZ_RUNS)} -seed=1 -max_len=4096 $(BUILD)/fuzz/corpus-$$name fuzz/corpus/$$name \
	     2>$(BUILD)/fuzz/$$name.log || { tail -40 $(BUILD)/fuzz/$$name.log; exit 1; }; \
	   tail -1 $(BUILD)/fuzz/$$name.log; \
	 done; echo "fuzz: $$(( $$(date +%s) - start )) s"

test: test-deps build
	@$(MAKE) --no-print-directory unit-test
	@$(MAKE) --no-print-directory fuzz

bench: build
	bash bench/run_cpu.sh

format:
	clang-format -i $$(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')

clean:
	rm -rf $(BUILD)
