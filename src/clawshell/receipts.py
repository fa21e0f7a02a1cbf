"""Receipts and the audit hash chain: canonical JSON, entry hashes, HMACs, receipt lines.

Pure: no file, clock, environment or process.  ``audit.py`` does the I/O.

Definitions (version 1; ``docs/audit.md`` is the reference for other implementations):

* **Canonical JSON** of a value: ``json.dumps`` with sorted keys, separators ``,`` and
  ``:``, ASCII only (every non-ASCII character as a lower-case ``\\u`` + 4 hex digits escape,
  astral characters as surrogate pairs), no NaN or infinity; floats in the shortest
  form that round-trips (Python ``repr``).
* **Body**: canonical JSON of the record after :func:`normalize_record`.  Text that is
  not valid Unicode (bytes that are not UTF-8, or a ``str`` holding lone surrogates as
  Python's ``surrogateescape`` makes from undecodable bytes) becomes
  ``{"$b64": "<base64 of the raw bytes>"}``; NUL and control characters stay text and
  are escaped by JSON (``\\u0000``).
* **Index**: ``[session, tool, decision, time]`` of the record (:func:`index_of`): the
  values the database indexes for queries, each a string or null.  They are hashed
  with the entry so that editing an indexed column (to hide an entry from
  ``clawshell audit --filter``) breaks the chain like editing the body, at no parsing
  cost when verifying.
* **Entry hash**: ``sha256(ENTRY_DOMAIN + canonical JSON of {"body": record, "index":
  I, "key_id": K, "prev_hash": P, "seq": N, "v": 1})`` in lower-case hex.  Because
  the body is itself canonical and the keys sort in that order, the material is built
  by concatenation (:func:`entry_material`) without re-encoding the record.
* **Receipt HMAC**: ``HMAC-SHA256(key, RECEIPT_DOMAIN + entry_hash_hex)`` in hex.
* **Checkpoint signature**: Ed25519 over ``CHECKPOINT_DOMAIN + canonical JSON of
  {"entry_hash": H, "seq": N, "v": 1}`` (signed and checked in ``audit.py``).
* **Receipt line**: ``[clawshell receipt] v1 seq=N entry=<16 hex> hmac=<32 hex> key=<key id>``.
"""

from __future__ import annotations

import enum
import hashlib
import hmac as _hmac
import json
from dataclasses import fields, is_dataclass
from typing import Any, Callable, Mapping, NamedTuple

from .errors import UsageError

FORMAT_VERSION = 1
"""Version of the entry, receipt and checkpoint formats defined here."""

ENTRY_DOMAIN = b"clawshell/audit-entry/v1\x00"
"""Domain tag prefixed to the canonical JSON an entry hash is taken over."""

RECEIPT_DOMAIN = b"clawshell/receipt-hmac/v1\x00"
"""Domain tag prefixed to the entry hash the receipt HMAC is taken over."""

CHECKPOINT_DOMAIN = b"clawshell/checkpoint/v1\x00"
"""Domain tag prefixed to the canonical JSON a checkpoint signature covers."""

KEY_ID_DOMAIN = b"clawshell/key-id/v1\x00"
"""Domain tag for deriving a key id from key material."""

GENESIS_HASH = "0" * 64
"""``prev_hash`` of the first entry."""

RECEIPT_TAG = "[clawshell receipt]"
"""Tag that starts a receipt line."""

BYTES_KEY = "$b64"
"""Key of the object that stands for text that is not valid Unicode."""

ENTRY_PREFIX_LEN = 16
"""Hex digits of the entry hash shown in a receipt line."""

HMAC_PREFIX_LEN = 32
"""Hex digits of the HMAC shown in a receipt line (128 bits)."""


class ReceiptParseError(UsageError):
    """A receipt line does not parse (exit 2)."""


# --------------------------------------------------------------------------- canonical JSON


