"""The dynamic keyword lexicon (design/0002 §7): terms per (scope, owner), Aho-Corasick matching,
learning in batches off the per-message path.

Public API::

    DynamicLexicon(settings=None, *, segmenter=None)
        add / register (-> disposer) / remove / clear / pin / suppress / get / terms / list_keys
        match(text, keys) -> list[KeywordHit]      score(text, keys) -> float in [0, 1]
        learn(text, key, now) -> list[KeywordTerm]  learn_batch(texts_by_key, now) -> LearnReport
            = apply_learning(prepare_learning(texts_by_key), now): prepare (jieba) may run in a thread
        decay(now) -> int   expire(now) -> int   snapshot() / restore(snapshots)
        take_changes() -> LexiconChanges (incremental persistence)   statistics()
    score_hits(hits) -> float                      the score of hits match() already found
    normalize_text(text) / normalize_term(text)    the normalisation both sides share
    Segmenter (protocol), JiebaSegmenter (lazy jieba), WhitespaceSegmenter

Faults: LexiconError > InvalidTerm, LexiconFull (see :mod:`.terms`).
"""

from runtime.kernel.lexicon.learning import (
    STOP_WORDS,
    JiebaSegmenter,
    LearningBatch,
    PreparedText,
    Segmenter,
    WhitespaceSegmenter,
    extract_candidates,
    is_candidate,
)
from runtime.kernel.lexicon.lexicon import Disposer, DynamicLexicon
from runtime.kernel.lexicon.normalize import normalize_term, normalize_text
from runtime.kernel.lexicon.scoring import score_hits
from runtime.kernel.lexicon.settings import LexiconSettings
from runtime.kernel.lexicon.terms import (
    GLOBAL_KEY,
    MAX_TERM_CHARS,
    InvalidTerm,
    KeywordHit,
    KeywordSnapshot,
    KeywordTerm,
    LearnReport,
    LexiconChanges,
    LexiconError,
    LexiconFull,
    LexiconKey,
    LexiconScope,
    LexiconStatistics,
    TermStatus,
)

__all__ = [
    "GLOBAL_KEY",
    "MAX_TERM_CHARS",
    "STOP_WORDS",
    "Disposer",
    "DynamicLexicon",
    "InvalidTerm",
    "JiebaSegmenter",
    "KeywordHit",
    "KeywordSnapshot",
    "KeywordTerm",
    "LearnReport",
    "LearningBatch",
    "LexiconChanges",
    "LexiconError",
    "LexiconFull",
    "LexiconKey",
    "LexiconScope",
    "LexiconSettings",
    "LexiconStatistics",
    "PreparedText",
    "Segmenter",
    "TermStatus",
    "WhitespaceSegmenter",
    "extract_candidates",
    "is_candidate",
    "normalize_term",
    "normalize_text",
    "score_hits",
]
