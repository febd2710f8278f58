"""Parse untrusted documents in a worker process with a CPU-time and memory budget per file.

One spawned worker serves an ingestion. Before each file it sets ``RLIMIT_CPU`` to the
CPU time it has used plus ``kb.parse_cpu_seconds``, and at start ``RLIMIT_AS`` to its own
size plus ``kb.parse_memory_mb``. A file that exhausts memory raises ``MemoryError``
in the worker (reported, the worker lives on); one that burns its CPU time is killed by
``SIGXCPU``; one that hangs past the wall-clock limit is killed by the parent. Each of
these becomes a :class:`~core.kb.types.FileError` for that file only, a fresh worker
takes the next file, and the app carries on.

Streamlit runs each page as ``sys.modules["__main__"]`` with the page's path as
``__file__``, and a spawned worker re-runs ``__main__`` from that path before it does
anything (``multiprocessing.spawn.prepare``): the page would run again in the worker
and die there. Workers are therefore started with a bare ``__main__``; they need
nothing from it.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import resource
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from core.config.kb import KBSettings
from core.errors import DocumentError
from core.kb.parse.sources import SourceItem
from core.kb.parse.tokens import TokenCounter
from core.kb.types import Document

__all__ = ["parse_isolated"]

Parser = Callable[[bytes, str, str, KBSettings, TokenCounter], Document]


def _vm_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


_COUNTER: list[TokenCounter] = []  # the worker's token counter, unpickled once before the limits are set


def _init(memory_mb: float, counter: TokenCounter) -> None:
    _COUNTER.append(counter)
    if memory_mb > 0:
        limit = _vm_bytes() + int(memory_mb * 1024 * 1024)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))


def _parse_one(parser: Parser, data: bytes, name: str, kb: str, settings: KBSettings) -> Document | str:
    """In the worker: the document, or the error text of a refused file."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (used + max(1, int(settings.parse_cpu_seconds)), resource.RLIM_INFINITY))
    try:
        return parser(data, name, kb, settings, _COUNTER[0])
    except DocumentError as exc:
        return str(exc)
    except MemoryError:
        return f"{name}: over the {settings.parse_memory_mb:g} MB memory budget for one document"
    except RecursionError:
        return f"{name}: nested too deeply to parse"


_START = threading.Lock()


@contextmanager
def _bare_main() -> Iterator[None]:
    """Hide the running ``__main__`` (a Streamlit page) while a worker is spawned."""
    with _START:
        main, bare = sys.modules.get("__main__"), types.ModuleType("__main__")
        sys.modules["__main__"] = bare
        try:
            yield
        finally:
            if main is not None and sys.modules.get("__main__") is bare:
                sys.modules["__main__"] = main


def _pool(settings: KBSettings, counter: TokenCounter) -> cf.ProcessPoolExecutor:
    return cf.ProcessPoolExecutor(
        max_workers=1, mp_context=mp.get_context("spawn"), initializer=_init,
        initargs=(settings.parse_memory_mb, counter),
    )  # fmt: skip


def parse_isolated(
    items: Iterable[SourceItem], parser: Parser, kb: str, settings: KBSettings, counter: TokenCounter
) -> Iterable[tuple[SourceItem, Document | None, str | None]]:
    """Yield ``(item, document, None)`` or ``(item, None, error)`` for every readable item, parsed in a worker."""
    pool: cf.ProcessPoolExecutor | None = None
    wall = settings.parse_cpu_seconds * 3 + 30  # CPU time is capped in the worker; this catches a blocked one
    try:
        for item in items:
            pool = pool or _pool(settings, counter)
            assert item.data is not None
            with _bare_main():  # a spawn pool starts its worker inside submit
                future = pool.submit(_parse_one, parser, item.data, item.name, kb, settings)
            try:
                out: Any = future.result(timeout=wall)
            except cf.process.BrokenProcessPool:
                out = f"{item.name}: over the {settings.parse_cpu_seconds:g} s CPU-time or memory budget for one document"
                pool.shutdown(wait=False, cancel_futures=True)
                pool = None
            except cf.TimeoutError:
                out = f"{item.name}: parsing took longer than {wall:g} s"
                _kill(pool)
                pool = None
            yield (item, out, None) if isinstance(out, Document) else (item, None, str(out))
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _kill(pool: cf.ProcessPoolExecutor) -> None:
    """Terminate the pool's worker (a hung parse never returns) and drop the pool."""
    for proc in list(getattr(pool, "_processes", {}).values()):
        proc.kill()
    pool.shutdown(wait=False, cancel_futures=True)

