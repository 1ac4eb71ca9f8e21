# The entry points of the README. Each one installs what the build needs
# (scripts/setup, idempotent), configures and builds, then does its job.
BUILD      ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= $(shell nproc)
CMAKE_FLAGS ?=

LOUPE = $(BUILD)/bin/loupe

.PHONY: all setup build python demo test lint bench gpu-check test-asan test-tsan clean

all: build

setup:
	@scripts/setup

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DLOUPE_WERROR=ON $(CMAKE_FLAGS)

build: setup $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Train an MLP on the runtime (with a ragged last batch and item() every
# step), record it into trace.db, show what the trace holds and what went
# wrong.
demo: build
	$(LOUPE) record -o trace.db -- $(BUILD)/bin/train_mlp
	$(LOUPE) analyze trace.db

# The Python package (python/, docs/python.md), installed into .venv
# (scripts/setup-python) and built in $(BUILD)-python, so that a rebuild
# compiles only what changed.
python: setup
	scripts/setup-python
	.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation \
	  --config-settings=build-dir=$(CURDIR)/$(BUILD)-python ./python

test: python build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# clang-format and clang-tidy, with zero findings (scripts/lint).
lint: python $(BUILD)/build.ninja
	scripts/lint $(BUILD) $(BUILD)-python

# Benchmarks run in a Release build of their own and print one table, in
# .venv (scripts/setup-python), which has the Python package and what the
# comparisons with HTA, JAX and pandas import.
bench: python
	cmake -S . -B $(BUILD)-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOUPE_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-release -j $(JOBS)
	.venv/bin/python bench/run $(BUILD)-release

# Everything that needs an NVIDIA GPU (docs/gpu.md), with one table at the
# end; on a machine without one, the CPU-side parts and what was skipped.
GPU_CHECK_OUT ?= gpu-check-out
gpu-check: setup
	scripts/gpu-check $(GPU_CHECK_OUT) --build-dir $(BUILD)-gpu-check

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer, but
# for the end-to-end sample tests (label e2e): they compare the time a
# program spends on the host with the time its device computes, and the
# instrumentation slows the CPU device's kernels several times more than the
# samples' host work, which turns those comparisons over. `make test` runs
# them; the runtime and samples' code paths run here through the other tests.
test-asan: setup
	cmake -S . -B $(BUILD)-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLOUPE_WERROR=ON \
	  -DLOUPE_SANITIZE=address,undefined -DLOUPE_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --test-dir $(BUILD)-asan --output-on-failure -j $(JOBS) -LE e2e

# The threaded parts (recorder, captures, executor) under ThreadSanitizer.
TSAN_TESTS ?= Record|Fault|Capture|Executor|Stream|Runtime
test-tsan: setup
	cmake -S . -B $(BUILD)-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLOUPE_WERROR=ON \
	  -DLOUPE_SANITIZE=thread -DLOUPE_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(BUILD)-tsan -j $(JOBS)
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --test-dir $(BUILD)-tsan --output-on-failure -j $(JOBS) -R '$(TSAN_TESTS)'

clean:
	rm -rf $(BUILD) $(BUILD)-release $(BUILD)-asan $(BUILD)-tsan $(BUILD)-gpu-check $(BUILD)-python
