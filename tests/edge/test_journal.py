"""The inbound journal: segments, settling and truncation, torn lines, the bound, failing writes."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from plugins.greywind import journal as journal_module
from plugins.greywind.journal import InboundJournal, frame_key
from tests.support import onebot_events as ob

SELF_ID = 10_000


class Progress:
    """Stands for the store writer's counters: writes handed over, writes committed."""

    def __init__(self) -> None:
        self.handed = 0
        self.committed = 0

    def __call__(self) -> tuple[int, int]:
        return self.handed, self.committed


def frame(n: int, *, group: int = 1, text: str = "") -> dict[str, Any]:
    return ob.group_message(
        self_id=SELF_ID, group_id=group, user_id=7, message_id=n, message=[ob.text(text or f"消息{n}")]
    )


def append(journal: InboundJournal, payload: dict[str, Any], raw: str | None = None) -> None:
    journal.append(payload, raw if raw is not None else json.dumps(payload, ensure_ascii=False))


def segments(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_frames_come_back_in_order_with_the_time_they_were_read(tmp_path: Path) -> None:
    clock = iter(range(100, 200))
    journal = InboundJournal(tmp_path, segment_bytes=600, max_bytes=10**6, clock=lambda: float(next(clock)))
    assert list(journal.open()) == []
    for n in range(10):
        append(journal, frame(n))
    # Not journaled: API results never reach the hook; other events are not messages.
    append(journal, ob.notice("group_recall", self_id=SELF_ID, group_id=1, message_id=3))
    append(journal, {"post_type": "meta_event", "meta_event_type": "heartbeat", "self_id": SELF_ID})
    assert len(segments(tmp_path)) > 2  # rotated by size
    journal.close()  # nothing settled: everything is kept

    again = InboundJournal(tmp_path, segment_bytes=600, max_bytes=10**6)
    entries = list(again.open())
    assert [e.frame["message_id"] for e in entries] == list(range(10))
    assert [e.received_at for e in entries] == [float(t) for t in range(100, 110)]
    assert entries[3].key == frame_key(frame(3)) == (str(SELF_ID), "group", "1", "3")


def test_a_frame_with_newlines_is_one_line(tmp_path: Path) -> None:
    journal = InboundJournal(tmp_path)
    journal.open()
    payload = frame(1, text="第一行\n第二行")
    append(journal, payload, raw=json.dumps(payload, ensure_ascii=False, indent=2))
    journal.close()
    (entry,) = list(InboundJournal(tmp_path).open())
    assert entry.frame["message"][0]["data"]["text"] == "第一行\n第二行"


def test_a_segment_goes_once_its_frames_are_settled_and_committed(tmp_path: Path) -> None:
    progress = Progress()
    journal = InboundJournal(tmp_path, segment_bytes=600, max_bytes=10**6, progress=progress)
    journal.open()
    for n in range(6):
        append(journal, frame(n))
    before = segments(tmp_path)
    lines = (tmp_path / before[0]).read_text().splitlines()
    first_ids = [json.loads(line.split(" ", 1)[1])["message_id"] for line in lines]
    # Settled, but the store has not committed what they became: kept.
    for n in first_ids:
        progress.handed += 1
        journal.settle(frame_key(frame(n)))
    assert journal.retire() == 0
    assert segments(tmp_path) == before
    progress.committed = progress.handed
    assert journal.retire() == 1
    assert segments(tmp_path) == before[1:]
    # A clean shutdown after everything is settled and committed leaves an empty journal.
    for n in range(6):
        journal.settle(frame_key(frame(n)))
    journal.close()
    assert segments(tmp_path) == []
    assert journal.statistics().unsettled == 0


def test_an_unsettled_frame_keeps_its_segment_through_a_clean_shutdown(tmp_path: Path) -> None:
    journal = InboundJournal(tmp_path)
    journal.open()
    append(journal, frame(1))
    append(journal, frame(2))
    journal.settle(frame_key(frame(1)))
    journal.close()
    entries = list(InboundJournal(tmp_path).open())
    assert [e.frame["message_id"] for e in entries] == [1, 2]  # the segment is read whole


def test_a_torn_last_line_is_skipped_with_a_log_line(tmp_path: Path) -> None:
    journal = InboundJournal(tmp_path)
    journal.open()
    append(journal, frame(1))
    append(journal, frame(2))
    journal.close()
    (name,) = segments(tmp_path)
    with (tmp_path / name).open("ab") as f:
        f.write(b'1700000000.000000 {"post_type": "message", "self_id": 10000, "mess')  # killed mid-write
    with capture_logs() as logs:
        entries = list(InboundJournal(tmp_path).open())
    assert [e.frame["message_id"] for e in entries] == [1, 2]
    (skipped,) = [r for r in logs if r["event"] == "journal_line_skipped"]
    assert skipped["why"] == "torn"


def test_a_garbled_line_is_skipped_and_the_rest_read(tmp_path: Path) -> None:
    path = tmp_path / "inbound-00000001.jsonl"
    good = json.dumps(frame(5))
    path.write_text(f"1.0 {good}\nnot a frame at all\n2.0 {good.replace('5', '6')}\n")
    with capture_logs() as logs:
        journal = InboundJournal(tmp_path)
        entries = list(journal.open())
    assert [e.frame["message_id"] for e in entries] == [5, 6]
    assert [r["why"] for r in logs if r["event"] == "journal_line_skipped"] == ["unreadable"]
    assert journal.statistics().skipped_lines == 1


def test_past_the_bound_the_oldest_segment_goes_and_is_counted(tmp_path: Path) -> None:
    journal = InboundJournal(tmp_path, segment_bytes=1_000, max_bytes=3_000)
    journal.open()
    with capture_logs() as logs:
        for n in range(60):  # never settled: a store that stopped committing
            append(journal, frame(n))
    stats = journal.statistics()
    assert stats.bytes <= 3_000 + 1_000
    assert stats.evicted > 0
    assert stats.appended == 60
    assert stats.unsettled == 60 - stats.evicted
    assert any(r["event"] == "journal_full" for r in logs)
    journal.close()
    kept = [
        e.frame["message_id"]
        for e in list(InboundJournal(tmp_path, segment_bytes=1_000, max_bytes=3_000).open())
    ]
    assert kept == list(range(60 - len(kept), 60))  # the newest survive


def test_a_failing_disk_is_counted_and_never_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = InboundJournal(tmp_path)
    journal.open()
    append(journal, frame(1))

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal_module.os, "write", full)
    with capture_logs() as logs:
        for n in range(2, 5):
            append(journal, frame(n))
    stats = journal.statistics()
    assert stats.write_failures == 3
    assert "No space left" in (stats.last_error or "")
    assert [r["event"] for r in logs] == ["journal_write_failed"]  # logged once, not per frame
    monkeypatch.undo()
    append(journal, frame(5))
    journal.close()
    assert [e.frame["message_id"] for e in list(InboundJournal(tmp_path).open())] == [1, 5]


