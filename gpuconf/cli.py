"""Command line: parses arguments, calls the core, prints results, picks the exit code. No logic of its own."""

from __future__ import annotations

import errno
import sys

import click

from . import build_text
from .jobsoption import jobs_option

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
#: What `--kubeconfig` runs and reads (the docs' command reference is generated from this; issue 29, item 3).
KUBECONFIG_FACTS = (
    ("Runs", "the credential plugin of the context's user, as kubectl does: `users[].user.exec` (its command, args "
             "and env), an `auth-provider` with a `config.cmd-path`, or the `gcp` auth-provider (which runs gcloud). "
             "Nothing else. EKS (`aws eks get-token`), GKE (`gke-gcloud-auth-plugin`) and AKS (`kubelogin`) "
             "kubeconfigs get their tokens that way, so it runs by default; `--no-exec-plugins` refuses such a "
             "kubeconfig (exit 2) before anything runs: use it for a kubeconfig you did not write."),
    ("Reads", "GET requests only. `audit`: the nodes (`/api/v1/nodes`, in pages of 500), on a DRA cluster the "
              "ResourceSlices; the pods of the operator's namespace and the Pending pods of all namespaces (in pages "
              "of 500), the Warning events of that namespace and of the nodes, and the last 60 lines (at most 64 KiB) "
              "of a failing operand container's log, as its node's diagnosis asks for it (`--no-operands`: the nodes "
              "alone). The role `gpuconf-gpu-auditor` (`spec.access.auditors`) grants exactly that. `diff --against`: the nodes and the running pods (`/api/v1/pods`, "
              "`status.phase=Running`). `import`: the nodes, the Helm release Secrets (`owner=helm,status=deployed`, "
              "all namespaces), the ClusterPolicies, the NVIDIADrivers, and the device-plugin and MIG ConfigMaps the "
              "values name."),
    ("Writes", "nothing to the cluster. The client key, certificate and CA data of the kubeconfig move into "
               "anonymous memory files (Linux), so no key is left in `$TMPDIR`, whatever ends the process."),
    ("Waits", "at most `--request-timeout` seconds for every request of the command together, from the first "
              "connection to the last byte."),
)
#: What each exit code means (the docs' command reference is generated from this).
EXIT_MEANINGS = (
    (EXIT_OK, "ok; warnings alone do not fail, unless `--warnings-as-errors`"),
    (EXIT_FINDINGS, "findings: at least one error in some file; or stale output (`render --check`); or drift (`audit`)"),
    (EXIT_USAGE, "usage or environment error. A command line click refuses (a missing file argument, an unknown flag "
                 "or command) prints the usage line, a `--help` hint and the error; every other case one line on "
                 "stderr naming the path or setting and the cause: an output folder or file that cannot be written or read; a cluster "
                 "folder that holds files gpuconf did not write (`render`); a `--cluster` that the file does not declare, "
                 "or a fleet without `--cluster` where a command needs one cluster (`audit`, `--nodes`, "
                 "`--oc-mirror`); for `audit` and `import`, nodes that cannot "
                 "be read (not a NodeList, a kubeconfig that does not parse, a cluster unreachable or too slow, no "
                 "permission to list nodes)"),
    (EXIT_INTERNAL, "internal error: a bug in gpuconf (the message says so; never caused by the input or the environment)"),
)


class _Group(click.Group):
    """Turns any unexpected exception into a short internal-error message instead of a traceback."""

    def invoke(self, ctx: click.Context):  # noqa: D102 - click API
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("gpuconf: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:
            if exc.errno not in _ENVIRONMENT_ERRNOS:
                raise _internal(exc) from None
            # The commands turn the environment's errors into their own lines; one that still gets here is said
            # the same way: the path and the cause, exit 2, not "a bug in gpuconf".
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"gpuconf: {where}{exc.strerror or exc}", err=True)
            sys.exit(EXIT_USAGE)
        except Exception as exc:  # a bug in gpuconf, never the user's input
            from .render.imagelock import LockError

            if isinstance(exc, LockError):  # spec.operator.imageLock, read wherever a plan is built
                click.echo(f"gpuconf: {exc}; nothing was written", err=True)
                sys.exit(EXIT_USAGE)
            raise _internal(exc) from None


def _error(text: str) -> None:
    """An error message of gpuconf on stderr; no line of it starts a CI log's workflow command (term_lines)."""
    from .escape import term_lines

    click.echo(term_lines(text), err=True)


def _internal(exc: BaseException) -> SystemExit:
    """Say that exc is a bug in gpuconf; the SystemExit to raise."""
    click.echo(f"gpuconf: internal error: {type(exc).__name__}: {exc}", err=True)
    click.echo("gpuconf: this is a bug in gpuconf, not in your input; please report it with the file", err=True)
    return SystemExit(EXIT_INTERNAL)


#: Errors that say something about the machine (permissions, space, the kind of a path), not about gpuconf.
_ENVIRONMENT_ERRNOS = frozenset(getattr(errno, name) for name in (
    "EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT", "EIO", "ENOTDIR", "EISDIR", "ELOOP", "ENAMETOOLONG", "EMFILE",
    "ENFILE", "ETXTBSY", "EFBIG", "ENXIO", "ENODEV", "ESTALE") if hasattr(errno, name))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(build_text(), prog_name="gpuconf", message="%(prog)s %(version)s")
