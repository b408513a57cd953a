"""batcher.py: concurrent calls joined into one call of the function (or run in turn), each
answer handed back to its own caller, errors to the calls they belong to. A real thread pool
and event loop; the first batch is held until the others have queued, so the batches are
known."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from dedup_hbase.service.batcher import Batcher


def run(batcher_args: dict, calls: list[tuple], fn_log: list, hold: threading.Event) -> list:
    """``calls`` (items, *args) made at once, the first batch held until all are queued;
    returns each call's answer or exception."""

    async def main():
        with ThreadPoolExecutor(2) as pool:
            batcher = Batcher(executor=pool, **batcher_args)
            tasks = [asyncio.ensure_future(batcher(*call)) for call in calls]
            await asyncio.sleep(0)  # every call queued (the first batch waits on ``hold``)
            while batcher.queued < len(calls) - 1:
                await asyncio.sleep(0.001)
            hold.set()
            return await asyncio.gather(*tasks, return_exceptions=True), batcher.batches

    return asyncio.run(main())


def held_echo(log: list, hold: threading.Event):
    """A batch function that waits for ``hold``, logs its items and answers them as they are."""
    def fn(items):
        hold.wait()
        log.append(list(items))
        return list(items)
    return fn


def test_joined_calls_are_one_call_in_order_and_each_gets_its_own_answers():
    log, hold = [], threading.Event()

    def fn(items):
        hold.wait()
        log.append(list(items))
        return [x * 10 for x in items]

    answers, batches = run({"fn": fn, "max_items": 100}, [([1, 2],), ([3],), ([4, 5, 6],), ([],)], log, hold)
    assert answers == [[10, 20], [30], [40, 50, 60], []]
    assert log == [[1, 2], [3, 4, 5, 6]] and batches == 2  # the first alone, the queued ones joined


def test_a_batch_holds_at_most_max_items_unless_one_call_is_bigger():
    log, hold = [], threading.Event()
    answers, _ = run({"fn": held_echo(log, hold), "max_items": 3}, [([0],), ([1, 2],), ([3],), ([4, 5, 6, 7],), ([8],)], log, hold)
    assert answers == [[0], [1, 2], [3], [4, 5, 6, 7], [8]]
    assert log == [[0], [1, 2, 3], [4, 5, 6, 7], [8]]


def test_a_joined_batch_that_raises_raises_in_every_call_of_it():
    hold = threading.Event()

    def fn(items):
        hold.wait()
        if 3 in items:
            raise KeyError("three")
        return items

    answers, _ = run({"fn": fn, "max_items": 100}, [([1],), ([2],), ([3],)], [], hold)
    assert answers[0] == [1]
    assert all(isinstance(a, KeyError) for a in answers[1:])


def test_calls_in_turn_run_one_by_one_in_order_each_with_its_own_error():
    log, hold = [], threading.Event()

    def fn(items, flag):
        hold.wait()
        log.append((list(items), flag))
        if flag == "bad":
            raise ValueError("bad call")
        return [(x, flag) for x in items]

    calls = [([1], "a"), ([2, 3], "b"), ([4], "bad"), ([5], "c")]
    answers, batches = run({"fn": fn, "max_items": 100, "join": False}, calls, log, hold)
    assert answers[:2] == [[(1, "a")], [(2, "b"), (3, "b")]] and answers[3] == [(5, "c")]
    assert isinstance(answers[2], ValueError) and str(answers[2]) == "bad call"
    assert log == [([1], "a"), ([2, 3], "b"), ([4], "bad"), ([5], "c")] and batches == 2


def test_a_cancelled_call_is_left_out_of_its_batch():
    log, hold = [], threading.Event()

    async def main():
        with ThreadPoolExecutor(2) as pool:
            batcher = Batcher(held_echo(log, hold), pool, 100)
            first = asyncio.ensure_future(batcher([1]))
            second = asyncio.ensure_future(batcher([2]))
            third = asyncio.ensure_future(batcher([3]))
            while batcher.queued < 2:
                await asyncio.sleep(0.001)
            second.cancel()
            await asyncio.sleep(0)
            hold.set()
            return await first, await third

    assert asyncio.run(main()) == ([1], [3])
    assert log == [[1], [3]]


def test_arguments_are_refused_for_joined_calls_and_bad_sizes_up_front():
    with pytest.raises(ValueError):
        Batcher(list, None, 0)
    with ThreadPoolExecutor(1) as pool:
        batcher = Batcher(list, pool, 10)
        with pytest.raises(TypeError):
            asyncio.run(batcher([1], "x"))


def tagging(threads: list | None = None):
    """A batch function answering each item with its call's arguments, raising on an item
    "bad"; it notes the thread it runs on in ``threads``, if given."""
    def fn(items, *args):
        if threads is not None:
            threads.append(threading.current_thread().name)
        if "bad" in items:
            raise ValueError("bad item")
        return [(x, *args) for x in items]
    return fn


def run_inline(batcher_args: dict, calls: list[tuple]) -> tuple[list, list, int, int]:
    """``calls`` made in one turn of the loop with ``inline_max``: each call's answer or
    exception, the threads ``fn`` ran on, batches, inline batches."""
    threads: list[str] = []
    fn = tagging(threads)

    async def main():
        with ThreadPoolExecutor(2, thread_name_prefix="pool") as pool:
            batcher = Batcher(fn, pool, **batcher_args)
            answers = await asyncio.gather(*(batcher(*call) for call in calls), return_exceptions=True)
            return answers, batcher.batches, batcher.inline_batches

    answers, batches, inline = asyncio.run(main())
    return answers, threads, batches, inline


def test_small_batches_run_inline_on_the_loop_thread_joined_with_the_calls_of_the_same_turn():
    answers, threads, batches, inline = run_inline({"max_items": 100, "inline_max": 4}, [([1],), ([2, 3],), ([4],)])
    assert answers == [[(1,)], [(2,), (3,)], [(4,)]]
    assert threads == ["MainThread"] and batches == inline == 1


def test_a_batch_over_inline_max_goes_to_the_executor():
    answers, threads, batches, inline = run_inline({"max_items": 100, "inline_max": 2}, [([1],), ([2, 3],)])
    assert answers == [[(1,)], [(2,), (3,)]]
    assert len(threads) == 1 and threads[0].startswith("pool") and batches == 1 and inline == 0


def test_inline_ok_false_sends_a_small_batch_to_the_executor():
    answers, threads, _, inline = run_inline({"max_items": 100, "inline_max": 4, "inline_ok": lambda: False},
                                             [([1],), ([2],)])
    assert answers == [[(1,)], [(2,)]] and threads[0].startswith("pool") and inline == 0


def test_inline_batches_keep_max_items_and_errors_as_on_a_thread():
    answers, threads, batches, inline = run_inline({"max_items": 2, "inline_max": 2},
                                                   [([1],), (["bad"],), ([3],), ([4, 5],)])
    assert all(isinstance(a, ValueError) for a in answers[:2])  # joined: the batch's error is each call's
    assert answers[2:] == [[(3,)], [(4,), (5,)]]
    assert threads == ["MainThread"] * 3 and batches == inline == 3
    answers, threads, _, inline = run_inline({"max_items": 100, "inline_max": 4, "join": False},
                                             [([1], "a"), (["bad"], "b"), ([3], "c")])
    assert answers[0] == [(1, "a")] and isinstance(answers[1], ValueError) and answers[2] == [(3, "c")]
    assert threads == ["MainThread"] * 3 and inline == 1  # in turn: fn once per call, one batch
