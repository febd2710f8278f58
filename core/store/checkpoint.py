"""The audit chain's head, checkpointed outside the database after every commit that appends to it.

The head row inside the database (``audit_head``) moves with the chain, so
whoever can delete the newest audit rows can move it back too, and the chain
still verifies. This file does not move back: after each commit that appended
audit rows, the new ``(seq, row_hash)`` is written here, sealed with the record
key, under an exclusive ``flock`` and only when it is newer than what the file
holds (concurrent writers never move it back either). ``audit verify`` then
checks that the chain reaches the checkpointed seq and that the row there
still has the checkpointed hash.

The checkpoint can lag the chain (a commit after the last write, a migration);
it never leads it unless rows were removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path

from core.store.keys import Keyring

__all__ = ["Checkpoint", "read_checkpoint", "write_checkpoint"]


@dataclass(frozen=True)
class Checkpoint:
    """A checkpointed audit head; ``problem`` says why it cannot be trusted (empty when it can)."""

    seq: int
    row_hash: str
    problem: str = ""


def _payload(seq: int, row_hash: str) -> str:
    return f"audit-head:{seq}:{row_hash}"


def write_checkpoint(path: Path, keyring: Keyring, seq: int, row_hash: str) -> None:
    """Record ``(seq, row_hash)`` as the audit head unless ``path`` already names a later one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(path.name + ".lock")
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        current = read_checkpoint(path, keyring)
        if current is not None and current.seq >= seq and not current.problem:
            return
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        body = {"seq": int(seq), "row_hash": row_hash, "mac": keyring.seal(_payload(seq, row_hash))}
        tmp.write_text(json.dumps(body))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)


def read_checkpoint(path: Path, keyring: Keyring) -> Checkpoint | None:
    """The checkpoint in ``path`` (``None`` when there is none yet), with ``problem`` set if its seal fails."""
    with contextlib.suppress(FileNotFoundError):
        try:
            body = json.loads(path.read_text())
            seq, row_hash, mac = int(body["seq"]), str(body["row_hash"]), str(body["mac"])
        except (ValueError, KeyError, TypeError):
            return Checkpoint(0, "", f"the audit checkpoint {path} is unreadable")
        why = keyring.check(_payload(seq, row_hash), mac)
        return Checkpoint(seq, row_hash, f"the audit checkpoint {why}" if why else "")
    return None
