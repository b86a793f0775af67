# Thin wrapper: the two commands of the README's quick start.
BUILD ?= build
JOBS  ?= $(shell nproc)

.PHONY: deps build run test bench sanitize sanitize-quick sanitize-clang fuzz clean

deps:
	@bash .ci/install-deps

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/simulator/clustersim collective --cluster scenarios/clusters/dgx-h100-superpod.yaml --gpus 16 --op all_reduce --algo auto -b 8 -e 8G -f 4
	./$(BUILD)/simulator/clustersim run scenarios/gpt3-175b-a100-1024.yaml

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: build
	./$(BUILD)/simulator/clustersim bench
	./$(BUILD)/simulator/clustersim bench --all-to-all --gpu-counts 64,128,1024,4096
	./$(BUILD)/simulator/clustersim bench --algo nvls_tree --gpus 16384 --repeat 3
	./$(BUILD)/simulator/clustersim bench --cluster scenarios/clusters/dgx-h100-superpod-98k.yaml --op all_gather --algo pat --one-gpu-per-node --gpus 4096 --repeat 3
	./$(BUILD)/simulator/clustersim bench --fabric-only --cluster scenarios/clusters/multi-plane-131k.yaml
	./$(BUILD)/simulator/clustersim bench --scenarios scenarios/gpt3-175b-a100-1024.yaml,scenarios/validation/narayanan-1t.yaml,scenarios/llama3-70b-h100-16k.yaml,scenarios/deepseek-v3-h800-2048.yaml,scenarios/llama3-405b-h100-16k-cp16.yaml
	./$(BUILD)/simulator/clustersim bench --search scenarios/gpt3-175b-a100-1024.yaml,scenarios/validation/narayanan-1.7b.yaml,scenarios/llama3-70b-h100-1024.yaml
	./$(BUILD)/simulator/clustersim bench --sweep scenarios/validation/narayanan-1.7b.yaml
	./$(BUILD)/simulator/clustersim bench --fold exact --scenarios scenarios/gpt3-175b-a100-1024.yaml,scenarios/validation/narayanan-1t.yaml,scenarios/llama3-405b-h100-16k-cp16.yaml,scenarios/llama3-405b-h100-16k-stragglers.yaml,scenarios/deepseek-v3-h800-2048.yaml

# The whole suite under gcc's ASan + UBSan. -O1 -g1: the sanitizers' usual level, several times
# faster to run than -O0 and cheaper to link than full debug information; assertions stay on.
SAN_FLAGS = -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1"
sanitize: deps
	cmake -S . -B build-asan $(SAN_FLAGS) -DCLUSTERSIM_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# The fast tests labelled sanitize-quick (test/CMakeLists.txt) under gcc's ASan + UBSan, building
# only what they need.
sanitize-quick: deps
	cmake -S . -B build-asan $(SAN_FLAGS) -DCLUSTERSIM_SANITIZE=ON
	cmake --build build-asan -j $(JOBS) --target sanitize_quick_tests
	cd build-asan && ctest --output-on-failure -j $(JOBS) -L sanitize-quick

# The whole suite under clang's ASan + UBSan, in the build `make fuzz` uses (build-fuzz): -O2 as the
# fuzzer always ran, with assertions on so that fuzzed inputs also meet the invariants.
FUZZ_CONFIGURE = cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O2 -g1" \
                 -DCMAKE_CXX_COMPILER=clang++ -DCLUSTERSIM_FUZZ=ON
sanitize-clang: deps
	$(FUZZ_CONFIGURE)
	cmake --build build-fuzz -j $(JOBS)
	cd build-fuzz && ctest --output-on-failure -j $(JOBS)

# libFuzzer over the loaders for FUZZ_SECONDS (60), seeded with every shipped file under each
# loader and given every key the shipped YAML uses as a dictionary (so mutations reach the fields
# behind a key, not only its spelling); fails on any crash, sanitizer report, leak or timeout.
FUZZ_SECONDS ?= 60
fuzz: deps
	$(FUZZ_CONFIGURE)
	cmake --build build-fuzz -j $(JOBS) --target fuzz_loaders
	rm -rf build-fuzz/corpus && mkdir -p build-fuzz/corpus
	for f in scenarios/clusters/*.yaml; do (printf '\000'; cat $$f) > build-fuzz/corpus/cluster-$$(basename $$f); done
	for f in scenarios/models/*.yaml; do (printf '\001'; cat $$f) > build-fuzz/corpus/model-$$(basename $$f); done
	(printf '\002'; cat scenarios/gpus.yaml) > build-fuzz/corpus/catalog.yaml
	printf '\003gpu,op,dtype,m,n,k,time_us\nH100-SXM,qkv,bf16,2048,4608,12288,1234.5\n' > build-fuzz/corpus/kernels.csv
	for f in scenarios/*.yaml scenarios/validation/*.yaml; do (printf '\004'; cat $$f) > build-fuzz/corpus/any-$$(basename $$f); done
	for f in scenarios/*.yaml scenarios/validation/*.yaml; do (printf '\005'; cat $$f) > build-fuzz/corpus/scenario-$$(basename $$f); done
	printf '\006parallel.tp=4\nparallel.dp=64\nschedule=zb-v\n' > build-fuzz/corpus/set-layout
	printf '\006parallel.stage_layers=[40, 48, 8]\nrecompute=full\nmicrobatch=2\n' > build-fuzz/corpus/set-stages
	for f in scenarios/serving/*.yaml; do (printf '\007'; cat $$f) > build-fuzz/corpus/serving-$$(basename $$f); done
	for f in scenarios/serving/traces/*.csv; do (printf '\010'; head -c 20000 $$f) > build-fuzz/corpus/trace-$$(basename $$f); done
	printf '\011{"arrival_s": 0.5, "prompt_tokens": 512, "output_tokens": 64}\n{"arrival_s": 1.25, "prompt_tokens": 2048, "output_tokens": 8, "prefix_id": 3, "prefix_tokens": 256}\n' > build-fuzz/corpus/trace.jsonl
	for f in scenarios/calibration/*.txt; do (printf '\012'; cat $$f) > build-fuzz/corpus/nccl-$$(basename $$f); done
	(printf '\013'; cat scenarios/calibration/synthetic-truth.yaml) > build-fuzz/corpus/calibration.yaml
	(printf '\014'; cat scenarios/prices.yaml) > build-fuzz/corpus/prices.yaml
	for f in scenarios/procurement/*.yaml; do (printf '\015'; cat $$f) > build-fuzz/corpus/jobs-$$(basename $$f); done
	for f in scenarios/validation/serving/*.yaml; do (printf '\016'; cat $$f) > build-fuzz/corpus/serve-rows-$$(basename $$f); done
	grep -rhoE '^[ -]*[a-z_][a-z0-9_]*:' scenarios --include=*.yaml | sed -E 's/^[ -]*//' | sort -u | sed -E 's/.*/"&"/' > build-fuzz/keys.dict
	./build-fuzz/fuzz/fuzz_loaders -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -dict=build-fuzz/keys.dict build-fuzz/corpus

clean:
	rm -rf $(BUILD) build-asan build-fuzz
