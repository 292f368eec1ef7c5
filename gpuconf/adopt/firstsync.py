"""`gpuconf import`'s first-sync check: the plan of the draft's first sync over the nodes it was drafted from, and
the surprises (a repartition, a re-share, a driver reinstall with a version the draft chose) that fail the import.
Lines go to `say` (the command's stderr)."""

from __future__ import annotations


def first_sync(text: str, draft, values: tuple = (), sets: tuple = (), set_strings: tuple = (),
               configmaps: tuple = (), cluster=None, say=print):
    """With nodes: the plan of the draft's first sync over them (and the installation's values), said on stderr;
    returns it (None without nodes, or when the draft does not validate)."""
    if draft is None:
        return None
    from . import sources as S
    from ..impact import installation as I

    inputs = (list(cluster.values) if cluster is not None else []) + [S.read_values_file(p) for p in values] + \
        [S.read_set(a) for a in sets] + [S.read_set(a, strings=True) for a in set_strings]
    maps = (list(cluster.configmaps) if cluster is not None else []) + \
        [cm for path in configmaps for cm in S.read_configmaps(path)]
    plan = I.of_draft(text, draft.gpu_node_objects, inputs, maps)
    if plan is not None:
        for line in I.summary_lines(plan):
            say(line)
    return plan


def surprises(plan, say=print) -> bool:
    """The errors of a draft whose first sync would repartition or re-share a running node, or reinstall its driver
    with a version the draft chose (said on stderr)."""
    from ..impact import installation as I

    lines = I.surprises(plan)
    for line in lines:
        say(line)
    return bool(lines)
