# Set-up and every routine task. `make demo` and `make test` do all set-up themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
CBUILD ?= build/c
CMAKE_FLAGS ?=
ifeq ($(CI),true)
  CMAKE_FLAGS += -DMPIUCC_WERROR=ON
endif

.PHONY: demo test test-c test-py build bench lint clean

$(VENV)/.deps: requirements-dev.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

build: $(VENV)/.deps
	$(PY) -m pip install -q --no-build-isolation --no-deps -e .

test: test-c test-py

test-c: $(VENV)/.deps
	$(VENV)/bin/cmake -S . -B $(CBUILD) -G Ninja -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV))/bin/ninja $(CMAKE_FLAGS)
	$(VENV)/bin/cmake --build $(CBUILD)
	$(VENV)/bin/ctest --test-dir $(CBUILD) --output-on-failure

test-py: build
	$(PY) -m pytest -q tests

demo: build
	$(VENV)/bin/mpiexec -n 4 $(PY) -m pycomm.train --preset demo --out runs/demo

bench: build test-c
	$(CBUILD)/mpiucc_bench
	$(PY) bench/codec_bench.py

lint: $(VENV)/.deps
	$(VENV)/bin/ruff check codecs pycomm tests bench
	$(VENV)/bin/ruff format --check codecs pycomm tests bench

clean:
	rm -rf build $(VENV)