def main() -> None:
    """Declarative, validated configuration for the NVIDIA GPU Operator.

    Exit codes: 0 ok, 1 findings (invalid intent, stale output, drift), 2 usage or environment error (a path that
    cannot be read or written, files gpuconf did not write, nodes unreadable), 3 internal error.
    """


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="Output format of the findings.")
@click.option("--summary", is_flag=True, help="After the findings, summarise each valid intent (pools, GPUs, resources).")
@click.option("--warnings-as-errors", is_flag=True, help="Exit 1 on warnings too.")
@click.option("--against", type=click.Path(exists=True, file_okay=False),
              help="Also warn about the transition from the cluster folder DIR/<name>/ as deployed (GC370-GC379: a "
                   "MIG strategy flip, waves skipped or declared the first time).")
def validate(files: tuple[str, ...], fmt: str, summary: bool, warnings_as_errors: bool, against: str | None) -> None:
    """Check intent (or fleet) FILES and report every finding as FILE:LINE:COL."""
    from .findings import format_json, format_text
    from .intent.inputs import read_input
    from .output.summary import status_line
    from .pipeline import deployed_reader

    deployed_for = deployed_reader(against) if against else None
    # An intent, or a fleet: its own findings, then each cluster's; `-` is standard input.
    results = [v for name in files for v in read_input(name, deployed_for=deployed_for).validations()]
    findings = [f for r in results for f in r.findings]
    if fmt == "json":
        click.echo(format_json(findings), nl=False)
    else:
        click.echo(format_text(findings), nl=False)
        for r in results:
            click.echo(status_line(r), err=True)
        if summary:
            from .output.summary import summarise

            for r in results:
                if r.ok and r.intent is not None:
                    click.echo(summarise(r.intent, r.file), nl=False)
    failed = any(not r.ok for r in results) or (warnings_as_errors and bool(findings))
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


@main.command()
@click.argument("intents", metavar="INTENT...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out", required=True, type=click.Path(file_okay=False),
              help="Output folder; each cluster's files go to OUTPUT/<metadata.name>/, a fleet's own to "
                   "OUTPUT/<fleet name>/.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 with a diff when OUTPUT is stale.")
@click.option("--delete-foreign", is_flag=True,
              help="Replace cluster folders even when they hold files gpuconf did not write, deleting those files "
                   "(without it, gpuconf refuses and names them).")
@click.option("--attest", is_flag=True,
              help="Also write each folder's attestation.intoto.json: an in-toto Statement (SLSA provenance v1) of "
                   "every file written, the inputs' and gpuconf's data digests; `gpuconf verify` checks a folder "
                   "against it.")
@click.option("--sign-key", "sign_key", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --attest: sign the statement as a DSSE envelope with this private key (PEM, unencrypted; "
                   "Ed25519 or ECDSA P-256; needs gpuconf[sign]).")
@jobs_option
def render(intents: tuple[str, ...], out: str, check: bool, delete_foreign: bool, attest: bool,
           sign_key: str | None) -> None:
    """Render each INTENT (a cluster intent or a fleet) into OUTPUT/<name>/. Atomic per folder and byte-stable.

    A fleet file renders every cluster it names, plus the fleet's ApplicationSet or Flux entry points. Nothing is
    written unless every INTENT is valid. With --check, exit 1 and print the stale, missing and extra files (and a
    unified diff) when OUTPUT differs from a fresh render.

    gpuconf replaces only folders that hold nothing but its own files (each folder records them in .gpuconf-files);
    renders into one OUTPUT take turns through a lock on the folder OUTPUT itself.
    """
    from .pipeline import render

    if check and delete_foreign:
        raise click.UsageError("--check writes nothing; --delete-foreign is for a render that writes")
    signer = None
    if sign_key is not None:
        if not attest:
            raise click.UsageError("--sign-key signs the attestation: give --attest too")
        signer = _key(sign_key, private=True)
    _finish(render(intents, out, check, delete_foreign, attest, signer))


def _key(path: str, private: bool):
    """A signer (private) or a public key read from path; exit 2 with the reason when it cannot be."""
    from .output.signing import KeyProblem, load_public_key, load_signer

    try:
        return load_signer(path) if private else load_public_key(path)
    except KeyProblem as exc:
        click.echo(f"gpuconf: {exc}; nothing was written" if private else f"gpuconf: {exc}", err=True)
        sys.exit(EXIT_USAGE)


@main.command()
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--key", "key_file", type=click.Path(dir_okay=False), metavar="PUBLIC",
              help="The public key (PEM) the envelope must be signed with (needs gpuconf[sign]): from a CI secret, or "
                   "pinned with --key-fingerprint; a key inside FOLDER's repository is refused without the pin.")
@click.option("--key-fingerprint", "fingerprint", metavar="SHA256:HEX",
              help="The sha256 of --key's DER public key (openssl pkey -pubin -in KEY -outform DER | sha256sum).")
@click.option("--skip-signature", is_flag=True,
              help="Check the digests only: accept an unsigned statement, or an envelope whose signature is then "
                   "not checked (the verdict says which).")
@click.option("--intent", "intent", type=click.Path(dir_okay=False), metavar="INPUT",
              help="The intent or fleet file FOLDER must have been rendered from: the statement must name exactly "
                   "its files (and image lock) with their digests, so an older render (a rollback) fails.")
