# Set-up and every routine task. `make demo` and `make test` do all set-up themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
CBUILD ?= build/c
ASAN_BUILD ?= build/asan
FUZZ_BUILD ?= build/fuzz
FUZZ_SECONDS ?= 6
FUZZ_SCRATCH ?= $(or $(TMPDIR),/tmp)/mpiucc-fuzz
NINJA := -G Ninja -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV))/bin/ninja
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DMPIUCC_WERROR=ON
endif

.PHONY: demo test test-c test-sanitize test-tsan fuzz-short test-py docs test-wheel test-ucc build bench lint clean

$(VENV)/.deps: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

build: $(VENV)/.deps
	$(PY) -m pip install -q --no-build-isolation --no-deps -e .

test: test-c test-sanitize fuzz-short test-py docs test-wheel

test-c: $(VENV)/.deps
	$(VENV)/bin/cmake -S . -B $(CBUILD) $(NINJA) $(CMAKE_FLAGS)
	$(VENV)/bin/cmake --build $(CBUILD)
	$(VENV)/bin/ctest --test-dir $(CBUILD) --output-on-failure

# The C tests and the fuzz corpus replays under ASan + UBSan (any compiler that has them).
test-sanitize: $(VENV)/.deps
	@echo 'int main(void){return 0;}' | $(or $(CC),cc) -fsanitize=address,undefined -x c - -o /dev/null \
	  || { echo "test-sanitize: the C compiler lacks ASan/UBSan (libasan, libubsan)"; exit 1; }
	$(VENV)/bin/cmake -S . -B $(ASAN_BUILD) $(NINJA) -DMPIUCC_SANITIZE=ON -DMPIUCC_BUILD_FUZZ=ON \
	  -DMPIUCC_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	$(VENV)/bin/cmake --build $(ASAN_BUILD)
	$(VENV)/bin/ctest --test-dir $(ASAN_BUILD) --output-on-failure -j2

# The threaded ebq paths under ThreadSanitizer (gcc or clang); not part of `test` (slow).
TSAN_BUILD ?= build/tsan
test-tsan: $(VENV)/.deps
	$(VENV)/bin/cmake -S . -B $(TSAN_BUILD) $(NINJA) -DCMAKE_C_FLAGS="-fsanitize=thread -g" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DMPIUCC_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	$(VENV)/bin/cmake --build $(TSAN_BUILD)
	$(VENV)/bin/ctest --test-dir $(TSAN_BUILD) --output-on-failure -R "test_ebq_split|test_threads"

# Each libFuzzer target for FUZZ_SECONDS from its seed corpus (clang only); new inputs and
# crashes go to FUZZ_SCRATCH, never into the repository.
fuzz-short: $(VENV)/.deps
	@if ! command -v clang >/dev/null; then \
	  echo "fuzz-short: SKIPPED, clang not found (the corpus replay ran in test-sanitize)"; \
	else \
	  CC=clang $(VENV)/bin/cmake -S . -B $(FUZZ_BUILD) $(NINJA) -DMPIUCC_BUILD_FUZZ=ON \
	    -DMPIUCC_BUILD_TESTS=OFF -DMPIUCC_BUILD_BENCH=OFF $(CMAKE_FLAGS) && \
	  $(VENV)/bin/cmake --build $(FUZZ_BUILD) --target mpiucc_fuzzers && \
	  rm -rf $(FUZZ_SCRATCH) && tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_SCRATCH); \
	fi

test-py: build
	$(PY) -c "from pycomm.collectives import hot; s = hot.status(); print(s); assert s.startswith('compiled'), s"
	$(PY) -m pytest -q --durations=15 tests

# The docs site (docs/, Sphinx + MyST) into build/docs with warnings as errors, and beside it
# every code example of its pages (docs/run_examples.py: single-process ones here, MPI ones on
# 2 ranks); fails if either does.
docs: build
	@$(VENV)/bin/sphinx-build -q -E -W --keep-going -b html docs build/docs & site=$$!; \
	  $(PY) docs/run_examples.py; examples=$$?; \
	  wait $$site || { echo "make docs: the site did not build"; exit 1; }; exit $$examples

# pycomm's UCC layer: UCC built from ../shared/third_party against UCX from its wheel
# (tools/build_ucc.sh; once, then kept in UCC_PREFIX), the package rebuilt against it, and the
# UCC tests run under its libraries. Not part of `test`: it needs autotools and a few minutes.
UCC_PREFIX ?= build/ucc
UCC_LIBS = $(abspath $(UCC_PREFIX))/lib:$(abspath $(UCC_PREFIX))/ucx/lib
test-ucc: $(VENV)/.deps
	PYTHON=$(PY) tools/build_ucc.sh $(UCC_PREFIX)
	UCC_HOME=$(abspath $(UCC_PREFIX)) $(PY) -m pip install -q --no-build-isolation --no-deps -e .
	LD_LIBRARY_PATH=$(UCC_LIBS) $(PY) -c "import pycomm.ucc as u; assert u.available(), u.unavailable_reason()"
	LD_LIBRARY_PATH=$(UCC_LIBS) $(PY) -m pytest -q tests/distributed/test_ucc.py tests/pycomm/test_ucc_layer.py

# The package as users install it: `pip wheel .`, a fresh venv with the wheel's extras
# [mpi,torch,train] only, then the CLI, codecs, collectives, DDP hook and a short training job
# run from outside the source tree (and the job once more without matplotlib).
test-wheel:
	tests/install/check_wheel.sh

demo: build
	bench/demo.sh runs

bench: build test-c
	$(CBUILD)/mpiucc_bench
	$(PY) bench/codec_bench.py

lint: $(VENV)/.deps
	$(VENV)/bin/ruff check codecs pycomm tests bench docs
	$(VENV)/bin/ruff format --check codecs pycomm tests bench docs

clean:
	rm -rf build $(VENV)
