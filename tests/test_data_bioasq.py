import pytest

from eval.data.bioasq import build_bioasq_chunks, flatten_answer, golden_records, load_bioasq, split_sentences
from eval.errors import DataError


def test_bioasq_reproduces_the_papers_200_questions_and_chunk_sizes(bioasq):
    assert bioasq.num_questions == 200
    assert [len(s.questions) for s in bioasq.samples] == [20] * 10
    assert [len(s.turns) for s in bioasq.samples] == [300, 326, 362, 134, 142, 415, 265, 238, 282, 260]
    assert set(bioasq.category_counts()) == {4, 6}
    assert len(bioasq.files) == 6


def test_bioasq_gold_turns_are_the_questions_own_sentences(bioasq):
    for sample in bioasq.samples:
        position = {t.id: i for i, t in enumerate(sample.turns)}
        covered = []
        for q in sample.questions:
            idx = [position[e] for e in q.evidence]
            assert idx == list(range(idx[0], idx[0] + len(idx)))   # contiguous, in order
            covered.extend(idx)
        assert covered == list(range(len(sample.turns)))           # every turn belongs to one question


def test_any_glob_of_golden_files_works(data_root):
    ds = load_bioasq(data_root, golden_glob="bioasq/taskb_golden/*/*_golden.json")
    assert ds.num_questions == 200 and len(ds.files) == 29


def test_answer_is_the_first_synonym_of_each_item():
    assert flatten_answer([["XIa", "factor XIa"]]) == "XIa"
    assert flatten_answer([["casirivimab"], ["imdevimab", "REGN"]]) == "casirivimab ; imdevimab"
    assert flatten_answer(["XIa"]) == ""          # items that are not lists are skipped
    assert flatten_answer("yes") == ""


def test_sentences_split_after_terminal_punctuation_and_whitespace():
    assert split_sentences("A b.  C d?\nE!F. ") == ["A b.", "C d?", "E!F."]
    assert split_sentences("   ") == []


def test_snippets_are_deduplicated_within_a_question_only():
    from collections import Counter

    qs = [{"id": "1", "type": "factoid", "body": "Q1", "exact_answer": [["a"]],
           "snippets": [{"text": "Same  text."}, {"text": "same text."}]},
          {"id": "2", "type": "list", "body": "Q2", "exact_answer": [["b"], ["c"]],
           "snippets": [{"text": "Same text."}]},
          {"id": "3", "type": "yesno", "body": "Q3", "exact_answer": "yes", "snippets": [{"text": "x"}]},
          {"id": "4", "type": "factoid", "body": "Q4", "exact_answer": [["d"]], "snippets": []}]
    report = Counter()
    recs = golden_records(qs, report)
    assert [(r["question_id"], r["category"], r["answer"], len(r["snippets"])) for r in recs] == [
        ("1", 4, "a", 1), ("2", 6, "b ; c", 1)]
    assert report["bioasq_snippets_deduplicated"] == 1 and report["bioasq_dropped_no_snippet"] == 1
    chunks = build_bioasq_chunks(recs, chunk_size=1, num_chunks=2, seed=42)
    assert [[t["text"] for t in c["conversation"]["session_0"]] for c in chunks] == [["Same text."]] * 2
    assert sorted(c["qa"][0]["question_id"] for c in chunks) == ["1", "2"]


def test_missing_golden_files_say_where_to_get_them(tmp_path):
    with pytest.raises(DataError, match="bioasq.org"):
        load_bioasq(tmp_path)


def test_an_answerable_subset_is_the_shortest_prefix_answering_that_many(bioasq):
    """BioASQ's evidence is spread over a whole stream: ``answerable`` cuts each stream right
    after the turn that completes its n-th answerable question, and keeps exactly those."""
    from eval.data import select

    subset = select(bioasq, samples=3, answerable=4)
    for sample, full in zip(subset.samples, bioasq.samples[:3]):
        kept = {t.id for t in sample.turns}
        assert len(sample.questions) == 4
        assert all(set(q.evidence) <= kept for q in sample.questions)
        assert sample.turns == full.turns[:len(sample.turns)]
        shorter = {t.id for t in sample.turns[:-1]}          # one turn less answers fewer
        assert sum(set(q.evidence) <= shorter for q in full.questions if q.evidence) < 4
    capped = select(bioasq, samples=1, answerable=4, turns=10)
    assert len(capped.samples[0].turns) <= 10


def test_most_answerable_picks_the_stream_whose_kept_turns_answer_the_most(bioasq):
    """The smoke's rule: BioASQ's first stream answers nothing in its first 16 turns, so the
    smoke takes the stream whose first 16 turns answer the most questions (capped at 5)."""
    from eval.data import select

    first = select(bioasq, samples=1, turns=16)
    assert first.num_questions == 0                          # the old smoke: nothing to answer
    picked = select(bioasq, samples=1, turns=16, questions_per_sample=5, pick="most_answerable")
    sample = picked.samples[0]
    assert len(sample.turns) == 16 and 1 <= len(sample.questions) <= 5
    every = select(bioasq, turns=16, questions_per_sample=5)
    assert len(sample.questions) == max(len(s.questions) for s in every.samples)
    # the order among the rest: most answered first, the dataset's order on a full tie
    ranked = select(bioasq, turns=16, questions_per_sample=5, pick="most_answerable")
    counts = [len(s.questions) for s in ranked.samples]
    assert counts == sorted(counts, reverse=True)
    with pytest.raises(ValueError, match="most_answerable"):
        select(bioasq, pick="best")
