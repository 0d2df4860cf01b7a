"""Per-request sampling inside a batched ``generate``: each row draws from its own generator.

transformers samples a whole batch from one global RNG, so a row's tokens depend on which other
requests share its batch and in which order — and the micro-batcher's timing decides that. Here
sampling is done by a logits processor that, for every row, applies temperature and the policy's
filters and draws one token with that row's own ``torch.Generator`` (seeded by the request), then
leaves only that token allowed; ``generate`` runs greedy and picks it. One draw per row per step,
so a request's completion depends only on its model, prompt, parameters and seed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def filtered_probabilities(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0,
                           min_p: float = 0.0) -> torch.Tensor:
    """Sampling probabilities of one row, in transformers' warper order: temperature, top-k,
    top-p, min-p. Computed in float32 whatever the model's dtype."""
    scores = logits.float() / temperature
    if top_k > 0 and top_k < scores.numel():
        kth = torch.topk(scores, top_k).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p < 1.0:
        ordered, order = torch.sort(scores, descending=True)
        cumulative = torch.softmax(ordered, dim=-1).cumsum(dim=-1)
        drop = cumulative - torch.softmax(ordered, dim=-1) >= top_p   # mass before this token
        drop[0] = False
        scores = scores.masked_fill(torch.zeros_like(drop).scatter(0, order, drop), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    if min_p > 0.0:
        probs = probs.masked_fill(probs < min_p * probs.max(), 0.0)
        probs = probs / probs.sum()
    return probs


class RowSampler:
    """A ``LogitsProcessor``: row i samples with generator i; the result is a one-token mask."""

    def __init__(self, seeds: Sequence[int], temperature: float, device: str | torch.device,
                 top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0) -> None:
        if temperature <= 0:
            raise ValueError("RowSampler is for sampled decoding (temperature > 0)")
        self.generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]
        self.temperature = temperature
        self.top_k, self.top_p, self.min_p = top_k, top_p, min_p

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        chosen = torch.full_like(scores, float("-inf"))
        for row, generator in enumerate(self.generators):
            probs = filtered_probabilities(scores[row], self.temperature, self.top_k, self.top_p, self.min_p)
            token = torch.multinomial(probs, 1, generator=generator)
            chosen[row, token] = 0.0
        return chosen


class WindowedRepetitionPenalty:
    """llama.cpp's repetition penalty: only the last ``window`` tokens count (``None``: all), and
    each counts once — a positive logit is divided by ``penalty``, a negative one multiplied, as
    transformers' whole-sequence penalty does. ``generated_from`` (the padded prompt's length)
    leaves the prompt out of the window, as llama-cpp-python does; ``None`` keeps it in, as
    llama.cpp's server does. Used when the policy sets a window or leaves the prompt out."""

    def __init__(self, penalty: float, window: int | None, generated_from: int | None = None) -> None:
        self.penalty = float(penalty)
        self.window = None if window is None else int(window)
        self.generated_from = generated_from

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        seen = input_ids if self.generated_from is None else input_ids[:, self.generated_from:]
        if seen.shape[1] == 0:              # the first token: nothing generated yet
            return scores
        recent = seen if self.window is None else seen[:, -self.window:]
        picked = torch.gather(scores, 1, recent)
        penalised = torch.where(picked < 0, picked * self.penalty, picked / self.penalty)
        return scores.scatter(1, recent, penalised)
