"""The GPU check: the ``hf`` backend on CUDA with a Qwen3-0.6B-shaped model, ready to run offline.

    python scripts/bench_gpu.py                 # on one GPU: ≤ 8 minutes
    python scripts/bench_gpu.py --tiny          # anywhere (CPU): a 2-layer model, to test the script

Needs only torch and transformers (plus xgrammar for the grammar rows; the project itself for
the ingest row): the model is built in memory with random weights and Qwen3-0.6B's shapes
(28 layers, hidden 1024, 16 query / 8 key-value heads of 128, MLP 3072, vocabulary 151,936) —
weights do not change speed, so output lengths are fixed (``min_new_tokens = max_new_tokens``) —
and the tokenizer is a byte-level one built in memory with Qwen's special tokens. Nothing is
downloaded. On a machine without the project's dependencies, bring small wheels along and install
them first: ``pip install --no-deps xgrammar apache-tvm-ffi faiss-cpu omegaconf antlr4-python3-runtime``
(faiss and omegaconf for the CLAG row; scikit-learn comes with sentence-transformers).

Reported: decode tokens/s at batch 1, 8, 32 and 64 without a grammar and with the note-analysis
JSON schema (xgrammar; grammar rows stop where the grammar ends, so their lengths vary), and CLAG
ingest with 10 concurrent streams through the micro-batcher (synthetic turns, a hashing embedder:
this measures the LLM path, not retrieval quality). Writes results/bench/gpu.json.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.bench_common import write_result  # noqa: E402

QWEN3_0_6B = dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                  num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                  rope_theta=1_000_000.0, tie_word_embeddings=True)
TINY = dict(QWEN3_0_6B, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def build_model_folder(folder: Path, shapes: dict[str, Any]) -> None:
    """A random-weight Qwen3 model and a byte-level tokenizer, saved where HFBackend loads them."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    tokenizer.add_special_tokens({"additional_special_tokens": SPECIALS})
    tokenizer.chat_template = TEMPLATE
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    torch.manual_seed(0)
    config = Qwen3Config(**shapes, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id)
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    GenerationConfig(eos_token_id=eos, pad_token_id=tokenizer.pad_token_id).save_pretrained(folder)


def decode_rows(backend: Any, batches: list[int], tokens: int, grammar: bool) -> list[dict[str, Any]]:
    import torch

    from clag.llm.types import Request
    from clag.prompts import analysis_schema

    schema = analysis_schema(bounded=True) if grammar else None
    prompt = "Generate a structured analysis of the following content: " + "the sea is wide and blue. " * 20
    rows = []
    for batch in batches:
        requests = [Request(prompt=prompt + str(i), temperature=0.7, max_tokens=tokens, seed=i,
                            json_schema=schema) for i in range(batch)]
        backend.generate(requests[:1])                     # warm-up (kernels, grammar compile)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        started = time.perf_counter()
        out = backend.generate(requests)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - started
        produced = sum(c.completion_tokens for c in out)
        rows.append({"batch": batch, "grammar": grammar, "tokens": produced, "seconds": elapsed,
                     "tokens_per_s": produced / elapsed})
        print(f"  batch {batch:>3} grammar {'on ' if grammar else 'off'}: {produced / elapsed:9.1f} tokens/s "
              f"({produced} tokens, {elapsed:.2f} s)", flush=True)
    return rows


class HashingEmbedder:
    """Deterministic 384-d vectors from word hashes: no model to load on the GPU machine."""

    dim = 384
    name = "hashing-384"

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-9)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


def clag_ingest(backend: Any, streams: int, turns: int, max_tokens: int) -> dict[str, Any]:
    from omegaconf import OmegaConf

    from clag.llm.batcher import MicroBatcher
    from clag.llm.client import LLMClient
    from clag.memory import CLAGMemory
    from clag.types import Turn

    config_file = Path(__file__).resolve().parent.parent / "configs" / "method" / "clag.yaml"
    cfg = OmegaConf.to_container(OmegaConf.load(config_file))
    params = {k: v for k, v in cfg["memory"].items() if k != "_target_"}
    # the robust profile's values (the method file takes them from the run's profile)
    params.update(max_tokens=max_tokens, bounded_schemas=True, evolution_key_order="project",
                  init_cluster_min_memories=100)      # the file's value outside a small-subset run
    batcher = MicroBatcher(backend, max_batch=64, max_wait_s=0.02)
    client = LLMClient(batcher, run_seed=42)
    words = "protein gene cell insulin receptor kinase pathway tumour enzyme membrane signal".split()

    def one_stream(s: int) -> None:
        memory = CLAGMemory(embedder=HashingEmbedder(), llm=client, **params)
        with client.scope(f"ingest:s{s}"):
            for t in range(turns):
                text = " ".join(words[(s * 7 + t * 3 + k) % len(words)] for k in range(12))
                memory.ingest(Turn(id=f"s{s}:{t}", speaker="doc", text=text, timestamp="", session=0))

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=streams) as pool:
        for done in [pool.submit(one_stream, s) for s in range(streams)]:
            done.result()                          # a stream's error ends the benchmark
    elapsed = time.perf_counter() - started
    total = client.ledger.to_dict()["total"]
    sizes = batcher.batch_sizes
    result = {"streams": streams, "turns_per_stream": turns, "seconds": elapsed,
              "memories_per_s": streams * turns / elapsed, "calls": total["calls"],
              "completion_tokens": total["completion_tokens"], "mean_batch": sum(sizes) / max(len(sizes), 1),
              "max_batch": max(sizes, default=0)}
    print(f"  CLAG ingest, {streams} streams x {turns} turns: {result['memories_per_s']:.2f} memories/s, "
          f"mean batch {result['mean_batch']:.1f}", flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a 2-layer model (to test the script on a CPU)")
    parser.add_argument("--tokens", type=int, default=128, help="output tokens per row")
    parser.add_argument("--batches", default="1,8,32,64")
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--turns", type=int, default=20, help="turns per stream for the ingest row")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import torch

    from clag.llm.decoding import DecodingPolicy
    from clag.llm.hf import HFBackend

    device = "cuda" if torch.cuda.is_available() else "cpu"
    batches = [int(b) for b in args.batches.split(",")]
    with TemporaryDirectory() as tmp:
        started = time.perf_counter()
        build_model_folder(Path(tmp), TINY if args.tiny else QWEN3_0_6B)
        backend = HFBackend(tmp, label="qwen3-0.6b-shaped-random", device=device, dtype="bfloat16",
                            batch_size=max(batches), policy=DecodingPolicy())
        backend.fixed_length = True     # every unconstrained row decodes --tokens
        print(f"model built in {time.perf_counter() - started:.1f} s on {device}", flush=True)
        rows = decode_rows(backend, batches, args.tokens, grammar=False)
        try:
            import xgrammar  # noqa: F401
        except ImportError:
            print("  grammar rows skipped: xgrammar is not installed (pip install --no-deps its wheel)")
        else:
            rows += decode_rows(backend, batches, args.tokens, grammar=True)
        backend.fixed_length = False
        ingest = clag_ingest(backend, args.streams, args.turns, max_tokens=args.tokens)
    shape = "tiny (2 layers)" if args.tiny else "Qwen3-0.6B shapes, random weights"
    result = {"device": device, "model": shape,
              "dtype": "bfloat16", "output_tokens": args.tokens, "decode": rows, "clag_ingest": ingest,
              "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None}
    print(f"wrote {write_result('gpu' if not args.tiny else 'gpu_tiny_cpu', result, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