def verify(folder: str, key_file: str | None, fingerprint: str | None, skip_signature: bool,
           intent: str | None) -> None:
    """Check a rendered cluster FOLDER against its attestation.intoto.json: every file (the file record included)
    matches its digest, none is missing or unlisted, the statement is of FOLDER's cluster, and the signature
    verifies with --key. Every verdict says "signature checked", "signature not checked" or "unsigned".

    Exit 0 verified; 1 naming each problem (a signed or unsigned attestation without --key is one, unless
    --skip-signature); 2 for a folder without an attestation, or a key that cannot be used.
    """
    from .pipeline import UsageProblem
    from .verifycmd import verify as run_verify

    try:
        outcome = run_verify(folder, key_file, fingerprint, skip_signature, intent)
    except UsageProblem as exc:
        raise click.UsageError(str(exc)) from None
    _finish(outcome)


_NODES_HELP = "A NodeList: the output of `kubectl get nodes -o json` (`-` reads standard input)."
#: What --kubeconfig runs: said in every command's help (docs/reference/cli.md says it too).
_RUNS = (" Like kubectl, this runs the credential plugin the kubeconfig's user names (user.exec, a gcp auth-provider): "
         "see --no-exec-plugins.")
_KUBECONFIG_HELP = "Read the nodes from a live cluster instead (GET requests only: it lists nodes)." + _RUNS
_IMPORT_KUBECONFIG_HELP = ("Read the nodes from a live cluster, and the installation: the gpu-operator Helm release's "
                           "values (its release Secret), else the ClusterPolicy; the NVIDIADrivers; the device-plugin "
                           "and MIG ConfigMaps they name (GET requests only)." + _RUNS)
_TIMEOUT_HELP = ("With --kubeconfig: seconds every request of the command may take together (the node list, every "
                 "page, and every other read), from the first connection to the last byte (a stalled or dripping API "
                 "server fails with exit 2).")
_cluster = click.option("--cluster", "cluster", metavar="NAME",
                        help="Of a fleet file, only this cluster (default: every cluster of the fleet).")
def _start_command(ctx: click.Context, param: click.Parameter, timeout: float) -> float:
    from .cluster.nodesource import start_command

    start_command(timeout)
    return timeout


_request_timeout = click.option("--request-timeout", "timeout", type=click.FloatRange(min=0, min_open=True),
                                default=30.0, show_default=True, metavar="SECONDS", help=_TIMEOUT_HELP,
                                callback=_start_command)


def _exec_plugins(ctx: click.Context, param: click.Parameter, refused: bool) -> None:
    from .cluster.nodesource import set_exec_plugins

    set_exec_plugins(not refused)


_no_exec_plugins = click.option(
    "--no-exec-plugins", is_flag=True, expose_value=False, callback=_exec_plugins,
    help="With --kubeconfig: refuse (exit 2) a kubeconfig whose user runs a program for its credentials (user.exec, "
         "an auth-provider's cmd-path or gcloud) instead of running it; for a kubeconfig you did not write.")


@main.command()
@click.argument("intents", metavar="[INPUT]...", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="Output format.")
@click.option("--against", type=click.Path(exists=True, file_okay=False),
              help="Compare a fresh render with the rendered cluster folder DIR/<name>/: first the impact plan (what "
                   "syncing it does to running nodes and jobs), then the documents. The inputs are the clusters DIR "
                   "holds: a folder there that none of them renders is cluster-removed (disruptive), an input with "
                   "no folder cluster-added.")
@click.option("--fail-on", "fail_on", type=click.Choice(["disruptive", "pending", "restart"]),
              help="With --against or --to-chart: exit 1 exactly when an impact of this severity or worse is present "
                   "(severities rise none < restart < pending < disruptive), 0 otherwise, even when documents differ.")
@click.option("--nodes", "nodes_file", type=click.Path(exists=True, dir_okay=False, allow_dash=True),
              help="With --against: count each impact's nodes in this NodeList (`kubectl get nodes -o json`), by "
                   "their gpuconf.dev/pool label, instead of the declared counts.")
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False),
              help="With --against: count the nodes and their running GPU pods in a live cluster instead (GET "
                   "requests only: lists nodes and running pods)." + _RUNS)
@click.option("--context", help="The kubeconfig context to use (default: its current context).")
@_request_timeout
@_no_exec_plugins
@click.option("--pods", "pods_file", type=click.Path(exists=True, dir_okay=False),
              help="With --nodes or --kubeconfig: count the running pods with NVIDIA resource requests on each "
                   "impact's nodes, from this PodList (`kubectl get pods -A -o json`) instead of the cluster's.")
@click.option("--to-chart", "to_chart", metavar="VERSION",
              help="Explain what moving the intent to another GPU Operator chart version changes.")
@click.option("--markdown-rest", "markdown_rest", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --against and --format markdown over several clusters: the review printed stays under the "
                   "65,536 characters of a GitHub comment; when it has to leave details out, the complete one is "
                   "written here (for the CI to upload), and the review says so.")
@click.option("--warnings-as-errors", is_flag=True, help="Exit 1 when the override report has warnings.")
@click.option("--against-values", "against_values", multiple=True, metavar="FILE",
              type=click.Path(exists=True, dir_okay=False),
              help="Compare effective values leaf by leaf (the chart's defaults merged with each side): these Helm "
                   "values files (later win) against INTENT's render. Repeatable.")
@click.option("--values", "values", multiple=True, metavar="FILE", type=click.Path(exists=True, dir_okay=False),
              help="With --against-values: values files layered on INTENT's render, as a Helm release adds them. "
                   "With --against-installation: the installation's values files (later win).")
