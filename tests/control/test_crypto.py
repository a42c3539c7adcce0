"""Secrets sealed at rest: AES-256-GCM tokens, key rotation, key parsing and the key file."""

from __future__ import annotations

import base64
import copy
import os
import pickle
import re
import stat
from pathlib import Path

import pytest

from apimcp.control.crypto import KeySet, SecretDecryptionError, token_key_id

AD = b"org:01hx/secret:github"
KEY_A = bytes(range(32))
KEY_B = bytes(range(100, 132))
# Both alphabets and both paddings: KEY_A has neither '+' nor '/', KEY_C has both.
KEY_C = bytes([0xFB, 0xEF, 0xFF] * 10 + [0xFE, 0xFF])
POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def _std(key: bytes) -> str:
    return base64.b64encode(key).decode()


def _url(key: bytes) -> str:
    return base64.urlsafe_b64encode(key).decode().rstrip("=")


def _key_spellings(key: bytes) -> list[str]:
    return [_std(key), _url(key), _std(key).rstrip("="), key.hex(), repr(key)]


def _body(token: bytes) -> bytes:
    text = token.split(b":", 2)[2]
    return base64.urlsafe_b64decode(text + b"=" * (-len(text) % 4))


def _with_body(token: bytes, body: bytes) -> bytes:
    head = token.rsplit(b":", 1)[0]
    return head + b":" + base64.urlsafe_b64encode(body).rstrip(b"=")


@pytest.fixture
def keys() -> KeySet:
    return KeySet([("k1", KEY_A)])


# -- sealing and opening ---------------------------------------------------------------------


@pytest.mark.parametrize("plaintext", [b"", b"s3cr3t", bytes(range(256)) * 40])
def test_round_trip(keys: KeySet, plaintext: bytes) -> None:
    token = keys.encrypt(plaintext, associated_data=AD)
    assert keys.decrypt(token, associated_data=AD) == plaintext
    assert keys.decrypt(token.decode("ascii"), associated_data=AD) == plaintext  # as read from a text column


def test_text_round_trip(keys: KeySet) -> None:
    token = keys.encrypt_text("pässwörd ✓", associated_data=AD)
    assert keys.decrypt_text(token, associated_data=AD) == "pässwörd ✓"
    assert keys.decrypt(token, associated_data=AD) == "pässwörd ✓".encode()


def test_decrypt_text_refuses_non_utf8(keys: KeySet) -> None:
    token = keys.encrypt(b"\xff\xfe", associated_data=AD)
    with pytest.raises(SecretDecryptionError, match="UTF-8"):
        keys.decrypt_text(token, associated_data=AD)


def test_token_is_ascii_and_names_its_key(keys: KeySet) -> None:
    plaintext = b"hunter2"
    token = keys.encrypt(plaintext, associated_data=AD)
    text = token.decode("ascii")
    assert re.fullmatch(r"v1:k1:[A-Za-z0-9_-]+", text)
    assert token_key_id(token) == "k1"
    assert len(_body(token)) == 12 + len(plaintext) + 16
    assert plaintext not in token
    assert AD not in token


def test_equal_plaintexts_get_different_nonces(keys: KeySet) -> None:
    first = keys.encrypt(b"same", associated_data=AD)
    second = keys.encrypt(b"same", associated_data=AD)
    assert first != second
    assert _body(first)[:12] != _body(second)[:12]


def test_associated_data_must_be_given(keys: KeySet) -> None:
    with pytest.raises(ValueError, match="associated_data"):
        keys.encrypt(b"x", associated_data=b"")
    token = keys.encrypt(b"x", associated_data=AD)
    with pytest.raises(ValueError, match="associated_data"):
        keys.decrypt(token, associated_data=b"")


def test_wrong_associated_data_fails(keys: KeySet) -> None:
    token = keys.encrypt(b"s3cr3t", associated_data=AD)
    with pytest.raises(SecretDecryptionError, match="authentication") as caught:
        keys.decrypt(token, associated_data=b"org:01hx/secret:gitlab")
    assert b"s3cr3t".decode() not in str(caught.value)
    assert AD.decode() not in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


