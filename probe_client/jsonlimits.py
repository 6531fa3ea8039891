"""JSON from outside (a request body, a peer tool's result file) read within bounds: Python's parser fails with
RecursionError on deep nesting, and builds about 25 bytes of objects for each byte of ``[{},{},...]``; both are
checked on the text before it is parsed. Plain Python: the API's parser and the lab's import use it alike."""
from __future__ import annotations

import json
import re
from typing import Any

# No document the project accepts comes near either limit.
MAX_JSON_DEPTH = 64
MAX_JSON_VALUES = 1_000_000

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


class JSONLimitError(ValueError):
    """JSON refused before parsing; the message names the limit."""


def _depth_exceeds(bare: str, limit: int) -> bool:
    depth = 0
    for bracket in _BRACKETS.finditer(bare):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def loads_bounded(text: str, *, max_values: int = MAX_JSON_VALUES) -> Any:
    """json.loads, refusing first (JSONLimitError) text nested deeper than MAX_JSON_DEPTH or holding more than
    `max_values` values; a syntax error is json's ValueError."""
    bare = _STRINGS.sub('""', text)
    if bare.count("[") + bare.count("{") + bare.count(",") + 1 > max_values:
        raise JSONLimitError(f"JSON with more than {max_values:,} values is refused")
    if _depth_exceeds(bare, MAX_JSON_DEPTH):
        raise JSONLimitError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels is refused")
    del bare
    return json.loads(text)
