"""``clawshell audit ...`` and ``clawshell receipts ...``: inspect, verify and export the log.

Exit codes: 0 ok; 1 verification failed (or a receipt is invalid), with the located
problem; 2 usage (including a receipt line that does not parse); 126 the store or a
key cannot be used (one ``clawshell: store: ...`` line).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
from typing import Any, Callable, TypeVar

import click

from ..errors import EXIT_DENIED, EXIT_USAGE, StoreError
from ..home import Home

F = TypeVar("F", bound=Callable[..., Any])

FILTER_KEYS = ("decision", "tool", "since", "until", "outcome", "session")
DECISIONS = ("allow", "approve", "deny")
_RELATIVE = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_ISO = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?Z?")


def _fail_closed(func: F) -> F:
    """Turn StoreError into one stderr line and exit 126 (also under CliRunner)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except StoreError as exc:
            for line in str(exc).splitlines() or ["store failure"]:
                click.echo(f"clawshell: {exc.tag}: {line}", err=True)
            sys.exit(EXIT_DENIED)

    return wrapper  # type: ignore[return-value]


def _open(readonly: bool) -> tuple[Any, Any] | None:
    """Open the store and log; for reads, None when nothing was ever recorded."""
    from ..audit import AuditLog
    from ..store import Store

    home = Home.from_env()
    if readonly and not os.path.exists(home.database):
        return None
    store = Store.open(home, readonly=readonly)
    return store, AuditLog(store, home)


def parse_time(value: str, now: float) -> str:
    """``since``/``until`` value -> ISO UTC string comparable with entry times.

    Accepts a relative age (``30m``, ``2h``, ``1d``, ``1w``, ``45s``) or an ISO date or
    date-time in UTC (``2026-11-29``, ``2026-11-29T16:30``, ``...:05.250Z``).
    """
    from ..audit import format_time

    text = value.strip()
    m = _RELATIVE.fullmatch(text)
    if m:
        return format_time(now - int(m.group(1)) * _UNITS[m.group(2)])
    m = _ISO.fullmatch(text)
    if not m:
        raise click.BadParameter(f"{value!r}: expected an age like 30m/2h/1d or a UTC date like 2026-11-29T16:30")
    date, hh, mm, ss, frac = m.groups()
    ms = (frac or "0").ljust(3, "0")[:3]
    return f"{date}T{hh or '00'}:{mm or '00'}:{ss or '00'}.{ms}Z"


def _parse_filters(filters: tuple[str, ...], now: float) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in filters:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in FILTER_KEYS or not value:
            raise click.BadParameter(f"{item!r}: expected KEY=VALUE with KEY one of {', '.join(FILTER_KEYS)}",
                                     param_hint="--filter")
        if key == "decision" and value not in DECISIONS:
            raise click.BadParameter(f"decision must be one of {', '.join(DECISIONS)}, not {value!r}",
                                     param_hint="--filter")
        if key in ("since", "until"):
            value = parse_time(value, now)
        out[key] = value
    return out


def _one_line(text: str, width: int | None = None) -> str:
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        elif 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        else:
            out.append(ch)
    line = "".join(out)
    if width is not None and len(line) > width:
        line = line[:width - 3] + "..."
    return line


def _command_text(body: dict[str, Any]) -> str:
    from ..receipts import decode_text

    command = body.get("command")
    if command is None and body.get("args") is not None:
        command = body.get("args")
    return decode_text(command)


def _verdict(body: dict[str, Any]) -> dict[str, Any]:
    decision = body.get("decision")
    return decision if isinstance(decision, dict) else {"decision": decision}


def _row(entry: Any) -> str:
    body = entry.record
    verdict = _verdict(body)
    score = verdict.get("score")
    exit_status = body.get("exit")
    when = (entry.time or "").replace("T", " ")[:19]
    return (f"{entry.seq:>6}  {when:19}  {str(verdict.get('decision') or '-'):7}  "
            f"{'-' if score is None else score:>5}  {str(entry.tool or '-'):10}  {str(body.get('outcome') or '-'):8}  "
            f"{'-' if exit_status is None else exit_status:>4}  {_one_line(str(entry.session or '-'), 12):12}  "
            f"{_one_line(_command_text(body), 60)}")


