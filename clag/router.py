"""Where a new note goes: CLAG's agentic router and the two geometric ablations.

- ``agentic`` (CLAG, ``route_new_memory_with_llm``): the 5 clusters whose centroids are nearest
  in squared L2 are shown to the SLM (temperature 0.2), which must name one. An empty, unknown
  or unparsable answer opens a new cluster (``invalid_route: nearest`` takes the nearest
  candidate instead — a repair, off by default); so does a cosine similarity below 0.1 between
  the note and the chosen centroid.
- ``cosine`` (ablation): the nearest centroid by cosine, a new cluster below the threshold; no
  SLM call.
- ``kmeans`` (ablation): no routing while ingesting — clusters come from K-Means over the final
  memory (the reference's cache-reload path) — so evolution stays global.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from clag.clusters import cosine, squared_distances
from clag.prompts import REFERENCE_ROUTE_EXAMPLE, route_schema

if TYPE_CHECKING:
    from clag.clustered import Ask, ClusterView, RouteOptions
    from clag.notes import MemoryNote
    from clag.prompt_sets import PromptSet


@dataclass
class RouteDecision:
    note: int
    chosen: str | None                      # None: open a new cluster
    reason: str                             # routed | invalid_choice | unparsable | low_similarity | ...
    candidates: list[str] = field(default_factory=list)
    choice: str | None = None               # what the SLM answered
    similarity: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def route_example(setting: str | None, candidates: list[str]) -> str:
    """The id the routing prompt shows as its example: the reference's literal ``cluster_1``
    (``null``, which may name no real cluster), the first real candidate (``candidate``), or a
    fixed placeholder string."""
    if setting is None:
        return REFERENCE_ROUTE_EXAMPLE
    if setting == "candidate":
        return candidates[0] if candidates else REFERENCE_ROUTE_EXAMPLE
    return setting


def route_agentic(view: ClusterView, note: MemoryNote, vector: np.ndarray, options: RouteOptions,
                  prompts: PromptSet, ask: Ask) -> RouteDecision:
    """CLAG: the SLM names one of the nearest clusters for the note about to take position
    ``len(view.contents)``."""
    position = len(view.contents)
    ranked = squared_distances(vector, list(view.clusters.values()))
    candidates = [cid for cid, _ in ranked[:options.candidates]]
    prompt = prompts.route(note.content, note.context, note.tags,
                           view.candidates(candidates, options.snippet_chars),
                           example_id=route_example(options.example_id, candidates))
    schema = route_schema(options.bounded, candidates if options.constrain_ids else None)
    parsed, _ = ask(prompt, schema, "route", options.temperature)
    choice = parsed.get("choice") if parsed is not None else None
    choice = choice.strip() if isinstance(choice, str) else ""
    decision = RouteDecision(position, None, "routed", candidates, choice or None)
    if parsed is None:
        decision.reason = "unparsable"
    elif not choice or choice not in candidates:
        decision.reason = "invalid_choice"
    if decision.reason != "routed":
        if options.invalid_route != "nearest":
            return decision
        choice = candidates[0]
        decision.reason = "nearest_fallback"
    decision.similarity = cosine(vector, view.clusters[choice].centroid)
    if decision.similarity < options.sim_threshold:
        decision.reason = "low_similarity"
        return decision
    decision.chosen = choice
    return decision


def route_cosine(view: ClusterView, note: MemoryNote, vector: np.ndarray, options: RouteOptions
                 ) -> RouteDecision:
    """The cosine ablation: the nearest centroid, no SLM call."""
    position = len(view.contents)
    scored = sorted(((cosine(vector, c.centroid), cid) for cid, c in view.clusters.items()),
                    key=lambda item: -item[0])
    best_sim, best = scored[0]
    decision = RouteDecision(position, None, "routed", [cid for _, cid in scored[:options.candidates]],
                             best, best_sim)
    if best_sim < options.sim_threshold:
        decision.reason = "low_similarity"
        return decision
    decision.chosen = best
    return decision
