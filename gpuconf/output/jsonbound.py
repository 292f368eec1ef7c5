"""JSON that a stranger may have written (an attestation in a folder under review), read within bounds: its size and
its nesting depth are checked before it is parsed, without recursion, so a huge or a 100,000-deep document is refused
with the reason instead of taking the memory or the stack."""

from __future__ import annotations

import json
import re

#: The largest attestation gpuconf reads (a 1,000-pool cluster's is well under 1 MiB), and the deepest nesting of
#: its JSON (gpuconf writes 6 levels): beyond either it is refused with the reason, never read whole.
MAX_ATTESTATION_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 32
#: A JSON string (escapes included): what the depth scan skips, in linear time.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


class Unreadable(ValueError):
    """Not JSON gpuconf reads: too large, too deep, not JSON; the reason."""


def bounded_json(data: bytes) -> object:
    """data parsed as JSON, after checking its size and nesting depth without recursion; raises Unreadable."""
    if len(data) > MAX_ATTESTATION_BYTES:
        raise Unreadable(f"larger than {MAX_ATTESTATION_BYTES} bytes; not an attestation gpuconf wrote")
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub('""', data.decode("utf-8", "replace"))):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_DEPTH:
            raise Unreadable(f"nested deeper than {MAX_DEPTH} levels; not an attestation gpuconf wrote")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise Unreadable(f"not JSON ({exc})") from None
    except RecursionError:
        raise Unreadable("not JSON (nested too deep)") from None
