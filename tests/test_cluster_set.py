"""Renamed and deleted clusters (issue 27, item 3): `render --check` names every cluster folder under the output
folder that carries gpuconf's file record but that no given input renders, and deletes nothing; the CI example
fails the job on an exit code of 2 or more."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _two(run, tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tmp_path / "out"
    single, hetero = tmp_path / "single-pool.yaml", tmp_path / "heterogeneous.yaml"
    single.write_text((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    hetero.write_text((ROOT / "examples" / "heterogeneous.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    assert run("render", str(single), str(hetero), "-o", str(out)).exit_code == 0
    return out, single, hetero


def test_render_check_names_the_folder_of_a_renamed_intent_and_keeps_it(run, tmp_path):
    out, single, hetero = _two(run, tmp_path)
    assert run("render", str(single), str(hetero), "-o", str(out), "--check").exit_code == 0
    text = hetero.read_text(encoding="utf-8")
    assert "  name: ml-prod\n" in text
    hetero.write_text(text.replace("  name: ml-prod\n", "  name: ml-prod-eu\n", 1), encoding="utf-8")
    assert run("render", str(hetero), "-o", str(out)).exit_code == 0  # the new folder; the old one stays
    result = run("render", str(single), str(hetero), "-o", str(out), "--check")
    assert result.exit_code == 1
    assert f"{out / 'ml-prod'}/: gpuconf wrote it (its .gpuconf-files is there), but no given input renders " \
           "cluster ml-prod" in result.stdout
    assert (out / "ml-prod" / "values.yaml").is_file()  # --check deletes nothing


def test_render_check_names_the_folder_of_a_deleted_intent_not_a_foreign_one(run, tmp_path):
    out, single, _ = _two(run, tmp_path)
    (out / "notes").mkdir()
    (out / "notes" / "README.md").write_text("not gpuconf's\n", encoding="utf-8")
    result = run("render", str(single), "-o", str(out), "--check")
    assert result.exit_code == 1
    named = re.findall(r"^(\S+)/: gpuconf wrote it", result.stdout, re.M)
    assert named == [str(out / "ml-prod")]


def test_the_ci_example_fails_the_job_on_exit_2_or_more():
    workflow = (ROOT / "examples" / "ci" / "github-actions.yml").read_text(encoding="utf-8")
    assert "a new cluster?" not in workflow
    gate = workflow[workflow.index("needs the maintenance label"):]
    assert re.search(r"\*\) echo \"::error file=\$intent::gpuconf could not compare it \(exit \$rc\)[^\n]*\n\s+"
                     r"status=1 ;;", gate), gate


def test_diff_against_an_input_with_no_folder_is_cluster_added_not_a_usage_error(run, tmp_path):
    out, single, hetero = _two(run, tmp_path)
    hetero.write_text(hetero.read_text(encoding="utf-8").replace("  name: ml-prod\n", "  name: ml-prod-eu\n", 1),
                      encoding="utf-8")
    result = run("diff", str(hetero), "--against", str(out), "--format", "json")
    assert result.exit_code == 1, result.stderr  # documents differ: every one is new
    import json

    body = json.loads(result.stdout)
    assert [(i["kind"], i["severity"]) for i in body["impacts"]] == [("cluster-added", "none")]
    assert "A renamed cluster is a removal plus an addition" in body["impacts"][0]["message"]
    assert run("diff", str(hetero), "--against", str(out), "--fail-on", "disruptive").exit_code == 0
