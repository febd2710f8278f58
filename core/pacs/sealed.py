"""Sealing the PACS's original identifiers: AES-GCM and a keyed hash, under a key kept outside the database.

The key is ``<image store root>/keys/pacs.key`` (32 random bytes, created once, mode
0600), beside the importer's identity key: a copy of the database alone opens
nothing. Two sub-keys are derived from it (HMAC-SHA256 with a label), one for
:meth:`Sealer.seal` / :meth:`Sealer.open` (AES-256-GCM from ``cryptography``, a
fresh 12-byte nonce per value, the label bound as associated data) and one for
:meth:`Sealer.keyed` (a stable HMAC, for look-ups without opening) and
:meth:`Sealer.uid` (a DICOM UID under the ``2.25`` root derived from a name, so an
exported SR gets the same UIDs every time it is sent).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from core.errors import ConfigError

__all__ = ["Sealer"]

_NONCE = 12


def _key_file(path: Path) -> bytes:
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it first
            return path.read_bytes()
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
    key = path.read_bytes()
    if len(key) != 32:
        raise ConfigError(f"The PACS key {path.name} is damaged ({len(key)} bytes, expected 32)")
    return key


class Sealer:
    """Seals, opens and hashes identifiers with the key under ``store_root/keys``."""

    def __init__(self, store_root: Path) -> None:
        key = _key_file(store_root / "keys" / "pacs.key")
        self._seal_key = hmac.new(key, b"casebook-pacs-seal", hashlib.sha256).digest()
        self._hash_key = hmac.new(key, b"casebook-pacs-hash", hashlib.sha256).digest()

    def seal(self, text: str, label: str) -> bytes:
        """``text`` encrypted and authenticated (nonce + ciphertext); ``label`` must match when opening."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = secrets.token_bytes(_NONCE)
        return nonce + AESGCM(self._seal_key).encrypt(nonce, text.encode(), label.encode())

    def open(self, sealed: bytes, label: str) -> str:
        """The text :meth:`seal` sealed under ``label``; a wrong key or label raises :class:`ConfigError`."""
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        try:
            return AESGCM(self._seal_key).decrypt(sealed[:_NONCE], sealed[_NONCE:], label.encode()).decode()
        except InvalidTag as exc:
            raise ConfigError(
                "A sealed PACS link does not open with this key",
                hint="The image store's keys/pacs.key must be the one the study was imported with.",
            ) from exc

    def keyed(self, *parts: str) -> str:
        """A keyed hash (hex) of ``parts``: equal inputs give equal hashes, and nothing can be read back."""
        return hmac.new(self._hash_key, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()

    def uid(self, *parts: str) -> str:
        """A DICOM UID ``2.25.<decimal>`` derived from ``parts`` (128 bits of the keyed hash)."""
        return "2.25." + str(int(self.keyed("uid", *parts)[:32], 16))
