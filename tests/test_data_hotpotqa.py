import json

import pytest

from eval.data.hotpotqa import PAPER_FILE, RAW_FILE, build_hotpot_chunks, load_hotpot_raw
from eval.data.io import read_jsonl
from eval.errors import DataError


def test_hotpot200_has_the_papers_layout(hotpot200):
    assert len(hotpot200.samples) == 10
    assert [len(s.questions) for s in hotpot200.samples] == [20] * 10
    assert hotpot200.num_turns == 8475
    assert [len(s.turns) for s in hotpot200.samples] == [812, 769, 801, 890, 889, 899, 864, 808, 872, 871]
    assert hotpot200.category_counts() == {4: 200}
    first = hotpot200.samples[0].turns[0]
    assert first.id == "0:0" and first.speaker == "System" and first.timestamp == "2020-01-01 00:00:00"
    assert first.text.startswith("Title: Radar Station (film)\nContent: ")
    q = hotpot200.samples[0].questions[0]
    assert q.id == "5a7a567255429941d65f25bd" and q.answer == "flotilla"
    assert q.evidence == ("0:19", "0:20", "0:21", "0:22", "0:23", "0:40", "0:41")


def test_builder_reproduces_the_paper_file_for_the_questions_both_contain(data_root):
    raw = {r["_id"]: r for r in read_jsonl(data_root / RAW_FILE)}
    paper = json.loads((data_root / PAPER_FILE).read_text())
    compared = 0
    for chunk in paper:
        texts = {t["dia_id"]: t["text"] for t in chunk["conversation"]["session_0"]}
        for qa in chunk["qa"]:
            if qa["question_id"] not in raw:
                continue
            built = build_hotpot_chunks([raw[qa["question_id"]]], chunk_size=1, num_chunks=1)[0]
            built_texts = {t["dia_id"]: t["text"] for t in built["conversation"]["session_0"]}
            assert [built_texts[i] for i in built["qa"][0]["gold_turn_ids"]] == [
                texts[i] for i in qa["gold_turn_ids"]]
            compared += 1
    assert compared == 17


def test_builder_makes_chunks_of_one_sentence_turns(data_root):
    ds = load_hotpot_raw(data_root, chunk_size=20, num_chunks=3, allow_download=False)
    assert [len(s.questions) for s in ds.samples] == [20, 20, 20]
    turn = ds.samples[0].turns[0]
    assert turn.text == ("Title: Meet Corliss Archer\nContent: Meet Corliss Archer, a program from radio's "
                         "Golden Age, ran from January 7, 1943 to September 30, 1956.")
    assert ds.samples[1].turns[0].id == "1:0"


def test_builder_accepts_the_hub_layout():
    record = {"id": "x1", "question": "Q?", "answer": "A",
              "context": {"title": ["T1", "T2"], "sentences": [["a.", " b."], ["c."]]},
              "supporting_facts": {"title": ["T2"], "sent_id": [0]}}
    chunk = build_hotpot_chunks([record], chunk_size=1, num_chunks=1)[0]
    assert [t["text"] for t in chunk["conversation"]["session_0"]] == [
        "Title: T1\nContent: a.", "Title: T1\nContent:  b.", "Title: T2\nContent: c."]
    assert chunk["qa"][0]["gold_turn_ids"] == ["0:2"]


def test_builder_says_when_there_are_too_few_records():
    with pytest.raises(DataError, match="make only 0 chunks"):
        build_hotpot_chunks([], chunk_size=20, num_chunks=1)
