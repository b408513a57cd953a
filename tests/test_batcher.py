"""batcher.py: concurrent calls joined into one call of the function (or run in turn), each
answer handed back to its own caller's callback, errors to the calls they belong to. A real
thread pool and event loop; the first batch is held until the others have queued, so the
batches are known."""

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from dedup_hbase.service.batcher import Batcher


def call(batcher: Batcher, items, *args) -> asyncio.Future:
    """``batcher.submit`` of ``items``: its outcome as a future (the test's own)."""
    future = asyncio.get_running_loop().create_future()

    def then(answer, error):
        future.set_exception(error) if error is not None else future.set_result(answer)
    batcher.submit(then, items, *args)
    return future


def run(batcher_args: dict, calls: list[tuple], fn_log: list, hold: threading.Event) -> list:
    """``calls`` (items, *args) made at once, the first batch held until all are queued;
    returns each call's answer or exception."""

    async def main():
        with ThreadPoolExecutor(2) as pool:
            batcher = Batcher(executor=pool, **batcher_args)
            futures = [call(batcher, *c) for c in calls]
            await asyncio.sleep(0)  # every call queued (the first batch waits on ``hold``)
            while batcher.queued < len(calls) - 1:
                await asyncio.sleep(0.001)
            hold.set()
            return await asyncio.gather(*futures, return_exceptions=True), batcher.batches

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


def test_arguments_are_refused_for_joined_calls_and_bad_sizes_up_front():
    with pytest.raises(ValueError):
        Batcher(list, None, 0)
    with ThreadPoolExecutor(1) as pool:
        batcher = Batcher(list, pool, 10)
        with pytest.raises(TypeError):
            batcher.submit(print, [1], "x")


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
            answers = await asyncio.gather(*(call(batcher, *c) for c in calls), return_exceptions=True)
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


def run_then(batcher_args: dict, calls: list[tuple]) -> tuple[list, list, list]:
    """``calls`` made in one turn of the loop by ``submit`` (a call whose first item is
    "future" through ``call``): each call's (answer, error) as its ``then`` got it, in the
    order the callbacks came, and the threads ``then`` ran on; the futures' outcomes."""
    got, threads, futures = [], [], []
    fn = tagging()

    async def main():
        with ThreadPoolExecutor(2, thread_name_prefix="pool") as pool:
            batcher = Batcher(fn, pool, **batcher_args)
            for i, c in enumerate(calls):
                if c[0][0] == "future":
                    futures.append(call(batcher, *c))
                    continue

                def then(answer, error, i=i):
                    threads.append(threading.current_thread().name)
                    got.append((i, answer, error))
                batcher.submit(then, *c)
            outcomes = await asyncio.gather(*futures, return_exceptions=True)
            while len(got) < len(calls) - len(futures):
                await asyncio.sleep(0.001)
            return outcomes

    return got, threads, asyncio.run(main())


@pytest.mark.parametrize("inline_max", [0, 100])
def test_submit_hands_each_call_its_answer_or_its_batch_error_on_the_loop_thread(inline_max):
    got, threads, outcomes = run_then({"max_items": 100, "inline_max": inline_max},
                                      [([1],), (["future", 2],), ([3, 4],)])
    assert got == [(0, [(1,)], None), (2, [(3,), (4,)], None)]  # in the order of the calls
    assert outcomes == [[("future",), (2,)]] and threads == ["MainThread"] * 2
    # without inline_max the first call starts its batch at once, alone; the others join the next
    got, _, outcomes = run_then({"max_items": 100, "inline_max": inline_max}, [([1],), (["bad"],), (["future"],)])
    assert got[0] == ((0, [(1,)], None) if inline_max == 0 else (0, None, got[0][2]))
    assert got[1][:2] == (1, None)  # joined: the batch's error is each call's
    errors = [got[1][2], outcomes[0]] + ([got[0][2]] if inline_max else [])
    assert all(type(e) is ValueError and str(e) == "bad item" for e in errors)


def test_submit_in_turn_gives_each_call_its_own_error():
    got, threads, _ = run_then({"max_items": 100, "join": False, "inline_max": 4},
                               [([1], "a"), (["bad"], "b"), ([3], "c")])
    assert [(i, answer) for i, answer, _ in got] == [(0, [(1, "a")]), (1, None), (2, [(3, "c")])]
    assert got[0][2] is None and isinstance(got[1][2], ValueError) and got[2][2] is None
    assert threads == ["MainThread"] * 3


def test_a_callback_that_raises_is_reported_and_the_other_calls_are_answered():
    got, reported = [], []

    async def main():
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, context: reported.append(context["exception"]))
        with ThreadPoolExecutor(1) as pool:
            batcher = Batcher(lambda items: list(items), pool, 100, inline_max=4)

            def bad(answer, error):
                raise RuntimeError("a bug")
            batcher.submit(bad, [1])
            batcher.submit(lambda answer, error: got.append((answer, error)), [2])
            for _ in range(3):
                await asyncio.sleep(0)

    asyncio.run(main())
    assert got == [([2], None)]
    assert [str(e) for e in reported] == ["a bug"]
