"""receipts.py: canonical JSON, the text rule, entry hashes, HMACs and receipt lines (pure)."""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawshell import receipts as rc
from clawshell.errors import EXIT_USAGE
from clawshell.model import Decision, RiskLevel

KEY = bytes(range(32))
KEY_ID = "45643cd44efa80b4"
RECORD = {"v": 1, "tool": "shell", "session": "s", "command": "echo hi"}
# Golden values: changing them breaks every existing log and every other verifier.
GOLDEN_BODY = '{"command":"echo hi","session":"s","tool":"shell","v":1}'
GOLDEN_HASH = "9d2bb1f9b6bcf30c008ae7113925ef53f2d2a427154861d959807ae43fef08f1"
GOLDEN_HMAC = "e8d070bee386397ce57adabcf462a90d819b3dec8d4b39f4e30d5debe8308b13"
GOLDEN_LINE = ("[clawshell receipt] v1 seq=1 entry=9d2bb1f9b6bcf30c hmac=e8d070bee386397ce57adabcf462a90d "
               "key=45643cd44efa80b4")


def test_golden_entry_matches_the_documented_construction() -> None:
    body = rc.body_json(RECORD)
    index = rc.index_of(RECORD)
    material = (b"clawshell/audit-entry/v1\x00" + b'{"body":' + GOLDEN_BODY.encode() +
                b',"index":["s","shell",null,null],"key_id":"' + KEY_ID.encode() + b'","prev_hash":"' + b"0" * 64 +
                b'","seq":1,"v":1}')
    assert (rc.key_id_for(KEY), body, index) == (KEY_ID, GOLDEN_BODY, ("s", "shell", None, None))
    assert rc.entry_material(1, rc.GENESIS_HASH, KEY_ID, index, body) == material
    assert rc.entry_hash(1, rc.GENESIS_HASH, KEY_ID, index, body) == hashlib.sha256(material).hexdigest() \
        == GOLDEN_HASH
    expected_mac = hmac.new(KEY, b"clawshell/receipt-hmac/v1\x00" + GOLDEN_HASH.encode(), "sha256").hexdigest()
    assert rc.receipt_hmac(KEY, GOLDEN_HASH) == expected_mac == GOLDEN_HMAC
    assert rc.format_line(1, GOLDEN_HASH, GOLDEN_HMAC, KEY_ID) == GOLDEN_LINE


class Color(str, enum.Enum):
    RED = "red"


@dataclass(frozen=True)
class Point:
    x: int
    y: tuple[int, ...]


@pytest.mark.parametrize(("value", "canonical"), [
    ({"b": 1, "a": [1, 2.5, None, True]}, '{"a":[1,2.5,null,true],"b":1}'),
    ({"z": {"y": 1, "x": 2}}, '{"z":{"x":2,"y":1}}'),
    ("caf\u00e9 \U0001f600", '"caf\\u00e9 \\ud83d\\ude00"'),
    ("nul\x00tab\tnl\n", '"nul\\u0000tab\\tnl\\n"'),
    (b"ok bytes", '"ok bytes"'),
    (b"\xff\xfe\x00", '{"$b64":"//4A"}'),
    ("echo \udcff", '{"$b64":"ZWNobyD/"}'),
    ("\ud800 lone", '{"$b64":"7aCAIGxvbmU="}'),
    (Decision.DENY, '"deny"'),
    (RiskLevel.HIGH, '"high"'),
    (Color.RED, '"red"'),
    (Point(1, (2, 3)), '{"x":1,"y":[2,3]}'),
    ((1, "a"), '[1,"a"]'),
    (frozenset({"b", "a"}), '["a","b"]'),
    (float("nan"), '"NaN"'),
    (float("-inf"), '"-Infinity"'),
    ({1: "int key", Decision.ALLOW: "enum key"}, '{"1":"int key","allow":"enum key"}'),
    (object.__new__(type("Opaque", (), {"__str__": lambda self: "opaque!"})), '"opaque!"'),
])
def test_normalize_then_canonical(value: object, canonical: str) -> None:
    assert rc.canonical_json(rc.normalize(value)) == canonical


@pytest.mark.parametrize("raw", [b"\xff\xfeplain", b"\x00nul \xc3(", "d\u00e9j\u00e0".encode("latin-1")])
def test_non_utf8_text_round_trips_through_b64(raw: bytes) -> None:
    as_str = raw.decode("utf-8", "surrogateescape")
    stored = json.loads(rc.body_json({"command": as_str, "out": raw}))
    assert stored["command"] == stored["out"] == {"$b64": base64.b64encode(raw).decode()}
    assert rc.decode_text(stored["command"]) == as_str
    assert rc.decode_text("plain") == "plain"


def test_body_is_ascii_and_keeps_nul_bytes() -> None:
    body = rc.body_json({"command": "printf 'a\\0b' \x00 \u2603"})
    assert body.isascii()
    assert json.loads(body)["command"] == "printf 'a\\0b' \x00 \u2603"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(record=st.dictionaries(st.sampled_from(["session", "tool", "decision", "time", "command"]) | st.text(max_size=10),
                              json_values, max_size=6), seq=st.integers(1, 2**40),
       prev=st.text("0123456789abcdef", min_size=64, max_size=64))
