# Ladder: the two-command quick start is `make demo` and `make test`.
BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
FUZZ_DIR  ?= build-fuzz
JOBS      ?= $(shell nproc)
FUZZ_SECONDS ?= 600
SHARED    ?= $(abspath ../shared)

CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=Release

.PHONY: deps configure build test test-asan demo bench fuzz format tidy clean

deps:
	@bash scripts/install-deps.sh

configure:
	@cmake -S . -B $(BUILD_DIR) $(CMAKE_FLAGS) > /dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

# Everything: dependencies, the Release build and every test, then the
# sanitizer build of the parsers (fed truncated and corrupted files), the
# kernels, the model and the engine.
test: deps build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 1200
	@$(MAKE) --no-print-directory test-asan

test-asan:
	@cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLADDER_SANITIZE=ON \
	  -DLADDER_BUILD_BENCH=OFF > /dev/null
	@cmake --build $(ASAN_DIR) -j $(JOBS) --target ladder_gguf_tests ladder_jinja_tests ladder_tokenizer_tests ladder_ops_tests \
	  ladder_model_tests ladder_kv_tests ladder_engine_tests
	@# The CLI cases drive the release binary's commands; they ran in the release suite.
	@cd $(ASAN_DIR) && GTEST_FILTER='-CliTokenize.*:Cli.*' ctest --output-on-failure -j $(JOBS) \
	  -R '^(gguf|jinja|tokenizer|ops|model|kv|engine)$$'

demo: deps build
	@bash scripts/demo.sh $(BUILD_DIR)/src/cli/ladder

bench: deps build
	@bash scripts/bench.sh $(BUILD_DIR)

fuzz: deps
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DLADDER_FUZZ=ON -DLADDER_BUILD_TESTS=OFF -DLADDER_BUILD_BENCH=OFF > /dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_gguf
	@bash scripts/fuzz.sh $(FUZZ_DIR)/fuzz/fuzz_gguf $(FUZZ_SECONDS) $(SHARED)

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

tidy: configure
	@git ls-files 'src/*.cc' | xargs clang-tidy -p $(BUILD_DIR) --quiet

clean:
	@rm -rf $(BUILD_DIR) $(ASAN_DIR) $(FUZZ_DIR)