@click.option("--against-installation", "against_installation", is_flag=True,
              help="The plan of the first sync over an installation gpuconf did not render: its nodes (--nodes or "
                   "--kubeconfig), values (--values, --set, or the release --kubeconfig reads) and ConfigMaps "
                   "(--configmap); per node, the MIG repartitions, config switches, driver reinstalls and labels the "
                   "sync brings. Exit 0 when equivalent (values equal, no node impact above none).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE[,...]",
              help="With --against-installation: a helm --set argument of the installation.")
@click.option("--configmap", "configmaps", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="With --against-installation: a device-plugin or mig-parted ConfigMap of the installation.")
@click.option("--installed-chart", "installed_chart", metavar="VERSION",
              help="With --against-installation or --against-values: the chart the installation runs (default: the "
                   "Helm release, the values' operator.version or the nodes' gpu-operator image say; else INTENT's).")
@_cluster
@jobs_option
def diff(intents: tuple[str, ...], fmt: str, against: str | None, fail_on: str | None, nodes_file: str | None,
         kubeconfig: str | None, context: str | None, timeout: float, pods_file: str | None, to_chart: str | None,
         markdown_rest: str | None, warnings_as_errors: bool, against_values: tuple[str, ...], values: tuple[str, ...],
         against_installation: bool, sets: tuple[str, ...], configmaps: tuple[str, ...],
         installed_chart: str | None, cluster: str | None) -> None:
    """The override report of each INPUT (an intent or a fleet): every value that differs from the chart's defaults,
    and why.

    With --against DIR: the impact plan of syncing a fresh render over DIR/<name>/ (read from the folder alone,
    not from the previous intent), then the document diff. The inputs given are the clusters DIR holds: a cluster
    folder there that none of them renders (a deleted or renamed intent) is cluster-removed, with what its removal
    prunes; an input with no folder is cluster-added; a rename is both, paired when the pools match. With no INPUT,
    every cluster folder under DIR is cluster-removed.

    Of a fleet file: each cluster's report (JSON: an object with one under clusters.<name>), or the one --cluster
    names; --nodes, --kubeconfig and --pods are one cluster's, so they need --cluster.

    Exit codes: 0 ok; 1 invalid intent, differences (--against, --against-values; with --fail-on, an impact that
    severe) or a move that breaks the intent (--to-chart); 2 usage error.
    """
    from .pipeline import Live, UsageProblem, diff as run_diff

    if against_installation:
        _against_installation(intents, fmt, fail_on, nodes_file, kubeconfig, context, timeout, values, sets,
                              configmaps, (against, to_chart, against_values, pods_file), cluster, installed_chart)
    if installed_chart is not None and not against_values:
        raise click.UsageError("--installed-chart goes with --against-installation or --against-values")
    if sets or configmaps:
        raise click.UsageError("--set and --configmap go with --against-installation")
    if values and not against_values:
        raise click.UsageError("--values goes with --against-values")
    if against_values:
        if against is not None or to_chart is not None or fmt == "markdown":
            raise click.UsageError("--against-values compares values: not with --against, --to-chart or markdown")
        from .pipeline import diff_against_values

        if len(intents) != 1:
            raise click.UsageError("--against-values compares one INPUT's render")
        _finish(_selecting(diff_against_values, intents[0], against_values, values, fmt, cluster, installed_chart))
    live = None
    if pods_file is not None and nodes_file is None and kubeconfig is None:
        raise click.UsageError("--pods needs --nodes or --kubeconfig (pods are counted on the pools' nodes)")
    if nodes_file is not None or kubeconfig is not None:
        nodes, source = _nodes(nodes_file, kubeconfig, context, timeout)
        pods, pods_source = None, pods_file
        if pods_file is not None:
            from .cluster.nodesource import read_pods_file

            pods = read_pods_file(pods_file)
        elif kubeconfig is not None:  # the live cluster gives its running pods too
            from .cluster.nodesource import read_cluster_pods

            pods, pods_source = read_cluster_pods(kubeconfig, context, timeout), source
        live = Live(nodes, source, pods, pods_source, pods_optional=pods_file is None)
    try:
        outcome = _selecting(run_diff, intents, fmt, against, to_chart, warnings_as_errors, fail_on, live, cluster,
                             markdown_rest)
    except UsageProblem as exc:
        raise click.UsageError(str(exc)) from None
    if live is not None:
        _notes(live.nodes)
        _notes(live.pods)
    _finish(outcome)


def _against_installation(intents: tuple[str, ...], fmt: str, fail_on: str | None, nodes_file: str | None,
                          kubeconfig: str | None, context: str | None, timeout: float, values: tuple[str, ...],
                          sets: tuple[str, ...], configmaps: tuple[str, ...], others: tuple, cluster: str | None,
                          installed_chart: str | None = None):
    """diff --against-installation: the first sync's plan of one INPUT (exits)."""
    if any(others):
        raise click.UsageError("--against-installation is its own comparison: not with --against, --to-chart, "
                               "--against-values or --pods")
    if len(intents) != 1:
        raise click.UsageError("--against-installation plans one INPUT's first sync")
    nodes, source = _nodes(nodes_file, kubeconfig, context, timeout)
    installation = None
    if kubeconfig is not None:
        from .adopt.cluster import read_cluster_config
        from .adopt.sources import InputError

        try:
            installation = read_cluster_config(kubeconfig, context, timeout)
        except InputError as exc:
            click.echo(f"gpuconf: {exc}", err=True)
            sys.exit(EXIT_USAGE)
    from .pipeline import diff_against_installation

    outcome = _selecting(diff_against_installation, intents[0], values, sets, configmaps, nodes, source, fmt,
                         fail_on, cluster, installation, installed_chart)
    _notes(nodes)
    _finish(outcome)


