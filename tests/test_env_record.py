"""A resumed run's env.json keeps the first start's record and adds each resume's own."""

import json

from eval.results import record_resume, write_json


def test_a_resume_is_recorded_beside_the_first_start(tmp_path):
    write_json(tmp_path / "env.json", {"git": {"commit": "first", "dirty": True}, "argv": ["run"]})
    record_resume(tmp_path)
    record_resume(tmp_path)
    env = json.loads((tmp_path / "env.json").read_text())
    assert env["git"] == {"commit": "first", "dirty": True}          # the run's identity is unchanged
    assert len(env["resumes"]) == 2
    assert all({"started", "argv", "git", "packages"} <= set(r) for r in env["resumes"])
    assert env["resumes"][0]["git"]["commit"] != "first"


def test_a_run_without_an_env_record_still_gets_its_resume(tmp_path):
    record_resume(tmp_path)
    assert len(json.loads((tmp_path / "env.json").read_text())["resumes"]) == 1
