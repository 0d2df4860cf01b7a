"""Do the declared minimum versions work? Pin every dependency of ``pyproject.toml`` (and the
``cpu`` extra) to its lower bound in a fresh virtual environment and run the fast tests there.

    python scripts/check_min_versions.py            # CI runs it after the suite
    python scripts/check_min_versions.py --print    # only the pins

Python ≥ 3.11 (tomllib). torch and numpy stay the environment's own (the venv sees this
environment's site-packages behind its own): a second torch is gigabytes, and the
environment's compiled packages (torch, pyarrow, scipy) are built against its numpy, so the
pins must load beside NumPy 2 — which is why pandas, scikit-learn, matplotlib and faiss-cpu
start at their first NumPy-2 builds. Exit code: pytest's.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
#: kept from the environment: see the module docstring
KEEP = {"torch", "numpy"}


def minimum_pins(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pins = []
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["cpu"]]:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(>=|==)\s*([^,;\s]+)", requirement.strip())
        if not match:
            raise SystemExit(f"cannot read a lower bound from {requirement!r}")
        name, _, version = match.groups()
        if name.lower() not in KEEP:
            pins.append(f"{name}=={version}")
    return pins


def _normal(pin: str) -> str:
    return pin.split("==")[0].lower().replace("_", "-")


def _see_this_environment(python: str) -> None:
    """Put this interpreter's site-packages behind the new venv's own, with a ``.pth`` file.

    ``venv --system-site-packages`` would show the *base* interpreter's packages, which is not
    this environment when this script runs inside a virtual environment (CI's fresh one): torch
    would be missing. Packages pinned into the new venv come first on its path, so they win.
    """
    import sysconfig

    theirs = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(theirs) / "_parent_environment.pth").write_text("\n".join(ours) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--print", action="store_true", help="print the pins and stop")
    parser.add_argument("pytest_args", nargs="*", default=["-m", "not slow", "-q", "-p", "no:cacheprovider"])
    args = parser.parse_args()
    pins = minimum_pins()
    if args.print:
        print("\n".join(pins))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        _see_this_environment(python)
        requirements = Path(tmp) / "min.txt"
        requirements.write_text("\n".join(pins) + "\n")
        subprocess.run([python, "-m", "pip", "install", "--quiet", "-r", str(requirements)], check=True)
        frozen = subprocess.run([python, "-m", "pip", "freeze"], capture_output=True, text=True).stdout
        wanted = {_normal(p) for p in pins}
        print("minimum versions under test:", ", ".join(line for line in frozen.splitlines()
                                                        if _normal(line) in wanted))
        return subprocess.run([python, "-m", "pytest", *args.pytest_args], cwd=ROOT).returncode


if __name__ == "__main__":
    raise SystemExit(main())
