import pytest

from baselines.rag import RAGMemory, reciprocal_rank_fusion
from clag.embed import Embedder
from clag.types import Question, Turn

TURNS = [
    Turn("D1:1", "Ann", "I adopted a golden retriever puppy named Max.", "1 May 2023", "session_1"),
    Turn("D1:2", "Bob", "My sister moved to Lisbon for a new job.", "1 May 2023", "session_1"),
    Turn("D1:3", "Ann", "We went hiking in the Alps last summer.", "1 May 2023", "session_1"),
    Turn("D2:1", "Bob", "I started learning the violin in March.", "9 May 2023", "session_2"),
]


@pytest.fixture(scope="module")
def embedder():
    return Embedder()


def fill(memory):
    for turn in TURNS:
        memory.ingest(turn)
    memory.finalize()
    return memory


@pytest.mark.parametrize("retriever", ["dense", "bm25", "hybrid"])
def test_each_retriever_finds_the_turn_that_answers(embedder, retriever):
    memory = fill(RAGMemory(embedder, k=2, retriever=retriever))
    result = memory.retrieve(Question("q", "What instrument is Bob learning, the violin?", "violin", 4))
    assert result.turn_ids[0] == "D2:1" and len(result.turn_ids) == 2
    assert result.context.splitlines()[0] == (
        "talk start time:9 May 2023\tmemory content: Speaker Bobsays : I started learning the violin in March.")


def test_memory_text_follows_the_configured_format(embedder):
    memory = fill(RAGMemory(embedder, content_format="spaced"))
    assert memory.contents[0] == "Speaker Ann says: I adopted a golden retriever puppy named Max."
    assert memory.stats() == {"memories": 4, "retriever": "dense"}


def test_rrf_fuses_by_reciprocal_rank():
    assert reciprocal_rank_fusion([[1, 2, 3], [3, 1]], k=60)[:2] == [1, 3]


def test_unknown_retriever_is_refused():
    with pytest.raises(ValueError, match="retriever must be one of"):
        RAGMemory(None, retriever="tfidf")
