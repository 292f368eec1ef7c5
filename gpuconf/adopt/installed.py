"""The installation an import adopts, read once: the live Helm release (--kubeconfig) and the values inputs in
Helm's order, and what they say of the installed release (adopt/release.py)."""

from __future__ import annotations


def import_inputs(values: tuple[str, ...], sets: tuple[str, ...], set_strings: tuple[str, ...], cluster=None) -> list:
    """The installation's values inputs in Helm's order: the live release's, the files, every --set, then every
    --set-string (pkg/cli/values Options.MergeValues); each is refused (InputError) before anything is merged."""
    from . import sources as S

    inputs = list(cluster.values) if cluster is not None else []
    inputs += [S.read_values_file(path) for path in values]
    inputs += [S.read_set(argument) for argument in sets]
    inputs += [S.read_set(argument, strings=True) for argument in set_strings]
    return inputs


class InstallationReader:
    """The installation an import adopts, read once and after the nodes: the live Helm release (--kubeconfig) and
    the values inputs in Helm's order, and what they say of the installed release (adopt/release.py). Raises
    adopt.sources.InputError for an input that is not what its option says."""

    def __init__(self, kubeconfig: str | None, context: str | None, timeout: float, values: tuple[str, ...],
                 sets: tuple[str, ...], set_strings: tuple[str, ...], adopting: bool) -> None:
        self._source = (kubeconfig, context, timeout)
        self._inputs = (values, sets, set_strings)
        self.adopting = adopting
        self.cluster = None
        self.inputs: list = []
        self._evidence: list | None = None
        self._notes: list[str] = []

    def evidence(self) -> list:
        """The installed release's evidence (the live release's, the values'), reading the installation first."""
        if self._evidence is None:
            kubeconfig, context, timeout = self._source
            if kubeconfig is not None:
                from .cluster import read_cluster_config

                self.cluster = read_cluster_config(kubeconfig, context, timeout)
                self.adopting = self.adopting or bool(self.cluster.values)
                if not self.adopting:
                    self._notes += list(self.cluster.notes)
            self.inputs = import_inputs(*self._inputs, self.cluster) if self.adopting else []
            self._evidence = release_evidence(self.cluster, self.inputs)
        return self._evidence

    def take_notes(self) -> list[str]:
        """The notes of the live read not said yet."""
        notes, self._notes = self._notes, []
        return notes


def release_evidence(cluster, inputs: list) -> list:
    """What the live Helm release and the values say about the installed release (adopt/release.py)."""
    from . import release as R

    evidence = R.helm(cluster.chart_version, cluster.release) if cluster is not None else []
    return evidence + R.of_inputs(inputs)