HEADER = (f"{'SEQ':>6}  {'TIME (UTC)':19}  {'DECIDED':7}  {'SCORE':>5}  {'TOOL':10}  {'OUTCOME':8}  {'EXIT':>4}  "
          f"{'SESSION':12}  COMMAND")


def _threshold_text(score: Any, thresholds: Any) -> str:
    if not isinstance(thresholds, dict):
        return ""
    warn, flag, deny = thresholds.get("warn"), thresholds.get("flag"), thresholds.get("auto_deny")
    limits = f"thresholds warn {warn}, flag {flag}, auto_deny {deny}"
    if not isinstance(score, (int, float)):
        return limits
    for name, limit, meaning in (("auto_deny", deny, "critical: denied"), ("flag", flag, "high: needs approval"),
                                 ("warn", warn, "medium: runs, logged [HIGH_RISK]")):
        if isinstance(limit, (int, float)) and score >= limit:
            return f"score {score} >= {name} {limit} ({meaning}); {limits}"
    return f"score {score} below warn {warn} (low: runs); {limits}"


def _evidence_line(ev: Any) -> str:
    if not isinstance(ev, dict):
        return str(ev)
    text = f"{ev.get('rule', '?')} -> {ev.get('decision', '?')}: {ev.get('reason', '')}"
    if ev.get("matched"):
        text += f" [matched: {_one_line(str(ev['matched']), 80)}]"
    if ev.get("score") is not None:
        text += f" (score {ev['score']})"
    if ev.get("alternative"):
        text += f"; instead: {ev['alternative']}"
    return text


def _explain(entry: Any) -> list[str]:
    body = entry.record
    verdict = _verdict(body)
    lines = [f"#{entry.seq}  {entry.time}  tool {entry.tool or '-'}  session {entry.session or '-'}",
             f"  command:    {_one_line(_command_text(body))}"]
    if body.get("cwd") or body.get("workspace"):
        lines.append(f"  cwd:        {body.get('cwd') or '-'}   workspace: {body.get('workspace') or '-'}")
    score = verdict.get("score")
    lines.append(f"  decision:   {verdict.get('decision') or '-'} (risk {verdict.get('risk') or '-'}); "
                 f"{_threshold_text(score, verdict.get('thresholds'))}".rstrip("; "))
    evidence = verdict.get("evidence") or []
    if evidence:
        lines.append(f"  decided by: {_evidence_line(evidence[0])}")
        for ev in evidence[1:]:
            lines.append(f"    also:     {_evidence_line(ev)}")
    else:
        lines.append("  decided by: (no rule evidence recorded)")
    approval = body.get("approval")
    if isinstance(approval, dict):
        lines.append(f"  approval:   {approval.get('decision', '-')} by {approval.get('by', '-')} "
                     f"(token {approval.get('token', '-')})")
    sandbox = body.get("sandbox")
    if isinstance(sandbox, dict):
        lines.append(f"  sandbox:    {', '.join(map(str, sandbox.get('layers') or [])) or 'none'}")
    lines.append(f"  outcome:    {body.get('outcome') or '-'}, exit {body.get('exit', '-')}, "
                 f"{body.get('duration', '-')} s" + (f", error: {body['error']}" if body.get("error") else ""))
    for leak in body.get("leaks") or []:
        if isinstance(leak, dict):
            lines.append(f"  leak:       {leak.get('kind')} in {leak.get('stream')} at {leak.get('offset')} "
                         f"({leak.get('length')} bytes, masked)")
    if body.get("injections"):
        lines.append(f"  injections: {', '.join(map(str, body['injections']))}")
    if body.get("policy_hash"):
        lines.append(f"  policy:     {body['policy_hash']}")
    lines.append(f"  receipt:    {entry.receipt_line()}")
    return lines


# --------------------------------------------------------------------------- audit


@click.group("audit", invoke_without_command=True)
@click.option("--last", "-n", "last", type=click.IntRange(min=1), default=None,
              help="Show the newest N matching entries (default 20).")
@click.option("--all", "show_all", is_flag=True, help="Show every matching entry.")
@click.option("--session", default=None, help="Only entries of this session id.")
@click.option("--filter", "filters", multiple=True, metavar="KEY=VALUE",
              help="decision=allow|approve|deny, tool=NAME (globs ok), outcome=ran|refused|failed|timeout, "
                   "since=AGE|DATE, until=AGE|DATE, session=ID. Repeat to combine.")
