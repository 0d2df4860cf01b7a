"""hf batches by a token budget as well as by count: a padded batch's KV cache must fit."""

from __future__ import annotations

import pytest

from clag.llm.token_budget import kv_bytes_per_token, plan_batches, token_budget


def test_without_a_budget_the_batches_are_the_count_only_ones():
    assert plan_batches([100] * 10, [50] * 10, 4, None) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_a_budget_bounds_rows_times_the_padded_length():
    # rows of 7,000 + 1,000 tokens: a 20,000-token budget holds two of them, not the four asked
    lengths, news = [7000, 7000, 7000, 7000, 300, 300], [1000] * 6
    batches = plan_batches(lengths, news, 4, 20_000)
    assert batches == [[0, 1], [2, 3], [4, 5]]
    for batch in batches:
        assert len(batch) * (max(lengths[i] for i in batch) + 1000) <= 20_000
    assert sorted(i for b in batches for i in b) == list(range(6))     # every row once, in order


def test_a_short_row_after_a_long_one_counts_at_the_long_ones_padded_length():
    assert plan_batches([9000, 10], [1000, 1000], 8, 15_000) == [[0], [1]]
    assert plan_batches([10, 10, 10], [1000, 1000, 1000], 8, 3_030) == [[0, 1, 2]]


def test_a_row_alone_over_the_budget_still_goes_alone():
    assert plan_batches([50_000, 10], [100, 100], 4, 1_000) == [[0], [1]]


def test_kv_cache_per_token_from_the_models_config():
    """Qwen3-0.6B (28 layers, 8 KV heads of 128) in bf16: 112 KiB a token, so the count-only
    batch the issue names (64 rows of 7k + 1k tokens) would need 56 GiB of KV cache alone."""
    from transformers import Qwen3Config

    config = Qwen3Config(num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                         hidden_size=1024)
    per_token = kv_bytes_per_token(config, dtype_bytes=2)
    assert per_token == 114_688
    assert 64 * 8_000 * per_token / 2**30 == pytest.approx(54.7, abs=0.1)
    # 40 GiB free on an H100 after the weights: half of it for the KV cache
    assert token_budget(40 * 2**30, per_token) == 187_245


def test_hf_splits_a_batch_that_does_not_fit_and_gives_the_same_rows():
    """With a small budget the same requests go as more, smaller batches; float32 on CPU is
    batch-invariant, so every row's text is what the count-only batch gave; the ledger's
    decoding report says what the budget was."""
    from clag.llm.models import build_backend, decoding_report
    from clag.llm.types import Request
    from tests.test_hf_backend import CFG

    backend = build_backend(CFG)
    requests = [Request(prompt=p, temperature=0, max_tokens=6) for p in
                ("Once upon a time, there was a", "The three primary colours are", "My favourite fruit is",
                 "The capital of France is")]
    sizes: list[int] = []
    original = backend._generate_batch

    def counted(batch, ids):
        sizes.append(len(batch))
        return original(batch, ids)

    backend._generate_batch = counted
    saved = backend.token_budget
    try:
        whole = [c.text for c in backend.generate(requests)]
        backend.token_budget = 2 * (8 + 6)          # two rows of the longest prompt (8) + 6 new
        split = [c.text for c in backend.generate(requests)]
        report = decoding_report(CFG, backend)
    finally:
        backend.token_budget = saved
        del backend._generate_batch
    assert sizes == [4, 2, 2] and split == whole
    assert report["batch_token_budget"] == 28 and report["kv_bytes_per_token"] == backend.kv_bytes_per_token
    assert saved and saved > 10_000           # derived from this machine's free memory
