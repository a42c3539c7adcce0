"""Backend secrets sealed at rest with AES-256-GCM under a rotatable key set.

A `KeySet` holds named 256-bit keys. The first one seals; every one opens, so a
key is rotated by putting a new key first, re-encrypting the rows that
`needs_reencryption` reports, then dropping the old key.

Token format (ASCII, fits a text column)::

    v1:<kid>:<base64url(nonce[12] + ciphertext + tag[16]), unpadded>

The nonce is random per encryption (96 bits; stay well below 2**32 encryptions
per key). The authenticated data is the token header ``v1:<kid>:`` followed by
the caller's ``associated_data``, which names the row the secret belongs to
(e.g. ``b"org:<id>/secret:<name>"``): a token copied onto another row, relabelled
with another key id or altered in any way fails with `SecretDecryptionError`.

Configuration and key files use ``kid1:BASE64KEY,kid2:BASE64KEY`` (standard or
URL-safe base64, padding optional). Key material never appears in a repr or in
an error message.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import os
import re
import secrets
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from apimcp.sealing.private_files import read_private

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
MAX_KID_LENGTH = 32
TOKEN_VERSION = "v1"

_KID = re.compile(r"[A-Za-z0-9_-]{1,32}")
_TOKEN_BODY = re.compile(rb"([A-Za-z0-9_-]{1,32}):([A-Za-z0-9_-]+)")
_KEY_TEXT = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
_TO_STANDARD_ALPHABET = str.maketrans("-_", "+/")
_FORMAT_HINT = "expected 'kid:base64key[,kid:base64key...]'"


class SecretDecryptionError(Exception):
    """A token that cannot be opened: malformed, unknown key, wrong associated data or tampered.

    Its message never contains key material, plaintext or associated data.
    """


def _b64(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def _kid_problem(kid: object) -> str | None:
    """Why `kid` is not a valid key id, without echoing it (it may be misplaced key material)."""
    if not isinstance(kid, str):
        return f"key id must be a str, not {type(kid).__name__}"
    if not kid:
        return "key id is empty"
    if len(kid) > MAX_KID_LENGTH:
        return f"key id has {len(kid)} characters, at most {MAX_KID_LENGTH} are allowed"
    if not _KID.fullmatch(kid):
        return "key id may only contain A-Z, a-z, 0-9, '_' and '-'"
    return None


def _decode_key_text(text: str) -> bytes | None:
    """Standard or URL-safe base64, padding optional; None when it is not base64."""
    if not _KEY_TEXT.fullmatch(text):
        return None
    body = text.rstrip("=").translate(_TO_STANDARD_ALPHABET)
    try:
        return base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
    except binascii.Error:
        return None


def _header(kid: str) -> bytes:
    return f"{TOKEN_VERSION}:{kid}:".encode("ascii")


def _parse_token(token: bytes | str) -> tuple[str, bytes]:
    """The key id and the sealed bytes (nonce + ciphertext + tag) of a token."""
    if isinstance(token, str):
        try:
            raw = token.encode("ascii")
        except UnicodeEncodeError:
            raise SecretDecryptionError("malformed token: not ASCII") from None
    elif isinstance(token, bytes | bytearray | memoryview):
        raw = bytes(token)
    else:
        raise TypeError(f"a token is bytes or str, not {type(token).__name__}")
    version, separator, rest = raw.partition(b":")
    if not separator or version != TOKEN_VERSION.encode("ascii"):
        raise SecretDecryptionError(f"unsupported token format (expected a '{TOKEN_VERSION}:' token)")
    match = _TOKEN_BODY.fullmatch(rest)
    if match is None:
        raise SecretDecryptionError(f"malformed token (expected '{TOKEN_VERSION}:<kid>:<base64url>')")
    kid, body = match[1].decode("ascii"), match[2]
    try:
        sealed = base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
    except binascii.Error:
        raise SecretDecryptionError("malformed token: invalid base64url") from None
    if _b64(sealed) != body:
        # Unused trailing bits set: refuse, so that one sealed value has one spelling.
        raise SecretDecryptionError("malformed token: non-canonical base64url")
    if len(sealed) < NONCE_BYTES + TAG_BYTES:
        raise SecretDecryptionError("malformed token: too short")
    return kid, sealed


def token_key_id(token: bytes | str) -> str:
    """The id of the key that sealed `token` (no key needed; raises SecretDecryptionError if malformed)."""
    return _parse_token(token)[0]


def _check_associated_data(associated_data: bytes) -> bytes:
    if not isinstance(associated_data, bytes | bytearray | memoryview):
        raise TypeError(f"associated_data must be bytes, not {type(associated_data).__name__}")
    if not associated_data:
        raise ValueError("associated_data must not be empty: it binds the secret to the row that holds it")
    return bytes(associated_data)


class KeySet:
    """Named AES-256 keys: the first seals, all of them open."""

    __slots__ = ("_aeads", "_current", "_keys")

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        entries = list(keys)
        if not entries:
            raise ValueError("a KeySet needs at least one key")
        table: dict[str, bytes] = {}
        for position, (kid, key) in enumerate(entries, 1):
            problem = _kid_problem(kid)
            if problem is not None:
                raise ValueError(f"key {position}: {problem}")
            if not isinstance(key, bytes | bytearray | memoryview):
                raise TypeError(f"key {position} ({kid!r}): key must be bytes, not {type(key).__name__}")
            material = bytes(key)
            if len(material) != KEY_BYTES:
                raise ValueError(
                    f"key {position} ({kid!r}): key is {len(material)} bytes, AES-256 needs exactly {KEY_BYTES}"
                )
            if kid in table:
                raise ValueError(f"key {position}: duplicate key id {kid!r}")
            for other, other_material in table.items():
                if secrets.compare_digest(material, other_material):
                    raise ValueError(f"key {position} ({kid!r}): same key material as {other!r}")
            table[kid] = material
        self._keys = table
        self._current = entries[0][0]
        self._aeads = {kid: AESGCM(material) for kid, material in table.items()}

    # -- construction and serialisation -------------------------------------------------------

    @classmethod
    def generate(cls, kid: str | None = None) -> KeySet:
        """A set of one fresh random key; the default id is dated (``k20260130-3fa2c1``) so rotations differ."""
        if kid is None:
            kid = f"k{dt.datetime.now(dt.UTC):%Y%m%d}-{secrets.token_hex(3)}"
        return cls([(kid, AESGCM.generate_key(bit_length=KEY_BYTES * 8))])

    @classmethod
    def from_env_value(cls, text: str) -> KeySet:
        """Parse ``kid1:BASE64KEY,kid2:BASE64KEY``; errors name the item, never the key text."""
        stripped = text.strip()
        if not stripped:
            raise ValueError(f"no keys: {_FORMAT_HINT}")
        pairs: list[tuple[str, bytes]] = []
        seen: dict[str, int] = {}
        for position, raw_item in enumerate(stripped.split(","), 1):
            item = raw_item.strip()
            if not item:
                raise ValueError(f"item {position} is empty: {_FORMAT_HINT}")
            kid, separator, key_text = item.partition(":")
            if not separator:
                raise ValueError(f"item {position} has no ':' between key id and key: {_FORMAT_HINT}")
            kid, key_text = kid.strip(), key_text.strip()
            problem = _kid_problem(kid)
            if problem is not None:
                raise ValueError(f"item {position}: {problem}")
            if kid in seen:
                raise ValueError(f"item {position}: duplicate key id {kid!r} (also item {seen[kid]})")
            seen[kid] = position
            if not key_text:
                raise ValueError(f"item {position} ({kid!r}): key is empty")
            key = _decode_key_text(key_text)
            if key is None:
                raise ValueError(f"item {position} ({kid!r}): key is not valid base64")
            if len(key) != KEY_BYTES:
                raise ValueError(
                    f"item {position} ({kid!r}): key decodes to {len(key)} bytes, AES-256 needs exactly {KEY_BYTES}"
                )
            for other, other_key in pairs:
                if secrets.compare_digest(key, other_key):
                    raise ValueError(f"item {position} ({kid!r}): same key material as {other!r}")
            pairs.append((kid, key))
        return cls(pairs)

    def to_env_value(self) -> str:
        """The ``kid:base64url,...`` form `from_env_value` reads. It contains the keys: handle as a secret."""
        return ",".join(f"{kid}:{_b64(key).decode('ascii')}" for kid, key in self._keys.items())

    @classmethod
    def load_or_create(cls, path: Path) -> KeySet:
        """Read the key file at `path`, or create it with one fresh key (mode 0600, parents 0700).

        Creation never replaces a file: when another process creates it first, its keys are read
        and returned. On POSIX a file that group or others may access is refused.
        """
        path = Path(path)
        try:
            return cls._load(path)
        except FileNotFoundError:
            pass
        created = cls.generate()
        _make_private_dirs(path.parent)
        if _create_file(path, created.to_env_value() + "\n"):
            return created
        return cls._load(path)

    @classmethod
    def _load(cls, path: Path) -> KeySet:
        content = read_private(path, "key file")
        try:
            text = content.decode("ascii").strip()
        except UnicodeDecodeError:
            raise ValueError(f"key file {path} is not ASCII text") from None
        if "\n" in text or "\r" in text:
            raise ValueError(f"key file {path} must hold one line: {_FORMAT_HINT}")
        try:
            return cls.from_env_value(text)
        except ValueError as exc:
            raise ValueError(f"key file {path}: {exc}") from None

    # -- inspection ---------------------------------------------------------------------------

    @property
    def current_kid(self) -> str:
        """The id of the key new tokens are sealed with."""
        return self._current

    @property
    def kids(self) -> tuple[str, ...]:
        """Every key id, the current one first."""
        return tuple(self._keys)

    def __repr__(self) -> str:
        return f"KeySet(current={self._current!r}, kids={self.kids!r})"

    def __reduce__(self) -> NoReturn:
        raise TypeError("a KeySet cannot be pickled or copied (it would carry the keys along)")

    # -- sealing ------------------------------------------------------------------------------

    def encrypt(self, plaintext: bytes, *, associated_data: bytes) -> bytes:
        """Seal `plaintext` under the current key, bound to `associated_data`."""
        aad = _check_associated_data(associated_data)
        header = _header(self._current)
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = self._aeads[self._current].encrypt(nonce, bytes(plaintext), header + aad)
        return header + _b64(nonce + sealed)

    def decrypt(self, token: bytes | str, *, associated_data: bytes) -> bytes:
        """Open a token sealed by any key of the set; SecretDecryptionError when it cannot be."""
        aad = _check_associated_data(associated_data)
        kid, sealed = _parse_token(token)
        aead = self._aeads.get(kid)
        if aead is None:
            raise SecretDecryptionError(f"token sealed with unknown key id {kid!r}")
        try:
            return aead.decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], _header(kid) + aad)
        except InvalidTag:
            raise SecretDecryptionError(
                "token failed authentication: wrong associated data, wrong key or tampered token"
            ) from None

    def needs_reencryption(self, token: bytes | str) -> bool:
        """Whether `token` was sealed with a key other than the current one."""
        return _parse_token(token)[0] != self._current

    def reencrypt(self, token: bytes | str, *, associated_data: bytes) -> bytes:
        """Open `token` and seal its plaintext again under the current key (with a fresh nonce)."""
        return self.encrypt(self.decrypt(token, associated_data=associated_data), associated_data=associated_data)

    def encrypt_text(self, plaintext: str, *, associated_data: bytes) -> bytes:
        """`encrypt` for text, as UTF-8."""
        return self.encrypt(plaintext.encode("utf-8"), associated_data=associated_data)

    def decrypt_text(self, token: bytes | str, *, associated_data: bytes) -> str:
        """`decrypt` for text sealed by `encrypt_text`."""
        plaintext = self.decrypt(token, associated_data=associated_data)
        try:
            return plaintext.decode("utf-8")
        except UnicodeDecodeError:
            raise SecretDecryptionError("sealed value is not UTF-8 text") from None


def _make_private_dirs(directory: Path) -> None:
    """Create `directory` and its missing parents with mode 0700; existing ones are left alone."""
    missing: list[Path] = []
    current = directory
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue


def _create_file(path: Path, text: str) -> bool:
    """Write `path` with mode 0600 atomically unless it exists; False when it already did."""
    fd, temporary_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)  # mode 0600
    temporary = Path(temporary_name)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        try:
            if os.name == "nt":
                os.rename(temporary, path)  # refuses an existing target on Windows
            else:
                os.link(temporary, path)  # refuses an existing target, never exposes a partial file
        except FileExistsError:
            return False
        except OSError:  # no hard links on this file system: exclusive create instead
            return _create_file_exclusively(path, text)
        _sync_directory(path.parent)
        return True
    finally:
        temporary.unlink(missing_ok=True)


def _create_file_exclusively(path: Path, text: str) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="ascii") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    _sync_directory(path.parent)
    return True


def _sync_directory(directory: Path) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
