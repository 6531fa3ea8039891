"""The one error the scoring functions raise on bad input."""
from __future__ import annotations


class InputError(ValueError):
    """Invalid input values, keyed by field name so forms and the API can name the field."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))
        self.errors = errors
