"""JSON Schema of the intent language, with enums filled from the catalogue."""

from __future__ import annotations

import json
import re
from typing import Any

SCHEMA_ID = "https://gpuconf.dev/schemas/cluster-intent.schema.json"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def intent_schema() -> dict[str, Any]:
    """The Draft 2020-12 schema of ClusterIntent, enums for GPU models and chart versions included."""
    from .. import catalog
    from .model import MODEL_ID_PATTERN, ClusterIntent

    schema = ClusterIntent.model_json_schema(by_alias=True)
    defs = schema["$defs"]
    # The model keeps these as plain strings so that rules.py can answer with a did-you-mean; editors get the enum.
    # A pool may also name a model the intent declares under spec.gpuModels (an id of the same form).
    # Without declared models the enum alone applies, so editors still flag a typo.
    models = sorted(catalog.gpu_models())
    defs["Pool"]["properties"]["gpu"]["anyOf"] = [
        {"enum": models}, {"type": "string", "pattern": MODEL_ID_PATTERN, "description": "a model of spec.gpuModels"}]
    defs["Spec"]["allOf"] = [{
        "if": {"not": {"required": ["gpuModels"]}},
        "then": {"properties": {"pools": {"items": {"properties": {"gpu": {"enum": models}}}}}},
    }]
    defs["Operator"]["properties"]["chartVersion"]["enum"] = list(catalog.chart_versions())
    described(schema)
    return {"$schema": DRAFT, "$id": SCHEMA_ID, **schema}


def described(schema: dict[str, Any]) -> None:
    """Give every property a title (pydantic gives none to one whose value is a definition), and a property whose
    value is a definition ($ref, or a $ref or null) that definition's description: an editor shows both on hover."""
    from .strict import field_title

    for node in [schema, *schema.get("$defs", {}).values()]:
        for key, prop in node.get("properties", {}).items():
            if "title" not in prop:
                prop["title"] = field_title(re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower())
            if "description" in prop:
                continue
            refs = [o["$ref"] for o in [prop, *prop.get("anyOf", [])] if "$ref" in o]
            if refs:
                target = schema["$defs"][refs[0].rsplit("/", 1)[1]]
                if "description" in target:
                    prop["description"] = target["description"]


def schema_text() -> str:
    """The schema as stable, pretty JSON text."""
    return json.dumps(intent_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

