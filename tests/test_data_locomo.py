from collections import Counter

from clag.types import Turn
from eval.data.locomo_layout import NOT_MENTIONED, clean_evidence


def test_locomo_has_the_published_counts(locomo):
    assert len(locomo.samples) == 10
    assert locomo.num_turns == 5882
    assert locomo.num_questions == 1986
    assert locomo.category_counts() == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}
    assert [s.id for s in locomo.samples][:2] == ["conv-26", "conv-30"]


def test_image_turns_carry_their_caption_before_the_text(locomo):
    turn = next(t for t in locomo.samples[0].turns if t.id == "D1:5")
    assert turn.text == (
        "[Image: a photo of a dog walking past a wall with a painting of a woman] "
        "The transgender stories were so inspiring! I was so happy and thankful for all the support."
    )
    assert locomo.report["image_turns_captioned"] == 910


def test_only_turns_with_an_image_url_get_their_caption_as_the_reference_loader(data_root, locomo):
    """The paper's loader adds the caption when a turn has both img_url and blip_caption: 316
    turns carry a caption without a url and keep their plain text (the old rule captioned them)."""
    import json

    from eval.data.locomo import load_locomo

    old = load_locomo(data_root, download=False, caption_rule="caption")
    raw = {t["dia_id"] + "@" + s["sample_id"]: t for s in json.loads((data_root / "locomo" / "locomo10.json").read_text())
           for key, v in s["conversation"].items() if isinstance(v, list) for t in v}
    differ = [(a, b) for sa, sb in zip(locomo.samples, old.samples) for a, b in zip(sa.turns, sb.turns)
              if a.text != b.text]
    assert len(differ) == 316 == locomo.report["captions_without_image_url"]
    assert old.report["image_turns_captioned"] == 1226
    sample_of = {t.id + "@" + s.id: t for s in locomo.samples for t in s.turns}
    for new_turn, old_turn in differ:
        record = next(raw[k] for k, t in sample_of.items() if t is new_turn)
        assert "img_url" not in record and new_turn.text == record["text"]
        assert old_turn.text == f"[Image: {record['blip_caption']}] {record['text']}"


def test_turns_carry_session_and_timestamp(locomo):
    first = locomo.samples[0].turns[0]
    assert first == Turn("D1:1", "Caroline", "Hey Mel! Good to see you! How have you been?",
                         "1:56 pm on 8 May, 2023", "session_1")


def test_memory_content_keeps_the_reference_missing_space():
    turn = Turn("D1:1", "Caroline", "Hi!", "t", "session_1")
    assert turn.memory_content() == "Speaker Carolinesays : Hi!"
    assert turn.memory_content("spaced") == "Speaker Caroline says: Hi!"


def test_category5_is_scored_against_the_adversarial_answer_and_keeps_the_true_label(locomo):
    adversarial = [q for s in locomo.samples for q in s.questions if q.category == 5]
    assert len(adversarial) == 446
    q = adversarial[0]
    assert q.answer == q.extra["adversarial_answer"]
    assert sum(q.extra["true_answer"] == NOT_MENTIONED for q in adversarial) == 444
    both = [q for q in adversarial if q.extra["true_answer"] != NOT_MENTIONED]
    assert {(q.answer, q.extra["true_answer"]) for q in both} == {("Yes", "No")}


def test_int_answers_are_cast_to_strings(locomo):
    assert locomo.report["answers_cast_to_str"] == 6
    assert all(isinstance(q.answer, str) for s in locomo.samples for q in s.questions)


def test_malformed_evidence_is_cleaned_and_counted(locomo):
    r = locomo.report
    assert r["evidence_split"] == 4           # "D8:6; D9:17" and three space-separated lists
    assert r["evidence_reformatted"] == 2     # "D:11:26", "D30:05"
    assert r["evidence_dropped_missing_turn"] == 2   # D10:19 (conv-42), D4:36 (conv-47)
    assert r["evidence_dropped_malformed"] == 1      # "D"
    assert r["questions_without_evidence"] == 4
    ids = {t.id for s in locomo.samples for t in s.turns}
    for s in locomo.samples:
        known = s.turn_ids()
        for q in s.questions:
            assert set(q.evidence) <= known <= ids


def test_clean_evidence_cases():
    known = {"D8:6", "D9:17", "D11:26", "D30:5"}
    report = Counter()
    assert clean_evidence(["D8:6; D9:17", "D:11:26", "D30:05", "D", "D99:1", "D8:6"], known, report) == [
        "D8:6", "D9:17", "D11:26", "D30:5"]
    assert report == Counter(evidence_split=1, evidence_reformatted=2, evidence_dropped_malformed=1,
                             evidence_dropped_missing_turn=1)


def test_a_dataset_can_be_had_as_an_arrow_cached_hf_dataset(locomo, tmp_path):
    from eval.data import as_hf_dataset, select

    subset = select(locomo, samples=2)
    first = as_hf_dataset(subset, tmp_path)
    assert first.num_rows == 2 and first[0]["id"] == "conv-26"
    assert len(first[0]["turns"]) == len(subset.samples[0].turns)
    assert len(list(tmp_path.iterdir())) == 1                       # cached once, keyed by checksums
    again = as_hf_dataset(subset, tmp_path)
    assert again[1]["questions"][0]["text"] == subset.samples[1].questions[0].text
