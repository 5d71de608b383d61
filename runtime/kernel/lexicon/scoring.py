"""How hits become one keyword score in [0, 1].

``match()`` returns every occurrence, overlapping and nested ones included. The score counts a
stretch of text once:

1. spans are chosen leftmost first, and at one start the longest: in "灰风酱" with terms 灰风 and 灰风酱
   only 灰风酱 counts; in "原神启动" with 原神 and 神启 only 原神 counts;
2. a span found under several keys (the same word in the global and the group lexicon) takes the best
   ``weight × confidence`` among them;
3. each distinct term counts once, with its best value, however often it occurs;
4. the score is the noisy-or of those values, ``1 − ∏(1 − value)``: one strong term gives its own
   value, more terms raise it toward 1, and it never leaves [0, 1].
"""

from __future__ import annotations

from collections.abc import Iterable

from runtime.kernel.lexicon.terms import KeywordHit

# (start, end, term, value), end exclusive; any monotone unit of position will do.
Span = tuple[int, int, str, float]


def score_spans(spans: list[Span]) -> float:
    """The keyword score of ``spans`` under the rules in this module's docstring."""
    if not spans:
        return 0.0
    # Leftmost, then longest, then best value first; plain tuple order sorts in C.
    ordered = sorted([(start, -end, -value, term) for start, end, term, value in spans])
    best: dict[str, float] = {}
    covered_to = -1
    for start, neg_end, neg_value, term in ordered:
        if start < covered_to:
            continue
        covered_to = -neg_end
        if -neg_value > best.get(term, -1.0):
            best[term] = -neg_value
    keep = 1.0
    for value in best.values():
        keep *= 1.0 - min(1.0, max(0.0, value))
    return min(1.0, max(0.0, 1.0 - keep))


def score_hits(hits: Iterable[KeywordHit]) -> float:
    """The keyword score of hits already found by ``DynamicLexicon.match``."""
    return score_spans([(hit.start, hit.end, hit.term, hit.weight * hit.confidence) for hit in hits])
