"""The JSON Schema of the intent language: committed, current, valid, and in agreement with the model."""

from __future__ import annotations

import json

import pytest

from conftest import EXAMPLES, ROOT

SCHEMA_FILE = ROOT / "schemas" / "cluster-intent.schema.json"


def test_committed_schema_is_current(run):
    result = run("schema")
    assert result.exit_code == 0
    assert result.stdout == SCHEMA_FILE.read_text(encoding="utf-8"), "stale schema: run `make schema`"


def test_schema_is_draft_2020_12_with_id():
    import jsonschema

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/cluster-intent.schema.json")
    jsonschema.Draft202012Validator.check_schema(schema)


def test_schema_enums_come_from_the_catalogue():
    from gpuconf import catalog

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["$defs"]["Pool"]["properties"]["gpu"]["anyOf"][0]["enum"] == sorted(catalog.gpu_models())
    [when] = schema["$defs"]["Spec"]["allOf"]
    assert when["then"]["properties"]["pools"]["items"]["properties"]["gpu"]["enum"] == sorted(catalog.gpu_models())
    assert schema["$defs"]["Operator"]["properties"]["chartVersion"]["enum"] == list(catalog.chart_versions())


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_validate_against_the_schema(example):
    import jsonschema
    from ruamel.yaml import YAML

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    data = YAML(typ="safe").load(example.read_text(encoding="utf-8"))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []


@pytest.mark.parametrize("mutation", [{"gpusPerNode": "4"}, {"gpusPerNode": 0}, {"colour": "blue"}, {"gpu": "H100-80G"}])
def test_schema_rejects_what_the_model_rejects(mutation):
    import jsonschema
    from ruamel.yaml import YAML

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    data = YAML(typ="safe").load((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8"))
    data["spec"]["pools"][0].update(mutation)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data))


def test_schema_accepts_a_declared_model_only_where_the_intent_declares_it():
    import jsonschema
    from ruamel.yaml import YAML

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    data = YAML(typ="safe").load((ROOT / "examples" / "single-pool.yaml").read_text(encoding="utf-8"))
    data["spec"]["pools"][0]["gpu"] = "LAB-GPU"
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data))  # not a catalogue model
    data["spec"]["gpuModels"] = {"LAB-GPU": {"pciDeviceIds": ["0x20F910DE"], "memoryGiB": 40}}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []


def _properties(schema: dict):
    for owner, node in [("(root)", schema), *schema["$defs"].items()]:
        for key, prop in node.get("properties", {}).items():
            yield f"{owner}.{key}", key, prop


def test_every_property_has_a_human_title_and_a_description():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    missing = [where for where, _, prop in _properties(schema) if not prop.get("title") or not prop.get("description")]
    assert missing == []
    titles = {key: prop["title"] for _, key, prop in _properties(schema)}
    assert titles["eccDoubleBit"] == "ECC double bit"
    assert titles["gpusPerNode"] == "GPUs per node"
    # a title is words, not the key with its first letter raised ("Gpuspernode")
    assert [key for key, title in titles.items()
            if any(c.isupper() for c in key) and title.lower() == key.lower()] == []


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_name_a_schema_that_is_there_offline(example):
    """The modeline points editors at a file of the checkout, relative to the example, not at a URL."""
    first = example.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    target = first.split("=", 1)[1]
    assert "://" not in target
    assert (example.parent / target).resolve() == SCHEMA_FILE
