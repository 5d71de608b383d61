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

# (start, -end, -value, term): plain tuple order is leftmost, then longest, then best value, and a
# list of them sorts in C.
Ordered = tuple[int, int, float, str]


def score_ordered(ordered: list[Ordered]) -> float:
    """The keyword score of spans given as ``(start, -end, -value, term)`` (any monotone unit)."""
    if not ordered:
        return 0.0
    ordered.sort()
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
        keep *= 1.0 - (value if 0.0 <= value <= 1.0 else _clamp(value))
    score = 1.0 - keep
    return score if 0.0 <= score <= 1.0 else _clamp(score)


def _clamp(value: float) -> float:
    """``value`` brought into [0, 1] (NaN to 0). The callers test the range inline first: two
    builtin calls per value were a fifth of scoring five hits."""
    return min(1.0, max(0.0, value))


def score_hits(hits: Iterable[KeywordHit]) -> float:
    """The keyword score of hits already found by ``DynamicLexicon.match``."""
    # Unpacking each hit reads its fields at once: five attribute reads a hit cost twice as much.
    return score_ordered(
        [(start, -end, -weight * confidence, term) for _, term, _, start, end, weight, confidence in hits]
    )
