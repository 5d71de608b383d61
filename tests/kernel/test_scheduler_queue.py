"""The scheduler's time queue pops exactly as one heap of the same entries would."""

from __future__ import annotations

import heapq

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.kernel.events import EventState, EventStore
from runtime.kernel.scheduler import ActivationScheduler, _TimeQueue

# Times clustered in a few spans (many ties and shared spans), spread wide, negative, and infinite.
times = st.one_of(
    st.sampled_from([0.0, 0.5, 15.9, 16.0, 16.0, 31.99, -0.5, -16.0, -17.0]),
    st.floats(min_value=-1e6, max_value=1e6),
    st.floats(allow_nan=False, allow_infinity=True),
)
# A push (an entry) or a pop (None).
steps = st.lists(st.one_of(st.tuples(times, st.integers(0, 3)), st.none()), max_size=200)


@settings(max_examples=300, deadline=None)
@given(steps=steps)
def test_pops_in_the_order_of_one_heap(steps: list[tuple[float, int] | None]) -> None:
    queue: _TimeQueue[tuple[float, int, str]] = _TimeQueue()
    heap: list[tuple[float, int, str]] = []
    for seq, step in enumerate(steps):
        if step is None:
            first = heap[0] if heap else None
            assert queue.first() == first
            if first is not None:
                assert queue.pop_until(first[0], False) is None  # not before its own time
                assert queue.pop_until(first[0], True) == heapq.heappop(heap)
        else:
            entry = (step[0], step[1], f"ev-{seq}")
            queue.push(entry)
            heapq.heappush(heap, entry)
        assert queue.size == len(heap)
    assert sorted(queue) == sorted(heap)
    rebuilt = _TimeQueue(iter(queue))
    popped = [rebuilt.pop_until(float("inf"), True) for _ in range(len(heap))]
    assert popped == [heapq.heappop(heap) for _ in range(len(heap))]
    assert rebuilt.first() is None
    assert rebuilt.pop_until(float("inf"), True) is None


def test_extreme_times_keep_their_order() -> None:
    store = EventStore()
    sched = ActivationScheduler(store)
    ids = {}
    for at in (float("inf"), 1e300, 17.0, 3.0, -1e300, float("-inf"), 16.5, 16.5):
        event = store.create(kind="message", chat_id="group:1", now=0.0, not_before=at)
        store.transition(event.id, EventState.CLASSIFIED, 0.0)
        sched.schedule(event.id, 0.0)
        ids.setdefault(at, []).append(event.id)
    assert sched.next_at() == float("-inf")
    out = [e.id for e in sched.due(1e300)]
    expected = [i for at in (float("-inf"), -1e300, 3.0, 16.5, 17.0, 1e300) for i in ids[at]]
    assert out == expected
    assert sched.next_at() == float("inf")
    assert [e.id for e in sched.due(float("inf"))] == ids[float("inf")]
