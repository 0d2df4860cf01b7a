"""CLAG's two-stage retrieval (``find_related_memories_raw`` + ``select_clusters_for_query``).

Stage 1: embed ``"{query} {tags}"``, take the 5 nearest centroids (squared L2), and let the SLM
select 0–10 of them from their profiles (temperature 0.7); only candidate ids are kept, in the
SLM's order (a repeated id is kept, as the reference keeps it). Stage 2: top-10 inside each
selected cluster, concatenated in that order, deduplicated, cut to 10 — no re-ranking across
clusters unless ``stage2_rerank`` (a repair). Global top-10 when there are no clusters, no
query tags, no valid selection, or no hit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clag.clusters import squared_distances
from clag.prompts import selection_schema
from clag.router import cluster_candidates

if TYPE_CHECKING:
    from clag.clustered import ClusteredMemory


def select_clusters(memory: ClusteredMemory, query: str, query_tags: list[str]
                    ) -> tuple[list[str], list[str]]:
    """(selected, candidates) for a query."""
    vector = memory.embedder.encode_one(f"{query} {' '.join(query_tags)}")
    ranked = squared_distances(vector, list(memory.clusters.values()))
    candidates = [cid for cid, _ in ranked[:memory.routing_top_k]]
    prompt = memory.prompts.selection(query, query_tags, cluster_candidates(memory, candidates),
                                      memory.selection_top_n)
    schema = selection_schema(memory.bounded, memory.selection_top_n,
                              candidates if memory.constrain_cluster_ids else None)
    parsed, _ = memory.ask(prompt, schema, "select", temperature=memory.selection_temperature)
    raw = parsed.get("selected_clusters") if parsed is not None else None
    selected = []
    for cid in raw if isinstance(raw, list) else []:
        if isinstance(cid, str) and cid in candidates and cid in memory.clusters:
            selected.append(cid)
        if len(selected) >= memory.selection_top_n:
            break
    return selected, candidates


def two_stage_search(memory: ClusteredMemory, query: str, query_tags: list[str]
                     ) -> tuple[list[int], dict[str, Any]]:
    total = len(memory.notes)
    debug: dict[str, Any] = {"candidate_clusters": [], "selected_clusters": [], "searched_clusters": []}
    selected: list[str] = []
    if memory.clusters:
        selected, debug["candidate_clusters"] = select_clusters(memory, query, query_tags)
        debug["selected_clusters"] = list(selected)
    if memory.clusters and query_tags and selected:
        vector = memory.embedder.encode_one(query)
        hits: list[tuple[int, float]] = []
        space = 0
        for cid in selected:
            cluster = memory.clusters[cid]
            if not cluster.members:
                continue
            space += len(cluster.members)
            ids, scores = memory.cluster_index.search(vector, memory.retrieve_k, subset=cluster.members)
            hits.extend(zip(ids, scores))
        if memory.stage2_rerank:
            hits.sort(key=lambda item: -item[1])
        positions = list(dict.fromkeys(position for position, _ in hits))[:memory.retrieve_k]
        if positions:
            debug.update(search_mode="cluster", search_space_size=space, searched_clusters=list(selected))
            return positions, debug
    debug.update(search_mode="global", search_space_size=total, searched_clusters=[])
    return memory.global_neighbours(query, memory.retrieve_k), debug