@pytest.mark.parametrize("index", [0, 11, 12, 13, -17, -1], ids=["nonce0", "nonce11", "ct0", "ct1", "tag0", "tag15"])
def test_tampered_byte_fails(keys: KeySet, index: int) -> None:
    token = keys.encrypt(b"s3cr3t-value", associated_data=AD)
    body = bytearray(_body(token))
    body[index] ^= 0x01
    with pytest.raises(SecretDecryptionError, match="authentication"):
        keys.decrypt(_with_body(token, bytes(body)), associated_data=AD)


def test_tampered_character_fails(keys: KeySet) -> None:
    token = bytearray(keys.encrypt(b"s3cr3t-value", associated_data=AD))
    middle = len(token) - 10
    token[middle] = ord("A") if token[middle] != ord("A") else ord("B")
    with pytest.raises(SecretDecryptionError):
        keys.decrypt(bytes(token), associated_data=AD)


def test_non_canonical_base64_is_refused(keys: KeySet) -> None:
    token = keys.encrypt(b"x", associated_data=AD)  # 29 sealed bytes: the last character has 2 unused bits
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    last = alphabet[alphabet.index(token[-1:]) ^ 0x01]
    twin = token[:-1] + bytes([last])
    assert _body(twin) == _body(token)
    with pytest.raises(SecretDecryptionError, match="non-canonical"):
        keys.decrypt(twin, associated_data=AD)


@pytest.mark.parametrize("cut", [1, 5, 20, 40])
def test_truncated_token_fails(keys: KeySet, cut: int) -> None:
    token = keys.encrypt(b"s3cr3t-value", associated_data=AD)
    with pytest.raises(SecretDecryptionError):
        keys.decrypt(token[:-cut], associated_data=AD)


@pytest.mark.parametrize(
    "token",
    [b"", b"v1", b"v1:", b"v1:k1", b"v1:k1:", b"v1::AAAA", b"v1:k.1:" + b"A" * 40, b"v1:k1:" + b"A" * 37 + b"=",
     b"v1:k1:" + b"A" * 40 + b"\n", b"v1:k1:" + b"A" * 41, "v1:k1:ÄÄÄ"],
    ids=["empty", "version-only", "no-kid", "no-body", "empty-body", "empty-kid", "bad-kid", "padding",
         "newline", "impossible-length", "non-ascii"],
)  # fmt: skip
def test_malformed_tokens_fail(keys: KeySet, token: bytes | str) -> None:
    with pytest.raises(SecretDecryptionError, match="token"):
        keys.decrypt(token, associated_data=AD)


@pytest.mark.parametrize("version", [b"v2", b"v0", b"V1", b"1"])
def test_other_format_versions_fail(keys: KeySet, version: bytes) -> None:
    token = keys.encrypt(b"s3cr3t", associated_data=AD)
    other = version + token[2:]
    with pytest.raises(SecretDecryptionError, match="unsupported token format"):
        keys.decrypt(other, associated_data=AD)
    with pytest.raises(SecretDecryptionError):
        keys.needs_reencryption(other)


def test_unknown_kid_fails(keys: KeySet) -> None:
    token = KeySet([("elsewhere", KEY_B)]).encrypt(b"s3cr3t", associated_data=AD)
    with pytest.raises(SecretDecryptionError, match="unknown key id 'elsewhere'"):
        keys.decrypt(token, associated_data=AD)


def test_same_kid_other_key_fails(keys: KeySet) -> None:
    token = KeySet([("k1", KEY_B)]).encrypt(b"s3cr3t", associated_data=AD)
    with pytest.raises(SecretDecryptionError, match="authentication"):
        keys.decrypt(token, associated_data=AD)


