"""The backend protocol: what a sandbox backend offers the pipeline.

A backend answers two questions: what does this host offer (``probe``), and how do I
start ``argv`` under this spec (``plan``).  It never spawns anything itself: the
``LaunchPlan`` it returns is data (argv, env, in-child steps) that only ``runner``
executes.  ``HostBackend`` is the one implementation, layering bwrap, Landlock and
seccomp as ``sandbox.plan`` decides; tests substitute fakes with canned plans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from ..model import HostProbe, LaunchPlan, SandboxSpec


class SandboxBackend(Protocol):
    """What the pipeline needs from a sandbox backend."""

    def probe(self) -> HostProbe:
        """The layers this host offers (cached; cheap on the hot path)."""

    def plan(self, spec: SandboxSpec, argv: Sequence[str]) -> LaunchPlan:
        """How to start ``argv`` confined by ``spec``; raises ``SandboxUnavailableError``."""


@dataclass(frozen=True)
class HostBackend:
    """The real backend: probes this host and plans with ``sandbox.plan``."""

    cache_dir: str | None
    """Cache zone for the probe result and the compiled seccomp program."""

    def probe(self) -> HostProbe:
        """``probe.probe_host`` with this backend's cache."""
        from .probe import probe_host

        return probe_host(self.cache_dir)

    def plan(self, spec: SandboxSpec, argv: Sequence[str]) -> LaunchPlan:
        """``sandbox.plan`` against this host's probe."""
        from . import plan

        return plan(spec, argv, self.probe())