def _selecting(command, *args):
    """command(*args); a --cluster that names no cluster of the file, or a fleet where one cluster is needed and
    --cluster is missing, is said in one line: exit 2."""
    from .intent.inputs import SelectionError

    try:
        return command(*args)
    except SelectionError as exc:
        _error(f"gpuconf: {exc}")
        sys.exit(EXIT_USAGE)


def _finish(outcome) -> None:
    """Print an Outcome of the pipeline and exit with its code."""
    if outcome.stdout:
        click.echo(outcome.stdout, nl=False)
    for line in outcome.stderr:
        click.echo(line, err=True)
    sys.exit(outcome.code)


def _written(write, path: str, text: str) -> None:
    """Write one output file; a path that cannot be written is the environment's problem: one line, exit 2."""
    from .output.writer import OutputError

    try:
        write(path, text)
    except OutputError as exc:
        _error(f"gpuconf: {exc}")
        sys.exit(EXIT_USAGE)


@main.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to this file instead of stdout.")
def schema(output: str | None) -> None:
    """Print the JSON Schema (Draft 2020-12) of the intent language."""
    from .intent.schema import schema_text

    text = schema_text()
    if output:
        from .output.writer import write_text_atomic

        _written(write_text_atomic, output, text)
    else:
        click.echo(text, nl=False)


@main.command()
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the starter intent here, and the JSON Schema its first line names next to it when that "
                   "file does not exist yet (refuses to overwrite the intent).")
def init(output: str | None) -> None:
    """Print a commented starter intent to edit.

    Its first line points editors (the YAML language server) at cluster-intent.schema.json in the intent's folder:
    `init -o FILE` writes that schema there, `gpuconf schema -o cluster-intent.schema.json` refreshes it.
    """
    from .intent.starter import STARTER

    if output:
        from pathlib import Path

        if Path(output).exists():
            raise click.UsageError(f"{output} exists; gpuconf init never overwrites a file")
        from .output.writer import write_text_new

        _written(write_text_new, output, STARTER)
        click.echo(f"wrote {output}{_schema_beside(output)}; edit it, then run: gpuconf validate {output}", err=True)
    else:
        click.echo(STARTER, nl=False)


def _schema_beside(intent: str) -> str:
    """Write the intent schema that an intent's first line names into the intent's folder, unless a file of that name
    is there already; what to add to the message (nothing when it was there)."""
    from pathlib import Path

    from .intent.schema import schema_text
    from .intent.starter import SCHEMA_FILE
    from .output.writer import write_text_new

    schema = Path(intent).parent / SCHEMA_FILE
    if schema.exists() or schema.is_symlink():
        return ""
    _written(write_text_new, str(schema), schema_text())
    return f" and {schema} (the schema editors read)"


@main.group()
def chart() -> None:
    """GPU Operator chart releases: `chart add` adds one gpuconf does not ship (`gpuconf catalog` lists them)."""


@chart.command("add")
@click.argument("source", type=click.Path(dir_okay=True, file_okay=True))
@click.option("--into", type=click.Path(file_okay=False), default=None,
              help="Where to write <version>.json (default: ./gpuconf-charts, beside the intents or above them).")
def chart_add(source: str, into: str | None) -> None:
    """Add the chart SOURCE (the .tgz of `helm pull gpu-operator --version VERSION`, or its unpacked folder): its
    facts, from its own values, templates and CRDs, go to gpuconf-charts/<version>.json. Identical templates and CRDs
    to a shipped release's mean full support; each template that differs is a warning naming whose semantics apply."""
    from .pipeline import chart_add as run_chart_add

    _finish(run_chart_add(source, into))


@main.command()
@click.option("--gpu", "gpu_id", help="Show one model in full, with its MIG profiles and placements.")
def catalog(gpu_id: str | None) -> None:
    """List the GPU models and chart versions gpuconf knows."""
    from .output.summary import catalog_text

    text = catalog_text(gpu_id)
    if text is None:
        from .output.summary import unknown_model

        raise click.UsageError(unknown_model(gpu_id))
    click.echo(text, nl=False)


def _nodes(nodes_file: str | None, kubeconfig: str | None, context: str | None, timeout: float):
    """The node stream and its display name for --nodes / --kubeconfig [--context] [--request-timeout]."""
    if (nodes_file is None) == (kubeconfig is None):
        raise click.UsageError("give the nodes with exactly one of --nodes FILE or --kubeconfig PATH")
    if context is not None and kubeconfig is None:
        raise click.UsageError("--context needs --kubeconfig")
    from .cluster.nodesource import read_cluster_nodes, read_nodes_file

    if nodes_file is not None:
        return read_nodes_file(nodes_file), "<stdin>" if nodes_file == "-" else nodes_file
    return (read_cluster_nodes(kubeconfig, context, timeout=timeout),
            kubeconfig + (f" (context {context})" if context else ""))


def _threshold(value: str):
    """--max-unavailable as the audit's Threshold."""
    from .cluster.auditresult import Threshold

    try:
        return Threshold.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-unavailable") from None


def _notes(nodes) -> None:
    """The node source's own lines (the Kubernetes client's warnings, said once in gpuconf's words)."""
    for note in getattr(nodes, "notes", ()):
        _error(f"gpuconf: {note}")