def test_relabelled_kid_fails() -> None:
    both = KeySet([("k1", KEY_A), ("k2", KEY_B)])
    token = both.encrypt(b"s3cr3t", associated_data=AD)
    with pytest.raises(SecretDecryptionError):
        both.decrypt(token.replace(b"v1:k1:", b"v1:k2:", 1), associated_data=AD)


def test_token_of_wrong_type_is_a_type_error(keys: KeySet) -> None:
    with pytest.raises(TypeError):
        keys.decrypt(None, associated_data=AD)  # type: ignore[arg-type]


# -- rotation --------------------------------------------------------------------------------


def test_rotation() -> None:
    old = KeySet([("old", KEY_A)])
    token = old.encrypt_text("s3cr3t", associated_data=AD)
    rotated = KeySet([("new", KEY_B), ("old", KEY_A)])
    assert rotated.current_kid == "new"
    assert rotated.kids == ("new", "old")

    assert rotated.decrypt_text(token, associated_data=AD) == "s3cr3t"
    assert rotated.needs_reencryption(token)

    fresh = rotated.reencrypt(token, associated_data=AD)
    assert fresh.startswith(b"v1:new:")
    assert token_key_id(fresh) == "new"
    assert not rotated.needs_reencryption(fresh)
    assert rotated.decrypt_text(fresh, associated_data=AD) == "s3cr3t"
    assert KeySet([("new", KEY_B)]).decrypt_text(fresh, associated_data=AD) == "s3cr3t"
    with pytest.raises(SecretDecryptionError, match="unknown key id 'new'"):
        old.decrypt(fresh, associated_data=AD)


def test_reencrypt_checks_associated_data() -> None:
    token = KeySet([("old", KEY_A)]).encrypt(b"s3cr3t", associated_data=AD)
    rotated = KeySet([("new", KEY_B), ("old", KEY_A)])
    with pytest.raises(SecretDecryptionError):
        rotated.reencrypt(token, associated_data=b"org:other/secret:github")


def test_reencrypt_under_the_current_key_gives_a_fresh_token(keys: KeySet) -> None:
    token = keys.encrypt(b"s3cr3t", associated_data=AD)
    assert not keys.needs_reencryption(token)
    again = keys.reencrypt(token, associated_data=AD)
    assert again != token
    assert keys.decrypt(again, associated_data=AD) == b"s3cr3t"


# -- constructing key sets -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "error", "message"),
    [
        ([], ValueError, "at least one key"),
        ([("", KEY_A)], ValueError, "key 1: key id is empty"),
        ([("k" * 33, KEY_A)], ValueError, "33 characters"),
        ([("k.1", KEY_A)], ValueError, "may only contain"),
        ([("k1", KEY_A[:16])], ValueError, "16 bytes"),
        ([("k1", KEY_A + b"\0")], ValueError, "33 bytes"),
        ([("k1", KEY_A), ("k1", KEY_B)], ValueError, "key 2: duplicate key id 'k1'"),
        ([("k1", KEY_A), ("k2", KEY_A)], ValueError, "same key material as 'k1'"),
        ([("k1", _std(KEY_A))], TypeError, "must be bytes, not str"),
        ([(1, KEY_A)], ValueError, "must be a str"),
    ],
)
def test_constructor_refusals(entries: list[tuple[str, bytes]], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=re.escape(message)) as caught:
        KeySet(entries)
    for spelling in _key_spellings(KEY_A) + _key_spellings(KEY_A[:16]):
        assert spelling not in str(caught.value)


def test_longest_kid_and_every_allowed_character() -> None:
    kid = "Az09_-" + "x" * 26
    assert KeySet([(kid, KEY_A)]).kids == (kid,)


def test_repr_and_str_hide_keys() -> None:
    keys = KeySet([("new", KEY_C), ("old", KEY_A)])
    assert repr(keys) == "KeySet(current='new', kids=('new', 'old'))"
    for text in (repr(keys), str(keys), f"{keys}", f"{keys!r}"):
        for spelling in _key_spellings(KEY_A) + _key_spellings(KEY_C):
            assert spelling not in text


