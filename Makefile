# Thin wrapper: the two commands of the README's quick start.
BUILD ?= build
JOBS  ?= $(shell nproc)

.PHONY: deps build run test bench sanitize clean

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
	./$(BUILD)/simulator/clustersim bench --all-to-all --gpus 64,128,1024,4096
	./$(BUILD)/simulator/clustersim bench --scenarios scenarios/gpt3-175b-a100-1024.yaml,scenarios/validation/narayanan-1t.yaml,scenarios/llama3-70b-h100-16k.yaml,scenarios/deepseek-v3-h800-2048.yaml,scenarios/llama3-405b-h100-16k-cp16.yaml

sanitize: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCLUSTERSIM_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) build-asan
