"""The extras resolve as promised: ``[gpu]`` keeps the user's torch and brings one faiss."""

from __future__ import annotations

import json
import os
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


def test_a_wheel_runs_from_another_directory_with_its_own_configs(tmp_path, data_root):
    """``pip install .`` (not editable) gives a CLI that finds its configs and published numbers:
    the wheel is built, pip-installed into a folder, and run from an unrelated directory with
    ``python -S`` (the checkout's editable finder is loaded by a .pth file, which -S skips)."""
    import site

    wheels, target, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    import importlib.util

    # the installed setuptools when there is one; else pip fetches it into an isolated build env
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *isolation,
                    str(REPO), "-w", str(wheels)], check=True, capture_output=True, timeout=600)
    wheel = next(wheels.glob("clag_bench-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                    str(wheel)], check=True, capture_output=True, timeout=600)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), *site.getsitepackages()]),
           "CLAG_BENCH_DATA": str(data_root)}
    env.pop("CLAG_BENCH_CONFIGS", None)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-S", "-m", "eval", *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=900)

    where = subprocess.run([sys.executable, "-S", "-c", "import eval; print(eval.__file__)"], cwd=elsewhere,
                           env=env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(target)), where
    verify = cli("data", "verify")
    assert verify.returncode == 0, verify.stderr[-2000:]
    assert "locomo" in verify.stdout
    run = cli("run", "method=rag", "data=locomo", "+experiment=smoke", "llm=smollm2-135m",
              "data.subset.questions_per_sample=1", "progress=false")
    assert run.returncode == 0, run.stderr[-2000:]
    assert list((elsewhere / "results" / "runs" / "locomo" / "rag").glob("*/*/status.json"))
    tables = cli("tables", "--no-plots", "--llm", "smollm2-135m")
    assert tables.returncode == 0, tables.stderr[-2000:]
    assert "Published" in (elsewhere / "results" / "tables" / "smollm2-135m" / "README.md").read_text()
