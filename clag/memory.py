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

from typing import Any, ClassVar

import numpy as np

from clag import clusters as cl
from clag.clustered import CLAGOptions, ClusterView
from clag.clusters import Cluster
from clag.embed import Embedder
from clag.index import VectorIndex
from clag.llm.client import LLMClient
from clag.notes import MemoryNote, NoteMemory
from clag.prompt_sets import PromptSet
from clag.prompts import profile_schema
from clag.retrieval import two_stage_search
from clag.router import RouteDecision, route_agentic, route_cosine
from clag.types import Turn


class CLAGMemory(NoteMemory):
    """The note machinery plus clusters; every option is a field of :class:`CLAGOptions`."""

    options_class: ClassVar[type[CLAGOptions]] = CLAGOptions
    options: CLAGOptions

    def __init__(self, embedder: Embedder, llm: LLMClient, prompts: PromptSet | None = None,
                 content_format: str = "reference", **options: Any) -> None:
        super().__init__(embedder, llm, prompts, content_format, **options)
        self.clusters: dict[str, Cluster] = {}
        self.cluster_index = VectorIndex(embedder.dim, "cosine")
        self.routing_log: list[dict[str, Any]] = []
        self.cluster_history: list[dict[str, Any]] = []
        self.profile_failures = 0

    # ------------------------------------------------------------------ helpers

    def view(self) -> ClusterView:
        """What the router and the retrieval read: the clusters, the notes' contents, the index."""
        return ClusterView(self.clusters, [n.content for n in self.notes], self.cluster_index)

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
            nearest = cl.nearest_members(vectors, cluster.centroid, self.options.profile_samples)
            samples = [(self.notes[cluster.members[i]].content, self.notes[cluster.members[i]].context,
                        self.notes[cluster.members[i]].tags) for i in nearest]
            _, raw = self.ask(self.prompts.profile(samples), profile_schema(self.options.bounded_schemas),
                              "profile", temperature=self.options.profile_temperature)
            if not cl.apply_profile(cluster, cl.parse_profile(raw)):
                self.profile_failures += 1

    # ------------------------------------------------------------------ cluster life cycle

    def initialize_clusters_if_needed(self) -> None:
        if len(self.notes) < self.options.init_cluster_min_memories or self.clusters:
            return
        vectors = self.embedder.encode([n.routing_text() for n in self.notes], as_one_call=True)
        for cluster in cl.initial_clusters(vectors, [n.tags for n in self.notes],
                                           [n.context for n in self.notes], self.options.init_n_clusters,
                                           self.options.kmeans_seed, self.prompts):
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
            if len(cluster.members) <= self.options.cluster_split_threshold:
                rebuilt[cid] = cluster
                continue
            halves = cl.split(cluster, self._cluster_vectors(cluster.members),
                              [self.notes[p].tags for p in cluster.members], self.options.kmeans_seed)
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
        if self.options.refresh_global_index:
            positions = list(range(len(self.notes)))
            self.global_index.replace(positions, self.embedder.encode(
                [n.global_doc(self.options.global_doc_format) for n in self.notes]))
        self.build_profiles()
        self._record("consolidate", split=splits)

    def _commit(self, position: int, decision: RouteDecision | None) -> None:
        note = self.notes[position]
        if decision is not None and decision.chosen in self.clusters:
            cluster = self.clusters[decision.chosen]
            cluster.members.append(position)
            note.cluster_id = cluster.id
            self.cluster_index.add([position], self._cluster_vectors([position]))
            if not self.options.stale_centroids:
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
        ids, _ = self.cluster_index.search(self.embedder.encode_one(note.content), self.options.evolution_k,
                                           subset=cluster.members)
        return ids

    def ingest(self, turn: Turn) -> None:
        note = self.make_note(turn)
        decision: RouteDecision | None = None
        clustered = bool(self.clusters) and self.options.routes_while_ingesting
        if clustered:
            vector = self.embedder.encode_one(note.routing_text())
            decision = self.route(note, vector)
            self.routing_log.append(decision.as_dict())
        evolved = self.evolve(note, self.neighbours_for(note, decision.chosen if decision else None))
        position = self.insert(note)
        if clustered:
            self._commit(position, decision)
        if evolved:
            self.evo_cnt += 1
            if self.evo_cnt % self.options.evo_threshold == 0:
                self.consolidate()
        if self.options.routes_while_ingesting:
            self.initialize_clusters_if_needed()

    def route(self, note: MemoryNote, vector: np.ndarray) -> RouteDecision:
        """Where the note about to be inserted goes (``clag.router``)."""
        if self.options.router == "agentic":
            return route_agentic(self.view(), note, vector, self.options.routing, self.prompts, self.ask)
        return route_cosine(self.view(), note, vector, self.options.routing)

    def finalize(self) -> None:
        self.initialize_clusters_if_needed()
        self.consolidate()

    # ------------------------------------------------------------------ retrieve

    def search(self, query: str, query_tags: list[str]) -> tuple[list[int], dict[str, Any]]:
        return two_stage_search(self.view(), query, query_tags, self.embedder, self.options.selection,
                                self.prompts, self.ask, self.global_neighbours)

    def stats(self) -> dict[str, Any]:
        routed = [d for d in self.routing_log if d["chosen"]]
        reasons: dict[str, int] = {}
        for d in self.routing_log:
            reasons[d["reason"]] = reasons.get(d["reason"], 0) + 1
        return {
            **super().stats(),
            "router": self.options.router,
            "clusters": len(self.clusters),
            "cluster_sizes": {cid: len(c.members) for cid, c in self.clusters.items()},
            # which turns each cluster held at the end: with a question's gold and the clusters its
            # retrieval searched, the record says whether the gold was within reach of stage 2
            "cluster_members": {cid: [t for m in c.members for t in self.notes[m].source_turn_ids]
                                for cid, c in self.clusters.items()},
            "cluster_profiles": {cid: {"summary": c.summary, "tags": c.tags}
                                 for cid, c in self.clusters.items()},
            "routing": {"decisions": len(self.routing_log), "routed": len(routed), "reasons": reasons},
            "profile_failures": self.profile_failures,
            "routing_log": self.routing_log,
            "cluster_history": self.cluster_history,
        }
