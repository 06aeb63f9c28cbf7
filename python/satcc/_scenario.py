"""`satcc.Scenario`: a scenario file, edited with the dotted keys of `--set`."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, Mapping, Sequence, Union

from . import _satcc

PathLike = Union[str, "os.PathLike[str]"]


class Scenario:
    """A validated satcc scenario (the TOML format of ``docs/scenario.md``).

    Immutable: :meth:`set` returns a new scenario, so one base scenario can
    be varied many ways. Every constructor and :meth:`set` check the whole
    scenario and raise :class:`satcc.ScenarioError` naming the field at
    fault.
    """

    __slots__ = ("_tree",)

    def __init__(self, tree: "_satcc.Tree") -> None:
        self._tree = tree

    @classmethod
    def load(cls, path: PathLike) -> "Scenario":
        """Reads a scenario file."""
        return cls(_satcc.Tree.load(os.fspath(path)))

    @classmethod
    def from_toml(cls, text: str, name: str = "<string>") -> "Scenario":
        """Parses scenario TOML text; ``name`` stands for the file in errors."""
        return cls(_satcc.Tree.from_toml(text, name))

    @classmethod
    def from_dict(cls, d: Dict[str, Any], name: str = "<dict>") -> "Scenario":
        """A scenario from nested dicts and lists, as the TOML file reads
        (``{"duration": "60s", "topology": {...}, "flows": [{...}]}``).
        Strings stay strings here (``"16Mbps"``)."""
        return cls(_satcc.Tree.from_obj(d, name))

    def set(self, key: str, value: Any) -> "Scenario":
        """A copy with the field at dotted ``key`` set to ``value``.

        The keys are those of ``satcc run --set`` (``flows.0.count``,
        ``topology.bottleneck.rate``). ``value`` may be a str, int, float,
        bool, list or dict; a str is read as on the command line: as a TOML
        value if it is one (``"1e-4"`` is a number, ``"true"`` a boolean),
        else as the string (``"16Mbps"``).
        """
        return Scenario(self._tree.set(key, value))

    def set_many(
        self, items: Union[Mapping[str, Any], Iterable[Sequence[Any]]]
    ) -> "Scenario":
        """A copy with every ``(key, value)`` set, in order, and checked
        once at the end: for changes valid only together (a RED queue's
        ``min_th`` and ``max_th`` moving past each other), which a chain of
        :meth:`set` calls would refuse half way. Values as in :meth:`set`.

        ``items`` is a dict (``{"flows.1.strategy": "s2", "flows.1.k": 2}``)
        or pairs, as tuples or as two-element lists (what ``json.load`` gives
        back for a list of pairs)."""
        if isinstance(items, Mapping):
            pairs = list(items.items())
        else:
            pairs = []
            for n, item in enumerate(items):
                # A str is a sequence too: "ab" would pass as ("a", "b").
                if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
                    raise TypeError(
                        f"set_many: item {n} is {item!r}; expected a (key, value) pair"
                    )
                pairs.append((item[0], item[1]))
        return Scenario(self._tree.set_many(pairs))

    def to_toml(self) -> str:
        """The scenario as TOML text (comments and layout are not kept)."""
        return self._tree.to_toml()

    def to_dict(self) -> Dict[str, Any]:
        """The scenario as nested dicts and lists (keys sorted)."""
        return json.loads(self._tree.to_json())

    def key(self, seed: int) -> str:
        """The results-store key of a run of this scenario with ``seed``:
        a hash of the canonical content, the seed and satcc's version."""
        return self._tree.key(seed)

    @property
    def name(self) -> str:
        """The file the scenario came from, or the name it was given."""
        return self._tree.file

    @property
    def seed(self) -> int:
        """The scenario's own seed (used when a run gives none)."""
        return self._tree.seed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and self._tree.to_json() == other._tree.to_json()

    def __hash__(self) -> int:
        return hash(self._tree.to_json())

    def __repr__(self) -> str:
        return f"Scenario({self.name!r})"

    # Pickled as TOML text: a scenario can go to another process (a
    # ProcessPoolExecutor, a Dask worker).
    def __reduce__(self):
        return (Scenario.from_toml, (self.to_toml(), self.name))


def as_scenario(s: Union["Scenario", PathLike]) -> Scenario:
    """A Scenario, or a path to load one from."""
    return s if isinstance(s, Scenario) else Scenario.load(s)
