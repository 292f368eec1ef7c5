"""The render command as the generated files name it, for their regeneration: nothing of the folder the files were
written to, so that the same inputs render the same bytes wherever they are written (attestations included)."""

from __future__ import annotations

from dataclasses import dataclass

from .. import plan as P
from ..escape import shell_word


@dataclass(frozen=True)
class Command:
    """The render command (its input and output folder as given). What the files print of it is `regenerate`:
    nothing of the folder they were written to, so that the same inputs render the same bytes anywhere."""

    input: str
    out: str


def regenerate(plan: P.Plan, command: Command, options: str = "") -> str:
    """The command the generated files name for their regeneration: `gpuconf render INPUT -o DIR`, DIR the
    repository folder spec.delivery.path names (the intent's, so the same wherever the files were written), else
    the word DIR and what it stands for. Each path is one shell word."""
    delivery = plan.intent.spec.delivery
    path = delivery.path if delivery is not None else None
    text = f"gpuconf render {shell_word(command.input)}{' ' + options if options else ''} -o " \
           f"{shell_word(path) if path else 'DIR'}"
    return text if path else f"{text} (DIR: the folder that holds {plan.name}/)"
