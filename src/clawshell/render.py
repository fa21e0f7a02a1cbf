"""One rendering of a ``Verdict`` for every audience: the agent's stderr line, the
``check --json`` output, the audit record and the hook/MCP replies.  Pure."""

from __future__ import annotations

from typing import Any

from .model import Decision, Evidence, Verdict


def evidence_dict(ev: Evidence) -> dict[str, Any]:
    """JSON-ready form of one piece of evidence."""
    return {
        "rule": ev.rule,
        "decision": ev.decision.label,
        "reason": ev.reason,
        "matched": ev.matched,
        "score": ev.score,
        "alternative": ev.alternative,
    }


def verdict_dict(verdict: Verdict) -> dict[str, Any]:
    """JSON-ready form of a verdict (used by ``check --json`` and the audit record)."""
    t = verdict.thresholds
    return {
        "decision": verdict.decision.label,
        "score": verdict.score,
        "risk": verdict.risk.value,
        "thresholds": {"warn": t.warn, "flag": t.flag, "auto_deny": t.auto_deny},
        "network": verdict.network,
        "evidence": [evidence_dict(e) for e in verdict.evidence],
    }


def _deciding(verdict: Verdict) -> Evidence | None:
    for ev in verdict.evidence:
        if ev.decision == verdict.decision:
            return ev
    return verdict.primary


def reason_text(verdict: Verdict) -> str:
    """``reason: matched [rule: id]`` for the deciding evidence."""
    ev = _deciding(verdict)
    if ev is None:
        return f"score {verdict.score} ({verdict.risk.value})"
    text = ev.reason
    if ev.matched:
        text += f": {ev.matched}"
    text += f" [rule: {ev.rule}]"
    if ev.alternative:
        text += f"; instead: {ev.alternative}"
    return text


def refusal_line(verdict: Verdict) -> str:
    """The one tagged stderr line an agent reads when an action is refused."""
    if verdict.decision is Decision.DENY:
        return f"clawshell: denied: {reason_text(verdict)}"
    return f"clawshell: approval required (score {verdict.score}, {verdict.risk.value}): {reason_text(verdict)}"
