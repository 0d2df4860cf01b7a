"""CLAG's two-stage retrieval (``find_related_memories_raw`` + ``select_clusters_for_query``).

Stage 1: embed ``"{query} {tags}"``, take the 5 nearest centroids (squared L2), and let the SLM
select 0–10 of them from their profiles (temperature 0.7); only candidate ids are kept, in the
SLM's order (a repeated id is kept, as the reference keeps it). Stage 2: top-10 inside each
selected cluster, concatenated in that order, deduplicated, cut to 10 — no re-ranking across
clusters unless ``stage2_rerank`` (a repair). Global top-10 when there are no clusters, no
query tags, no valid selection, or no hit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clag.clusters import squared_distances
from clag.prompts import selection_schema

if TYPE_CHECKING:
    from clag.clustered import Ask, ClusterView, SelectionOptions
    from clag.embed import Embedder
    from clag.prompt_sets import PromptSet


def select_clusters(view: ClusterView, query: str, query_tags: list[str], embedder: Embedder,
                    options: SelectionOptions, prompts: PromptSet, ask: Ask) -> tuple[list[str], list[str]]:
    """(selected, candidates) for a query."""
    vector = embedder.encode_one(f"{query} {' '.join(query_tags)}")
    ranked = squared_distances(vector, list(view.clusters.values()))
    candidates = [cid for cid, _ in ranked[:options.candidates]]
    prompt = prompts.selection(query, query_tags, view.candidates(candidates, options.snippet_chars),
                               options.top_n)
    schema = selection_schema(options.bounded, options.top_n,
                              candidates if options.constrain_ids else None)
    parsed, _ = ask(prompt, schema, "select", options.temperature)
    raw = parsed.get("selected_clusters") if parsed is not None else None
    selected = []
    for cid in raw if isinstance(raw, list) else []:
        if isinstance(cid, str) and cid in candidates and cid in view.clusters:
            selected.append(cid)
        if len(selected) >= options.top_n:
            break
    return selected, candidates


def two_stage_search(view: ClusterView, query: str, query_tags: list[str], embedder: Embedder,
                     options: SelectionOptions, prompts: PromptSet, ask: Ask,
                     global_search: Callable[[str, int], list[int]]) -> tuple[list[int], dict[str, Any]]:
    """Positions of the notes to answer from, and what the search did (for ``retrieval_debug``);
    ``global_search(query, k)`` is the fallback over the whole memory."""
    debug: dict[str, Any] = {"candidate_clusters": [], "selected_clusters": [], "searched_clusters": []}
    selected: list[str] = []
    if view.clusters:
        selected, debug["candidate_clusters"] = select_clusters(view, query, query_tags, embedder, options,
                                                                prompts, ask)
        debug["selected_clusters"] = list(selected)
    if view.clusters and query_tags and selected:
        vector = embedder.encode_one(query)
        hits: list[tuple[int, float]] = []
        space = 0
        for cid in selected:
            cluster = view.clusters[cid]
            if not cluster.members:
                continue
            space += len(cluster.members)
            ids, scores = view.index.search(vector, options.retrieve_k, subset=cluster.members)
            hits.extend(zip(ids, scores))
        if options.rerank:
            hits.sort(key=lambda item: -item[1])
        positions = list(dict.fromkeys(position for position, _ in hits))[:options.retrieve_k]
        if positions:
            debug.update(search_mode="cluster", search_space_size=space, searched_clusters=list(selected))
            return positions, debug
    debug.update(search_mode="global", search_space_size=len(view.contents), searched_clusters=[])
    return global_search(query, options.retrieve_k), debug