@click.option("--explain", is_flag=True, help="Show the rule, score and thresholds that decided each entry.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of entries.")
@click.pass_context
@_fail_closed
def audit(ctx: click.Context, last: int | None, show_all: bool, session: str | None, filters: tuple[str, ...],
          explain: bool, as_json: bool) -> None:
    """Show the audit log (newest last), or verify / export it.

    Every tool call, allowed or refused, is one entry of a hash chain; see
    `clawshell audit verify` and `clawshell audit export`.
    """
    if ctx.invoked_subcommand is not None:
        return
    wanted = _parse_filters(filters, time.time())
    if session is not None:
        wanted["session"] = session
    opened = _open(readonly=True)
    if opened is None:
        click.echo("[]" if as_json else "no audit entries yet")
        return
    store, log = opened
    try:
        entries = log.query(last=None if show_all else (last or 20), **wanted)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([e.to_dict() for e in entries], indent=2, sort_keys=True))
        return
    if not entries:
        click.echo("no matching audit entries")
        return
    if explain:
        for i, entry in enumerate(entries):
            if i:
                click.echo("")
            for line in _explain(entry):
                click.echo(line)
        return
    click.echo(HEADER)
    for entry in entries:
        click.echo(_row(entry))


def _read_public_key(path: str | None) -> bytes | None:
    if path is None:
        return None
    from ..audit import load_public_key

    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise click.BadParameter(f"{path}: {exc.strerror}", param_hint="--public-key") from None
    try:
        load_public_key(data, path)
    except StoreError as exc:
        raise click.BadParameter(str(exc), param_hint="--public-key") from None
    return data


def _print_report(report: Any, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2, sort_keys=True))
    else:
        click.echo(report.summary() + (f"  [{report.rate:,.0f} entries/s]" if report.checked else ""),
                   err=not report.ok)
        for problem in report.problems[1:20]:
            click.echo(f"  also {problem.line()}", err=True)
        if report.problem_count > 20:
            click.echo(f"  ... {report.problem_count - 20} more", err=True)
        for warning in report.warnings:
            click.echo(f"  note: {warning}", err=True)
    if not report.ok:
        sys.exit(1)


@audit.command("verify")
@click.argument("export_file", metavar="[EXPORT]", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--public-key", "public_key", type=click.Path(dir_okay=False), default=None,
              help="Ed25519 public key (PEM) the checkpoints must verify with.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_fail_closed
def verify(export_file: str | None, public_key: str | None, as_json: bool) -> None:
    """Verify the log in this home, or an exported JSONL file with only the public key.

    Exit 0 when every entry checks out, 1 with the first bad entry located by seq.
    """
    pem = _read_public_key(public_key)
    if export_file is not None:
        from ..audit import verify_export

        if export_file == "-":
            report = verify_export(sys.stdin, source="<stdin>", public_key_pem=pem)
        else:
            try:
                fh = open(export_file, encoding="utf-8", errors="surrogateescape")
            except OSError as exc:
                raise click.BadParameter(f"{export_file}: {exc.strerror}", param_hint="EXPORT") from None
            with fh:
                report = verify_export(fh, source=export_file, public_key_pem=pem)
        _print_report(report, as_json)
        return
    opened = _open(readonly=True)
    if opened is None:
        click.echo('{"ok": true, "checked": 0}' if as_json else "ok: empty log (nothing recorded yet)")
        return
    store, log = opened
    try:
        report = log.verify(public_key_pem=pem)
    finally:
        store.close()
    _print_report(report, as_json)


@audit.command("export")
@click.option("--format", "fmt", type=click.Choice(["jsonl"]), default="jsonl", show_default=True,
              help="Export format (docs/audit.md).")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              help="Write to FILE (mode 0600) instead of stdout.")
@click.option("--after", "after", type=click.IntRange(min=0), default=0,
              help="Only entries with seq > N (incremental shipping).")