def test_a_short_write_does_not_swallow_the_next_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = InboundJournal(tmp_path)
    journal.open()
    real = os.write

    def short(fd: int, data: bytes) -> int:
        return real(fd, data[:20])

    monkeypatch.setattr(journal_module.os, "write", short)
    append(journal, frame(1))
    monkeypatch.undo()
    append(journal, frame(2))
    journal.close()
    with capture_logs():
        entries = list(InboundJournal(tmp_path).open())
    assert [e.frame["message_id"] for e in entries] == [2]


def test_in_a_lull_the_active_segment_goes_too(tmp_path: Path) -> None:
    progress = Progress()
    journal = InboundJournal(tmp_path, progress=progress)
    journal.open()
    append(journal, frame(1))
    append(journal, frame(2))
    progress.handed = 1  # frame 1's message is queued for the store, then settled
    journal.settle(frame_key(frame(1)))
    progress.committed = 1
    assert journal.retire() == 0  # frame 2 is still on its way
    progress.handed = 2
    journal.settle(frame_key(frame(2)))
    assert journal.retire() == 0  # handed to the store, not yet committed
    progress.committed = 2
    assert journal.retire() == 1
    # A kill now leaves nothing to replay; the journal goes on in a fresh segment.
    assert list(InboundJournal(tmp_path).open()) == []
    append(journal, frame(3))
    journal.close()
    assert [e.frame["message_id"] for e in list(InboundJournal(tmp_path).open())] == [3]


def test_segments_left_by_a_crash_go_only_once_replayed_and_settled(tmp_path: Path) -> None:
    journal = InboundJournal(tmp_path, segment_bytes=600, max_bytes=10**6)
    journal.open()
    for n in range(6):
        append(journal, frame(n))
    # (killed here)
    left = segments(tmp_path)
    again = InboundJournal(tmp_path, segment_bytes=600, max_bytes=10**6)
    entries = again.open()
    assert again.retire() == 0  # not read yet: kept
    first = next(entries)
    again.settle(first.key)
    assert again.retire() == 0
    for entry in entries:
        again.settle(entry.key)
    assert again.retire() == len(left)
    assert segments(tmp_path) == [f"inbound-{int(left[-1][8:16]) + 1:08d}.jsonl"]
