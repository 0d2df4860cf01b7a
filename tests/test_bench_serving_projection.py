"""The GPU projection per sweep preset: each preset's own datasets and methods, one formula."""

import pytest

from scripts.bench_serving import PAPER_MAIN, PUBLISHED, preset_projection, projection

PER_MEMORY = {"calls": 2.0, "prompt_tokens": 1000.0, "completion_tokens": 100.0}
PER_QUESTION = {"calls": 3.0, "prompt_tokens": 2000.0, "completion_tokens": 20.0}


def test_the_ablation_preset_is_three_methods_on_bioasq_only():
    turns, questions = PAPER_MAIN["bioasq"]
    p = preset_projection(PER_MEMORY, PER_QUESTION, "paper_ablation")
    assert (p["turns"], p["questions"], p["methods"]) == (turns, questions, 3)
    assert p["total"]["calls"] == pytest.approx(3 * (turns * 2.0 + questions * 3.0))
    seconds = (p["total"]["prompt_tokens"] / (PUBLISHED["requests_per_s"] * PUBLISHED["prompt_tokens"])
               + p["total"]["completion_tokens"] / (PUBLISHED["requests_per_s"] * PUBLISHED["completion_tokens"]))
    assert p["projected_hours"] == pytest.approx(seconds / 3600)


def test_the_ledger_projection_keeps_paper_main_and_adds_every_preset():
    ledger = {"by_phase": {"ingest": {k: 10 * v for k, v in PER_MEMORY.items()},
                           "question": {k: 5 * v for k, v in PER_QUESTION.items()}}}
    p = projection(ledger, memories=10, questions=5)
    assert p["per_memory"] == PER_MEMORY and p["per_question"] == PER_QUESTION
    assert set(p["presets"]) == {"paper_main", "paper_main_server", "paper_ablation"}
    assert p["projected_hours"] == p["presets"]["paper_main"]["projected_hours"]
    assert p["presets"]["paper_ablation"]["projected_hours"] < p["projected_hours"]