def test_key_sets_cannot_be_pickled_or_copied() -> None:
    keys = KeySet([("k1", KEY_A)])
    with pytest.raises(TypeError):
        pickle.dumps(keys)
    with pytest.raises(TypeError):
        copy.copy(keys)


def test_generate() -> None:
    first, second = KeySet.generate(), KeySet.generate()
    assert re.fullmatch(r"k\d{8}-[0-9a-f]{6}", first.current_kid)
    assert first.to_env_value() != second.to_env_value()
    assert KeySet.generate("primary").kids == ("primary",)
    with pytest.raises(ValueError, match="may only contain"):
        KeySet.generate("bad kid")


# -- the kid:base64key format ----------------------------------------------------------------


def test_env_value_round_trip() -> None:
    keys = KeySet([("new", KEY_C), ("old", KEY_A)])
    value = keys.to_env_value()
    assert value == f"new:{_url(KEY_C)},old:{_url(KEY_A)}"
    again = KeySet.from_env_value(value)
    assert again.kids == ("new", "old")
    assert again.to_env_value() == value
    token = keys.encrypt(b"s3cr3t", associated_data=AD)
    assert again.decrypt(token, associated_data=AD) == b"s3cr3t"


@pytest.mark.parametrize(
    "spelling",
    [_std(KEY_C), _std(KEY_C).rstrip("="), _url(KEY_C), _url(KEY_C) + "="],
    ids=["standard", "standard-unpadded", "urlsafe-unpadded", "urlsafe-padded"],
)
def test_env_value_accepts_both_alphabets_with_or_without_padding(spelling: str) -> None:
    assert KeySet.from_env_value(f"k1:{spelling}").to_env_value() == f"k1:{_url(KEY_C)}"


