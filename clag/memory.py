"""CLAG: A-mem's notes organised into SLM-routed clusters, with localized evolution and two-stage
retrieval (``CLAG_memory.py``, clag.md §4–5).

Ingest per turn: analyse → route (once clusters exist) → evolve against the 5 nearest notes of
the routed cluster (globally before clustering or when unrouted) → insert into the global index →
commit the note to its cluster or open a new one → consolidate every 100 evolutions → start the
clusters with K-Means(3) at 100 notes. After the stream: start clusters if needed, consolidate.

The reference's quirks are the defaults, each with a named switch (``configs/method/clag.yaml``):
``stale_centroids`` (a centroid moves only at consolidation), ``refresh_global_index: false``
(the global index keeps insertion-time metadata), ``stage2_rerank: false`` (clusters'
results are concatenated, not re-ranked), ``invalid_route: new_cluster`` (a bad router answer
opens a cluster), ``route_example_id: null`` (the routing prompt shows the literal
``"cluster_1"``), ``constrain_cluster_ids: false`` (ids are free strings, not an enum).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clag import clusters as cl
from clag.clusters import Cluster
from clag.embed import Embedder
from clag.index import VectorIndex
from clag.llm.client import LLMClient
from clag.notes import MemoryNote, NoteMemory
from clag.prompts import profile_schema
from clag.retrieval import two_stage_search
from clag.router import ROUTE_FUNCTIONS, ROUTERS, RouteDecision
from clag.types import Turn


class CLAGMemory(NoteMemory):
    def __init__(
        self,
        embedder: Embedder,
        llm: LLMClient,
        router: str = "agentic",
        init_cluster_min_memories: int = 100,
        init_n_clusters: int = 3,
        cluster_split_threshold: int = 300,
        routing_top_k: int = 5,
        sim_threshold: float = 0.1,
        selection_top_n: int = 10,
        profile_samples: int = 3,
        snippet_chars: int = 160,
        route_temperature: float = 0.2,
        profile_temperature: float = 0.3,
        selection_temperature: float = 0.7,
        kmeans_seed: int = 42,
        stale_centroids: bool = True,
        refresh_global_index: bool = False,
        stage2_rerank: bool = False,
        invalid_route: str = "new_cluster",
        route_example_id: str | None = None,
        constrain_cluster_ids: bool = False,
        **note_options: Any,
    ) -> None:
        super().__init__(embedder, llm, **note_options)
        if router not in ROUTERS:
            raise ValueError(f"router must be one of {ROUTERS}, not {router!r}")
        if invalid_route not in ("new_cluster", "nearest"):
            raise ValueError("invalid_route must be new_cluster or nearest")
        self.router = router
        self.init_cluster_min_memories = init_cluster_min_memories
        self.init_n_clusters = init_n_clusters
        self.cluster_split_threshold = cluster_split_threshold
        self.routing_top_k = routing_top_k
        self.sim_threshold = sim_threshold
        self.selection_top_n = selection_top_n
        self.profile_samples = profile_samples
        self.snippet_chars = snippet_chars
        self.route_temperature = route_temperature
        self.profile_temperature = profile_temperature
        self.selection_temperature = selection_temperature
        self.kmeans_seed = kmeans_seed
        self.stale_centroids = stale_centroids
        self.refresh_global_index = refresh_global_index
        self.stage2_rerank = stage2_rerank
        self.invalid_route = invalid_route
        self.route_example_id = route_example_id
        self.constrain_cluster_ids = constrain_cluster_ids
        self.clusters: dict[str, Cluster] = {}
        self.cluster_index = VectorIndex(embedder.dim, "cosine")
        self.routing_log: list[dict[str, Any]] = []
        self.cluster_history: list[dict[str, Any]] = []
        self.profile_failures = 0

    # ------------------------------------------------------------------ helpers

    @property
    def routes_while_ingesting(self) -> bool:
        return self.router != "kmeans"

    def _cluster_vectors(self, positions: list[int]) -> np.ndarray:
        """The members' cluster documents with their current metadata, encoded together as the
        reference encodes one cluster's documents (one call; see :meth:`Embedder.encode`)."""
        return self.embedder.encode([self.notes[p].cluster_doc() for p in positions], as_one_call=True)

    def _record(self, event: str, **details: Any) -> None:
        self.cluster_history.append({"event": event, "notes": len(self.notes),
                                     "clusters": len(self.clusters),
                                     "sizes": {cid: len(c.members) for cid, c in self.clusters.items()},
                                     **details})

    def _rebuild_cluster_index(self) -> None:
        """Re-embed every member's cluster document with its current metadata, one cluster at a
        time (the reference builds one retriever per cluster)."""
        self.cluster_index = VectorIndex(self.embedder.dim, "cosine")
        for cluster in self.clusters.values():
            if cluster.members:
                self.cluster_index.add(cluster.members, self._cluster_vectors(cluster.members))

    # ------------------------------------------------------------------ profiles

    def build_profiles(self) -> None:
        """One SLM call per cluster from its members nearest the centroid."""
        for cluster in self.clusters.values():
            if not cluster.members:
                continue
            vectors = self._cluster_vectors(cluster.members)
            nearest = cl.nearest_members(vectors, cluster.centroid, self.profile_samples)
            samples = [(self.notes[cluster.members[i]].content, self.notes[cluster.members[i]].context,
                        self.notes[cluster.members[i]].tags) for i in nearest]
            _, raw = self.ask(self.prompts.profile(samples), profile_schema(self.bounded), "profile",
                                temperature=self.profile_temperature)
            if not cl.apply_profile(cluster, cl.parse_profile(raw)):
                self.profile_failures += 1

    # ------------------------------------------------------------------ cluster life cycle

    def initialize_clusters_if_needed(self) -> None:
        if len(self.notes) < self.init_cluster_min_memories or self.clusters:
            return
        vectors = self.embedder.encode([n.routing_text() for n in self.notes], as_one_call=True)
        for cluster in cl.initial_clusters(vectors, [n.tags for n in self.notes],
                                           [n.context for n in self.notes], self.init_n_clusters,
                                           self.kmeans_seed, self.prompts):
            self.clusters[cluster.id] = cluster
            for position in cluster.members:
                self.notes[position].cluster_id = cluster.id
        self.build_profiles()
        self._rebuild_cluster_index()
        self._record("init")

    def consolidate(self) -> None:
        """Split clusters over the threshold, recompute centroids and representatives, re-profile."""
        if not self.notes or not self.clusters:
            return
        rebuilt: dict[str, Cluster] = {}
        splits = []
        for cid, cluster in self.clusters.items():
            if len(cluster.members) <= self.cluster_split_threshold:
                rebuilt[cid] = cluster
                continue
            halves = cl.split(cluster, self._cluster_vectors(cluster.members),
                              [self.notes[p].tags for p in cluster.members], self.kmeans_seed)
            for half in halves:
                rebuilt[half.id] = half
                for position in half.members:
                    self.notes[position].cluster_id = half.id
            splits.append(cid)
        self.clusters = rebuilt
        self._rebuild_cluster_index()
        for cluster in self.clusters.values():
            # the reference encodes each member alone here (not as one call, as elsewhere)
            vectors = self.embedder.encode_each([self.notes[p].cluster_doc() for p in cluster.members])
            cluster.centroid = vectors.mean(axis=0)
            cluster.rep_ids = [cluster.members[i] for i in cl.nearest_members(vectors, cluster.centroid, 3)]
        if self.refresh_global_index:
            positions = list(range(len(self.notes)))
            self.global_index.replace(positions, self.embedder.encode(
                [n.global_doc(self.global_doc_format) for n in self.notes]))
        self.build_profiles()
        self._record("consolidate", split=splits)

    def _commit(self, position: int, decision: RouteDecision | None) -> None:
        note = self.notes[position]
        if decision is not None and decision.chosen in self.clusters:
            cluster = self.clusters[decision.chosen]
            cluster.members.append(position)
            note.cluster_id = cluster.id
            self.cluster_index.add([position], self._cluster_vectors([position]))
            if not self.stale_centroids:
                cluster.centroid = self._cluster_vectors(cluster.members).mean(axis=0)
            return
        cluster = cl.new_cluster(f"cluster_new_{len(self.clusters)}", position, note.tags, note.context,
                                 self.embedder.encode_one(note.routing_text()), self.prompts)
        self.clusters[cluster.id] = cluster
        note.cluster_id = cluster.id
        self.cluster_index.add([position], self._cluster_vectors([position]))
        self._record("new_cluster", cluster=cluster.id,
                     reason=decision.reason if decision is not None else "unrouted")

    # ------------------------------------------------------------------ ingest

    def neighbours_for(self, note: MemoryNote, cluster_id: str | None = None) -> list[int]:
        cluster = self.clusters.get(cluster_id) if cluster_id else None
        if cluster is None or not cluster.members:
            return super().neighbours_for(note)
        ids, _ = self.cluster_index.search(self.embedder.encode_one(note.content), self.evolution_k,
                                           subset=cluster.members)
        return ids

    def ingest(self, turn: Turn) -> None:
        note = self.make_note(turn)
        decision: RouteDecision | None = None
        clustered = bool(self.clusters) and self.routes_while_ingesting
        if clustered:
            vector = self.embedder.encode_one(note.routing_text())
            decision = ROUTE_FUNCTIONS[self.router](self, note, vector)
            self.routing_log.append(decision.as_dict())
        evolved = self.evolve(note, self.neighbours_for(note, decision.chosen if decision else None))
        position = self.insert(note)
        if clustered:
            self._commit(position, decision)
        if evolved:
            self.evo_cnt += 1
            if self.evo_cnt % self.evo_threshold == 0:
                self.consolidate()
        if self.routes_while_ingesting:
            self.initialize_clusters_if_needed()

    def finalize(self) -> None:
        self.initialize_clusters_if_needed()
        self.consolidate()

    # ------------------------------------------------------------------ retrieve

    def search(self, query: str, query_tags: list[str]) -> tuple[list[int], dict[str, Any]]:
        return two_stage_search(self, query, query_tags)

    def stats(self) -> dict[str, Any]:
        routed = [d for d in self.routing_log if d["chosen"]]
        reasons: dict[str, int] = {}
        for d in self.routing_log:
            reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
        return {
            **super().stats(),
            "router": self.router,
            "clusters": len(self.clusters),
            "cluster_sizes": {cid: len(c.members) for cid, c in self.clusters.items()},
            "cluster_profiles": {cid: {"summary": c.summary, "tags": c.tags}
                                 for cid, c in self.clusters.items()},
            "routing": {"decisions": len(self.routing_log), "routed": len(routed), "reasons": reasons},
            "profile_failures": self.profile_failures,
            "routing_log": self.routing_log,
            "cluster_history": self.cluster_history,
        }
