"""CLAG's algorithm pinned with a scripted SLM and the real embedder (clag.md §4–5)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from clag.embed import Embedder
from clag.memory import CLAGMemory
from clag.types import Question, Turn
from tests.memory_fakes import scripted_client, turn_texts


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


def turns(n):
    return [Turn(f"D1:{i}", "Ann", text, "1 May 2023", "session_1") for i, (_, text) in enumerate(turn_texts(n))]


def ingest(memory, n, finalize=False):
    for turn in turns(n):
        memory.ingest(turn)
    if finalize:
        memory.finalize()
    return memory


def tags_of(backend):
    return [r.tag for r in backend.requests]


def test_clusters_start_with_kmeans_at_100_notes_and_get_slm_profiles(embedder):
    client, backend = scripted_client()
    memory = ingest(CLAGMemory(embedder, client), 99)
    assert not memory.clusters and "route" not in tags_of(backend)          # A-mem until then
    memory.ingest(turns(100)[99])
    assert sorted(memory.clusters) == ["cluster_0", "cluster_1", "cluster_2"]
    assert sum(len(c.members) for c in memory.clusters.values()) == 100
    assert tags_of(backend).count("profile") == 3
    summaries = {c.summary for c in memory.clusters.values()}
    assert summaries == {"Talk about sports.", "Talk about cooking.", "Talk about astronomy."}
    assert all(c.tags[1] == "talk" and len(c.tags) == 3 for c in memory.clusters.values())   # first word, max 3
    assert len(memory.cluster_index) == 100 and memory.cluster_history[-1]["event"] == "init"
    members = memory.stats()["cluster_members"]           # the record says which turns each cluster held
    assert sorted(t for held in members.values() for t in held) == sorted(t.id for t in turns(100))
    assert {cid: len(held) for cid, held in members.items()} == memory.stats()["cluster_sizes"]


def test_routing_commits_after_evolution_and_leaves_centroids_stale(embedder):
    client, backend = scripted_client()
    memory = ingest(CLAGMemory(embedder, client, evo_threshold=1000), 100)   # no consolidation here
    before = {cid: c.centroid.copy() for cid, c in memory.clusters.items()}
    ingest_more = turns(103)[100:]
    for turn in ingest_more:
        memory.ingest(turn)
    decisions = memory.routing_log
    assert len(decisions) == 3 and all(d["reason"] == "routed" for d in decisions)
    assert all(len(d["candidates"]) == 3 and d["similarity"] > 0.1 for d in decisions)
    for d in decisions:
        assert d["note"] in memory.clusters[d["chosen"]].members
        assert memory.notes[d["note"]].cluster_id == d["chosen"]
    assert all(np.array_equal(before[cid], c.centroid) for cid, c in memory.clusters.items())
    assert tags_of(backend)[-9:] == ["note", "route", "evolve"] * 3
    routes = [r for r in backend.requests if r.tag == "route"]
    assert routes[0].temperature == 0.2 and '"choice": "cluster_1"' in routes[0].prompt


def test_evolution_is_localized_to_the_routed_cluster(embedder):
    client, _ = scripted_client()
    memory = ingest(CLAGMemory(embedder, client), 110)
    for decision, evolution in zip(memory.routing_log, memory.evolution_log[100:]):
        members = set(memory.clusters[decision["chosen"]].members)
        assert evolution["neighbours"] and set(evolution["neighbours"]) <= members


def test_fresh_centroids_follow_their_members_when_the_quirk_is_off(embedder):
    client, _ = scripted_client()
    memory = ingest(CLAGMemory(embedder, client, stale_centroids=False), 101)
    cid = memory.routing_log[0]["chosen"]
    members = memory.clusters[cid].members
    expected = embedder.encode([memory.notes[p].cluster_doc() for p in members]).mean(axis=0)
    assert np.allclose(memory.clusters[cid].centroid, expected, atol=1e-5)


@pytest.mark.parametrize(("reply", "reason"), [('{"choice": "cluster_9"}', "invalid_choice"),
                                               ("no json at all", "unparsable"),
                                               ('{"choice": ""}', "invalid_choice")])
def test_an_invalid_router_answer_opens_a_new_cluster(embedder, reply, reason):
    client, _ = scripted_client(route=reply)
    memory = ingest(CLAGMemory(embedder, client, evo_threshold=1000), 101)
    assert memory.routing_log[0]["reason"] == reason
    assert "cluster_new_3" in memory.clusters and memory.clusters["cluster_new_3"].members == [100]
    new = memory.clusters["cluster_new_3"]
    assert new.summary == memory.prompts.new_cluster_summary(memory.notes[100].tags, memory.notes[100].context)
    assert np.allclose(new.centroid, embedder.encode_one(memory.notes[100].routing_text()))


def test_nearest_fallback_repair_routes_an_invalid_answer_to_the_nearest_candidate(embedder):
    client, _ = scripted_client(route='{"choice": "nonsense"}')
    memory = ingest(CLAGMemory(embedder, client, invalid_route="nearest"), 101)
    decision = memory.routing_log[0]
    assert decision["reason"] == "nearest_fallback" and decision["choice"] == "nonsense"
    assert decision["chosen"] == decision["candidates"][0] and len(memory.clusters) == 3


def test_low_similarity_to_the_chosen_centroid_opens_a_new_cluster(embedder):
    client, _ = scripted_client()
    memory = ingest(CLAGMemory(embedder, client, sim_threshold=1.01), 101)
    assert memory.routing_log[0]["reason"] == "low_similarity" and len(memory.clusters) == 4


def test_consolidation_splits_large_clusters_and_sets_representatives(embedder):
    client, backend = scripted_client()
    memory = ingest(CLAGMemory(embedder, client, cluster_split_threshold=40), 130, finalize=True)
    assert all(len(c.members) <= 40 or not c.id.endswith(("_a", "_b")) for c in memory.clusters.values())
    assert any(cid.endswith("_a") for cid in memory.clusters) and any(cid.endswith("_b") for cid in memory.clusters)
    split_event = memory.cluster_history[-1]
    assert split_event["event"] == "consolidate" and split_event["split"]
    for cluster in memory.clusters.values():
        vectors = embedder.encode([memory.notes[p].cluster_doc() for p in cluster.members])
        assert np.allclose(cluster.centroid, vectors.mean(axis=0), atol=1e-5)
        order = np.argsort(((vectors - cluster.centroid) ** 2).sum(axis=1), kind="stable")[:3]
        assert cluster.rep_ids == [cluster.members[i] for i in order]
    assert sorted(p for c in memory.clusters.values() for p in c.members) == list(range(130))


def test_profile_failure_keeps_the_old_profile(embedder):
    client, _ = scripted_client(profile="not json")
    memory = ingest(CLAGMemory(embedder, client), 100)
    assert all(c.summary.startswith("Memories about: ") for c in memory.clusters.values())
    assert memory.profile_failures == 3


def test_two_stage_retrieval_searches_only_the_selected_cluster(embedder):
    client, backend = scripted_client()
    memory = ingest(CLAGMemory(embedder, client), 120, finalize=True)
    result = memory.retrieve(Question("q", "Who watched the saturn rings?", "x", 4))
    debug = result.debug
    assert debug["search_mode"] == "cluster" and len(debug["selected_clusters"]) == 1
    members = set(memory.clusters[debug["selected_clusters"][0]].members)
    assert set(debug["retrieved_positions"]) <= members and len(debug["retrieved_positions"]) == 10
    assert debug["search_space_size"] == len(members) < debug["total_memories"] == 120
    assert tags_of(backend)[-2:] == ["keywords", "select"]
    assert [r.temperature for r in backend.requests[-2:]] == [0.7, 0.7]


def test_selection_keeps_valid_ids_in_slm_order_and_concatenates_without_reranking(embedder):
    def select(request):
        from tests.memory_fakes import candidate_ids

        ids = candidate_ids(request.prompt)
        return json.dumps({"selected_clusters": ["bogus", ids[1], ids[0]]})

    client, _ = scripted_client(select=select)
    memory = ingest(CLAGMemory(embedder, client, retrieve_k=10), 120, finalize=True)
    result = memory.retrieve(Question("q", "Who watched the saturn rings?", "x", 4))
    first, second = result.debug["selected_clusters"]
    assert result.debug["search_space_size"] == len(memory.clusters[first].members) + len(memory.clusters[second].members)
    assert set(result.debug["retrieved_positions"]) <= set(memory.clusters[first].members)   # 10 from the first


@pytest.mark.parametrize("reply", ['{"selected_clusters": []}', '{"selected_clusters": ["nope"]}', "garbage"])
def test_no_valid_selection_falls_back_to_global_search(embedder, reply):
    client, _ = scripted_client(select=reply)
    memory = ingest(CLAGMemory(embedder, client), 120, finalize=True)
    result = memory.retrieve(Question("q", "Who watched the saturn rings?", "x", 4))
    assert result.debug["search_mode"] == "global" and result.debug["search_space_size"] == 120
    assert len(result.turn_ids) == 10


def test_cosine_ablation_routes_without_the_slm(embedder):
    client, backend = scripted_client()
    memory = ingest(CLAGMemory(embedder, client, router="cosine"), 110, finalize=True)
    assert "route" not in tags_of(backend) and len(memory.routing_log) == 10
    assert all(d["reason"] == "routed" for d in memory.routing_log)


def test_kmeans_ablation_clusters_only_after_the_stream(embedder):
    client, backend = scripted_client()
    memory = ingest(CLAGMemory(embedder, client, router="kmeans"), 110)
    assert not memory.clusters and "route" not in tags_of(backend)
    memory.finalize()
    assert len(memory.clusters) == 3 and sum(len(c.members) for c in memory.clusters.values()) == 110


def test_ledger_counts_every_call_by_tag(embedder):
    client, _ = scripted_client()
    memory = ingest(CLAGMemory(embedder, client), 101, finalize=True)
    memory.retrieve(Question("q", "Who baked the bread?", "x", 4))
    by_tag = client.ledger.to_dict()["by_tag"]
    # profiles: 3 at the K-Means start, 3 at the 100th evolution (note 101), 3 after the stream
    assert {t: by_tag[t]["calls"] for t in by_tag} == {
        "note": 101, "evolve": 101, "route": 1, "profile": 9, "keywords": 1, "select": 1}


def test_split_happens_strictly_above_the_threshold(embedder):
    client, _ = scripted_client()
    memory = ingest(CLAGMemory(embedder, client, evo_threshold=1000), 100)
    largest = max(memory.clusters.values(), key=lambda c: len(c.members))
    memory.options = replace(memory.options, cluster_split_threshold=len(largest.members))   # equal: kept whole
    memory.consolidate()
    assert largest.id in memory.clusters
    memory.options = replace(memory.options, cluster_split_threshold=len(largest.members) - 1)  # one above: split
    memory.consolidate()
    assert largest.id not in memory.clusters
    assert {f"{largest.id}_a", f"{largest.id}_b"} <= set(memory.clusters)
    assert CLAGMemory(embedder, client).options.cluster_split_threshold == 300


def test_batched_note_analysis_equals_the_one_at_a_time_path(embedder):
    sequential_client, sequential_backend = scripted_client()
    sequential = ingest(CLAGMemory(embedder, sequential_client), 105, finalize=True)
    batched_client, batched_backend = scripted_client()
    batched = CLAGMemory(embedder, batched_client)
    batched.prefetch(turns(105))
    ingest(batched, 105, finalize=True)
    assert [vars(n) for n in batched.notes] == [vars(n) for n in sequential.notes]
    assert {c: m.members for c, m in batched.clusters.items()} == {c: m.members for c, m in sequential.clusters.items()}
    assert batched_client.ledger.to_dict() == sequential_client.ledger.to_dict()   # each call accounted once
    # the prefetch goes out (and into the cache) chunk by chunk: 64 + 41
    assert [len(b) for b in batched_backend.batches[:2]] == [64, 41]
    assert all(r.tag == "note" for b in batched_backend.batches[:2] for r in b)
    assert max(len(b) for b in sequential_backend.batches) == 1


def test_prefetched_sampled_calls_keep_their_seeds():
    from clag.llm.client import LLMClient
    from clag.llm.types import Request
    from tests.scripted_llm import ScriptedBackend

    def run(prefetch):
        backend = ScriptedBackend(lambda r: f"seed {r.seed}")
        client = LLMClient(backend, run_seed=3)
        same = Request(prompt="p", temperature=0.7, tag="note")
        with client.scope("ingest:0"):
            if prefetch:
                client.prefetch([same, same])
            return [client.generate([same])[0].text for _ in range(2)], client.ledger.to_dict()

    assert run(True) == run(False)


def test_the_routing_example_id_is_the_reference_literal_or_a_real_candidate():
    from clag.router import REFERENCE_ROUTE_EXAMPLE, route_example

    assert route_example(None, ["c7", "c2"]) == REFERENCE_ROUTE_EXAMPLE == "cluster_1"
    assert route_example("candidate", ["c7", "c2"]) == "c7"
    assert route_example("candidate", []) == "cluster_1"
    assert route_example("<cluster_id>", ["c7"]) == "<cluster_id>"
