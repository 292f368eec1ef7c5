"""The override report and the hand-over facts of one cluster, one module per section of REPORT.md beside the
Markdown template it fills: overrides, pools, platform, DRA, hazards, capacity, queues, diagram, upgrade, admission,
acceptance.

`build_report` (build.py) returns plain data (report.json is exactly it, with sorted keys, jsontext.py); the Markdown
of REPORT.md and of `gpuconf diff --format markdown` comes from the section templates (*.md.j2, compiled into
gpuconf/output/compiled_templates at build time), rendered by markdown.py, which imports jinja2 only when needed.
"""

from __future__ import annotations

from ...escape import md_code, md_text
from ...render.values import lookup
from .acceptance import acceptance_facts, dra_class_of, helm_install_command
from .admission import admission_facts
from .build import API_VERSION, KIND, build_report
from .capacity import capacity_facts
from .diagram import MERMAID_CODES, flow_facts, mermaid, mermaid_text
from .dra import dra_facts
from .hazards import hazard_facts
from .jsontext import _plain_json, dumps_json, report_json
from .markdown import (COMPILED, DICT_ATTRIBUTES, TEMPLATES, _environment, environment, md_allocatable, md_codes,
                       md_labels, overrides_markdown, report_markdown)
from .overrides import (NFD, OVERRIDE_CODES, Deviation, chart_notes, chart_notes_for, deviations, intent_file, leaves,
                        override_findings, override_section, quirks, report_text, values_path)
from .platform import platform_notes
from .pools import declared_model_facts, pool_facts, sharing_detail
from .queues import queueing_facts
from .text import show
from .upgrade import rollback_steps, upgrade_facts

__all__ = ["API_VERSION", "COMPILED", "DICT_ATTRIBUTES", "Deviation", "KIND", "MERMAID_CODES", "NFD", "OVERRIDE_CODES",
           "TEMPLATES", "acceptance_facts", "admission_facts", "build_report", "capacity_facts", "chart_notes",
           "chart_notes_for", "declared_model_facts", "deviations", "dra_class_of", "dra_facts", "dumps_json",
           "environment", "flow_facts", "hazard_facts", "helm_install_command", "intent_file", "leaves", "lookup",
           "md_allocatable", "md_code", "md_codes", "md_labels", "md_text", "mermaid", "mermaid_text",
           "override_findings", "override_section", "overrides_markdown", "platform_notes", "pool_facts", "queueing_facts",
           "quirks", "report_json", "report_markdown", "report_text", "rollback_steps", "sharing_detail", "show",
           "upgrade_facts", "values_path"]