@main.command()
@click.argument("intent", type=click.Path(exists=True, dir_okay=False))
@click.option("--nodes", "nodes_file", type=click.Path(exists=True, dir_okay=False, allow_dash=True),
              help=_NODES_HELP)
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False),
              help="Read the nodes from a live cluster instead, and the operator's pods, the pending pods, their "
                   "Warning events and the failing containers' logs (GET requests only)." + _RUNS)
@click.option("--resource-slices", "slices_file", type=click.Path(exists=True, dir_okay=False),
              help="On a DRA cluster (allocation: dra): a ResourceSliceList, the output of `kubectl get "
                   "resourceslices -o json`, read instead of node allocatable; with NVLink pools, the "
                   "compute-domain.nvidia.com slices of their trays are checked too (with --kubeconfig: listed from "
                   "the cluster).")
@click.option("--pods", "pods_file", type=click.Path(exists=True, dir_okay=False),
              help="The operator's pods, the output of `kubectl get pods -n <operator namespace> -o json` (-A adds "
                   "the pending workload pods, and the DRA driver's kubelet plugin and IMEX daemon pods that the "
                   "NVLink pools' audit reads): each node that lost GPUs is diagnosed from them.")
@click.option("--events", "events_file", type=click.Path(exists=True, dir_okay=False),
              help="Events to add to the diagnosis: the output of `kubectl get events -A -o json`.")
@click.option("--must-gather", "must_gather", type=click.Path(exists=True, file_okay=False),
              help="The folder the GPU Operator's hack/must-gather.sh writes: its pods, their logs, and its node "
                   "list when --nodes and --kubeconfig are not given.")
@click.option("--no-operands", "no_operands", is_flag=True,
              help="With --kubeconfig: audit the nodes alone (read no pods, events or logs).")
@click.option("--context", help="The kubeconfig context to use (default: its current context).")
@_request_timeout
@_no_exec_plugins
# The default is audit.Threshold.DEFAULT, written out so that --help imports nothing heavy (a test holds them equal).
@click.option("--max-unavailable", "max_unavailable", default="25%", show_default=True, metavar="N|N%",
              callback=lambda ctx, param, value: _threshold(value),
              help="How many of a pool's declared nodes may be NotReady or cordoned (a count, or a percentage "
                   "of the pool) before that is drift (GA122, exit 1).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="Output format.")
@click.option("--cluster", "cluster", metavar="NAME",
              help="Of a fleet file, the cluster whose nodes --nodes or --kubeconfig gives (required for a fleet).")
def audit(intent: str, nodes_file: str | None, kubeconfig: str | None, slices_file: str | None,
          pods_file: str | None, events_file: str | None, must_gather: str | None, no_operands: bool,
          context: str | None, timeout: float, max_unavailable, fmt: str, cluster: str | None) -> None:
    """Compare INTENT with the live nodes, and say why any lost their GPUs. Exit 1 on any error.

    Pools, labels, taints, GPUs, drivers, MIG; with the operator's pods (--pods, --must-gather, --kubeconfig), the
    cause of each lost GPU, first in the output.

    Of a fleet file, one cluster at a time: --cluster NAME with that cluster's nodes. Exit 2 when the nodes or pods
    cannot be read (bad file, unreachable cluster, a permission missing), or for a fleet without --cluster.
    """
    from .cluster.auditrun import AuditInputs, run
    from .pipeline import UsageProblem

    inputs = AuditInputs(intent, nodes_file, kubeconfig, context, timeout, slices_file, pods_file, events_file,
                         must_gather, no_operands, fmt, cluster, max_unavailable)
    try:
        _finish(_selecting(run, inputs))
    except UsageProblem as exc:
        raise click.UsageError(str(exc)) from None


@main.command("import")
@click.option("--nodes", "nodes_file", type=click.Path(exists=True, dir_okay=False, allow_dash=True),
              help=_NODES_HELP)
@click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False), help=_IMPORT_KUBECONFIG_HELP)
@click.option("--context", help="The kubeconfig context to use (default: its current context).")
@_request_timeout
@_no_exec_plugins
@click.option("--values", "-f", "values", multiple=True, type=click.Path(exists=True, dir_okay=False, allow_dash=True),
              help="A Helm values file of the installation; repeat: later files win, as with helm -f.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE[,...]",
              help="A helm --set argument (Helm's syntax: a.b=c, a\\.b=c, a={x,y}, a[0]=x); applied after the files.")
@click.option("--set-string", "set_strings", multiple=True, metavar="KEY=VALUE[,...]",
              help="A helm --set-string argument: like --set, every value a string; applied after every --set.")
@click.option("--configmap", "configmaps", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="A device-plugin ConfigMap (YAML) the values name in devicePlugin.config.name; repeatable.")
@click.option("--chart-version", "chart_version", metavar="VERSION",
              help="The GPU Operator release that runs, when nothing read names one gpuconf knows (default: the live "
                   "Helm release, the values' operator.version, the gpu-operator image the GPU nodes run). Adoption "
                   "never moves the chart: a release other than the one that runs is refused.")
@click.option("--gpu", metavar="MODEL", help="Without --nodes: the GPU model of the drafted pools.")
@click.option("--report", "report", type=click.Path(dir_okay=False),
              help="Write what became of every values path as JSON (mapped, override, default, dropped, changed).")
