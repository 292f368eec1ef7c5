"""What a command prints and how it exits (the pipeline and the modules it hands parts to decide; the CLI only
prints), and the exit codes."""

from __future__ import annotations

from dataclasses import dataclass, field

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


class UsageProblem(Exception):
    """The command was asked for something that cannot be done with these arguments (exit 2)."""


@dataclass
class Outcome:
    """What a command prints and how it exits: the pipeline decides, the CLI only prints."""

    stdout: str = ""
    stderr: list[str] = field(default_factory=list)
    code: int = EXIT_OK
    reviews: list = field(default_factory=list)  # diff --against: each cluster's part (output.review)
    rollouts: list = field(default_factory=list)  # diff --against of a fleet: its rollout (output.rollout)
