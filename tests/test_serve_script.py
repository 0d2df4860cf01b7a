"""``scripts/serve.sh`` starts what a user asked for: each engine stood in by a script that prints
its arguments (no engine runs here), so the test sees the exact command the script would exec."""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERVE = REPO / "scripts" / "serve.sh"


def _executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _serve(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    bare = tmp_path / "bin"                # only the tools the script needs, and the stand-ins
    bare.mkdir(exist_ok=True)
    for tool in ("bash", "grep", "seq"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found and not (bare / tool).exists():
            (bare / tool).symlink_to(found)
    environment = {"PATH": str(bare), "HOME": str(tmp_path / "home"), **env}
    return subprocess.run(["bash", str(SERVE), *args], capture_output=True, text=True, env=environment,
                          timeout=60)


def test_llamacpp_uses_the_server_the_install_built_when_path_has_none(tmp_path):
    cache = tmp_path / "cache"
    _executable(cache / "clag-bench" / "bin" / "llama-server", 'echo "built $@"\n')
    proc = _serve(tmp_path, "llamacpp", "m.gguf", XDG_CACHE_HOME=str(cache))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("built -m m.gguf --port 30000")


def test_llamacpp_prefers_the_configured_binary_and_says_when_there_is_none(tmp_path):
    mine = _executable(tmp_path / "mine" / "llama-server", 'echo "mine $@"\n')
    proc = _serve(tmp_path, "llamacpp", "m.gguf", LLAMA_SERVER=str(mine), XDG_CACHE_HOME=str(tmp_path / "none"))
    assert proc.stdout.startswith("mine -m m.gguf")
    missing = _serve(tmp_path, "llamacpp", "m.gguf", XDG_CACHE_HOME=str(tmp_path / "none"))
    assert missing.returncode == 2 and "bash scripts/install.sh llamaserver" in missing.stderr


def test_vllm_gets_the_structured_output_option_its_help_lists_however_long_the_help(tmp_path):
    """``--help | grep -q`` under pipefail: grep leaves at the first match, the help's writer
    dies of SIGPIPE and the probe fails — on a help longer than the pipe's buffer, as vLLM's is."""
    filler = "x" * 100
    _executable(tmp_path / "bin" / "vllm", f"""if [ "$2" = "--help=all" ]; then
  echo "  --structured-outputs-config STRUCTURED_OUTPUTS_CONFIG"
  for i in $(seq 1 5000); do echo "{filler}"; done
  exit 0
fi
echo "vllm $@"
""")
    proc = _serve(tmp_path, "vllm", "Qwen/Qwen3-0.6B", REVISION="abc")
    assert proc.returncode == 0, proc.stderr
    assert "--structured-outputs-config.backend xgrammar" in proc.stdout, proc.stdout
    assert "--guided-decoding-backend" not in proc.stdout
    assert re.search(r"--max-num-seqs 256 --revision abc$", proc.stdout.strip())


def test_the_gpu_extra_pins_the_xgrammar_the_cpu_install_pins():
    """The hf backend calls xgrammar 0.2.9's API; both installs must get that version."""
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    cpu_pin = re.search(r"xgrammar==([\w.]+)", (REPO / "scripts" / "install.sh").read_text())
    assert cpu_pin is not None
    assert f"xgrammar=={cpu_pin.group(1)}" in extras["gpu"]