@click.option("--name", default="imported", show_default=True, help="metadata.name of the draft intent.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the draft here (refuses to overwrite), and the JSON Schema its first line names next to it "
                   "when that file does not exist yet.")
def import_(nodes_file: str | None, kubeconfig: str | None, context: str | None, timeout: float,
            values: tuple[str, ...], sets: tuple[str, ...], set_strings: tuple[str, ...],
            configmaps: tuple[str, ...], chart_version: str | None,
            gpu: str | None, report: str | None, name: str, output: str | None) -> None:
    """Draft an intent from an existing installation: its nodes (--nodes, --kubeconfig), its Helm values (--values,
    --set) and device-plugin ConfigMaps (--configmap).

    Comments in the draft mark what could not be told. With values, every values path gets one outcome (mapped,
    override, default, dropped, changed): a summary goes to stderr, the whole list to --report. Exit 1 when the draft
    does not validate; 2 for an input that is not what its option says.
    """
    from pathlib import Path

    from .adopt.firstsync import first_sync, surprises

    adopting = bool(values or sets or set_strings or configmaps)
    for path, what in ((output, "gpuconf import never overwrites a file"),):
        if path and Path(path).exists():
            raise click.UsageError(f"{path} exists; {what}")
    if not adopting and kubeconfig is None:
        for flag, given in (("--gpu", gpu), ("--report", report)):
            if given is not None:
                raise click.UsageError(f"{flag} goes with --values, --set, --configmap or --kubeconfig")
    if gpu is not None and (nodes_file or kubeconfig):
        raise click.UsageError("--gpu is for a draft without nodes: with --nodes the pools' GPUs come from them")
    from .adopt import release as R
    from .adopt.sources import InputError
    from .adopt.installed import InstallationReader
    from .intent.inputs import use_charts_near
    from .pipeline import UsageProblem, import_values

    if (broken := use_charts_near(output or ".")) is not None:  # the charts added beside the draft (chart add)
        raise click.UsageError(broken.text())

    reader = InstallationReader(kubeconfig, context, timeout, values, sets, set_strings, adopting)

    def installation() -> list:
        """The installed release's evidence, read once (after the nodes); an input that cannot be read is exit 2."""
        try:
            found = reader.evidence()
        except InputError as exc:
            _error(f"gpuconf: {exc}")
            sys.exit(EXIT_USAGE)
        for note in reader.take_notes():
            _error(f"gpuconf: note: {note}")
        return found

    draft = None
    if nodes_file is not None or kubeconfig is not None or not adopting:
        # With --nodes too, the nodes come from the file and only the installation from the cluster. The installed
        # release is decided once from every piece of evidence (adopt/release.py): the live Helm release, the
        # values, the nodes' gpu-operator image, --chart-version.
        draft = _draft_from_nodes(nodes_file, None if nodes_file else kubeconfig, None if nodes_file else context,
                                  timeout, name, lambda seen: R.decide(chart_version, installation() + seen))
    installation()
    cluster, inputs, adopting = reader.cluster, reader.inputs, reader.adopting
    if not adopting:
        if not draft.release.inferred:
            _error(f"gpuconf: note: chart {draft.release.version}: {draft.release.why}")
        for note in draft.notes:  # pools selected by name: a person must know before the first sync
            _error(f"gpuconf: note: {note}")
        first = first_sync(draft.text, draft, say=_error)
        _write_draft(output, draft.text, draft.describe())
        surprised = first is not None and surprises(first, _error)
        sys.exit(EXIT_FINDINGS if surprised or any(f.severity == "error" for f in draft.findings) else EXIT_OK)
    try:
        adopted = import_values(values, sets, configmaps, chart_version, name, draft.text if draft else None, gpu,
                                draft.release if draft else None, cluster, set_strings, inputs)
    except InputError as exc:
        _error(f"gpuconf: {exc}")
        sys.exit(EXIT_USAGE)
    except UsageProblem as exc:
        raise click.UsageError(str(exc)) from None
    if draft is not None:
        adopted.notes.extend(draft.notes)  # the node draft's pools selected by name: stderr and the report
    for line in adopted.summary():
        click.echo(line, err=True)
    try:
        first = first_sync(adopted.text, draft, values, sets, set_strings, configmaps, cluster, say=_error)
    except InputError as exc:  # values no chart renders (`driver: 3`): nothing is written
        _error(f"gpuconf: {exc}; nothing was written")
        sys.exit(EXIT_USAGE)
    if first is not None:
        from .impact.installation import equivalent

        adopted.first_sync = first.as_list()
        adopted.first_sync_equivalent = equivalent(first)
    if report:
        import json

        from .output.writer import write_text_atomic

        _written(write_text_atomic, report, json.dumps(adopted.report(), indent=2, sort_keys=True,
                                                       ensure_ascii=False) + "\n")
    errors = adopted.errors
    state = "validates" if not errors else f"does NOT validate ({len(errors)} errors: a gpuconf bug, please report)"
    _write_draft(output, adopted.text, f"the draft {state}")
    surprised = first is not None and surprises(first, _error)
    sys.exit(EXIT_FINDINGS if errors or surprised else EXIT_OK)


