"""The README and docs/ link to each other: every relative link names a file that exists and,
where it has one, a heading anchor that file has (GitHub's slugs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+)$", text, re.M)}


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_slugs_follow_github():
    assert slug("The CPU table (`+experiment=paper_cpu`)") == "the-cpu-table-experimentpaper_cpu"
    assert slug("llama.cpp on CPU (`llm.backend=llamacpp`)") == "llamacpp-on-cpu-llmbackendllamacpp"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no heading #{anchor})")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_the_readme_is_a_five_minute_read():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move reference material into docs/"


def test_every_docs_page_is_listed_in_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in PAGES[1:] if f"(docs/{p.name})" not in readme]
    assert not missing, f"docs pages the README does not link: {missing}"
