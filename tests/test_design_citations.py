"""Every design document the code and the docs cite is in the repository, and has the cited section.

The records live in ``docs/design/`` (its README is the index). A citation is ``design/<record>``
followed by the sections it names — ``design/000 §6.3``, ``design/0002 §9–10``, ``design/001 ④ step 1``,
``design/001 layer 3``, ``design/contracts §5`` — or a Markdown link to a record followed by sections.
A bare ``§N`` refers to the record last cited with a section before it in the same file (inside a
record: to that record). Names of documents that are not in the repository fail outright.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design"
SCANNED = ("runtime", "plugins", "docs", "config", "tests", "bot.py", "README.md")
SUFFIXES = {".py", ".md", ".toml", ".sql"}

# Documents outside the repository, as the code used to name them.
FOREIGN = re.compile(
    r"\b[Ss]eeds? ?\d{3}\b|\b[Ss]eed §|\b[Tt]he seed(?:'s| leaves)|\bADR\b|DESIGN\.md|shared/seeds"
)
SECTION = r"§\d+(?:\.\d+)*(?:[–-]\d+(?:\.\d+)*)?|[①-⑳](?:\.\d+)*|layers? \d(?:[–-]\d)?|step \d"
NEXT_SECTION = re.compile(rf"(?:'s)?\s*(?:,|/|and)?\s*({SECTION})")
NAMED = re.compile(r"(?<![\w-])design/([A-Za-z0-9][\w-]*)")
LINKED = re.compile(r"\]\(([^)\s]+?\.md)(?:#[^)]*)?\)")
BARE = re.compile(r"§\d+(?:\.\d+)*(?:[–-]\d+(?:\.\d+)*)?")
HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Citation:
    where: str
    record: str  # as written
    sections: tuple[str, ...]


@cache
def records() -> dict[str, Path]:
    return {path.stem: path for path in sorted(DESIGN.glob("*.md"))}


def resolve(name: str) -> Path | None:
    """``000`` names ``000-context-runtime.md``; a full stem names its file; nothing else resolves."""
    found = records()
    if name in found:
        return found[name]
    matches = [path for stem, path in found.items() if stem.startswith(f"{name}-")]
    return matches[0] if len(matches) == 1 else None


@cache
def section_keys(text: str) -> frozenset[str]:
    """The sections a record has: its headings' numbers (``6.3``, ``④.2``), and ``layer N`` / ``step N``."""
    keys: set[str] = set()
    for heading in HEADING.findall(text):
        number = re.match(r"§?(\d+(?:\.\d+)*|[①-⑳](?:\.\d+)*)\.?(?:\s|$)", heading)
        if number:
            keys.add(number.group(1))
        keys.update(f"{kind.lower()} {n}" for kind, n in re.findall(r"\b(Layer|Step) (\d)\b", heading))
    return frozenset(keys)


def expand(section: str) -> list[str]:
    """``§9–10`` -> ``9``, ``10``; ``layers 1–2`` -> ``layer 1``, ``layer 2``; ``④`` -> ``④``."""
    word = re.match(r"(layer|step)s? (\d)(?:[–-](\d))?", section)
    if word:
        kind, first, last = word.groups()
        return [f"{kind} {n}" for n in range(int(first), int(last or first) + 1)]
    first, _, last = section.lstrip("§").replace("–", "-").partition("-")
    if last and "." not in first + last:
        return [str(n) for n in range(int(first), int(last) + 1)]
    return [first] + ([last] if last else [])


def sections_after(text: str, pos: int) -> tuple[tuple[str, ...], int]:
    found: list[str] = []
    while match := NEXT_SECTION.match(text, pos):
        found.append(match.group(1))
        pos = match.end()
    return tuple(found), pos


def citations(path: Path, text: str) -> list[Citation]:
    """The citations in one file; bare sections are given the record last cited with a section."""
    found: list[tuple[int, int, str, tuple[str, ...]]] = []  # start, end, record, sections
    for match in NAMED.finditer(text):
        sections, end = sections_after(text, match.end())
        found.append((match.start(), end, match.group(1), sections))
    for match in LINKED.finditer(text):
        target = (path.parent / match.group(1)).resolve()
        if target.parent == DESIGN:
            sections, end = sections_after(text, match.end())
            found.append((match.start(), end, target.stem, sections))
    covered = [(start, end) for start, end, _, _ in found]
    found += [
        (match.start(), match.end(), "", (match.group(0),))
        for match in BARE.finditer(text)
        if not any(start <= match.start() < end for start, end in covered)
    ]
    found.sort()
    in_record = path.parent == DESIGN
    last = path.stem if in_record else ""
    result: list[Citation] = []
    for start, _, record, sections in found:
        line = text.count("\n", 0, start) + 1
        where = f"{path.relative_to(ROOT)}:{line}"
        if record and sections and not in_record:
            last = record
        result.append(Citation(where, record or last, sections))
    return result


def scanned_files() -> list[Path]:
    this = Path(__file__).resolve()
    files: list[Path] = []
    for name in SCANNED:
        top = ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        files += [p for p in candidates if p.suffix in SUFFIXES and p.is_file() and p != this]
    return files


def problems_in(path: Path, text: str) -> list[str]:
    foreign = {
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}": m for m in FOREIGN.finditer(text)
    }
    problems = [
        f"{where}: names {m.group(0)!r}, which is not in the repository (cite docs/design/)"
        for where, m in foreign.items()
    ]
    for cite in citations(path, text):
        record = resolve(cite.record) if cite.record else None
        if record is None and not cite.record and cite.where in foreign:
            continue  # a section of the foreign document named on the same line
        if record is None:
            named = (
                f"design/{cite.record}" if cite.record else f"a bare {cite.sections[0]} (no record before it)"
            )
            problems.append(f"{cite.where}: {named} is not a record in docs/design/")
            continue
        keys = section_keys(record.read_text(encoding="utf-8"))
        problems += [
            f"{cite.where}: design/{cite.record} has no section {key!r}"
            for section in cite.sections
            for key in expand(section)
            if key not in keys
        ]
    return problems


def test_citations_name_records_and_sections_that_exist() -> None:
    problems: list[str] = []
    count = 0
    for path in scanned_files():
        text = path.read_text(encoding="utf-8")
        problems += problems_in(path, text)
        count += sum(1 for cite in citations(path, text) if cite.sections)
    assert not problems, "\n".join(problems)
    assert count >= 50  # the code cites the records throughout; finding none means the scan is broken


def test_the_index_lists_every_record() -> None:
    index = (DESIGN / "README.md").read_text(encoding="utf-8")
    listed = [path.name for stem, path in records().items() if stem != "README"]
    assert len(listed) >= 4
    missing = [name for name in listed if name not in index]
    assert not missing


def test_the_check_refuses_what_it_should() -> None:
    probe = ROOT / "docs" / "probe.md"  # never written: only its location matters for links
    good = "design/000 §6.3, design/0002 §9–10 and §13, design/001 ④ step 1, design/001 layers 1–2"
    assert problems_in(probe, good) == []
    assert problems_in(probe, "[the slots](design/000-context-runtime.md) §6.7") == []
    for bad in (
        # the old names, spelled in pieces so that a search-and-replace of them leaves these as they are
        f"{'seed'} 000 §6.3",
        f"{'ADR'}-0002 §7",
        f"{'DESIGN'}.md §5",
        "design/000 §6.9",
        "design/0002 §9–15",
        "design/001 layer 7",
        "design/0003 §1",
        "a bare §4 before any record",
        "design/000 §11 then §42",
        "[gone](design/missing.md) §1",
    ):
        assert problems_in(probe, bad), bad