def test_entry_material_is_the_canonical_json_of_the_wrapped_record(record: dict, seq: int, prev: str) -> None:
    body = rc.body_json(record)
    index = rc.index_of(rc.normalize_record(record))
    wrapped = {"body": json.loads(body), "index": list(index), "key_id": KEY_ID, "prev_hash": prev, "seq": seq,
               "v": 1}
    expected = rc.ENTRY_DOMAIN + rc.canonical_json(wrapped).encode("ascii")
    assert rc.entry_material(seq, prev, KEY_ID, index, body) == expected
    assert rc.entry_material(seq, prev, KEY_ID, index, body.encode()) == expected
    # Parsing and re-canonicalizing gives the same text: exports verify without the DB.
    assert rc.canonical_json(json.loads(body)) == body


@settings(max_examples=100, deadline=None)
@given(key=st.binary(min_size=0, max_size=100), digest=st.text("0123456789abcdef", min_size=64, max_size=64))
def test_fast_hmac_function_equals_stdlib_hmac(key: bytes, digest: str) -> None:
    assert rc.receipt_hmac_function(key)(digest) == rc.receipt_hmac(key, digest)


@pytest.mark.parametrize(("record", "index"), [
    ({"session": "s", "tool": "shell", "decision": {"decision": "deny", "score": 98}, "time": "t"},
     ("s", "shell", "deny", "t")),
    ({"decision": "allow"}, (None, None, "allow", None)),
    ({"session": 7, "tool": ["x"], "decision": {"score": 1}, "time": None}, (None, None, None, None)),
    ({"session": {"$b64": "/w=="}}, (None, None, None, None)),
])
def test_index_of(record: dict, index: tuple) -> None:
    assert rc.index_of(record) == index


def test_key_id_and_checkpoint_message_are_domain_separated() -> None:
    assert rc.key_id_for(KEY) != hashlib.sha256(KEY).hexdigest()[:16]
    assert rc.checkpoint_message(7, "ab" * 32) == (b"clawshell/checkpoint/v1\x00" +
                                                    ('{"entry_hash":"%s","seq":7,"v":1}' % ("ab" * 32)).encode())


def test_parse_line_round_trips_and_allows_surrounding_text() -> None:
    expected = rc.ReceiptLine(1, 1, GOLDEN_HASH[:16], GOLDEN_HMAC[:32], KEY_ID)
    assert rc.parse_line(GOLDEN_LINE) == expected
    assert rc.parse_line(f"stderr: {GOLDEN_LINE}  \n") == expected


@pytest.mark.parametrize(("line", "message"), [
    ("", "no '[clawshell receipt]' tag"),
    ("receipt v1 seq=1", "no '[clawshell receipt]' tag"),
    ("[clawshell receipt]", "nothing after the tag"),
    ("[clawshell receipt] seq=1", "expected a version"),
    ("[clawshell receipt] v2 seq=1", "unsupported version v2"),
    (GOLDEN_LINE.rsplit(" ", 1)[0], "missing field key="),
    (GOLDEN_LINE.replace("seq=1", "seq=0"), "seq must be a positive integer"),
    (GOLDEN_LINE.replace("seq=1", "seq=-1"), "seq must be a positive integer"),
    (GOLDEN_LINE.replace("seq=1", "seq=x"), "seq must be a positive integer"),
    (GOLDEN_LINE.replace(f"entry={GOLDEN_HASH[:16]}", "entry=91cc"), "entry must be 16 lower-case hex"),
    (GOLDEN_LINE.replace(f"entry={GOLDEN_HASH[:16]}", "entry=91CC765460FF8CA7"), "entry must be 16 lower-case hex"),
    (GOLDEN_LINE.replace(f"hmac={GOLDEN_HMAC[:32]}", "hmac=zz"), "hmac must be 32"),
    (GOLDEN_LINE.replace("key=45643cd44efa80b4", "key=k1"), "key must be a 16-hex-digit key id"),
    (GOLDEN_LINE + " seq=2", "field 'seq' appears twice"),
    (GOLDEN_LINE + " extra=1", "unknown field 'extra'"),
    (GOLDEN_LINE + " junk", "'junk' is not a name=value field"),
    (GOLDEN_LINE.replace(" key=", "\nkey="), "single line"),
])
def test_parse_line_rejects_with_one_clear_reason(line: str, message: str) -> None:
    with pytest.raises(rc.ReceiptParseError) as info:
        rc.parse_line(line)
    text = str(info.value)
    assert message in text and "\n" not in text
    assert info.value.exit_code == EXIT_USAGE


def test_constant_time_equal() -> None:
    assert rc.constant_time_equal("abc", "abc")
    assert not rc.constant_time_equal("abc", "abd")
    assert not rc.constant_time_equal("\u00e9", "e")