_encoder = json.JSONEncoder(ensure_ascii=True, allow_nan=False, sort_keys=True, separators=(",", ":"))
_quote = json.encoder.encode_basestring_ascii


def canonical_json(value: Any) -> str:
    """Canonical JSON text of an already-normalized JSON value (see the module doc)."""
    return _encoder.encode(value)


_INF = float("inf")


def _text(value: str) -> Any:
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        raw = value.encode("utf-8", "surrogatepass") if not _only_escapes(value) \
            else value.encode("utf-8", "surrogateescape")
        return {BYTES_KEY: _b64(raw)}


def _b64(raw: bytes) -> str:
    import base64  # rare path: keep it off the import cost of every command

    return base64.b64encode(raw).decode("ascii")


def _only_escapes(value: str) -> bool:
    try:
        value.encode("utf-8", "surrogateescape")
        return True
    except UnicodeEncodeError:
        return False


def _bytes(value: bytes) -> Any:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {BYTES_KEY: _b64(value)}


def _key(key: Any) -> str:
    if isinstance(key, enum.Enum):
        key = _enum(key)
    if isinstance(key, bytes):
        key = key.decode("utf-8", "surrogateescape")
    key = str(key)
    try:
        key.encode("utf-8")
        return key
    except UnicodeEncodeError:
        return key.encode("utf-8", "surrogateescape" if _only_escapes(key) else "surrogatepass") \
            .decode("utf-8", "backslashreplace")


def _enum(value: enum.Enum) -> Any:
    if isinstance(value.value, str):
        return value.value
    return value.name.lower()


def normalize(value: Any) -> Any:
    """Turn ``value`` into plain JSON data, deterministically and without failing.

    str/bytes follow the text rule (``$b64`` for non-Unicode), enums become their
    string value (or lower-case name), dataclasses dicts, tuples/sets lists (sets
    sorted by canonical form), non-finite floats the strings ``"NaN"``/``"Infinity"``/
    ``"-Infinity"``, mapping keys strings; anything else its ``str()``.
    """
    if value is None or value is True or value is False:
        return value
    if isinstance(value, enum.Enum):
        return _enum(value)
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (_INF, -_INF):
            return "Infinity" if value > 0 else "-Infinity"
        return float(value)
    if isinstance(value, Mapping):
        return {_key(k): normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _bytes(bytes(value))
    if isinstance(value, (set, frozenset)):
        items = [normalize(v) for v in value]
        return sorted(items, key=canonical_json)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: normalize(getattr(value, f.name)) for f in fields(value)}
    return _text(str(value))


def normalize_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """Normalize an audit record (a mapping) into plain JSON data."""
    out = normalize(record)
    if not isinstance(out, dict):
        raise TypeError("an audit record must be a mapping")
    return out


def body_json(record: Mapping[str, Any]) -> str:
    """Canonical JSON of a normalized record: the stored ``body`` of an entry."""
    return canonical_json(normalize_record(record))


def decode_text(value: Any) -> str:
    """Display form of a body text value: ``$b64`` objects decoded with surrogateescape."""
    if isinstance(value, dict) and set(value) == {BYTES_KEY} and isinstance(value[BYTES_KEY], str):
        try:
            import base64

            return base64.b64decode(value[BYTES_KEY], validate=True).decode("utf-8", "surrogateescape")
        except (ValueError, UnicodeDecodeError):
            return str(value)
    if value is None:
        return ""
    return value if isinstance(value, str) else canonical_json(value)


# --------------------------------------------------------------------------- chain


Index = tuple[str | None, str | None, str | None, str | None]
"""``(session, tool, decision, time)`` of a record, as stored in the indexed columns."""


