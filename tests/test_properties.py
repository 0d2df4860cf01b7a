"""Property tests: metric ranges and identities, trec_eval agreement, loaders under fuzzing."""

from collections import Counter

import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eval.data.bioasq import build_bioasq_chunks, golden_records
from eval.data.hotpotqa import build_hotpot_chunks
from eval.data.locomo_layout import parse_locomo_layout
from eval.errors import DataError
from eval.metrics.qa import bleu1, exact_match, f1, locomo_f1, simple_tokens, squad_f1
from eval.metrics.retrieval import retrieval_scores
from eval.metrics.tokenize import word_tokenize

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
wordy = st.text(alphabet="abcdefghijklmnop .,!?;'-0123", min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(text, text, st.sampled_from([1, 2, 3, 4, 5, 6, None]))
def test_answer_metrics_stay_in_unit_interval(prediction, reference, category):
    for value in (f1(prediction, reference), bleu1(prediction, reference), exact_match(prediction, reference),
                  squad_f1(prediction, reference), locomo_f1(prediction, reference, category)):
        assert 0.0 <= value <= 1.0 + 1e-9


@settings(max_examples=300, deadline=None)
@given(wordy)
def test_identical_answers_score_one(answer):
    if simple_tokens(answer.strip()):
        assert f1(answer, answer) == 1.0
    if answer.strip():
        assert exact_match(answer, answer) == 1.0
    if word_tokenize(answer.strip().lower()):
        assert abs(bleu1(answer, answer) - 1.0) < 1e-9


doc_ids = st.lists(st.sampled_from([f"d{i}" for i in range(30)]), min_size=1, max_size=25, unique=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(doc_ids, doc_ids), min_size=1, max_size=8))
def test_retrieval_metrics_agree_with_trec_eval(queries):
    qrels = {f"q{i}": {d: 1 for d in gold} for i, (gold, _) in enumerate(queries)}
    run = {f"q{i}": {d: float(100 - r) for r, d in enumerate(ranking)} for i, (_, ranking) in enumerate(queries)}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"recall_5", "recall_10", "ndcg_cut_10"}).evaluate(run)
    for i, (gold, ranking) in enumerate(queries):
        ours = retrieval_scores(ranking, gold)
        assert abs(ours["recall@5"] - trec[f"q{i}"]["recall_5"]) < 1e-9
        assert abs(ours["recall@10"] - trec[f"q{i}"]["recall_10"]) < 1e-9
        assert abs(ours["ndcg@10"] - trec[f"q{i}"]["ndcg_cut_10"]) < 1e-9
        for value in ours.values():
            assert 0.0 <= value <= 1.0 + 1e-9


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda children: st.lists(children, max_size=4)
                           | st.dictionaries(st.text(max_size=8), children, max_size=4), max_leaves=12)
turn = st.fixed_dictionaries({"speaker": json_values | st.just("A"), "dia_id": json_values | st.just("D1:1"),
                              "text": json_values | st.just("hi")})
qa = st.fixed_dictionaries({"question": json_values | st.just("q"), "category": json_values | st.just(1),
                            "answer": json_values | st.just("a"), "evidence": json_values | st.just(["D1:1"])})
record = st.fixed_dictionaries({"sample_id": json_values | st.just("s"),
                                "conversation": st.fixed_dictionaries({"session_1": st.lists(turn, max_size=3)})
                                | json_values,
                                "qa": st.lists(qa, max_size=3) | json_values})


@settings(max_examples=300, deadline=None)
@given(st.lists(record, max_size=3) | json_values)
def test_locomo_layout_parser_raises_only_its_own_error(records):
    try:
        parse_locomo_layout(records, "fuzz", Counter())
    except DataError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values | st.fixed_dictionaries({"_id": json_values, "question": json_values,
                                                      "answer": json_values, "context": json_values,
                                                      "supporting_facts": json_values}), max_size=3))
def test_hotpot_builder_raises_only_its_own_error(records):
    try:
        build_hotpot_chunks(records, chunk_size=1, num_chunks=1)
    except DataError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values | st.fixed_dictionaries({"id": json_values, "type": st.sampled_from(["factoid", "list"]),
                                                      "body": json_values, "exact_answer": json_values,
                                                      "snippets": json_values}), max_size=4))
def test_bioasq_builder_raises_only_its_own_error(questions):
    try:
        build_bioasq_chunks(golden_records(questions, Counter()), chunk_size=1, num_chunks=1)
    except DataError:
        pass
