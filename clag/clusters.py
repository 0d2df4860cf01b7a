"""CLAG's clusters: the K-Means start, new clusters, splits, centroids, representatives, profiles.

As ``CLAG_memory.py`` does it (clag.md §4 steps 5, 7, 8; §6.4):
- the first time 100 notes exist, K-Means (k = 3, random_state 42, n_init 10) over the notes'
  routing texts makes ``cluster_{label}``; provisional tags are the 5 most common member tags;
- a note the router places nowhere opens ``cluster_new_{n}`` with its own embedding as centroid;
- consolidation splits clusters above 300 members with 2-means into ``{id}_a``/``{id}_b``,
  recomputes every centroid as the mean of its members' cluster-document embeddings, keeps the
  3 members nearest it as representatives, and rewrites every profile with the SLM (temperature
  0.3: one sentence + exactly 3 one-word tags, parsed as JSON or by the reference's regex
  fallback; an empty summary or tag list keeps the old one).
Tags are kept in first-seen order (the reference keeps Python sets, whose order varies between
interpreter runs); everything else follows the reference.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.cluster import KMeans

from clag.prompt_sets import OwnPrompts, PromptSet


@dataclass
class Cluster:
    id: str
    members: list[int]                      # note positions, in insertion order
    tags: list[str]
    summary: str
    centroid: np.ndarray
    rep_ids: list[int] = field(default_factory=list)

    def examples(self, contents: Sequence[str], count: int = 3, chars: int = 160) -> list[str]:
        """Representative snippets: ``rep_ids`` after a consolidation, else the first members."""
        chosen = self.rep_ids[:count] if self.rep_ids else self.members[:count]
        return [contents[i][:chars].replace("\n", " ") for i in chosen]


def unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def squared_distances(vector: np.ndarray, clusters: Sequence[Cluster]) -> list[tuple[str, float]]:
    """(cluster id, squared L2 to its centroid), nearest first; ties keep cluster order."""
    dists = [(c.id, float(np.sum((vector - c.centroid) ** 2))) for c in clusters]
    return sorted(dists, key=lambda item: item[1])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a.astype(np.float32)
    b = b.astype(np.float32)
    return float(np.dot(a / (np.linalg.norm(a) + 1e-8), b / (np.linalg.norm(b) + 1e-8)))


def kmeans(vectors: np.ndarray, k: int, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    model = KMeans(n_clusters=k, random_state=seed, n_init=10)
    labels = model.fit_predict(vectors)
    return labels, model.cluster_centers_


def initial_clusters(vectors: np.ndarray, tags: Sequence[Sequence[str]], contexts: Sequence[str],
                     k: int = 3, seed: int = 42, texts: PromptSet | None = None) -> list[Cluster]:
    """The first partition of notes 0..n-1 (``cluster_memories_kmeans``); summaries in the
    words of ``texts`` (the run's prompt set)."""
    texts = texts or OwnPrompts()
    n = len(vectors)
    k = min(k, n)
    if k <= 1:
        all_tags = unique([t for note_tags in tags for t in note_tags])
        return [Cluster("cluster_0", list(range(n)), all_tags, texts.single_cluster_summary(),
                        vectors.mean(axis=0))]
    labels, centers = kmeans(vectors, k, seed)
    by_label: dict[int, list[int]] = {}
    for position, label in enumerate(labels):
        by_label.setdefault(int(label), []).append(position)
    clusters = []
    for label, members in by_label.items():          # first-appearance order, as the reference
        counts = Counter(t for m in members for t in tags[m])
        top = [t for t, _ in counts.most_common(5)]
        member_contexts = [contexts[m] for m in members if contexts[m]]
        summary = texts.kmeans_summary(top, member_contexts)
        clusters.append(Cluster(f"cluster_{label}", members, top, summary, centers[label]))
    return clusters


def new_cluster(cluster_id: str, position: int, tags: Sequence[str], context: str,
                vector: np.ndarray, texts: PromptSet | None = None) -> Cluster:
    """A cluster opened by one note (``_create_new_cluster``)."""
    summary = (texts or OwnPrompts()).new_cluster_summary(tags, context)
    return Cluster(cluster_id, [position], unique(tags), summary, np.array(vector))


def split(cluster: Cluster, vectors: np.ndarray, member_tags: Sequence[Sequence[str]],
          seed: int = 42) -> tuple[Cluster, Cluster]:
    """2-means over the members' cluster documents (``consolidate_memories``)."""
    labels, centers = kmeans(vectors, 2, seed)
    halves = []
    for label, suffix, name in ((0, "a", "A"), (1, "b", "B")):
        idx = [i for i, lab in enumerate(labels) if lab == label]
        halves.append(Cluster(f"{cluster.id}_{suffix}", [cluster.members[i] for i in idx],
                              unique([t for i in idx for t in member_tags[i]]),
                              f"{cluster.summary} (subcluster {name})", centers[label]))
    return halves[0], halves[1]


def nearest_members(vectors: np.ndarray, centre: np.ndarray, count: int) -> list[int]:
    """Row indices of the ``count`` rows nearest ``centre`` (squared L2), nearest first."""
    order = np.argsort(np.sum((vectors - centre) ** 2, axis=1), kind="stable")
    return [int(i) for i in order[:count]]


def parse_profile(text: str) -> dict[str, Any] | None:
    """The reference's profile parser: plain ``json.loads``, else a regex rescue, else None."""
    try:
        value = json.loads(text.strip())
        if isinstance(value, dict):
            return value
    except json.JSONDecodeError:
        pass
    summary_match = re.search(r'"summary"\s*:\s*"([^"]*)"', text)
    summary = summary_match.group(1) if summary_match else ""
    tags: list[str] = []
    tags_match = re.search(r'"tags"\s*:\s*\[(.*)', text, re.DOTALL)
    if tags_match:
        for tag in re.findall(r'"([^"]+)"', tags_match.group(1)):
            if tag not in tags:
                tags.append(tag)
            if len(tags) >= 5:
                break
    if not summary and not tags:
        return None
    return {"summary": summary, "tags": tags}


def apply_profile(cluster: Cluster, profile: dict[str, Any] | None) -> bool:
    """Take the SLM's summary and up to 3 one-word tags; keep the old ones when they are empty."""
    if profile is None:
        return False
    summary = profile.get("summary")
    if isinstance(summary, str) and summary.strip():
        cluster.summary = summary.strip()
    clean: list[str] = []
    raw = profile.get("tags", [])
    for tag in raw if isinstance(raw, (list, tuple)) else []:
        if not isinstance(tag, str) or not tag.strip():
            continue
        word = tag.strip().split()[0]
        if word not in clean:
            clean.append(word)
        if len(clean) >= 3:
            break
    if clean:
        cluster.tags = clean
    return True
