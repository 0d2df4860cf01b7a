"""What every benchmark script shares: the machine description and the JSON result file."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "results" / "bench"


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                            "processor": platform.processor() or platform.machine(),
                            "cpu_model": cpu_model(), "python": platform.python_version()}
    try:
        import torch

        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads(),
                    cuda=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    except ImportError:
        pass
    return info


def cpu_model() -> str | None:
    """The processor's name (timings differ by machine: say which CPU a figure came from)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def command() -> str:
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script.name
    return " ".join(["python", str(shown), *sys.argv[1:]])


def write_result(name: str, result: dict[str, Any], out: Path | None = None) -> Path:
    path = out or BENCH_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"benchmark": name, "command": command(), "machine": machine(), **result},
                               indent=2) + "\n")
    return path
