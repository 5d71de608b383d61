"""jieba's cut for the full-text indexes, done by a compiled twin of jieba where one is installed.

jieba is pure Python: cutting a chat message takes about half a millisecond and holds the GIL all
the while, so the store's writer thread, indexing a few hundred messages a second, keeps the event
loop waiting for the GIL in the middle of a context build. ``rjieba`` (jieba-rs: jieba's algorithm
and dictionary, compiled) cuts the same message about thirty times faster and releases the GIL while
it cuts.

jieba stays the reference. An index written through one must be searched through the other (an old
database, a restart without the accelerator), so the accelerator is used only while it gives
jieba's tokens: at load it must cut a set of probe sentences exactly as jieba does, or the store
keeps jieba (one log line says which and why; so does a missing or broken ``rjieba``). A text the
accelerator cannot take (a lone surrogate, which has no UTF-8 form) is cut by jieba.
``tests/store/test_segmenter.py`` holds the two to the same tokens over chat text and random strings.

Both cut without jieba's HMM guesser for unknown words (see :mod:`runtime.store.text`). Loading takes
about a second (jieba's dictionary, and rjieba's): :func:`warm_up` does it, off the event loop, at
start; otherwise the first cut does.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Callable
from typing import Any

import jieba
import structlog

jieba.setLogLevel(logging.WARNING)

log = structlog.get_logger("greywind.store")

ACCELERATOR = "rjieba"

# Cut once by both at load: words jieba splits for search, ASCII and digit runs, punctuation, emoji,
# whitespace of each kind. Any difference keeps jieba.
PROBES = (
    "我来到北京清华大学，中华人民共和国万岁！",
    "用Python3.11写爬虫, iPhone15 的 C++ 接口 100% OK",
    "今天下班以后一起去吃火锅吧😂👍 [图片] 周末爬山？",
    "研究生命的起源……小明硕士毕业于中国科学院计算所，后在日本京都大学深造",
    "a\r\nb\tc  d\n\n　全角空格 ｐｙｔｈｏｎ ①② 𠀀 U盘 B站 #1 R&D e-mail 3.14",
)

Cut = Callable[[str], list[str]]


def _jieba_cut_for_search(text: str) -> list[str]:
    return list(jieba.cut_for_search(text, HMM=False))


def _jieba_cut(text: str) -> list[str]:
    return list(jieba.cut(text, HMM=False))


class _Segmenter:
    """The two cuts in use, chosen once (thread-safe; the writer thread and the loop both cut)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded = False
        self.name = "jieba"
        self.cut_for_search: Cut = _jieba_cut_for_search
        self.cut: Cut = _jieba_cut

    def load(self, import_module: Callable[[str], Any] = importlib.import_module) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            jieba.initialize()  # the reference, and the dictionary counts runtime.context.lexical reads
            self._choose(import_module)
            self._loaded = True

    def _choose(self, import_module: Callable[[str], Any]) -> None:
        try:
            accelerator = import_module(ACCELERATOR)
            fast_search, fast_cut = (
                _guarded(accelerator.cut_for_search, _jieba_cut_for_search),
                _guarded(accelerator.cut, _jieba_cut),
            )
            differs = next(
                (
                    p
                    for p in PROBES
                    if fast_search(p) != _jieba_cut_for_search(p) or fast_cut(p) != _jieba_cut(p)
                ),
                None,
            )
        except Exception as exc:  # ImportError, or a build that cannot load or run here
            reason = f"{ACCELERATOR} unavailable: {type(exc).__name__}: {exc}"
            log.warning("store.segmenter", segmenter="jieba", reason=reason)
            return
        if differs is not None:
            reason = f"{ACCELERATOR} cuts {differs!r} differently from jieba"
            log.warning("store.segmenter", segmenter="jieba", reason=reason)
            return
        self.name, self.cut_for_search, self.cut = ACCELERATOR, fast_search, fast_cut
        log.info("store.segmenter", segmenter=ACCELERATOR)


def _guarded(fast: Callable[..., list[str]], reference: Cut) -> Cut:
    def cut(text: str) -> list[str]:
        try:
            return fast(text, hmm=False)
        except UnicodeEncodeError:  # a lone surrogate: jieba takes it as one more character
            return reference(text)
        except BaseException as exc:
            # A panic inside the compiled code surfaces as pyo3's PanicException, a BaseException:
            # the text is cut by jieba instead of the writer thread dying with it.
            if type(exc).__name__ != "PanicException":
                raise
            log.warning("store.segmenter_panic", text_chars=len(text), error=repr(exc))
            return reference(text)

    return cut


_SEGMENTER = _Segmenter()


def warm_up() -> None:
    """Load the dictionaries and choose the segmenter now (blocking, ~1 s), not on the first cut."""
    _SEGMENTER.load()


def name() -> str:
    """Which segmenter cuts: ``"rjieba"`` or ``"jieba"`` (after loading)."""
    _SEGMENTER.load()
    return _SEGMENTER.name


def cut_for_search(text: str) -> list[str]:
    """jieba's ``cut_for_search(text, HMM=False)``: each word after its dictionary sub-words."""
    _SEGMENTER.load()
    return _SEGMENTER.cut_for_search(text)


def cut(text: str) -> list[str]:
    """jieba's precise ``cut(text, HMM=False)``."""
    _SEGMENTER.load()
    return _SEGMENTER.cut(text)
