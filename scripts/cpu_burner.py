"""A bounded CPU burner: a shared server's background load, for slow-CPU runs of the suite and benchmarks.

    python scripts/cpu_burner.py --procs 4 --seconds 3600 &   # holds load ~4 on top of what runs
    CASEBOOK_BURNER_PROCS=4 make test                          # (or wrap any command, see --run)

Each worker process spins on integer arithmetic at nice 0 and stops by itself after ``--seconds``
(it also stops when the parent dies), so a forgotten burner never outlives its run. With ``--run``
the burner starts, runs the given command, and stops when the command ends, returning its exit code.
It touches no file and no network.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import time


def _spin(deadline: float, parent: int) -> None:
    """Busy-loop until ``deadline`` (monotonic) or until the parent process is gone."""
    x = 1
    while time.monotonic() < deadline:
        for _ in range(200_000):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        if os.getppid() != parent:
            return


def start(procs: int, seconds: float) -> list[mp.Process]:
    """Start ``procs`` spinning processes that stop after ``seconds``."""
    deadline = time.monotonic() + seconds
    workers = [mp.Process(target=_spin, args=(deadline, os.getpid()), daemon=True) for _ in range(procs)]
    for w in workers:
        w.start()
    return workers


def stop(workers: list[mp.Process]) -> None:
    """Stop the workers now."""
    for w in workers:
        w.terminate()
    for w in workers:
        w.join(timeout=5)


def main(argv: list[str] | None = None) -> int:
    """Burn ``--procs`` cores for ``--seconds``, or for the life of the ``--run`` command."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=4, help="spinning processes (load average adds about this)")
    ap.add_argument("--seconds", type=float, default=3600.0, help="hard stop after this many seconds")
    ap.add_argument("--run", nargs=argparse.REMAINDER, help="run this command under the burner, then stop")
    args = ap.parse_args(argv)
    workers = start(args.procs, args.seconds)
    print(f"cpu_burner: {args.procs} processes for at most {args.seconds:.0f} s", file=sys.stderr, flush=True)
    try:
        if args.run:
            return subprocess.call(args.run)
        for w in workers:
            w.join()
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        stop(workers)


if __name__ == "__main__":
    sys.exit(main())