def test_env_value_tolerates_whitespace_around_items() -> None:
    keys = KeySet.from_env_value(f"\n  new : {_std(KEY_C)} ,\t old:{_url(KEY_A)}  \n")
    assert keys.kids == ("new", "old")
    assert keys.to_env_value() == f"new:{_url(KEY_C)},old:{_url(KEY_A)}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no keys"),
        ("   \n", "no keys"),
        (f"k1:{_std(KEY_A)},,k2:{_std(KEY_B)}", "item 2 is empty"),
        (f"k1:{_std(KEY_A)},", "item 2 is empty"),
        (_std(KEY_A), "item 1 has no ':'"),
        (f"k1:{_std(KEY_B)},{_std(KEY_A)}", "item 2 has no ':'"),
        (f"{_url(KEY_A)}:k1", "item 1: key id has 43 characters"),
        (f"k 1:{_std(KEY_A)}", "item 1: key id may only contain"),
        (f":{_std(KEY_A)}", "item 1: key id is empty"),
        ("k1:", "item 1 ('k1'): key is empty"),
        (f"k1:{_std(KEY_B)},k2:{_std(KEY_A)[:20]}!{_std(KEY_A)[21:]}", "item 2 ('k2'): key is not valid base64"),
        (f"k1:{_std(KEY_A)[:-1]}===", "item 1 ('k1'): key is not valid base64"),
        (f"k1:{_std(KEY_A)[:10]} {_std(KEY_A)[10:]}", "item 1 ('k1'): key is not valid base64"),
        (f"k1:{_std(KEY_A)[:-2]}", "item 1 ('k1'): key decodes to 31 bytes"),
        (f"k1:{_std(KEY_A)[:-3]}", "item 1 ('k1'): key is not valid base64"),
        (f"k1:{_std(KEY_A[:16])}", "item 1 ('k1'): key decodes to 16 bytes"),
        (f"k1:{_std(KEY_A + b'xyz')}", "item 1 ('k1'): key decodes to 35 bytes"),
        (f"k1:{_std(KEY_B)},k1:{_std(KEY_A)}", "item 2: duplicate key id 'k1' (also item 1)"),
        (f"k1:{_std(KEY_A)},k2:{_url(KEY_A)}", "item 2 ('k2'): same key material as 'k1'"),
    ],
)
def test_env_value_errors_name_the_item_not_the_key(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        KeySet.from_env_value(text)
    shown = str(caught.value)
    for key in (KEY_A, KEY_A[:16], KEY_A + b"xyz"):
        for spelling in _key_spellings(key):
            assert spelling not in shown
    for fragment in (_std(KEY_A)[:20], _std(KEY_A)[21:], _std(KEY_A)[:10], _std(KEY_A)[10:]):
        assert fragment not in shown
    assert caught.value.__cause__ is None


# -- the key file ----------------------------------------------------------------------------


@POSIX_ONLY
def test_load_or_create_creates_a_private_file_and_reads_it_back(tmp_path: Path) -> None:
    path = tmp_path / "data" / "keys" / "secrets.keys"
    created = KeySet.load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700
    assert path.read_text() == created.to_env_value() + "\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["secrets.keys"]  # no temporary file left

    token = created.encrypt(b"s3cr3t", associated_data=AD)
    loaded = KeySet.load_or_create(path)
    assert loaded.kids == created.kids
    assert loaded.to_env_value() == created.to_env_value()
    assert loaded.decrypt(token, associated_data=AD) == b"s3cr3t"


def test_load_or_create_reads_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "secrets.keys"
    path.write_text(f" new:{_std(KEY_B)}, old:{_std(KEY_A)}\n")
    path.chmod(0o600)
    keys = KeySet.load_or_create(path)
    assert keys.kids == ("new", "old")
    assert path.read_text() == f" new:{_std(KEY_B)}, old:{_std(KEY_A)}\n"  # left as it was


@POSIX_ONLY
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o660])
def test_load_or_create_refuses_a_file_others_may_access(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "secrets.keys"
    path.write_text(f"k1:{_std(KEY_A)}\n")
    path.chmod(mode)
    with pytest.raises(ValueError, match=f"mode {mode:04o}") as caught:
        KeySet.load_or_create(path)
    assert _std(KEY_A) not in str(caught.value)
    assert path.read_text() == f"k1:{_std(KEY_A)}\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no keys"),
        (f"k1:{_std(KEY_A)}\nk2:{_std(KEY_B)}\n".encode(), "one line"),
        (f"k1:{_std(KEY_A)[:-2]}é".encode(), "not ASCII"),
        (f"k1:{_std(KEY_A[:16])}".encode(), "item 1 ('k1'): key decodes to 16 bytes"),
    ],
)
def test_load_or_create_refuses_a_bad_file(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "secrets.keys"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        KeySet.load_or_create(path)
    assert str(path) in str(caught.value)
    for key in (KEY_A, KEY_B, KEY_A[:16]):
        assert _std(key) not in str(caught.value)
        assert _std(key)[:-2] not in str(caught.value)
    assert path.read_bytes() == content


def test_load_or_create_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises((ValueError, OSError)):
        KeySet.load_or_create(tmp_path)


@POSIX_ONLY
def test_load_or_create_never_replaces_a_file_made_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secrets.keys"
    theirs = KeySet([("theirs", KEY_B)])
    real_link = os.link

    def other_process_wins(source: str, target: str) -> None:
        Path(target).write_text(theirs.to_env_value() + "\n")
        Path(target).chmod(0o600)
        real_link(source, target)

    monkeypatch.setattr(os, "link", other_process_wins)
    keys = KeySet.load_or_create(path)
    assert keys.to_env_value() == theirs.to_env_value()
    assert path.read_text() == theirs.to_env_value() + "\n"
    assert [p.name for p in tmp_path.iterdir()] == ["secrets.keys"]


@POSIX_ONLY
def test_load_or_create_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unsupported(source: str, target: str) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", unsupported)
    path = tmp_path / "secrets.keys"
    created = KeySet.load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secrets.keys"]
    monkeypatch.undo()
    assert KeySet.load_or_create(path).to_env_value() == created.to_env_value()
