"""The brute-force reference the lexicon's matching tests compare against."""

from __future__ import annotations

from runtime.kernel.lexicon import (
    GLOBAL_KEY,
    DynamicLexicon,
    KeywordHit,
    LexiconKey,
    LexiconScope,
    TermStatus,
    normalize_text,
)

# The keys the matching tests spread their terms over.
GROUP = LexiconKey(LexiconScope.GROUP, "group:1")
THREAD = LexiconKey(LexiconScope.THREAD, "th-1")
KEYS = (GLOBAL_KEY, GROUP, THREAD)


def reference(lexicon: DynamicLexicon, text: str, keys: tuple[LexiconKey, ...]) -> list[tuple[object, ...]]:
    """Every occurrence of every surface, found with str.find over the normalised text."""
    normalized = normalize_text(text)
    found: list[tuple[object, ...]] = []
    for key in keys:
        for term in lexicon.terms(key):
            if term.status is TermStatus.SUPPRESSED:
                continue
            for surface in (term.text, *term.aliases):
                start = normalized.find(surface)
                while start != -1:
                    found.append((start, start + len(surface), str(key), term.text, surface))
                    start = normalized.find(surface, start + 1)
    return sorted(found)


def observed(hits: list[KeywordHit]) -> list[tuple[object, ...]]:
    """What ``match`` found, in the reference's form and order."""
    return sorted((hit.start, hit.end, str(hit.key), hit.term, hit.surface) for hit in hits)
