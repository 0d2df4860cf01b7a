"""The CLI as a user types it (subprocesses), including its one-line errors."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO


def cli(*args, data_root=None, check=True):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if data_root is not None:
        env["CLAG_BENCH_DATA"] = str(data_root)
    proc = subprocess.run([sys.executable, "-m", "eval", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_data_verify_prints_every_dataset_with_its_counts(data_root):
    out = cli("data", "verify", data_root=data_root).stdout
    lines = out.splitlines()
    assert lines[0].startswith("locomo") and " 10 streams  5,882 turns  1,986 questions" in lines[0]
    assert "[c1:282 c2:321 c3:96 c4:841 c5:446]" in lines[0]
    assert lines[1].startswith("hotpotqa") and "8,475 turns    200 questions" in lines[1]
    assert lines[2].startswith("bioasq") and "2,724 turns    200 questions" in lines[2]
    assert "sha256 verified 6/6 files" in lines[2]
    assert lines[-1] == "3/3 datasets verified"


def test_data_verify_fails_with_a_line_per_broken_dataset(tmp_path):
    proc = cli("data", "verify", f"data.root={tmp_path}", "data.download=false", check=False)
    assert proc.returncode == 1
    assert "bioasq    FAILED  no BioASQ golden files match" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_data_export_writes_what_memory_systems_see(data_root, tmp_path):
    target = tmp_path / "hotpot.json"
    cli("data", "export", "data=hotpotqa", "data.subset.samples=1", f"out={target}", data_root=data_root)
    payload = json.loads(target.read_text())
    sample = payload["samples"][0]
    assert sample["id"] == "0" and len(sample["turns"]) == 812 and len(sample["questions"]) == 20
    assert set(sample["turns"][0]) == {"id", "speaker", "text", "timestamp", "session"}
    assert set(sample["questions"][0]) == {"id", "text", "answer", "category", "evidence", "extra"}


def test_score_prints_the_aggregate_and_writes_per_question_scores(tmp_path):
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in [
        {"prediction": "Paris", "answer": "Paris", "category": 4, "retrieved_ids": ["a", "b"], "evidence": ["a"]},
        {"prediction": "Rome", "answer": "Paris", "category": 4},
        {"prediction": "Not mentioned", "answer": "Yes", "category": 5, "true_answer": "Not mentioned"},
    ]) + "\n")
    out_file = tmp_path / "scores.jsonl"
    proc = cli("score", str(preds), "--out", str(out_file))
    overall = next(line for line in proc.stdout.splitlines() if line.startswith("overall"))
    assert overall.split()[1:4] == ["3", "33.33", "33.33"]       # n, F1, BLEU-1
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [r["scores"]["f1"] for r in rows] == [1.0, 0.0, 0.0]
    assert rows[2]["scores"]["f1_corrected"] == 1.0
    assert rows[0]["scores"]["e_precision"] == 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("score", "missing.jsonl"), "error: missing.jsonl does not exist"),
        (("run", "data=locmo"), "error: unknown data 'locmo' (did you mean 'locomo'?); valid: bioasq, hotpotqa, locomo"),
        (("run",), "error: choose a memory system with method=<name>"),
        (("run", "method=clg"), "error: unknown method 'clg' (did you mean 'clag'?); valid: amem, clag, clag_cosine,"),
        (("run", "method=rag", "llm=qwen"), "error: unknown llm 'qwen'; valid: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, qwen3-0.6b, smollm2-135m"),
        (("frobnicate",), "error: unknown command 'frobnicate'"),
        (("run", "method=rag", "llm.foo=1"), "error: Could not override 'llm.foo'. (To append to your config use"),
        (("run", "method=rag", "+llm.prompt_format=chat"),
         "error: llm.prompt_format is gone: how a prompt reaches the model is one key, profile.request_format="),
        (("run", "-m", "method=rag", "profile.request_shape=openai,sglang"),
         "error: profile.request_shape is gone: how a prompt reaches the model is one key, profile.request_format="),
    ],
)
def test_user_errors_are_one_line(args, message, tmp_path):
    proc = cli(*args, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith(message)
    assert "Traceback" not in proc.stderr


def test_score_rejects_rows_without_prediction(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"answer": "x"}\n')
    proc = cli("score", str(bad), check=False)
    assert proc.returncode == 2 and "line 1 lacks prediction" in proc.stderr


def test_multirun_runs_every_job_and_lists_the_failures(tmp_path):
    proc = cli("run", "-m", "data=locomo,bioasq", "results_root=/nonexistent-unused",
               f"hydra.sweep.dir={tmp_path}", check=False)
    assert proc.returncode == 1
    assert "#0 : data=locomo" in proc.stdout + proc.stderr and "#1 : data=bioasq" in proc.stdout + proc.stderr
    assert "sweep finished: 0 complete, 2 failed" in proc.stdout
    assert "failed #1 [data=bioasq results_root=/nonexistent-unused]: choose a memory system" in proc.stderr
    assert (tmp_path / "sweep_status.jsonl").read_text().count('"outcome": "failed"') == 2


def test_doctor_reports_what_is_ready_and_what_to_fix(data_root, tmp_path):
    ready = cli("doctor", data_root=data_root)
    assert "ok    data bioasq" in ready.stdout and "ok    llm smollm2-135m" in ready.stdout
    assert ready.stdout.strip().endswith("0 problem(s) to fix")
    memory = next(line for line in ready.stdout.splitlines() if "hf memory smollm2-135m" in line)
    assert "45 KiB of KV cache per token (float32 on cpu)" in memory and "token budget" in memory
    broken = cli("doctor", f"data.root={tmp_path}", "llm.path=/nowhere.gguf", check=False)
    assert broken.returncode == 1
    assert "FAIL  data locomo" in broken.stdout and "FAIL  llm smollm2-135m" in broken.stdout
    assert "llm.path /nowhere.gguf does not exist" in broken.stdout


def test_a_bare_command_prints_the_usage_and_fails():
    proc = subprocess.run([sys.executable, "-m", "eval"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.startswith("usage: python -m eval")


def test_a_mistyped_data_root_is_refused_and_never_created(tmp_path):
    missing = tmp_path / "no-such-root"
    proc = cli("data", "verify", f"data.root={missing}", check=False)
    assert proc.returncode == 1 or proc.returncode == 2
    assert f"data root {missing} (from data.root) does not exist" in proc.stdout + proc.stderr
    assert not missing.exists()


def test_doctor_reports_a_served_model_once_by_its_server(data_root):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = cli("doctor", "llm.backend=openai", f"llm.base_url=http://127.0.0.1:{port}/v1", data_root=data_root,
               check=False)
    lines = [line for line in proc.stdout.splitlines() if "llm smollm2-135m" in line]
    assert len(lines) == 1 and lines[0].startswith("FAIL"), proc.stdout


def test_a_bad_method_option_fails_before_any_run_directory_exists(data_root, tmp_path):
    proc = cli("run", "method=rag", "data=locomo", "+experiment=smoke", "llm=smollm2-135m",
               "method.memory.retriever=bm26",
               f"results_root={tmp_path / 'runs'}", "progress=false", data_root=data_root, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: method 'rag': retriever must be one of ('dense', 'bm25', 'hybrid'), not 'bm26'")
    assert not (tmp_path / "runs").exists()


def test_the_run_summary_names_the_request_format():
    from eval.app import prompt_form

    assert prompt_form({"profile": {"name": "reference"}}) == "raw prompts"
    # an unnamed format is the profile's own: robust (the default profile) sends chat messages
    assert prompt_form({}) == "chat messages: request format openai"
    assert prompt_form({"profile": {"request_format": "raw"}}) == "raw prompts"
    assert prompt_form({"profile": {"name": "reference", "request_format": "chat"}}) == (
        "chat messages: request format chat")