def index_of(record: Mapping[str, Any]) -> Index:
    """The indexed values of a normalized record: each a string, or None when absent
    or not a string; ``decision`` is ``record["decision"]["decision"]`` when the
    decision is an object (the usual verdict shape) and ``record["decision"]`` otherwise."""
    decision = record.get("decision")
    if isinstance(decision, dict):
        decision = decision.get("decision")
    values = (record.get("session"), record.get("tool"), decision, record.get("time"))
    return tuple(v if isinstance(v, str) else None for v in values)  # type: ignore[return-value]


def entry_material(seq: int, prev_hash: str, key_id: str, index: Index, body: str | bytes) -> bytes:
    """The bytes an entry hash is taken over (domain tag + canonical JSON).

    Equal to ``ENTRY_DOMAIN + canonical_json({"body": json.loads(body), "index":
    list(index), "key_id": key_id, "prev_hash": prev_hash, "seq": seq, "v": 1})`` when
    ``body`` is canonical (given as text, or as its UTF-8 bytes).  Written out flat:
    verify calls this once per entry.
    """
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    session, tool, decision, when = index
    tail = '"index":[%s,%s,%s,%s],"key_id":%s,"prev_hash":%s,"seq":%d,"v":1}' % (
        "null" if session is None else _quote(session), "null" if tool is None else _quote(tool),
        "null" if decision is None else _quote(decision), "null" if when is None else _quote(when),
        _quote(key_id), _quote(prev_hash), seq)
    return b'%s{"body":%s,%s' % (ENTRY_DOMAIN, body, tail.encode("ascii"))


def entry_hash(seq: int, prev_hash: str, key_id: str, index: Index, body: str | bytes) -> str:
    """Hex SHA-256 entry hash of one chain entry."""
    return hashlib.sha256(entry_material(seq, prev_hash, key_id, index, body)).hexdigest()


def receipt_hmac(key: bytes, entry_hash_hex: str) -> str:
    """Hex HMAC-SHA256 receipt over an entry hash."""
    return _hmac.digest(key, RECEIPT_DOMAIN + entry_hash_hex.encode("ascii"), "sha256").hex()


_IPAD = bytes(x ^ 0x36 for x in range(256))
_OPAD = bytes(x ^ 0x5C for x in range(256))


def receipt_hmac_function(key: bytes) -> Callable[[str], str]:
    """A fast :func:`receipt_hmac` for one key, for checking many entries.

    HMAC's keyed inner and outer SHA-256 states (and the domain tag) are computed
    once and copied per entry: about three times faster than ``hmac.digest``, which
    re-keys on every call.  Same results as :func:`receipt_hmac`.
    """
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    block = key.ljust(64, b"\0")
    inner = hashlib.sha256(block.translate(_IPAD))
    inner.update(RECEIPT_DOMAIN)
    outer = hashlib.sha256(block.translate(_OPAD))

    def mac(entry_hash_hex: str) -> str:
        i = inner.copy()
        i.update(entry_hash_hex.encode("ascii", "surrogateescape"))
        o = outer.copy()
        o.update(i.digest())
        return o.hexdigest()

    return mac


def key_id_for(key: bytes) -> str:
    """Key id of HMAC key material or a raw public key: 16 hex digits of a tagged SHA-256."""
    return hashlib.sha256(KEY_ID_DOMAIN + key).hexdigest()[:16]


def checkpoint_message(seq: int, entry_hash_hex: str) -> bytes:
    """The bytes a checkpoint signature covers."""
    return CHECKPOINT_DOMAIN + canonical_json({"entry_hash": entry_hash_hex, "seq": int(seq), "v": 1}).encode("ascii")


def constant_time_equal(a: str, b: str) -> bool:
    """Compare two hex strings without leaking where they differ."""
    if a.isascii() and b.isascii():
        return _hmac.compare_digest(a, b)
    return _hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))


# --------------------------------------------------------------------------- receipt line


