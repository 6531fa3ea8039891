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


class TooManyValues(JSONLimitError):
    """Over the value limit: a caller adding up several documents words this one itself."""


def _depth_exceeds(bare: str, limit: int) -> bool:
    depth = 0
    for bracket in _BRACKETS.finditer(bare):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > limit:
            return True
    return False


def loads_counted(text: str, *, max_values: int = MAX_JSON_VALUES) -> tuple[Any, int]:
    """json.loads, and an upper bound of the values it built; refused first (JSONLimitError) when nested deeper
    than MAX_JSON_DEPTH or holding more than `max_values` values. A syntax error is json's JSONDecodeError."""
    bare = _STRINGS.sub('""', text)
    values = bare.count("[") + bare.count("{") + bare.count(",") + 1
    if values > max_values:
        raise TooManyValues(f"JSON with more than {max_values:,} values is refused")
    if _depth_exceeds(bare, MAX_JSON_DEPTH):
        raise JSONLimitError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels is refused")
    del bare
    return json.loads(text), values


def loads_bounded(text: str) -> Any:
    """json.loads within MAX_JSON_DEPTH and MAX_JSON_VALUES (JSONLimitError beyond either)."""
    return loads_counted(text)[0]
