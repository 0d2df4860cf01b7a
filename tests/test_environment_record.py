"""What env.json says about where a run ran: enough to tell two runs' code and kernels apart."""

import subprocess

from eval.results import CPU_FLAGS, cpu_description, git_state


def test_the_cpu_is_named_with_the_features_kernels_choose_between():
    cpu = cpu_description()
    assert isinstance(cpu["model"], str) and cpu["model"]
    assert set(cpu["flags"]) <= set(CPU_FLAGS)


def test_a_dirty_tree_is_recorded_with_a_hash_of_its_changes(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    clean = git_state(tmp_path)
    assert clean["dirty"] is False and "diff_sha256" not in clean
    (tmp_path / "a.py").write_text("x = 2\n")
    first = git_state(tmp_path)
    (tmp_path / "a.py").write_text("x = 3\n")
    second = git_state(tmp_path)
    assert first["dirty"] and second["dirty"] and first["commit"] == clean["commit"]
    assert first["diff_sha256"] != second["diff_sha256"]
    (tmp_path / "a.py").write_text("x = 2\n")
    assert git_state(tmp_path)["diff_sha256"] == first["diff_sha256"]
