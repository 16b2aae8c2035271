"""The docs stay true about where things are: every file path named in README.md and docs/*.md exists,
and docs/design.md's map ("Layout") names every source file of the crate and the package."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("src", "python/tapegrad", "tests", "benches", "examples", "docs", ".ci")
# A repository path: one of the top folders, then path characters; `*` stands for any name.
_TOPS = "|".join(re.escape(t) for t in TOP)
PATH = re.compile(r"(?<![\w/.-])((?:" + _TOPS + r")/[\w./*{},-]*[\w*}])")


def _expand(path):
    """`a/{b,c}.rs` -> `a/b.rs`, `a/c.rs` (the docs' shorthand for siblings)."""
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [p for alt in m.group(1).split(",") for p in _expand(path[: m.start()] + alt.strip() + path[m.end() :])]


def _named_paths(text):
    for m in PATH.finditer(text):
        yield from _expand(m.group(1).rstrip("."))


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_path_named_in_the_docs_exists(doc):
    missing = sorted({p for p in _named_paths(doc.read_text()) if not list(ROOT.glob(p))})
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def _map_block():
    text = (ROOT / "docs" / "design.md").read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def test_design_map_names_every_source_file():
    # The map is one line per file (or folder) with its path first.
    named = set()
    for line in _map_block().splitlines():
        token = line.split(" ", 1)[0].strip()
        if token:
            named.update(_expand(token))
    files = [p.relative_to(ROOT).as_posix() for top in ("src", "python/tapegrad") for p in (ROOT / top).rglob("*")
             if p.is_file() and p.suffix in (".rs", ".py", ".pyi") and "__pycache__" not in p.parts]
    missing = sorted(f for f in files if f not in named)
    assert not missing, f"docs/design.md's map misses: {missing}"
    stale = sorted(n for n in named if n.startswith(("src/", "python/")) and not (ROOT / n).exists())
    assert not stale, f"docs/design.md's map names files that do not exist: {stale}"
