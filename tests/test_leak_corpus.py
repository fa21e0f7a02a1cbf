"""Quality corpus: recall and false-positive rate of leak detection at the default
sensitivity, on the generated corpus in tests/data/leaks (see generate.py there).

Goals (issue 7): recall >= 99% of the fake secrets, false positives <= 1% of the
look-alike cases.  The figures are printed (``pytest -s`` shows them)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from clawshell.leaks import LeakSettings, StreamScanner, scan_bytes
from clawshell.model import LeakFinding

DATA = Path(__file__).parent / "data" / "leaks"


def load(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


POSITIVES = load("positives.jsonl")
NEGATIVES = load("negatives.jsonl")


def covered(findings: list[LeakFinding], start: int, end: int) -> bool:
    """True when masked spans cover ``[start, end)`` entirely."""
    pos = start
    for f in sorted(findings, key=lambda f: f.offset):
        if f.offset <= pos < f.offset + f.length:
            pos = f.offset + f.length
    return pos >= end


@dataclass(frozen=True)
class Figures:
    """Corpus results at one sensitivity."""

    secrets: int
    caught: int
    right_kind: int
    extra: int
    lookalike_cases: int
    false_positive_cases: int
    missed: tuple[str, ...]
    false_positives: tuple[str, ...]

    @property
    def recall(self) -> float:
        return self.caught / self.secrets

    @property
    def fp_rate(self) -> float:
        return self.false_positive_cases / self.lookalike_cases

    def line(self, sensitivity: float) -> str:
        return (f"sensitivity {sensitivity}: recall {self.recall:.2%} ({self.caught}/{self.secrets}), "
                f"right kind {self.right_kind / self.secrets:.2%}, false positives {self.fp_rate:.2%} "
                f"({self.false_positive_cases}/{self.lookalike_cases}), extra findings in positives {self.extra}")


def evaluate(sensitivity: float) -> Figures:
    st = LeakSettings(sensitivity=sensitivity)
    secrets = caught = right = extra = 0
    missed: list[str] = []
    for case in POSITIVES:
        data = case["text"].encode()
        _, findings = scan_bytes(data, st)
        spans = []
        for s in case["secrets"]:
            v = s["value"].encode()
            i = data.find(v)
            while i >= 0:
                secrets += 1
                spans.append((i, i + len(v)))
                if covered(findings, i, i + len(v)):
                    caught += 1
                    kinds = {f.kind for f in findings if f.offset < i + len(v) and f.offset + f.length > i}
                    right += bool(kinds & {s["kind"], *s["also"]})
                else:
                    missed.append(f"{case['id']} {s['kind']} in {case['carrier']}")
                i = data.find(v, i + len(v))
        extra += sum(1 for f in findings if not any(f.offset < b and f.offset + f.length > a for a, b in spans))
    fps = []
    for case in NEGATIVES:
        data = case["text"].encode()
        _, findings = scan_bytes(data, st)
        if findings:
            fps.append(f"{case['id']} {case['lookalike']}: {[f.kind for f in findings]}")
    return Figures(secrets, caught, right, extra, len(NEGATIVES), len(fps), tuple(missed), tuple(fps))


def test_corpus_is_big_and_varied_enough() -> None:
    kinds = Counter(s["kind"] for c in POSITIVES for s in c["secrets"])
    looks = Counter(c["lookalike"] for c in NEGATIVES)
    carriers = {c["carrier"] for c in POSITIVES}
    print(f"\ncorpus: {sum(kinds.values())} secrets of {len(kinds)} kinds in {len(carriers)} carriers; "
          f"{len(NEGATIVES)} look-alike cases of {len(looks)} sorts")
    assert sum(kinds.values()) >= 300 and len(kinds) >= 20 and min(kinds.values()) >= 10
    assert len(NEGATIVES) >= 300 and len(looks) >= 12


def test_default_sensitivity_meets_the_recall_and_false_positive_goals() -> None:
    fig = evaluate(0.7)
    print("\n" + fig.line(0.7))
    assert fig.recall >= 0.99, fig.missed
    assert fig.fp_rate <= 0.01, fig.false_positives
    assert fig.right_kind >= 0.97 * fig.secrets
    assert fig.extra <= 0.01 * fig.secrets


@pytest.mark.parametrize("sensitivity", [0.3, 1.0])
def test_other_sensitivities_stay_usable(sensitivity: float) -> None:
    fig = evaluate(sensitivity)
    print("\n" + fig.line(sensitivity))
    assert fig.recall >= 0.95 and fig.fp_rate <= 0.05


def test_streaming_in_odd_chunks_matches_whole_scans_over_the_corpus() -> None:
    rnd = random.Random(7)
    st = LeakSettings()
    cases = POSITIVES[::3] + NEGATIVES[::5]
    for case in cases:
        data = case["text"].encode()
        whole = scan_bytes(data, st)
        sc = StreamScanner("file", st)
        out, pos = [], 0
        while pos < len(data):
            step = rnd.randint(1, 97)
            out.append(sc.feed(data[pos:pos + step]))
            pos += step
        out.append(sc.finish())
        assert (b"".join(out), sc.findings) == whole, case["id"]


def test_committed_corpus_matches_the_generator(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(DATA / "generate.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("positives.jsonl", "negatives.jsonl"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
