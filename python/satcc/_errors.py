"""Exceptions of the satcc package."""

from __future__ import annotations

from typing import Optional


class ScenarioError(ValueError):
    """A scenario cannot be used: a field is missing, mistyped or out of
    range, or the network it describes cannot be built.

    Attributes:
        file: the scenario file (or the name given to an in-memory one).
        field: dotted path of the field at fault (``flows[0].count``), empty
            when the whole scenario is at fault.
        value: the value found at that field, as JSON text, if any.
        problem: what is wrong, in words.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        field: str = "",
        value: Optional[str] = None,
        problem: str = "",
    ) -> None:
        super().__init__(message)
        self.file = file
        self.field = field
        self.value = value
        self.problem = problem

    def __reduce__(self):  # keep the attributes across processes (Dask, pools)
        return (
            _rebuild,
            (str(self), self.file, self.field, self.value, self.problem),
        )


def _rebuild(message, file, field, value, problem):
    return ScenarioError(message, file=file, field=field, value=value, problem=problem)
