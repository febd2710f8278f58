"""The record key: an HMAC key the database never holds, for signed reports, audit rows and image seeds.

A hash chain alone (``core.store.integrity``) shows that a row was changed only
to someone who cannot recompute the hash, and anyone who can write the
database can run the same function. So every signed report and every audit
row also carries an HMAC-SHA256 of its hash under this key, and the UID/date
seed of each imaged patient is stored encrypted under it. Someone who can
rewrite the database but cannot read the key file can no longer forge a record
that ``reports verify`` / ``audit verify`` accept, nor undo the date shift.

Where the key lives (first match wins):

1. ``CASEBOOK_RECORD_KEY``: ``kid:hex[,kid:hex...]`` (a secret manager or a container);
2. the file ``store.record_key_file`` (default ``<data_dir>/keys/records.key``), one
   ``kid:hex`` line per key, created by ``python -m core setup`` (or the first write) with
   mode 0600 in a 0700 folder.

The **last** key is the one new records are sealed with; older keys stay to verify
(and decrypt) what they sealed. Rotation: append a new line ``k2:<64 hex>`` (for
example ``python -m core records new-key``), restart the app; never delete an old
line while records sealed with it exist (docs/RELIABILITY.md, "Keyed records").
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from core.errors import ConfigError, RecordIntegrityError

__all__ = ["ENV_KEY", "Keyring", "add_key", "default_key_file"]

ENV_KEY = "CASEBOOK_RECORD_KEY"
_LINE = re.compile(r"^([A-Za-z0-9_-]{1,16}):([0-9a-f]{64})$")
_SEED_TAG = "s1"


def default_key_file(db_url: str, data_dir: Path | None = None) -> Path:
    """``<data_dir>/keys/records.key``; without settings, the SQLite file's folder (or ``./data``)."""
    if data_dir is not None:
        return data_dir / "keys" / "records.key"
    if db_url.startswith("sqlite:///") and db_url != "sqlite:///:memory:":
        return Path(db_url.removeprefix("sqlite:///")).parent / "keys" / "records.key"
    return Path("data") / "keys" / "records.key"


@dataclass(frozen=True)
class Keyring:
    """Record keys by id; the last one seals, every one verifies."""

    keys: tuple[tuple[str, bytes], ...]
    source: str = ""

    @classmethod
    def load(cls, path: Path, *, create: bool = True) -> Keyring:
        """The keys from ``CASEBOOK_RECORD_KEY`` or ``path`` (created with one new key when missing)."""
        env = os.environ.get(ENV_KEY, "").strip()
        if env:
            return cls(_parse(env.replace(",", "\n"), ENV_KEY), ENV_KEY)
        if not path.is_file():
            if not create:
                raise ConfigError(f"No record key at {path}", hint="Run `python -m core setup` to create it.")
            _create(path)
        return cls(_parse(path.read_text(), str(path)), str(path))

    @classmethod
    def ephemeral(cls) -> Keyring:
        """A random key held only in memory (an in-memory database: nothing outlives the process)."""
        return cls((("k1", secrets.token_bytes(32)),), "memory")

    @property
    def active(self) -> str:
        """The id of the key new records are sealed with."""
        return self.keys[-1][0]

    def _key(self, kid: str) -> bytes | None:
        return next((k for i, k in self.keys if i == kid), None)

    def seal(self, digest: str) -> str:
        """``kid:hmac`` of ``digest`` (a report's content hash or an audit row's hash) under the active key."""
        kid, key = self.keys[-1]
        return f"{kid}:{hmac.new(key, digest.encode(), hashlib.sha256).hexdigest()}"

    def check(self, digest: str | None, mac: str | None) -> str | None:
        """``None`` when ``mac`` seals ``digest`` under a known key, else why not (missing, unknown key, wrong)."""
        if not mac:
            return "carries no record-key seal"
        kid, _, value = mac.partition(":")
        key = self._key(kid)
        if key is None:
            return f"is sealed with key {kid!r}, which this keyring does not hold"
        want = hmac.new(key, (digest or "").encode(), hashlib.sha256).hexdigest()
        return None if hmac.compare_digest(want, value) else "has a seal that does not match (forged or changed)"

    def seal_seed(self, seed: str) -> str:
        """``seed`` encrypted for storage: ``s1:kid:nonce:cipher:tag`` (HMAC-SHA256 keystream and tag, fresh nonce)."""
        kid, key = self.keys[-1]
        nonce = secrets.token_hex(6)
        data = seed.encode()
        pad = _pad(key, nonce, len(data))
        cipher = bytes(a ^ b for a, b in zip(data, pad, strict=True)).hex()
        return f"{_SEED_TAG}:{kid}:{nonce}:{cipher}:{_tag(key, nonce, cipher)}"

    def open_seed(self, stored: str) -> str:
        """The seed :meth:`seal_seed` stored; raises :class:`RecordIntegrityError` for a key not held."""
        parts = stored.split(":")
        if len(parts) != 5 or parts[0] != _SEED_TAG:
            raise RecordIntegrityError("An image seed is stored in clear; run `python -m core setup` to migrate it")
        _, kid, nonce, cipher, tag = parts
        key = self._key(kid)
        if key is None:
            raise RecordIntegrityError(f"An image seed is sealed with key {kid!r}, which this keyring does not hold")
        if not hmac.compare_digest(tag, _tag(key, nonce, cipher)):
            raise RecordIntegrityError("An image seed does not verify under the record key (changed, or another key)")
        data = bytes.fromhex(cipher)
        return bytes(a ^ b for a, b in zip(data, _pad(key, nonce, len(data)), strict=True)).decode()


def _tag(key: bytes, nonce: str, cipher: str) -> str:
    return hmac.new(key, f"seed-tag:{nonce}:{cipher}".encode(), hashlib.sha256).hexdigest()[:24]


def _pad(key: bytes, nonce: str, n: int) -> bytes:
    out = b""
    counter = 0
    while len(out) < n:
        out += hmac.new(key, f"seed:{nonce}:{counter}".encode(), hashlib.sha256).digest()
        counter += 1
    return out[:n]


def _parse(text: str, where: str) -> tuple[tuple[str, bytes], ...]:
    keys = []
    for line in (raw.strip() for raw in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise ConfigError(f"{where}: a record key line must be 'kid:<64 hex characters>'")
        keys.append((m.group(1), bytes.fromhex(m.group(2))))
    if not keys:
        raise ConfigError(f"{where} holds no record key")
    if len({k for k, _ in keys}) != len(keys):
        raise ConfigError(f"{where}: two record keys share an id")
    return tuple(keys)


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path.parent, 0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first: use theirs
        return
    with os.fdopen(fd, "w") as fh:
        fh.write(f"k1:{secrets.token_hex(32)}\n")


def add_key(path: Path) -> str:
    """Append a new key (it becomes the active one); returns its id. The file keeps mode 0600."""
    ring = Keyring.load(path)
    n = 1 + max((int(k[1:]) for k, _ in ring.keys if k[1:].isdigit() and k.startswith("k")), default=0)
    kid = f"k{n}"
    with open(path, "a") as fh:
        fh.write(f"{kid}:{secrets.token_hex(32)}\n")
    os.chmod(path, 0o600)
    return kid
