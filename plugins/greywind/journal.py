"""The inbound journal: every message frame on disk the moment it is read, until SQLite has it.

Between the socket and the database a message waits in several places: the frame guard's backlog,
NoneBot's handling, the dispatcher's queues, the store writer's queue. Under a flood each of them
holds thousands; the writer's flush interval bounds only the last one. A ``kill -9`` (or an OOM kill,
a power cut of the container) used to lose everything in all of them.

So the frame guard's reader hands every message frame (``post_type`` ``"message"``; notices and meta
events are not journaled) to :meth:`InboundJournal.append` right after parsing it, and the journal
appends it, with the time it was read, as one line to a segment file with a single ``os.write`` on an
``O_APPEND`` descriptor. A write the process has made is in the page cache and survives the process
being killed; what a ``kill -9`` loses is only what the bot had not yet read from its socket. (A power
loss or an OS crash can still lose the page cache's last seconds: the journal is not ``fsync``-ed,
which would cost a disk flush per message.)

At start-up, before the bot serves, the edge re-delivers what the journal holds (``journal_replay``);
a message already in SQLite is skipped, so a replay never stores, ingests or answers anything twice.

Truncation. The journal is a ring of segment files (``inbound-<n>.jsonl``), a new one every
``segment_bytes``. A segment is deleted once every frame in it is *settled* and committed:

* the edge settles a frame (by its key: account, chat, message id) when it is done with it — its job
  on the dispatcher has returned (the message is in the store writer's queue), or it was a command,
  or it could not be converted, or the adapter could not parse it into a message event at all;
* at that moment the segment takes a *mark*: the number of writes handed to the store writer so far
  (``progress()[0]``). The writer commits in order, so once its committed count (``progress()[1]``)
  reaches the mark, everything the segment's frames became is in SQLite.

Frames that never reach the edge (the guard dropped them in a flood, the bot stopped before handling
them) stay unsettled; their segment is kept and replayed at the next start,
where they are settled one way or another. A clean shutdown deletes every settled segment, so it
normally leaves an empty journal.

The bound. The journal never holds more than ``max_bytes`` (plus one segment): past it the oldest
segment is deleted even if some of its frames are unsettled; those frames lose only their crash
protection (they are still on their way to the store in memory), and the loss is logged and counted.
The default bound is well above what the bot can hold in memory at once (the guard's backlog, the
dispatcher's and the writer's queues), so it is reached only by frames that will never settle.

A write that fails (a full disk) is logged, counted and shown in ``/status``; the bot carries on
without the journal's protection for that frame. A segment whose last line was torn by a crash in the
middle of a write is read up to that line; the torn line is skipped with a log line.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

__all__ = [
    "JOURNAL_DIR",
    "InboundJournal",
    "JournalEntry",
    "JournalKey",
    "JournalStatistics",
    "frame_key",
]

log = structlog.get_logger("greywind.journal")

JOURNAL_DIR = "journal"
_SEGMENT = re.compile(r"inbound-(\d{8})\.jsonl")
# A failing disk is logged on the first failure and then every this many.
_LOG_EVERY = 1_000

# (account, message type, group or user id, message id): what names one message frame.
JournalKey = tuple[str, str, str, str]


def _ident(value: Any) -> str:
    text = str(value).strip()
    return str(int(text)) if text.lstrip("-").isdigit() else text


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def frame_key(frame: Any) -> JournalKey | None:
    """The key of a message frame (a parsed OneBot event dict); None for anything else."""
    if not isinstance(frame, dict) or frame.get("post_type") != "message":
        return None
    kind = str(frame.get("message_type", ""))
    chat = frame.get("group_id") if kind == "group" else frame.get("user_id")
    return (_ident(frame.get("self_id")), kind, _ident(chat), _ident(frame.get("message_id")))


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journaled frame, as read back at start-up."""

    received_at: float  # when the bot read it (wall clock)
    frame: dict[str, Any]
    key: JournalKey


@dataclass(frozen=True, slots=True)
class JournalStatistics:
    appended: int  # frames written since start
    unsettled: int  # frames not yet settled
    segments: int
    bytes: int
    deleted_segments: int
    write_failures: int
    evicted: int  # unsettled frames whose segment was deleted at the bound
    skipped_lines: int  # lines that could not be read back (a torn write)
    last_error: str | None


