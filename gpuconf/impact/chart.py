"""The "before" of a chart move: the same intent rendered on its current chart, beside its render on another."""

from __future__ import annotations


def rendered_on_both(plan, moved_plan) -> tuple[dict[str, str], dict[str, str]]:
    """The output folders (relative path -> text) of the intent on its chart and on the moved plan's chart."""
    from ..render.tree import Command, render_tree

    command = Command(plan.source, "out")
    return render_tree(plan, command).files, render_tree(moved_plan, command).files