class ReceiptLine(NamedTuple):
    """The parts of one receipt line (immutable; a NamedTuple to stay cheap to import)."""

    version: int
    """Format version (1)."""
    seq: int
    """Sequence number of the entry in the audit chain."""
    entry: str
    """First 16 hex digits of the entry hash."""
    hmac: str
    """First 32 hex digits of the receipt HMAC."""
    key_id: str
    """Id of the HMAC key that made it."""


def format_line(seq: int, entry_hash_hex: str, hmac_hex: str, key_id: str) -> str:
    """The one tagged line shown to the agent (no trailing newline)."""
    return (f"{RECEIPT_TAG} v{FORMAT_VERSION} seq={int(seq)} entry={entry_hash_hex[:ENTRY_PREFIX_LEN]} "
            f"hmac={hmac_hex[:HMAC_PREFIX_LEN]} key={key_id}")


_HEX_DIGITS = frozenset("0123456789abcdef")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz_")


def is_hex(text: str, length: int) -> bool:
    """True when ``text`` is exactly ``length`` lower-case hex digits."""
    return len(text) == length and _HEX_DIGITS.issuperset(text)


def parse_line(text: str) -> ReceiptLine:
    """Parse a receipt line (surrounding text before the tag and whitespace allowed).

    Raises :class:`ReceiptParseError` with one line saying what is wrong.
    """
    if not isinstance(text, str):
        raise ReceiptParseError("a receipt line must be text")
    pos = text.find(RECEIPT_TAG)
    if pos < 0:
        raise ReceiptParseError(f"not a receipt line: it has no {RECEIPT_TAG!r} tag")
    rest = text[pos + len(RECEIPT_TAG):].strip()
    if "\n" in rest or "\r" in rest:
        raise ReceiptParseError("a receipt line must be a single line")
    words = rest.split()
    if not words:
        raise ReceiptParseError("receipt line has nothing after the tag (expected v1 seq=... entry=... "
                                "hmac=... key=...)")
    version_word, *pairs = words
    if not (version_word[:1] == "v" and version_word[1:].isascii() and version_word[1:].isdigit()):
        raise ReceiptParseError(f"receipt line: expected a version like 'v1' after the tag, got {version_word[:20]!r}")
    version = int(version_word[1:])
    if version != FORMAT_VERSION:
        raise ReceiptParseError(f"receipt line: unsupported version v{version} (this clawshell reads v{FORMAT_VERSION})")
    seen: dict[str, str] = {}
    for word in pairs:
        name, sep, value = word.partition("=")
        if not sep or not name or not _NAME_CHARS.issuperset(name):
            raise ReceiptParseError(f"receipt line: {word[:40]!r} is not a name=value field")
        if name not in ("seq", "entry", "hmac", "key"):
            raise ReceiptParseError(f"receipt line: unknown field {name!r}")
        if name in seen:
            raise ReceiptParseError(f"receipt line: field {name!r} appears twice")
        seen[name] = value
    for name in ("seq", "entry", "hmac", "key"):
        if name not in seen:
            raise ReceiptParseError(f"receipt line: missing field {name}=")
    seq_text = seen["seq"]
    if not seq_text.isascii() or not seq_text.isdigit() or seq_text.startswith("0") or len(seq_text) > 18:
        raise ReceiptParseError(f"receipt line: seq must be a positive integer, got {seq_text[:20]!r}")
    entry, mac, key = seen["entry"], seen["hmac"], seen["key"]
    if not is_hex(entry, ENTRY_PREFIX_LEN):
        raise ReceiptParseError(f"receipt line: entry must be {ENTRY_PREFIX_LEN} lower-case hex digits")
    if not is_hex(mac, HMAC_PREFIX_LEN):
        raise ReceiptParseError(f"receipt line: hmac must be {HMAC_PREFIX_LEN} lower-case hex digits")
    if not is_hex(key, 16):
        raise ReceiptParseError("receipt line: key must be a 16-hex-digit key id")
    return ReceiptLine(version=version, seq=int(seq_text), entry=entry, hmac=mac, key_id=key)
