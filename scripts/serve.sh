#!/usr/bin/env bash
# Serve a model with the paper's settings for `llm.backend=openai`: an OpenAI-compatible server
# on port ${PORT:-30000}, raw completions and chat, JSON schemas decoded by xgrammar.
#   REVISION=c1899de289a04d12100db370d81485cdf75e47ca bash scripts/serve.sh sglang Qwen/Qwen3-0.6B
#   REVISION=c1899de289a04d12100db370d81485cdf75e47ca bash scripts/serve.sh vllm Qwen/Qwen3-0.6B
#   bash scripts/serve.sh llamacpp path/to/model.gguf        # llama.cpp's llama-server, 4 slots
# Run it in the engine's own environment: vLLM and SGLang pin their own torch, so installing them
# beside clag-bench would replace yours (python -m venv serve-env && serve-env/bin/pip install vllm).
# Sampling is not set here: the harness sends every parameter with each request (top_p 1, no
# top-k, no min-p by default), so the model's generation-config defaults never apply.
set -euo pipefail
engine="${1:?usage: serve.sh <sglang|vllm|llamacpp> <model> [extra engine args]}"
model="${2:?usage: serve.sh <sglang|vllm|llamacpp> <model> [extra engine args]}"
shift 2
port="${PORT:-30000}"
# REVISION=<hub commit> serves that commit (the llm config's `revision`, which the cache key names)
rev=()
if [ -n "${REVISION:-}" ]; then rev=(--revision "$REVISION"); fi
case "$engine" in
  sglang)
    exec python -m sglang.launch_server --model-path "$model" --port "$port" --host 127.0.0.1 \
      --dtype bfloat16 --grammar-backend xgrammar "${rev[@]}" "$@" ;;
  vllm)
    # the structured-output option changed name across releases: use the one this vLLM has (the
    # help is read whole first: `grep -q` closing the pipe early would fail the probe under pipefail)
    help="$(vllm serve --help=all 2>/dev/null || true)"
    if grep -q -- "--structured-outputs-config" <<<"$help"; then
      grammar=(--structured-outputs-config.backend xgrammar)
    else
      grammar=(--guided-decoding-backend xgrammar)
    fi
    exec vllm serve "$model" --port "$port" --host 127.0.0.1 --dtype bfloat16 "${grammar[@]}" \
      --max-num-seqs 256 "${rev[@]}" "$@" ;;
  llamacpp)
    # the binary the harness uses: $LLAMA_SERVER, the one `install.sh llamaserver` builds, or PATH
    server="${LLAMA_SERVER:-${XDG_CACHE_HOME:-$HOME/.cache}/clag-bench/bin/llama-server}"
    [ -x "$server" ] || server="$(command -v llama-server || true)"
    [ -n "$server" ] || { echo "no llama-server: run bash scripts/install.sh llamaserver, or set LLAMA_SERVER" >&2; exit 2; }
    exec "$server" -m "$model" --port "$port" --host 127.0.0.1 --parallel 4 --cont-batching \
      --ctx-size 32768 "$@" ;;
  *)
    echo "unknown engine $engine (sglang, vllm or llamacpp)" >&2; exit 2 ;;
esac
