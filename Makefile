# The two set-up commands of the README, and the rest of the developer loop.
#   make run    installs what is missing, builds, runs the main job on its built-in defaults
#   make test   the same, then the whole test suite
#   make bench  the benchmarks (figures go to docs/benchmarks.md by hand, with the machine)
#   make fuzz   the libFuzzer targets built with clang, FUZZ_SECONDS each (docs/errors.md)
BUILD_DIR ?= build
BUILD_TYPE ?= Release
# Four tests at a time on two cores: the process tests wait part of the time (a heartbeat, a
# connection timeout, a peer's start), and two at a time left a core idle then (docs/benchmarks.md,
# "make test").
CTEST_JOBS ?= 4
# The python3 whose torch package carries libtorch: the project's .venv/ (made by `make deps`) or,
# given on the command line, a torch already installed (a GPU machine that reaches no registry).
TORCH_PYTHON ?=
torch_python = $(if $(TORCH_PYTHON),$(TORCH_PYTHON),$(CURDIR)/.venv/bin/python3)

FUZZ_SECONDS ?= 10

.PHONY: all deps configure build programs run test bench fuzz format clean

all: build

deps:
	@TORCH_PYTHON=$(TORCH_PYTHON) scripts/install-deps.sh

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DTRANSIENT_TORCH_PYTHON=$(torch_python)

configure: deps $(BUILD_DIR)/build.ninja

# With the fuzzers' clang tree that Fuzz.ShortRun runs (tests/fuzz/CMakeLists.txt): built here, in
# the build, where the test phase built it first (2-3 minutes of CPU on a fresh clone).
build: configure
	cmake --build $(BUILD_DIR)
	BUILD_DIR=$(BUILD_DIR)/fuzz-clang JOBS=2 OPT=-O0 BUILD_ONLY=1 scripts/fuzz.sh

# The programs alone: `transient` and what it hands the torch commands to (transient-torch, the
# CUDA module). `make run` needs no more: on a fresh clone on 2 cores 8 min 15 s against 15 min
# 12 s for the whole build with the test suites, which `make test` builds (docs/benchmarks.md).
programs: configure
	cmake --build $(BUILD_DIR) --target transient

# The main job: 3 workers train the CNN on Fashion-MNIST while one is killed, another gets a
# preemption notice, and one replacement joins; each recovery is printed as it happens.
run: programs
	$(BUILD_DIR)/transient train --workers 3 --revoke kill@step300:any --revoke preempt@step700:any \
	  --replace 5s --max-replacements 1

# Every process of the test phase with glibc's malloc on transparent huge pages, as transient
# gives its torch processes (cli/torch_commands.h): the test programs and Python start libtorch
# too, a fifth of whose start was page faults of the heap (docs/benchmarks.md).
# A fresh build directory gets tests/ctest-costs.txt as CTest's record of the tests' times (a
# copy of build/Testing/Temporary/CTestCostData.txt after a run), so that its first run too
# starts the longest first: without it CTest runs them in the order they were added, the
# trainer's long process tests last (CTest keeps the record up to date from then on; a test it
# has no time for starts first).
test: build
	@test -f $(BUILD_DIR)/Testing/Temporary/CTestCostData.txt || \
	  install -D -m 644 tests/ctest-costs.txt $(BUILD_DIR)/Testing/Temporary/CTestCostData.txt
	GLIBC_TUNABLES=glibc.malloc.hugetlb=1 ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(CTEST_JOBS)

bench: build
	bench/run-all.sh $(BUILD_DIR)

fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

format:
	find src tests bench -name '*.cc' -o -name '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
