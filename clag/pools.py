"""Thread pools that let Ctrl-C through at once.

``with ThreadPoolExecutor() as pool`` waits, on the way out, for every task already running —
a stream being ingested, or eight requests each generating up to 1,000 tokens on a server —
so a Ctrl-C would take minutes to act. These pools cancel what has not started and leave what
has: the run exits right after (``eval.app.stop_now``) and its servers are stopped.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager


@contextmanager
def interruptible_pool(workers: int, prefix: str = "") -> Iterator[ThreadPoolExecutor]:
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=prefix)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
