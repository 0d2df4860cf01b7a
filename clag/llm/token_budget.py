"""How many tokens one ``hf`` batch may hold, and the batches that fit.

A batch is padded to its longest prompt and holds a KV cache for every row up to that prompt plus
the tokens it generates. Formed by request count alone, ``batch_size: 64`` with CLAG's ~7k-token
answer prompts asks Qwen3-0.6B for 64 × 8k tokens × 112 KiB ≈ 56 GiB of KV cache. So batches are
formed by a token budget as well — rows × (longest prompt + max new tokens) — derived from the
memory free once the weights are loaded (or given), and the ledger says what it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: the share of free memory the KV cache may take: the rest is the forward pass's activations
#: (a prefill's MLP intermediates), the logits and the allocator's slack
KV_SHARE = 0.5


def kv_bytes_per_token(config: Any, dtype_bytes: int) -> int:
    """The KV cache one token takes in every layer (keys and values) for a transformers config."""
    layers = int(config.num_hidden_layers)
    heads = int(config.num_attention_heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    return 2 * layers * kv_heads * head_dim * dtype_bytes


def token_budget(free_bytes: int, per_token_bytes: int, share: float = KV_SHARE) -> int:
    """Tokens (rows × padded length) one batch may hold in ``free_bytes`` of memory."""
    return max(1, int(free_bytes * share) // max(1, per_token_bytes))


def free_memory(device: str) -> int | None:
    """Bytes free on ``device`` now: the GPU's, or the machine's available memory on CPU."""
    import os

    if device.startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def plan_batches(prompt_lengths: Sequence[int], max_new_tokens: Sequence[int], max_rows: int,
                 budget: int | None) -> list[list[int]]:
    """Consecutive rows in batches of at most ``max_rows`` whose padded size — rows × (longest
    prompt + largest max new tokens) — stays within ``budget`` (None: no budget). Order is kept,
    so without a budget the batches are the count-only ones; a row alone over the budget still
    goes, alone (its own prompt is cut to the context window, not here)."""
    batches: list[list[int]] = []
    current: list[int] = []
    longest = most_new = 0
    for i, (length, new) in enumerate(zip(prompt_lengths, max_new_tokens)):
        grown_long, grown_new = max(longest, length), max(most_new, new)
        fits = budget is None or (len(current) + 1) * (grown_long + grown_new) <= budget
        if current and (len(current) >= max_rows or not fits):
            batches.append(current)
            current, grown_long, grown_new = [], length, new
        current.append(i)
        longest, most_new = grown_long, grown_new
    if current:
        batches.append(current)
    return batches