@_fail_closed
def export(fmt: str, output: str, after: int) -> None:
    """Export the chain as JSONL: a header with the public key, one line per entry, then checkpoints.

    A checkpoint is signed at the current head first, so the export verifies with
    `clawshell audit verify --public-key ed25519.pub FILE` and no secret.
    """
    opened = _open(readonly=False)
    assert opened is not None
    store, log = opened
    try:
        if output == "-":
            summary = log.export(sys.stdout, after=after)
            sys.stdout.flush()
        else:
            directory = os.path.dirname(os.path.abspath(output))
            tmp = os.path.join(directory, f".{os.path.basename(output)}.{os.getpid()}.tmp")
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                raise click.BadParameter(f"{output}: {exc.strerror}", param_hint="--output") from None
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    summary = log.export(fh, after=after)
                os.replace(tmp, output)
            except BaseException:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
                raise
    finally:
        store.close()
    span = f"seq {summary.first_seq}-{summary.last_seq}" if summary.entries else "no entries"
    click.echo(f"exported {summary.entries} entries ({span}) and {summary.checkpoints} signed checkpoint(s); "
               f"public key {summary.public_key_id or '-'}" + ("" if output == "-" else f" -> {output}"), err=True)


@audit.command("public-key")
@_fail_closed
def public_key() -> None:
    """Print the Ed25519 public key (PEM) that signs checkpoints, for auditors."""
    opened = _open(readonly=False)
    assert opened is not None
    store, log = opened
    try:
        click.echo(log.public_key_pem(), nl=False)
    finally:
        store.close()


# --------------------------------------------------------------------------- receipts


@click.group("receipts")
def receipts() -> None:
    """Check, list and re-key receipts (the tagged line shown after each command)."""


@receipts.command("verify")
@click.argument("line", nargs=-1)
@_fail_closed
def receipts_verify(line: tuple[str, ...]) -> None:
    """Check one receipt LINE against the log (quote it, or pass it on stdin).

    Exit 0 valid, 1 invalid (with the reason), 2 when the line does not parse.
    """
    from ..receipts import ReceiptParseError, parse_line

    text = " ".join(line) if line else sys.stdin.readline()
    try:
        parsed = parse_line(text)
    except ReceiptParseError as exc:
        click.echo(f"clawshell: receipt: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    opened = _open(readonly=True)
    if opened is None:
        click.echo(f"invalid: no entry seq {parsed.seq}: nothing has been recorded in this home", err=True)
        sys.exit(1)
    store, log = opened
    try:
        check = log.verify_receipt(parsed)
    finally:
        store.close()
    if check.ok:
        click.echo(check.reason)
        return
    click.echo(f"invalid: {check.reason}", err=True)
    sys.exit(1)


@receipts.command("show")
@click.option("--last", "-n", "last", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many of the newest receipts.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@_fail_closed
def receipts_show(last: int, as_json: bool) -> None:
    """List the newest receipts with what they were for."""
    opened = _open(readonly=True)
    entries = []
    if opened is not None:
        store, log = opened
        try:
            entries = log.query(last=last)
        finally:
            store.close()
    if as_json:
        click.echo(json.dumps([{"seq": e.seq, "time": e.time, "tool": e.tool, "decision": e.decision,
                                "session": e.session, "receipt": e.receipt_line(), "entry_hash": e.entry_hash,
                                "hmac": e.hmac, "key_id": e.key_id} for e in entries], indent=2, sort_keys=True))
        return
    if not entries:
        click.echo("no receipts yet")
        return
    for e in entries:
        click.echo(f"{e.receipt_line()}  # {e.time} {e.tool or '-'} {e.decision or '-'}: "
                   f"{_one_line(_command_text(e.record), 50)}")


@receipts.command("rotate-key")
@click.option("--force", is_flag=True,
              help="Start a new key even though the log's current key is missing or was replaced.")
@_fail_closed
def receipts_rotate_key(force: bool) -> None:
    """Start a new receipt HMAC key; the old one is kept so older receipts still verify."""
    opened = _open(readonly=False)
    assert opened is not None
    store, log = opened
    try:
        old, new = log.rotate_key(force=force)
    finally:
        store.close()
    if old:
        click.echo(f"rotated receipt key {old} -> {new}; {old} kept as security/receipt.{old}.key so older "
                   "receipts still verify")
    else:
        click.echo(f"new receipt key {new}")
