"""The extras resolve as promised: ``[gpu]`` keeps the user's torch and brings one faiss."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def resolve(extra: str, tmp_path) -> dict:
    report = tmp_path / f"{extra}.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", str(report),
                           f"{REPO}[{extra}]"], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 and ("NewConnectionError" in proc.stderr or "No matching distribution" in proc.stderr):
        pytest.skip(f"no package index reachable: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(report.read_text())


def test_the_gpu_extra_resolves_without_replacing_torch_or_a_second_faiss(tmp_path):
    pytest.importorskip("torch")          # the promise is about an installed torch
    report = resolve("gpu", tmp_path)
    installs = {item["metadata"]["name"].lower() for item in report["install"]}
    assert "torch" not in installs and "vllm" not in installs and "faiss-cpu" not in installs
    project = next(item for item in report["install"] if item["metadata"]["name"] == "clag-bench")
    requires = project["metadata"]["requires_dist"]
    unconditional = [r for r in requires if "extra ==" not in r]
    assert not any(r.startswith("faiss") for r in unconditional)
    assert any(r.startswith("faiss-gpu") and "extra == \"gpu\"" in r for r in requires)
    assert any(r.startswith("faiss-cpu") and "extra == \"cpu\"" in r for r in requires)