@dataclass(slots=True)
class _Segment:
    number: int
    path: Path
    size: int = 0
    unsettled: int = 0
    mark: int = 0  # writes handed to the store when its last frame was settled
    sealed: bool = False


@dataclass(slots=True)
class _Counters:
    appended: int = 0
    deleted: int = 0
    failures: int = 0
    evicted: int = 0
    skipped: int = 0
    last_error: str | None = None
    waiting: dict[JournalKey, deque[_Segment]] = field(default_factory=dict)


class InboundJournal:
    """Append-only segments of message frames under ``directory``. See the module docstring."""

    def __init__(
        self,
        directory: Path,
        *,
        segment_bytes: int = 4 * 1024 * 1024,
        max_bytes: int = 256 * 1024 * 1024,
        progress: Callable[[], tuple[int, int]] = lambda: (0, 0),
        clock: Callable[[], float] = time.time,
    ) -> None:
        if segment_bytes < 1 or max_bytes < segment_bytes:
            raise ValueError("the journal needs segment_bytes >= 1 and max_bytes >= segment_bytes")
        self.directory = directory
        self._segment_bytes = segment_bytes
        self._max_bytes = max_bytes
        self._progress = progress
        self._clock = clock
        self._segments: deque[_Segment] = deque()
        self._active: _Segment | None = None
        self._fd: int | None = None
        self._torn = False  # the last write was short: the next one starts on a fresh line
        self._closed = True  # until open()
        self._c = _Counters()

    # -- start-up -------------------------------------------------------------------------------

    def open(self) -> Iterator[JournalEntry]:
        """Open a fresh segment for this run, and return what earlier runs left, oldest first, read a
        segment at a time as it is consumed. A frame read back is unsettled until the edge settles
        it, like a frame read live; a segment not yet read whole is never deleted."""
        found: list[tuple[int, Path]] = []
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            found = sorted(
                (int(m.group(1)), path)
                for path in self.directory.iterdir()
                if (m := _SEGMENT.fullmatch(path.name)) is not None
            )
        except OSError as exc:
            self._failed(exc)
        earlier = [
            _Segment(number, path, size=_size(path), unsettled=1, sealed=True) for number, path in found
        ]
        self._segments.extend(earlier)
        self._closed = False
        self._start_segment(found[-1][0] + 1 if found else 1)
        if earlier:
            log.info("journal_opened", segments=len(earlier), bytes=sum(s.size for s in earlier))
        return self._entries(earlier)

    def _entries(self, segments: list[_Segment]) -> Iterator[JournalEntry]:
        for segment in segments:
            for entry in self._read(segment.path):
                self._wait_for(entry.key, segment)
                yield entry
            segment.unsettled -= 1  # read whole: now only its frames keep it

    def _read(self, path: Path) -> Iterator[JournalEntry]:
        try:
            data = path.read_bytes()
        except OSError as exc:
            self._failed(exc)
            return
        lines = data.split(b"\n")
        if lines[-1]:
            # The last write was cut off by the crash: that frame was never wholly on disk.
            self._skip(path, len(lines), "torn", lines[-1])
        for number, line in enumerate(lines[:-1], start=1):
            if not line:
                continue
            try:
                stamp, _, raw = line.partition(b" ")
                frame = json.loads(raw)
                key = frame_key(frame)
                if key is None:
                    raise ValueError("not a message frame")
                yield JournalEntry(float(stamp), frame, key)
            except ValueError:
                self._skip(path, number, "unreadable", line)

    def _skip(self, path: Path, line: int, why: str, data: bytes) -> None:
        self._c.skipped += 1
        log.warning(
            "journal_line_skipped",
            file=path.name,
            line=line,
            why=why,
            head=data[:80].decode(errors="replace"),
        )

    # -- the reader's hook ----------------------------------------------------------------------

    def append(self, frame: Any, data: str | bytes) -> None:
        """Journal one event frame as read (``frame`` parsed, ``data`` as received). Never raises."""
        key = frame_key(frame)
        if key is None or self._closed:
            return
        if self._fd is None:  # the segment could not be opened: try again (a disk that was full)
            assert self._active is not None
            self._open_fd(self._active.path)
            if self._fd is None:
                return
        try:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            if "\n" in text:  # whitespace between JSON tokens: one frame must be one line
                text = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
            fresh = "\n" if self._torn else ""
            line = f"{fresh}{self._clock():.6f} {text}\n".encode()
            written = os.write(self._fd, line)
        except (OSError, ValueError, TypeError) as exc:
            self._failed(exc)
            return
        segment = self._active
        assert segment is not None
        segment.size += written
        if written < len(line):
            self._torn = True
            self._failed(OSError(f"short write: {written} of {len(line)} bytes"))
            return
        self._torn = False
        self._c.appended += 1
        self._wait_for(key, segment)
        if segment.size >= self._segment_bytes:
            self._rotate()

    def _failed(self, exc: BaseException) -> None:
        self._c.failures += 1
        self._c.last_error = f"{type(exc).__name__}: {exc}"
        if self._c.failures % _LOG_EVERY == 1:
            log.error("journal_write_failed", error=self._c.last_error, failures=self._c.failures)

    def _wait_for(self, key: JournalKey, segment: _Segment) -> None:
        segment.unsettled += 1
        self._c.waiting.setdefault(key, deque()).append(segment)

    # -- settling and truncation ----------------------------------------------------------------

    def settle(self, key: JournalKey | None) -> None:
        """The edge is done with the frame ``key`` (its writes, if any, are queued for the store)."""
        if key is None:
            return
        waiting = self._c.waiting.get(key)
        if not waiting:
            return
        segment = waiting.popleft()
        if not waiting:
            del self._c.waiting[key]
        segment.unsettled -= 1
        segment.mark = max(segment.mark, self._progress()[0])

    def settle_frame(self, frame: Any) -> None:
        """Settle a frame by its content: the adapter could not make a message of it."""
        self.settle(frame_key(frame))

    def retire(self) -> int:
        """Delete the oldest segments whose frames are all settled and committed; how many went.

        When that leaves only the active segment and it is done too (a lull), it is closed and
        deleted as well, so a crash after a quiet moment has nothing to replay."""
        committed = self._progress()[1]
        deleted = 0
        while self._segments:
            segment = self._segments[0]
            if segment.unsettled or segment.mark > committed:
                break
            if not segment.sealed:
                if segment.size and len(self._segments) == 1 and not self._closed:
                    self._rotate()  # seals it, then retires it
                    deleted += 1
                break
            self._delete(self._segments.popleft())
            deleted += 1
        return deleted

    def _rotate(self) -> None:
        assert self._active is not None
        self._active.sealed = True
        self._close_fd()
        self._start_segment(self._active.number + 1)
        self.retire()
        self._evict_past_bound()

    def _evict_past_bound(self) -> None:
        while len(self._segments) > 1 and self._bytes() > self._max_bytes:
            segment = self._segments.popleft()
            lost = segment.unsettled
            if lost:
                self._c.evicted += lost
                for waiting in self._c.waiting.values():
                    while segment in waiting:
                        waiting.remove(segment)
                self._c.waiting = {k: v for k, v in self._c.waiting.items() if v}
            log.warning("journal_full", segment=segment.path.name, unsettled=lost, max_bytes=self._max_bytes)
            self._delete(segment)

    def _delete(self, segment: _Segment) -> None:
        try:
            segment.path.unlink(missing_ok=True)
        except OSError as exc:
            self._failed(exc)
            return
        self._c.deleted += 1

    def _start_segment(self, number: int) -> None:
        path = self.directory / f"inbound-{number:08d}.jsonl"
        segment = _Segment(number, path)
        self._segments.append(segment)
        self._active = segment
        self._torn = False
        self._open_fd(path)

    def _open_fd(self, path: Path) -> None:
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            self._fd = None
            self._failed(exc)

    def _close_fd(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as exc:
                self._failed(exc)

    def close(self) -> None:
        """After the store's final flush: stop journaling, delete every settled, committed segment."""
        self._closed = True
        if self._active is not None:
            self._active.sealed = True
        self._close_fd()
        self.retire()
        left = sum(s.unsettled for s in self._segments)
        if left:
            log.warning("journal_kept", unsettled=left, segments=len(self._segments))

    # -- introspection --------------------------------------------------------------------------

    def _bytes(self) -> int:
        return sum(s.size for s in self._segments)

    def statistics(self) -> JournalStatistics:
        c = self._c
        return JournalStatistics(
            appended=c.appended,
            unsettled=sum(s.unsettled for s in self._segments),
            segments=len(self._segments),
            bytes=self._bytes(),
            deleted_segments=c.deleted,
            write_failures=c.failures,
            evicted=c.evicted,
            skipped_lines=c.skipped,
            last_error=c.last_error,
        )
