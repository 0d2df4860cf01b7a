"""A-mem's note machinery pinned with a scripted SLM and the real embedder."""

import json

import numpy as np
import pytest

from baselines.amem import AMemMemory
from clag.embed import Embedder
from clag.types import Question, Turn
from tests.memory_fakes import scripted_client, turn_texts


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


def turns(n):
    return [Turn(f"D1:{i}", "Ann", text, "1 May 2023", "session_1") for i, (_, text) in enumerate(turn_texts(n))]


def fill(memory, n):
    for turn in turns(n):
        memory.ingest(turn)
    memory.finalize()
    return memory


def test_every_note_is_analysed_and_evolved_even_the_first(embedder):
    client, backend = scripted_client()
    memory = fill(AMemMemory(embedder, client), 4)
    tags = [r.tag for r in backend.requests]
    assert tags == ["note", "evolve"] * 4
    assert "There are 0 neighbours" in backend.requests[1].prompt       # first note: empty neighbour list
    assert memory.notes[0].keywords and memory.notes[0].context == "A remark about sports."
    assert memory.notes[0].source_turn_ids == ("D1:0",)


def test_strengthen_links_and_replaces_tags_update_neighbor_rewrites_in_order(embedder):
    reply = {"should_evolve": True, "actions": ["strengthen", "update_neighbor"], "suggested_connections": [0, 99],
             "tags_to_update": ["new"], "new_context_neighborhood": ["ctx A"],
             "new_tags_neighborhood": [["t1"], ["t2"]]}
    no = json.dumps({"should_evolve": False, "actions": [], "suggested_connections": [], "tags_to_update": [],
                     "new_context_neighborhood": [], "new_tags_neighborhood": []})
    client, _ = scripted_client(evolve=lambda r: json.dumps(reply) if "There are 2 neighbours" in r.prompt else no)
    memory = AMemMemory(embedder, client)
    for turn in turns(3):
        memory.ingest(turn)
    third = memory.notes[2]
    assert third.links == [0, 99] and third.tags == ["new"]
    neighbours = memory.evolution_log[2]["neighbours"]
    assert len(neighbours) == 2
    assert memory.notes[neighbours[0]].tags == ["t1"] and memory.notes[neighbours[0]].context == "ctx A"
    assert memory.notes[neighbours[1]].tags == ["t2"]        # context list too short: context kept
    assert memory.notes[neighbours[1]].context != "ctx A"


def test_unparsable_replies_fall_back_as_the_reference_does(embedder):
    client, _ = scripted_client(note="no json", evolve="{broken")
    memory = fill(AMemMemory(embedder, client), 2)
    assert (memory.notes[0].keywords, memory.notes[0].context, memory.notes[0].tags) == ([], "General", [])
    assert memory.evo_cnt == 0 and memory.stats()["evolution_parse_failures"] == 2
    by_tag = client.ledger.to_dict()["by_tag"]
    assert by_tag["note"]["parse_failures"] == 2 and by_tag["evolve"]["parse_failures"] == 2


def test_consolidation_re_embeds_the_global_index_every_threshold_evolutions(embedder):
    client, _ = scripted_client()
    memory = AMemMemory(embedder, client, evo_threshold=2)
    for turn in turns(2):
        memory.ingest(turn)
    insertion = embedder.encode([memory.notes[0].global_doc()])[0]
    assert np.allclose(memory.global_index.vector(0), insertion, atol=1e-5)
    memory.ingest(turns(3)[2])                      # second evolution: consolidate
    assert memory.evo_cnt == 2
    consolidated = embedder.encode([memory.notes[0].cluster_doc()])[0]
    assert np.allclose(memory.global_index.vector(0), consolidated, atol=1e-5)


def test_retrieval_uses_the_keyword_query_and_appends_links_up_to_the_limit(embedder):
    client, backend = scripted_client()
    memory = fill(AMemMemory(embedder, client, retrieve_k=2, link_limit=3, keyword_separator="cosmos",
                             context_separator=""), 6)
    memory.notes[5].links = [0, 1, 2, 3, 4, "x", -1]
    memory.global_neighbours = lambda query, k: [5, 4]
    result = memory.retrieve(Question("q", "What about the marathon race?", "a", 4))
    assert "separated by 'cosmos'" in backend.requests[-1].prompt
    assert result.debug["query_keywords"] == "the, marathon, race"
    lines = result.context.splitlines()
    assert len(lines) == 1 + 3 + 1 + 1               # note 5 + 3 links, note 4 + its 1 link
    assert lines[0].startswith("talk start time:1 May 2023memory content: Speaker Annsays : ")
    assert result.turn_ids == ["D1:5", "D1:4"]
