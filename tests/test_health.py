"""The health report: each counter from scripted replies through the real client and call log,
the placeholder list following the templates, and the report as a function of the run's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clag.llm.calllog import CallLog
from clag.llm.client import LLMClient
from clag.llm.types import Completion, Request
from clag.placeholders import copied, placeholders
from clag.prompt_sets import OwnPrompts
from clag.prompts import keywords_schema
from eval.health import format_report, health_report, summary_line

NOTE_SCHEMA = {"type": "object", "properties": {"keywords": {"type": "array"}, "context": {"type": "string"},
                                                "tags": {"type": "array"}},
               "required": ["keywords", "context", "tags"]}
SELECT_SCHEMA = {"type": "object", "properties": {"selected_clusters": {"type": "array"}},
                 "required": ["selected_clusters"]}


class ReplyTable:
    """A backend that answers each prompt from a table: (text, finish_reason)."""

    model_id = "scripted-health"

    def __init__(self, table: dict[str, tuple[str, str]]) -> None:
        self.table = table

    def generate(self, requests: list[Request]) -> list[Completion]:
        out = []
        for request in requests:
            text, finish = self.table[request.prompt]
            out.append(Completion(text, prompt_tokens=10, completion_tokens=len(text) // 4 or 1,
                                  finish_reason=finish))
        return out


#: (scope, tag, schema, prompt, reply text, finish reason)
CALLS = [
    ("ingest:s1", "note", NOTE_SCHEMA, "p-ws", '{"keywords": [' + " " * 300, "length"),
    ("ingest:s1", "note", NOTE_SCHEMA, "p-loop", '{"keywords": ["economic", ' + '"economic", ' * 80, "length"),
    ("ingest:s1", "note", NOTE_SCHEMA, "p-prose", "Sure! Here are the keywords.", "stop"),
    ("ingest:s1", "note", NOTE_SCHEMA, "p-empty", '{"keywords": [], "context": "c", "tags": ["t"]}', "stop"),
    ("ingest:s1", "note", NOTE_SCHEMA, "p-fine", '{"keywords": ["x"], "context": "c", "tags": ["t"]}', "stop"),
    ("question:s1:q1", "keywords", keywords_schema(), "p-kw1", '{"keywords": "keyword4, keyword5"}', "stop"),
    ("question:s1:q2", "keywords", keywords_schema(), "p-kw2", '{"keywords": "ivermectin, used"}', "stop"),
    ("question:s1:q1", "select", SELECT_SCHEMA, "p-sel1", '{"selected_clusters": ["cluster_9"]}', "stop"),
    ("question:s1:q2", "select", SELECT_SCHEMA, "p-sel2", '{"selected_clusters": ["c0"]}', "stop"),
    ("question:s1:q3", "select", SELECT_SCHEMA, "p-sel3", '{"selected_clusters": []}', "stop"),
]


def make_run(run_dir: Path, calls=CALLS, log_twice: bool = False) -> Path:
    """A run directory as a real run leaves it: calls through LLMClient into calls.jsonl, plus
    placeholders, memory stats and predictions."""
    run_dir.mkdir(parents=True, exist_ok=True)
    table = {prompt: (text, finish) for _, _, _, prompt, text, finish in calls}
    for _ in range(2 if log_twice else 1):       # a resumed run asks a re-ingested stream again
        client = LLMClient(ReplyTable(table))
        client.call_log = CallLog(run_dir / "calls.jsonl")
        for scope, tag, schema, prompt, _, _ in calls:
            with client.scope(scope):
                client.generate([Request(prompt=prompt, json_schema=schema, tag=tag, temperature=0.0)])
        client.call_log.close()
    (run_dir / "placeholders.json").write_text(json.dumps(placeholders(OwnPrompts())))
    (run_dir / "config.yaml").write_text("method:\n  name: clag\n  memory:\n    route_example_id: null\n")
    routing = [
        {"note": 5, "chosen": None, "reason": "invalid_choice", "candidates": ["c0", "c2"], "choice": "cluster_1"},
        {"note": 6, "chosen": "c0", "reason": "routed", "candidates": ["c0", "c2"], "choice": "c0"},
    ]
    (run_dir / "memory_stats.json").write_text(json.dumps([{
        "sample_id": "s1", "turns": 7, "memories": 7, "evolutions": 2, "links": 3,
        "cluster_sizes": {"c0": 6, "c2": 1}, "routing_log": routing}]))
    modes = ["global", "global", "cluster"]
    (run_dir / "predictions.jsonl").write_text("".join(
        json.dumps({"sample_id": "s1", "question_id": f"q{i + 1}", "retrieved_ids": ["D1"],
                    "retrieval_debug": {"search_mode": mode}}) + "\n" for i, mode in enumerate(modes)))
    return run_dir


def test_every_counter_from_scripted_replies(tmp_path):
    report = health_report(make_run(tmp_path / "run"))
    note = report["by_tag"]["note"]
    assert note["calls"] == 5
    assert (note["capped"], note["capped_whitespace"], note["capped_repeat"]) == (2, 1, 1)
    assert note["unparsable"] == 3                         # both capped replies and the prose
    assert note["empty_fields"] == 1                       # the empty keyword list
    keywords = report["by_tag"]["keywords"]
    assert keywords["placeholder_copies"] == 1             # keyword4 extrapolates keyword1
    assert keywords["top_copies"] == {"keyword#, keyword#": 1}
    assert report["by_tag"]["select"]["placeholder_copies"] == 0   # ids are checked by the method
    clag = report["method"]["clag"]
    assert clag["route_example_answers"] == 1 and clag["route_example_answers_not_a_candidate"] == 1
    assert clag["selections_naming_missing_clusters"] == 1
    assert (clag["global_fallbacks"], clag["questions"]) == (2, 3)
    assert clag["cluster_sizes"] == [6, 1] and clag["singleton_clusters"] == 1
    assert report["overall"]["loops_most"] == "note"
    flags = " | ".join(report["flags"])
    assert "2 of 10 calls ran to the token cap" in flags
    assert "1 of 2 keywords replies copied the prompt's example" in flags
    assert "2 of 3 questions fell back to a global search" in flags
    assert not report["healthy"]


def test_a_healthy_run_has_no_flag(tmp_path):
    calls = [c for c in CALLS if c[3] in ("p-fine", "p-kw2", "p-sel2")]
    run = make_run(tmp_path / "run", calls)
    (run / "predictions.jsonl").write_text(json.dumps({"retrieved_ids": ["D1"],
                                                       "retrieval_debug": {"search_mode": "cluster"}}) + "\n")
    report = health_report(run, thresholds={"placeholder": 0.2})
    assert report["healthy"] and report["flags"] == []
    assert summary_line(report).endswith("— ok")


def test_thresholds_come_from_the_run_config(tmp_path):
    run = make_run(tmp_path / "run")
    (run / "config.yaml").write_text("health:\n  capped: 0.5\n  placeholder: 0.9\n  global_fallback: 0.9\n"
                                     "  unparsable: 0.9\n")
    assert health_report(run)["healthy"]


def test_a_resumed_run_gets_the_same_report(tmp_path):
    """A re-ingested stream asks its calls again (from the cache): each is counted once."""
    once = health_report(make_run(tmp_path / "once"))
    twice = health_report(make_run(tmp_path / "twice", log_twice=True))
    for report in (once, twice):
        report.pop("run")
    assert once == twice


def test_the_placeholder_list_follows_a_changed_template():
    class Reworded(OwnPrompts):
        def query_keywords(self, question, separator_word):
            return f'Keywords for: {question}\nExample reply: {{"keywords": "alpha_term, beta_term"}}'

    own, reworded = placeholders(OwnPrompts())["keywords"], placeholders(Reworded())["keywords"]
    assert "keyword#" in own and "keyword#" not in reworded
    assert "alpha_term" in reworded
    assert copied({"keywords": "alpha_term"}, reworded) == ["alpha_term"]
    assert copied({"keywords": "alpha_term"}, own) == []


def test_inputs_keys_and_offered_choices_are_not_placeholders():
    shown = placeholders(OwnPrompts())
    assert "keywords" not in shown["keywords"]            # a JSON key
    assert "strengthen" not in shown["evolve"]            # a choice the prose offers
    assert "new context" in shown["evolve"] and "tag_#" in shown["evolve"]
    assert "the one-sentence summary" in shown["profile"]


def test_the_reference_prompt_sets_placeholders(data_root):
    from eval.prompt_source import build_prompt_set

    reference = build_prompt_set({"prompts": "reference", "reference_dir": None}, {"root": str(data_root)})
    shown = placeholders(reference)
    assert "your one-sentence summary here" in shown["profile"]
    assert "keyword#" in shown["keywords"] and "new context" in shown["evolve"]


def test_a_run_without_a_call_log_reports_the_ledger(tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    (run / "ledger.json").write_text(json.dumps({"by_tag": {"note": {"calls": 10, "truncated": 4,
                                                                      "parse_failures": 3}}}))
    report = health_report(run)
    assert report["source"] == "ledger.json"
    assert report["overall"]["capped"] == 4 and not report["healthy"]


def test_the_health_command_prints_a_table_and_json(tmp_path):
    from tests.test_cli import cli

    run = make_run(tmp_path / "run")
    out = cli("health", str(run)).stdout
    assert "note" in out and "most copied" in out and "flags:" in out
    assert json.loads(cli("health", str(run), "--json").stdout)["overall"]["calls"] == 10
    missing = cli("health", str(tmp_path / "nothing"), check=False)
    assert missing.returncode != 0 and "not a run directory" in missing.stderr
    table = format_report(health_report(run))
    assert "2/3 global fallbacks" in table


@pytest.mark.parametrize("reply", ["{", '{"keywords": "x"'])
def test_a_cut_line_in_the_call_log_does_not_break_the_report(tmp_path, reply):
    run = make_run(tmp_path / "run")
    with (run / "calls.jsonl").open("a") as handle:
        handle.write(reply)                                # the run was killed mid-line
    assert health_report(run)["overall"]["calls"] == 10


def test_gam_and_memoryos_calls_have_placeholder_lists_from_their_own_templates(monkeypatch):
    from baselines import gam_prompts
    from baselines.gam import GAMMemory
    from baselines.memoryos import MemoryOSMemory
    from clag.placeholders import method_placeholders

    gam = method_placeholders(GAMMemory)
    assert "<the paragraph>" in gam["gam_memorize"] and gam["gam_follow_up"] == ["question"]
    memoryos = method_placeholders(MemoryOSMemory)
    assert "mental health" in memoryos["answer"]
    assert memoryos["memoryos_continuity"] == []            # "true" or "false": choices, not examples
    assert not any("july" in value for value in memoryos["answer"])   # a date's format, not a value
    monkeypatch.setattr(gam_prompts, "plan_prompt",
                        lambda request, memory: f'{request} {memory} Reply {{"info_needs": ["need_1"]}}')
    assert method_placeholders(GAMMemory)["gam_plan"] == ["need_#"]
    assert copied({"abstract": "<The paragraph>"}, gam["gam_memorize"]) == ["<The paragraph>"]


def test_a_failed_call_flags_the_run(tmp_path):
    """A prompt the server refused (llama.cpp: longer than a slot's context) leaves an empty reply
    and a question scored 0: any such call flags the run by default."""
    calls = [c for c in CALLS if c[3] in ("p-fine", "p-kw2", "p-sel2")]
    calls.append(("question:s1:q2", "answer", None, "p-too-long", "", "error"))
    run = make_run(tmp_path / "run", calls)
    (run / "predictions.jsonl").write_text(json.dumps({"retrieved_ids": ["D1"],
                                                       "retrieval_debug": {"search_mode": "cluster"}}) + "\n")
    report = health_report(run, thresholds={"placeholder": 0.2})
    assert report["by_tag"]["answer"]["errors"] == 1
    assert report["flags"] == ["1 of 4 calls failed (answer): those replies are empty, and their questions score 0"]
    assert "1 failed" in summary_line(report)
    assert health_report(run, thresholds={"placeholder": 0.2, "errors": 0.5})["healthy"]
