"""JSON Schema of the intent language, with enums filled from the catalogue."""

from __future__ import annotations

import json
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
    return {"$schema": DRAFT, "$id": SCHEMA_ID, **schema}


def schema_text() -> str:
    """The schema as stable, pretty JSON text."""
    return json.dumps(intent_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