def _draft_from_nodes(nodes_file: str | None, kubeconfig: str | None, context: str | None, timeout: float, name: str,
                      decide=None):
    """The node importer's Draft; exits 2 when the nodes cannot be read or the installed release cannot be told
    (decide: adopt/release.py), 1 when none has a GPU gpuconf knows."""
    from .adopt.release import ReleaseProblem
    from .cluster.importer import draft_intent
    from .cluster.nodesource import NodeSourceError

    nodes, source = _nodes(nodes_file, kubeconfig, context, timeout)
    try:
        draft = draft_intent(nodes, source, name, decide)
    except ReleaseProblem as exc:
        _notes(nodes)
        raise click.UsageError(str(exc)) from None
    except NodeSourceError as exc:
        _notes(nodes)
        _error(f"gpuconf: {exc}")
        sys.exit(EXIT_USAGE)
    _notes(nodes)
    if not draft.pools:
        click.echo(f"gpuconf: none of the {draft.nodes_seen} nodes has an NVIDIA GPU that gpuconf knows (NFD "
                   "pci-10de label, nvidia.com/gpu.present, a GFD product in the catalogue): nothing to import"
                   + "".join(f"\n  {node}: {why}" for node, why in draft.skipped), err=True)
        sys.exit(EXIT_FINDINGS)
    return draft


def _write_draft(output: str | None, text: str, describe: str) -> None:
    """The draft to -o (never overwriting) or stdout, and its one line to stderr."""
    if output:
        from .output.writer import write_text_new

        _written(write_text_new, output, text)
        click.echo(f"wrote {output}{_schema_beside(output)}: {describe}; review it, then run: "
                   f"gpuconf validate {output}", err=True)
    else:
        click.echo(text, nl=False)
        click.echo(describe, err=True)


@main.command()
@click.argument("intent", type=click.Path(exists=True, dir_okay=False))
@click.option("--driver-os", "driver_os", multiple=True, metavar="TAG",
              help="OS tag of the GPU nodes (ubuntu24.04, rhel9.6, ...): driver images are tagged <version>-<TAG>. "
                   "Repeat for several.")
@click.option("--pairs", is_flag=True,
              help="Print `SOURCE DESTINATION` per line: where the mirror copies each image from, and what the "
                   "cluster pulls.")
@click.option("--oc-mirror", "oc_mirror", metavar="OPENSHIFT_VERSION",
              help="Print oc-mirror's ImageSetConfiguration (v2) for an OpenShift cluster of this minor version "
                   "(e.g. 4.20): the GPU Operator's bundle of the pinned chart, the NFD Operator, every image by tag.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "cyclonedx"]), default="text", show_default=True,
              help="json: one object listing each image with its source and the clusters that pull it, and the notes; "
                   "cyclonedx: a CycloneDX 1.6 JSON BOM, each image a container component with its pkg:oci purl "
                   "(needs gpuconf[sbom]).")
@_cluster
def images(intent: str, driver_os: tuple[str, ...], pairs: bool, oc_mirror: str | None, fmt: str,
           cluster: str | None) -> None:
    """Print every image INTENT's output makes the cluster pull (repository:tag), sorted, one per line.

    With spec.operator.registry set, all of them point at the mirror; --pairs adds the source of each, for a copy
    loop (`while read -r src dst; do skopeo copy --all docker://$src docker://$dst; done`). Notes on what cannot be
    listed exactly (driver OS tags, OLM's catalogue) go to stderr. Of a fleet file: every image any of its clusters
    pulls, each once (or the images of the one --cluster names; --oc-mirror needs one cluster).
    """
    from .imagescmd import images as list_images

    if pairs and oc_mirror is not None:
        raise click.UsageError("give --pairs or --oc-mirror, not both")
    if fmt != "text" and (pairs or oc_mirror is not None):
        raise click.UsageError(f"--format {fmt} lists every image with its source: not with --pairs or --oc-mirror")
    _finish(_selecting(list_images, intent, tuple(driver_os), pairs, oc_mirror, cluster, fmt))


@main.command()
@click.argument("intent", required=False, type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="json: every entry with its conditions and sources (with INTENT: its status, pools and the "
                   "conditions that decide it); markdown: a table.")
def hazards(intent: str | None, fmt: str) -> None:
    """List the known hazards (driver, chart, GPU, OS and kernel combinations NVIDIA documents as broken), or those
    that concern INTENT: the ones it runs into, avoids by a choice, or depends on what it does not say."""
    from .pipeline import hazards as run_hazards

    _finish(run_hazards(intent, fmt))


@main.command()
def rules() -> None:
    """List the stable finding codes and what each checks."""
    from .output.summary import rules_text

    click.echo(rules_text(), nl=False)


def run() -> None:
    """The `gpuconf` command: main, then an exit that skips the interpreter's teardown.

    Tearing down pydantic's models, the compiled schemas and every loaded module took a quarter of a second after a
    render had finished writing (a third of the whole process for a small cluster). Nothing is left to finalise:
    output files are closed and renamed before main returns, and stdout and stderr are flushed here.
    """
    import os

    try:
        main(prog_name="gpuconf")
        code = EXIT_OK
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or EXIT_OK
        else:  # sys.exit("message") prints the message, as the interpreter would
            print(exc.code, file=sys.stderr)
            code = EXIT_FINDINGS
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (gpuconf ... | head): nothing more can be said
            pass
    # os._exit skips the atexit hook with which the Kubernetes client deletes the key files it wrote (where they
    # were not moved into memory already: cluster/nodesource.py off_disk); a command that read no cluster never
    # imported the module and wrote none.
    nodesource = sys.modules.get("gpuconf.cluster.nodesource")
    if nodesource is not None:
        nodesource.remove_temp_credentials()
    os._exit(code)
