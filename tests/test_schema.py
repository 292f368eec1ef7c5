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
