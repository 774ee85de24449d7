"""The keys that seal carriers (AES-256-GCM): configured, or created once in a private file.

The first key seals, every key opens: rotating means putting a new key first and keeping the old
ones until the carriers they sealed are no longer replayed. Several instances that share the file
(or the configured keys) open each other's carriers; a key stays the same across restarts.
"""

import base64
import binascii
import contextlib
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from proxy.defaults import CARRIER_KEYS_ENV as KEYS_ENV  # noqa: E402, F401 (the options' defaults)
from proxy.defaults import CARRIER_KEYS_FILE as KEYS_FILE  # noqa: E402, F401

MAX_KEYS = 16  # kept on rotation: older carriers stop opening (their calls then use the sentinel)
_NONCE = 12


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_key() -> str:
    return _b64(secrets.token_bytes(32))


class CarrierKeys:
    def __init__(self, keys: list[str]) -> None:
        if not keys:
            raise ValueError("at least one carrier key is needed")
        self._keys: dict[str, AESGCM] = {}
        first: bytes | None = None
        for text in keys:
            try:
                raw = _unb64(text.strip())
            except (binascii.Error, ValueError):
                raw = b""
            if len(raw) != 32:
                raise ValueError("a carrier key is 32 bytes in URL-safe base64 "
                                 "('gemini-tool-proxy carrier-key' makes one)")
            self._keys.setdefault(hashlib.sha256(raw).hexdigest()[:8], AESGCM(raw))
            first = raw if first is None else first
        self._current = next(iter(self._keys))
        self._first = first or b""

    @property
    def count(self) -> int:
        return len(self._keys)

    @classmethod
    def ephemeral(cls) -> "CarrierKeys":
        """A key for this process only (tests, embedding): carriers do not survive a restart."""
        return cls([new_key()])

    def derive(self, label: bytes) -> bytes:
        """A secret for `label` from the sealing key only: it changes when the keys are rotated (the
        inspector's sign-in cookies, auth.py, end with it) while older carriers still open."""
        return hmac.new(self._first, b"gemini-tool-proxy derive " + label, hashlib.sha256).digest()

    def seal(self, data: bytes, label: bytes) -> str:
        """`KEYID.NONCE+CIPHERTEXT` (URL-safe base64); `label` is authenticated, not stored."""
        nonce = secrets.token_bytes(_NONCE)
        sealed = self._keys[self._current].encrypt(nonce, data, label + self._current.encode())
        return f"{self._current}.{_b64(nonce + sealed)}"

    def open(self, token: str, label: bytes) -> bytes | None:
        """The sealed bytes, or None for anything forged, tampered, truncated or under an unknown key."""
        kid, _, body = token.partition(".")
        aead = self._keys.get(kid)
        if aead is None:
            return None
        try:
            raw = _unb64(body)
            return aead.decrypt(raw[:_NONCE], raw[_NONCE:], label + kid.encode())
        except (binascii.Error, ValueError, InvalidTag):
            return None


def _read(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def _write_private(path: Path, keys: list[str], replace: bool) -> None:
    """Write the keys file 0600 (never readable by others, not even for a moment), atomically;
    without `replace`, an existing file wins (FileExistsError): two instances starting at once
    end up with the same key."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)  # private, as the CA's (certs_dir.py)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("# gemini-tool-proxy carrier keys: the first seals, all open. Keep private.\n")
        f.write("\n".join(keys) + "\n")
    try:
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails if the file exists, never overwrites it
    finally:
        tmp.unlink(missing_ok=True)


def load_carrier_keys(configured: list[str], path: Path, env: dict[str, str] | None = None) -> CarrierKeys:
    """Configured keys (`--carrier-key`, `$GTP_CARRIER_KEYS`), else the keys file, made on first use."""
    keys = [k for k in configured if k.strip()]
    keys += [k for k in (env if env is not None else os.environ).get(KEYS_ENV, "").replace(",", " ").split() if k]
    if keys:
        return CarrierKeys(keys)
    if not path.exists():
        with contextlib.suppress(FileExistsError):  # another instance made it at the same moment: use theirs
            _write_private(path, [new_key()], replace=False)
    return CarrierKeys(_read(path))


def rotate(path: Path) -> CarrierKeys:
    """Put a new sealing key first in the keys file; older keys keep opening (up to MAX_KEYS)."""
    old = _read(path) if path.exists() else []
    keys = [new_key(), *old][:MAX_KEYS]
    _write_private(path, keys, replace=True)
    return CarrierKeys(keys)
