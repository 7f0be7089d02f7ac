# tessera — thin driver over CMake. `make run` and `make test` work on a fresh Debian 12 machine:
# both install what is missing through scripts/deps.sh first.
BUILD    ?= build
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
CTEST    = ctest --output-on-failure -j$(JOBS)

.PHONY: all build deps run test test-gpu bench install sanitize tsan stress format format-check clean

all: build

deps:
	@./scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# The main job: what this build and machine are, a self-check, then the GLM runner on the demo
# model (a small GLM-4.5-MoE-shaped checkpoint with random weights in the mlx-community 4-bit
# layout, written once by tessera itself and cached in the build folder): a chat prompt, the
# text streamed, tokens/s and the ledger on stderr. A real checkpoint runs the same way
# (README, "Running a real model").
DEMO_MODEL = $(BUILD)/demo-model
run: deps build
	./$(BUILD)/tessera info
	./$(BUILD)/tessera selfcheck
	@[ -f $(DEMO_MODEL)/config.json ] || ./$(BUILD)/tessera demo-model -o $(DEMO_MODEL)
	./$(BUILD)/tessera generate -m $(DEMO_MODEL) --chat -p "What is the capital of France?" -n 48

test: deps build
	cd $(BUILD) && $(CTEST)

# On the GPU machine, which cannot install packages: scripts/gpu-bundle.sh (run here) gathers the
# Debian packages it lacks into .gpu-bundle/; carry that folder there and run `make test-gpu`.
test-gpu:
	./scripts/test-gpu.sh

bench: build
	@for b in $(BUILD)/bench/*; do echo "== $$b"; $$b || exit 1; done

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# ASan + UBSan (LeakSanitizer included) over the whole suite, CPU-only.
sanitize: deps
	cmake -S . -B build-asan -DTSR_CUDA=OFF -DTSR_SANITIZE=address,undefined \
	  -DCMAKE_BUILD_TYPE=Debug -DTSR_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS)
	grep '^leak:' .ci/sanitizers.supp > build-asan/lsan.supp || true
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/build-asan/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TSR_SANITIZED=1 $(CTEST)

# ThreadSanitizer over the concurrency tests, CPU-only.
tsan: deps
	cmake -S . -B build-tsan -DTSR_CUDA=OFF -DTSR_SANITIZE=thread \
	  -DCMAKE_BUILD_TYPE=Debug -DTSR_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build build-tsan -j$(JOBS)
	grep -E '^(race|deadlock|mutex|thread|signal|called_from_lib):' .ci/sanitizers.supp > build-tsan/tsan.supp || true
	cd build-tsan && TSAN_OPTIONS=suppressions=$(CURDIR)/build-tsan/tsan.supp:halt_on_error=1:second_deadlock_stack=1 \
	  TSR_SANITIZED=1 $(CTEST) -L concurrency

# The long versions of the randomized tests (10^6 ledger operations).
stress: build
	cd $(BUILD) && TSR_STRESS=1 $(CTEST) -L concurrency

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cuh' '*.cu')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cuh' '*.cu')

clean:
	rm -rf $(BUILD) build-asan build-tsan build-cpu
