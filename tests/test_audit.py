"""audit.py and cli/audit.py: the chain, receipts, keys, tamper detection, export, CLI."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from clawshell import receipts as rc
from clawshell.audit import AuditLog, Appended, verify_export
from clawshell.cli.audit import audit as audit_cli
from clawshell.cli.audit import receipts as receipts_cli
from clawshell.errors import StoreError
from clawshell.home import Home
from clawshell.store import Store

from .conftest import run_clawshell

DECISIONS = ("allow", "deny", "approve")


def record(i: int) -> dict:
    decision = DECISIONS[i % 3]
    score = (10, 98, 70)[i % 3]
    return {
        "v": 1, "tool": ("shell", "file.read")[i % 2], "session": f"s{i % 3}", "command": f"cmd-{i}",
        "args": {}, "cwd": "/ws", "workspace": "/ws",
        "decision": {"decision": decision, "score": score, "risk": ("low", "critical", "high")[i % 3],
                     "thresholds": {"warn": 40, "flag": 65, "auto_deny": 95},
                     "evidence": [{"rule": f"rule.{decision}.{i}", "decision": decision, "reason": f"reason {i}",
                                   "matched": f"cmd-{i}", "score": score, "alternative": None}]},
        "approval": None, "sandbox": {"layers": ["landlock", "seccomp"]},
        "exit": 0 if decision == "allow" else None, "duration": 0.01, "stdout_sha256": "0" * 64,
        "stderr_sha256": "1" * 64, "leaks": [], "injections": [],
        "outcome": "ran" if decision == "allow" else "refused", "error": None, "policy_hash": "p" * 8,
    }


def build(home: Home, n: int = 12, every: int = 5) -> list[Appended]:
    with Store.open(home) as store:
        log = AuditLog(store, home, checkpoint_every=every)
        return [log.append(record(i)) for i in range(1, n + 1)]


def verify(home: Home, every: int = 5):
    with Store.open(home) as store:
        return AuditLog(store, home, checkpoint_every=every).verify()


def raw(home: Home) -> sqlite3.Connection:
    return sqlite3.connect(home.database, isolation_level=None)


def key_path(home: Home) -> str:
    return os.path.join(home.security, "receipt.key")


# --------------------------------------------------------------------------- append


def test_append_builds_a_linked_chain_with_receipts(home: Home) -> None:
    appended = build(home, n=3)
    key = bytes.fromhex(Path(key_path(home)).read_text().strip())
    key_id = rc.key_id_for(key)
    with Store.open(home) as store:
        log = AuditLog(store, home)
        entries = list(log.iterate())
        assert [e.seq for e in entries] == [a.seq for a in appended] == [1, 2, 3]
        prev = rc.GENESIS_HASH
        for entry, app in zip(entries, appended):
            assert entry.prev_hash == prev
            assert entry.entry_hash == app.entry_hash == rc.entry_hash(entry.seq, prev, key_id, entry.index,
                                                                       entry.body)
            assert entry.hmac == app.receipt == rc.receipt_hmac(key, entry.entry_hash)
            assert entry.key_id == app.key_id == key_id
            assert entry.body == rc.body_json({**record(entry.seq), "time": app.time})
            assert (entry.session, entry.tool, entry.decision, entry.time) == (
                f"s{entry.seq % 3}", ("shell", "file.read")[entry.seq % 2], DECISIONS[entry.seq % 3], app.time)
            prev = entry.entry_hash
        line = log.receipt_line(appended[-1])
        assert line == (f"[clawshell receipt] v1 seq=3 entry={appended[-1].entry_hash[:16]} "
                        f"hmac={appended[-1].receipt[:32]} key={key_id}")
        assert rc.parse_line(line).seq == 3


def test_append_keeps_the_record_time_or_stamps_one(home: Home) -> None:
    with Store.open(home) as store:
        log = AuditLog(store, home, clock=lambda: 1_800_000_000.25)
        stamped = log.append({"tool": "shell"})
        kept = log.append({"tool": "shell", "time": "2026-01-02T03:04:05.678Z"})
        plain = log.append({"tool": "hook", "decision": "deny", "session": 7})
        assert (stamped.time, kept.time) == ("2027-01-15T08:00:00.250Z", "2026-01-02T03:04:05.678Z")
        entry = log.get(plain.seq)
        assert (entry.decision, entry.session, entry.tool) == ("deny", None, "hook")
        with pytest.raises(TypeError):
            log.append(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_invalid_utf8_and_nul_bytes_are_recorded_exactly(home: Home) -> None:
    raw_command = b"printf '\xff\xfe\x00' > out\x00bin"
    command = raw_command.decode("utf-8", "surrogateescape")
    with Store.open(home) as store:
        log = AuditLog(store, home)
        app = log.append({"tool": "shell", "command": command, "args": {"data": b"\x00\x01ok", "bad": b"\xc3("},
                          "cwd": "/tmp/\udcff"})
        body = log.get(app.seq).record
        assert rc.decode_text(body["command"]).encode("utf-8", "surrogateescape") == raw_command
        assert body["args"] == {"data": "\x00\x01ok", "bad": {"$b64": "wyg="}}
        assert body["cwd"] == {"$b64": "L3RtcC//"}
        assert log.verify().ok
    result = CliRunner().invoke(audit_cli, ["--last", "1"])
    assert "printf '\\xff\\xfe\\x00' > out\\x00bin" in result.output


def test_key_file_is_created_private_on_first_use(home: Home) -> None:
    build(home, n=1)
    path = key_path(home)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(home.security).st_mode) == 0o700
    assert len(Path(path).read_text().strip()) == 64


def test_append_continues_after_the_high_water_mark_when_the_tail_was_cut(home: Home) -> None:
    build(home, n=6, every=0)
    raw(home).execute("DELETE FROM audit WHERE seq > 4")
    with Store.open(home) as store:
        log = AuditLog(store, home, checkpoint_every=0)
        assert log.append(record(7)).seq == 7  # 5 and 6 stay missing: evidence is kept
        report = log.verify()
    assert [(p.seq, p.kind) for p in report.problems] == [(5, "gap")]


def test_query_filters(home: Home) -> None:
    build(home, n=12, every=0)
    with Store.open(home) as store:
        log = AuditLog(store, home)
        cases = {
            (): list(range(1, 13)),
            (("last", 3),): [10, 11, 12],
            (("decision", "deny"),): [1, 4, 7, 10],
            (("session", "s0"), ("decision", "allow")): [3, 6, 9, 12],
            (("tool", "file.*"),): [1, 3, 5, 7, 9, 11],
            (("outcome", "refused"), ("last", 2)): [10, 11],
            (("since", "2000-01-01T00:00:00.000Z"), ("until", "2000-01-02T00:00:00.000Z")): [],
        }
        for filters, seqs in cases.items():
            assert [e.seq for e in log.query(**dict(filters))] == seqs, filters


# --------------------------------------------------------------------------- tampering


def _edit_field(home: Home) -> None:
    raw(home).execute("UPDATE audit SET body = replace(body, 'cmd-6', 'cmd-X') WHERE seq = 6")


def _edit_index_column(home: Home) -> None:
    raw(home).execute("UPDATE audit SET decision = 'allow' WHERE seq = 7")  # hide a deny from queries


def _delete_entry(home: Home) -> None:
    raw(home).execute("DELETE FROM audit WHERE seq = 6")


def _delete_first(home: Home) -> None:
    raw(home).execute("DELETE FROM audit WHERE seq = 1")


def _swap_rows(home: Home) -> None:
    conn = raw(home)
    conn.execute("UPDATE audit SET seq = -6 WHERE seq = 6")
    conn.execute("UPDATE audit SET seq = 6 WHERE seq = 7")
    conn.execute("UPDATE audit SET seq = 7 WHERE seq = -6")


def _swap_and_rehash(home: Home) -> None:
    """Swap the bodies of 6 and 7 and recompute their hashes (no key: HMACs stay old)."""
    conn = raw(home)
    rows = {s: conn.execute("SELECT prev_hash, key_id, body, session, tool, decision, time FROM audit "
                            "WHERE seq = ?", (s,)).fetchone() for s in (6, 7)}
    for seq, other in ((6, 7), (7, 6)):
        prev, key_id = rows[seq][:2]
        body, index = rows[other][2], rows[other][3:]
        conn.execute("UPDATE audit SET body = ?, session = ?, tool = ?, decision = ?, time = ?, entry_hash = ? "
                     "WHERE seq = ?", (body, *index, rc.entry_hash(seq, prev, key_id, index, body), seq))


def _truncate_tail(home: Home) -> None:
    raw(home).execute("DELETE FROM audit WHERE seq > 9")


def _truncate_tail_and_high_water_mark(home: Home) -> None:
    conn = raw(home)
    conn.execute("DELETE FROM audit WHERE seq > 8")
    last = conn.execute("SELECT entry_hash FROM audit WHERE seq = 8").fetchone()[0]
    conn.execute("UPDATE meta SET value = ? WHERE key = 'audit_head'", (f"8:{last}",))


def _rehash_tail(home: Home) -> None:
    """Edit entry 6 and recompute every later hash and link: only HMACs and checkpoints catch it."""
    conn = raw(home)
    rows = conn.execute("SELECT seq, prev_hash, key_id, body, session, tool, decision, time FROM audit "
                        "WHERE seq >= 6 ORDER BY seq").fetchall()
    prev = None
    for seq, old_prev, key_id, body, *index in rows:
        prev = old_prev if prev is None else prev
        if seq == 6:
            body = body.replace("cmd-6", "cmd-X")
        digest = rc.entry_hash(seq, prev, key_id, tuple(index), body)
        conn.execute("UPDATE audit SET prev_hash = ?, body = ?, entry_hash = ? WHERE seq = ?",
                     (prev, body, digest, seq))
        prev = digest
    conn.execute("UPDATE meta SET value = ? WHERE key = 'audit_head'", (f"{rows[-1][0]}:{prev}",))


def _replace_key(home: Home) -> None:
    Path(key_path(home)).write_text(os.urandom(32).hex() + "\n")


def _forge_entry(home: Home) -> None:
    conn = raw(home)
    seq, prev, key_id = conn.execute("SELECT seq, entry_hash, key_id FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
    rec = {"tool": "shell", "command": "innocent", "decision": {"decision": "allow"}}
    body = rc.body_json(rec)
    digest = rc.entry_hash(seq + 1, prev, key_id, rc.index_of(rec), body)
    conn.execute("INSERT INTO audit VALUES (?,?,?,?,?,?,?,?,?,?)",
                 (seq + 1, prev, digest, key_id, os.urandom(32).hex(), body, None, "shell", "allow", None))
    conn.execute("UPDATE meta SET value = ? WHERE key = 'audit_head'", (f"{seq + 1}:{digest}",))


def _forge_checkpoint(home: Home) -> None:
    conn = raw(home)
    other = conn.execute("SELECT entry_hash FROM audit WHERE seq = 4").fetchone()[0]
    conn.execute("UPDATE checkpoints SET entry_hash = ? WHERE seq = 5", (other,))


def _delete_checkpoint(home: Home) -> None:
    raw(home).execute("DELETE FROM checkpoints WHERE seq = 10")


TAMPERING: list[tuple[str, Callable[[Home], None], set[tuple[int, str]]]] = [
    ("edit a field", _edit_field, {(6, "hash_mismatch")}),
    ("edit an indexed column", _edit_index_column, {(7, "hash_mismatch")}),
    ("delete an entry", _delete_entry, {(6, "gap")}),
    ("delete the first entry", _delete_first, {(1, "gap")}),
    ("swap two entries", _swap_rows, {(6, "hash_mismatch"), (7, "hash_mismatch")}),
    ("swap two entries and rehash them", _swap_and_rehash, {(6, "hmac_mismatch"), (7, "prev_hash_mismatch")}),
    ("truncate the tail", _truncate_tail, {(10, "truncated")}),
    ("truncate the tail and the high-water mark", _truncate_tail_and_high_water_mark, {(9, "truncated")}),
    ("edit and rehash the whole tail", _rehash_tail, {(6, "hmac_mismatch"), (10, "checkpoint_mismatch")}),
    ("replace the key", _replace_key, {(1, "key_missing")}),
    ("forge an entry with a guessed HMAC", _forge_entry, {(13, "hmac_mismatch")}),
    ("forge a checkpoint", _forge_checkpoint, {(5, "signature_invalid"), (5, "checkpoint_mismatch")}),
]


@pytest.mark.parametrize(("name", "tamper", "expected"), TAMPERING, ids=[t[0] for t in TAMPERING])
def test_tampering_is_detected_and_located(home: Home, name: str, tamper: Callable[[Home], None],
                                           expected: set[tuple[int, str]]) -> None:
    build(home)
    assert verify(home).ok
    tamper(home)
    report = verify(home)
    found = {(p.seq, p.kind) for p in report.problems}
    assert not report.ok
    assert expected <= found, report.problems
    assert report.first_problem.seq == min(seq for seq, _ in expected)
    assert report.summary().startswith(f"FAILED: seq {report.first_problem.seq}: ")


def test_replaced_key_is_located_from_the_first_entry_it_signed(home: Home) -> None:
    build(home, n=4, every=0)
    with Store.open(home) as store:
        log = AuditLog(store, home, checkpoint_every=0)
        log.rotate_key()
        for i in range(5, 9):
            log.append(record(i))
    _replace_key(home)
    report = verify(home, every=0)
    assert [(p.seq, p.kind) for p in report.problems] == [(5, "key_missing")]
    assert report.problem_count == 4  # every entry signed with the replaced key


def test_missing_periodic_checkpoint_is_only_a_warning(home: Home) -> None:
    build(home)
    _delete_checkpoint(home)
    report = verify(home)
    assert report.ok
    assert any("periodic checkpoint(s) missing (first at seq 10)" in w for w in report.warnings)


def test_verify_with_a_pinned_public_key(home: Home, tmp_path: Path) -> None:
    build(home)
    with Store.open(home) as store:
        log = AuditLog(store, home, checkpoint_every=5)
        pem = log.public_key_pem().encode()
        assert log.verify(public_key_pem=pem).ok
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519

        other = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        report = log.verify(public_key_pem=other)
    assert {(p.seq, p.kind) for p in report.problems} == {(5, "signature_invalid"), (10, "signature_invalid")}


def test_a_killed_append_leaves_nothing_half_written(home: Home) -> None:
    build(home, n=3, every=0)
    with Store.open(home) as store:
        with pytest.raises(RuntimeError):
            with store.transaction() as cur:  # what a crash mid-append amounts to
                cur.execute("INSERT INTO audit(seq, prev_hash, entry_hash, key_id, hmac, body) "
                            "VALUES (4, 'x', 'y', 'k', 'h', '{}')")
                raise RuntimeError("killed")
        log = AuditLog(store, home, checkpoint_every=0)
        assert log.verify().checked == 3
        assert log.append(record(4)).seq == 4
        assert log.verify().ok


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_readable_by_others_is_refused(home: Home, mode: int) -> None:
    build(home, n=1)
    secret = Path(key_path(home)).read_text().strip()
    os.chmod(key_path(home), mode)
    with Store.open(home) as store:
        with pytest.raises(StoreError) as info:
            AuditLog(store, home).append(record(2))
    text = str(info.value)
    assert text.startswith(f"{key_path(home)}: receipt key has mode {mode:04o} (readable by others); refusing")
    assert "\n" not in text and secret not in text


def test_a_symlinked_key_is_refused(home: Home, tmp_path: Path) -> None:
    build(home, n=1)
    target = tmp_path / "elsewhere.key"
    os.rename(key_path(home), target)
    os.symlink(target, key_path(home))
    with Store.open(home) as store, pytest.raises(StoreError, match="receipt key is a symlink; refusing"):
        AuditLog(store, home).append(record(2))


def test_a_garbled_key_is_refused(home: Home) -> None:
    build(home, n=1)
    Path(key_path(home)).write_text("not hex at all\n")
    with Store.open(home) as store, pytest.raises(StoreError, match="not a valid receipt key"):
        AuditLog(store, home).append(record(2))


def test_a_missing_key_is_not_silently_regenerated_once_entries_exist(home: Home) -> None:
    first = build(home, n=2)
    os.unlink(key_path(home))
    with Store.open(home) as store, pytest.raises(StoreError) as info:
        AuditLog(store, home).append(record(3))
    assert str(info.value).startswith(
        f"{key_path(home)}: receipt key is missing, but the log has 2 entries signed with key {first[0].key_id}")
    assert not os.path.exists(key_path(home))


def test_a_replaced_key_is_refused_by_append(home: Home) -> None:
    build(home, n=2)
    _replace_key(home)
    with Store.open(home) as store, pytest.raises(StoreError, match="is not the log's current key"):
        AuditLog(store, home).append(record(3))


def test_rotate_key_keeps_old_entries_and_receipts_verifiable(home: Home) -> None:
    old = build(home, n=3, every=0)
    with Store.open(home) as store:
        log = AuditLog(store, home, checkpoint_every=0)
        before, after = log.rotate_key()
        new = log.append(record(4))
        assert before == old[0].key_id and after == new.key_id != before
        retired = os.path.join(home.security, f"receipt.{before}.key")
        assert stat.S_IMODE(os.stat(retired).st_mode) == 0o600
        assert log.verify().ok
        for app in (*old, new):
            assert log.verify_receipt(log.receipt_line(app)).ok
    # Another process with the old key cached follows the rotation.
    with Store.open(home) as store:
        assert AuditLog(store, home).append(record(5)).key_id == after


def test_rotate_key_refuses_when_the_current_key_is_lost_unless_forced(home: Home) -> None:
    build(home, n=2, every=0)
    os.unlink(key_path(home))
    with Store.open(home) as store:
        log = AuditLog(store, home, checkpoint_every=0)
        with pytest.raises(StoreError, match="is not available .missing.; restore it first, or pass --force"):
            log.rotate_key()
        _, new = log.rotate_key(force=True)
        assert log.append(record(3)).key_id == new
        report = log.verify()
    assert [(p.seq, p.kind) for p in report.problems] == [(1, "key_missing")]


# --------------------------------------------------------------------------- receipts


def test_verify_receipt_cases(home: Home) -> None:
    appended = build(home, n=4, every=0)
    with Store.open(home) as store:
        log = AuditLog(store, home)
        good = log.receipt_line(appended[1])
        assert log.verify_receipt(good).ok
        parsed = rc.parse_line(good)
        cases = {
            "no entry seq 9 in the log (it ends at seq 4)": parsed._replace(seq=9),
            "entry hash differs": parsed._replace(entry="0" * 16),
            "HMAC does not match": parsed._replace(hmac="0" * 32),
            "the receipt names key 0000000000000000": parsed._replace(key_id="0" * 16),
        }
        for reason, line in cases.items():
            check = log.verify_receipt(line)
            assert not check.ok and check.reason.startswith(reason), (reason, check.reason)
        _edit_field_at(home, 2)
        assert log.verify_receipt(good).reason == "entry 2 in the log was altered (it no longer matches its hash)"


def _edit_field_at(home: Home, seq: int) -> None:
    raw(home).execute("UPDATE audit SET body = replace(body, 'reason', 'REASON') WHERE seq = ?", (seq,))


# --------------------------------------------------------------------------- export


def export_lines(home: Home, after: int = 0) -> tuple[list[str], bytes]:
    with Store.open(home) as store:
        log = AuditLog(store, home, checkpoint_every=5)
        buf = io.StringIO()
        summary = log.export(buf, after=after)
        assert summary.checkpoints >= 1
        return buf.getvalue().splitlines(), log.public_key_pem().encode()


def test_export_verifies_with_only_the_public_key(home: Home) -> None:
    build(home)
    lines, pem = export_lines(home)
    header = json.loads(lines[0])
    assert header["format"] == "clawshell-audit-export" and header["public_key"]["pem"] == pem.decode()
    assert [json.loads(x)["type"] for x in lines[1:]] == ["entry"] * 12 + ["checkpoint"] * 3
    entry = json.loads(lines[1])
    assert set(entry) == {"type", "seq", "prev_hash", "entry_hash", "key_id", "hmac", "index", "body"}
    assert entry["index"] == ["s1", "file.read", "deny", entry["body"]["time"]]
    report = verify_export(lines, public_key_pem=pem)
    assert report.ok and (report.checked, report.checkpoints) == (12, 3) and not report.warnings
    # No secret key material anywhere in the export.
    assert Path(key_path(home)).read_text().strip() not in "\n".join(lines)
    embedded = verify_export(lines)
    assert embedded.ok and "inside the export itself" in embedded.warnings[0]


def test_incremental_export_is_anchored(home: Home) -> None:
    build(home)
    lines, pem = export_lines(home, after=7)
    report = verify_export(lines, public_key_pem=pem)
    assert report.ok and (report.first_seq, report.last_seq) == (8, 12)
    assert "starts at seq 8" in report.warnings[0]


def test_export_survives_reserialization_by_a_log_shipper(home: Home) -> None:
    build(home)
    lines, pem = export_lines(home)
    shipped = [json.dumps(dict(reversed(list(json.loads(x).items()))), indent=None, ensure_ascii=False)
               for x in lines]
    assert verify_export(shipped, public_key_pem=pem).ok


def _x_edit(lines: list[str]) -> list[str]:
    lines[6] = lines[6].replace("cmd-6", "cmd-X")
    return lines


def _x_delete(lines: list[str]) -> list[str]:
    del lines[6]
    return lines


def _x_swap(lines: list[str]) -> list[str]:
    lines[6], lines[7] = lines[7], lines[6]
    return lines


def _x_truncate(lines: list[str]) -> list[str]:
    return lines[:11]  # header + entries 1..10: the signed head and the checkpoints are gone


def _x_forge_signature(lines: list[str]) -> list[str]:
    cp = json.loads(lines[-1])
    cp["signature"] = cp["signature"][:10] + ("A" if cp["signature"][10] != "A" else "B") + cp["signature"][11:]
    lines[-1] = json.dumps(cp)
    return lines


def _x_garbage(lines: list[str]) -> list[str]:
    lines.insert(3, "{not json")
    return lines


EXPORT_TAMPERING = [
    ("edit a body", _x_edit, {(6, "hash_mismatch")}),
    ("delete an entry line", _x_delete, {(6, "gap")}),
    ("swap two lines", _x_swap, {(6, "gap"), (6, "order")}),
    ("truncate", _x_truncate, {(1, "unsigned"), (11, "truncated")}),
    ("forge a checkpoint signature", _x_forge_signature, {(12, "signature_invalid")}),
    ("a line that is not JSON", _x_garbage, {(3, "malformed")}),
]


@pytest.mark.parametrize(("name", "tamper", "expected"), EXPORT_TAMPERING, ids=[t[0] for t in EXPORT_TAMPERING])
def test_export_tampering_is_detected_and_located(home: Home, name: str, tamper, expected) -> None:
    build(home)
    lines, pem = export_lines(home)
    report = verify_export(tamper(lines), public_key_pem=pem)
    assert not report.ok
    assert expected <= {(p.seq, p.kind) for p in report.problems}, report.problems


def test_export_with_a_different_public_key_fails(home: Home, tmp_path: Path) -> None:
    build(home)
    lines, _ = export_lines(home)
    other_home = Home(str(tmp_path / "other"))
    build(other_home, n=5)
    _, other_pem = export_lines(other_home)
    report = verify_export(lines, public_key_pem=other_pem)
    assert {p.kind for p in report.problems} == {"signature_invalid"}
    assert any("names public key" in w for w in report.warnings)


# --------------------------------------------------------------------------- CLI


def invoke(cli, args: list[str], input: str | None = None):
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def test_cli_audit_listing_filters_and_json(home: Home) -> None:
    build(home)
    table = invoke(audit_cli, ["--last", "2"])
    assert table.exit_code == 0
    lines = table.output.splitlines()
    assert lines[0].split()[:3] == ["SEQ", "TIME", "(UTC)"] and len(lines) == 3
    assert lines[2].split()[0] == "12" and "cmd-12" in lines[2]
    denied = invoke(audit_cli, ["--all", "--filter", "decision=deny", "--json"])
    assert [e["seq"] for e in json.loads(denied.output)] == [1, 4, 7, 10]
    combined = invoke(audit_cli, ["--session", "s0", "--filter", "tool=shell", "--filter", "since=1h", "--json"])
    assert [e["seq"] for e in json.loads(combined.output)] == [6, 12]
    assert json.loads(invoke(audit_cli, ["--filter", "since=2000-01-01", "--filter", "until=2000-01-02",
                                         "--json"]).output) == []


def test_cli_audit_explain_shows_rule_score_and_thresholds(home: Home) -> None:
    build(home, n=4)
    out = invoke(audit_cli, ["--last", "1", "--explain"]).output
    assert "decided by: rule.deny.4 -> deny: reason 4 [matched: cmd-4] (score 98)" in out
    assert "score 98 >= auto_deny 95 (critical: denied); thresholds warn 40, flag 65, auto_deny 95" in out
    assert "sandbox:    landlock, seccomp" in out and "[clawshell receipt] v1 seq=4 " in out


@pytest.mark.parametrize("args", [["--filter", "decision=maybe"], ["--filter", "nokey"], ["--filter", "color=red"],
                                  ["--filter", "since=yesterday"], ["--last", "0"]])
def test_cli_audit_usage_errors_exit_2(home: Home, args: list[str]) -> None:
    assert CliRunner().invoke(audit_cli, args).exit_code == 2


def test_cli_verify_and_export_round_trip(home: Home, tmp_path: Path) -> None:
    build(home)
    ok = invoke(audit_cli, ["verify"])
    assert ok.exit_code == 0 and ok.output.startswith("ok: 12 entries (seq 1-12) verified")
    export = tmp_path / "audit.jsonl"
    pub = tmp_path / "ed25519.pub"
    assert invoke(audit_cli, ["export", "--format", "jsonl", "--output", str(export)]).exit_code == 0
    assert stat.S_IMODE(os.stat(export).st_mode) == 0o600
    pub.write_text(invoke(audit_cli, ["public-key"]).output)
    assert pub.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    checked = invoke(audit_cli, ["verify", "--public-key", str(pub), str(export)])
    assert checked.exit_code == 0 and checked.output.startswith("ok: 12 entries (seq 1-12) verified: hashes, chain")
    export.write_text(export.read_text().replace("cmd-6", "cmd-X"))
    bad = invoke(audit_cli, ["verify", "--public-key", str(pub), str(export)])
    assert bad.exit_code == 1 and "FAILED: seq 6: hash_mismatch" in bad.output
    _edit_field(home)
    bad_db = invoke(audit_cli, ["verify", "--json"])
    assert bad_db.exit_code == 1
    assert json.loads(bad_db.output)["problems"][0] == {
        "seq": 6, "kind": "hash_mismatch", "message": "the entry does not match its hash: a field was edited"}
    assert CliRunner().invoke(audit_cli, ["verify", "--public-key", str(export), str(export)]).exit_code == 2


def test_cli_receipts(home: Home) -> None:
    appended = build(home, n=3)
    shown = invoke(receipts_cli, ["show", "--last", "2"])
    assert [line.split("  #")[0] for line in shown.output.splitlines()] == [
        rc.format_line(a.seq, a.entry_hash, a.receipt, a.key_id) for a in appended[1:]]
    line = json.loads(invoke(receipts_cli, ["show", "--json"]).output)[-1]["receipt"]
    assert invoke(receipts_cli, ["verify", line]).output.startswith("valid: entry 3 ")
    assert invoke(receipts_cli, ["verify", *line.split()]).exit_code == 0
    assert invoke(receipts_cli, ["verify"], input=line + "\n").exit_code == 0
    forged = line[:-40] + "0" * 8 + line[-32:]
    bad = CliRunner().invoke(receipts_cli, ["verify", forged])
    assert bad.exit_code == 1 and bad.output.startswith("invalid: ")
    unparsable = CliRunner().invoke(receipts_cli, ["verify", "[clawshell receipt] v1 seq=x"])
    assert unparsable.exit_code == 2
    assert "clawshell: receipt: receipt line: " in unparsable.output
    rotated = invoke(receipts_cli, ["rotate-key"])
    assert rotated.output.startswith(f"rotated receipt key {appended[0].key_id} -> ")
    assert invoke(receipts_cli, ["verify", line]).exit_code == 0


def test_cli_on_an_empty_home(home: Home) -> None:
    assert invoke(audit_cli, []).output == "no audit entries yet\n"
    assert invoke(audit_cli, ["verify"]).output.startswith("ok: empty log")
    assert invoke(receipts_cli, ["show"]).output == "no receipts yet\n"
    assert not os.path.exists(home.database)  # reading never creates the store


def test_cli_store_failure_exits_126_with_one_line(home: Home) -> None:
    os.makedirs(home.storage, mode=0o700)
    Path(home.database).write_bytes(b"garbage" * 1000)
    result = CliRunner().invoke(audit_cli, ["verify"])
    assert result.exit_code == 126
    assert result.stderr == f"clawshell: store: {home.database}: file is not a database (corrupt or not a " \
                            "clawshell database; move it aside to start a new one)\n"


def test_installed_command_exit_codes(home: Home) -> None:
    build(home, n=2)
    ok = run_clawshell(["audit", "verify"])
    assert ok.returncode == 0, ok.stderr
    _edit_field_at(home, 2)
    assert run_clawshell(["audit", "verify"]).returncode == 1
    assert run_clawshell(["receipts", "verify", "nonsense"]).returncode == 2
    Path(home.database).write_bytes(b"garbage" * 1000)
    broken = run_clawshell(["audit"])
    assert broken.returncode == 126
    assert broken.stderr.decode().startswith(f"clawshell: store: {home.database}: file is not a database")


def test_the_independent_verifier_in_docs_audit_md_works(home: Home) -> None:
    import re

    doc = (Path(__file__).resolve().parents[1] / "docs" / "audit.md").read_text()
    code = next(block for block in re.findall(r"```python\n(.*?)```", doc, re.S) if "independent-verifier" in block)
    namespace: dict = {"__name__": "docs_audit_md"}
    exec(compile(code, "docs/audit.md", "exec"), namespace)
    build(home)
    lines, pem = export_lines(home)
    assert namespace["verify"](lines, pem) == 12
    with pytest.raises(ValueError, match="seq 6: entry does not match its hash"):
        namespace["verify"](_x_edit(list(lines)), pem)


def test_security_dir_holds_only_private_regular_files(home: Home) -> None:
    build(home, n=6, every=5)  # HMAC key, checkpoint key pair
    with Store.open(home) as store:
        AuditLog(store, home).rotate_key()  # a retired key
    names = sorted(os.listdir(home.security))
    assert len(names) == 4 and "ed25519.pub" in names and "receipt.key" in names
    for name in names:
        st = os.lstat(os.path.join(home.security, name))
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, name
