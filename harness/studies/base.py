"""The study contract: what every study is, and the one way a study is run.

A study is one module with one :class:`Study` subclass and a notebook. The
subclass declares

- ``name`` (the archive's folder, ``harness lab show NAME``), ``title`` and
  ``citation`` (the paper it re-runs),
- ``Params``: a :class:`~harness.studies.parameters.Parameters` dataclass whose
  fields carry their rules, with ``profiles`` (``quick``, ``paper``, ...),
- :meth:`topology` for given parameters and :meth:`requirements` (kernel
  features and the programs, as :class:`~harness.tools.registry.Tool`, it needs),
- :meth:`configure`: the changes that hold for the whole measurement, made only
  through recorded configuration operations (a dry run prints them), and
  :meth:`measure`: the measurement itself, archiving raw outputs and tables,
- the analysis: :meth:`load` (a run into typed data), :meth:`figures` and
  :meth:`claims` (the paper's claims beside ours).

Defining the subclass registers it (see :mod:`harness.studies.registry`):
nothing under ``harness/`` or ``noxfile.py`` lists studies by hand.
A study does not run itself: :func:`harness.run.runner.run_study` is the same for every
study (check the requirements, build or reach the testbed, configure, verify every link
by measurement, measure, archive -- and undo every change, also after an error or
Ctrl-C), so the contract here imports nothing of the session that runs it.
"""

from __future__ import annotations

import functools
import importlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from ..errors import SpecError
from ..verdicts import withdrawal
from ..verdicts.gates.registry import apply as apply_gates
from ..verdicts.registration import Registration, registration_module_name
from ..verdicts.registration_file import RegistrationError, load
from .parameters import Parameters

if TYPE_CHECKING:
    from ..run.session import Session
    from ..tools.registry import Tool
    from ..topology.topology import Topology
    from ..verdicts.claims import Claim, Region


@dataclass(frozen=True)
class Requirements:
    """What a study needs of the machines it runs on, checked before anything changes.

    ``features`` are needed on every node; ``node_features`` adds needs per
    topology node (e.g. NAT on one front node only). ``tools`` are programs
    needed on every machine of the testbed.
    """

    features: frozenset[str] = frozenset()
    tools: tuple[Tool, ...] = ()
    node_features: dict[str, frozenset[str]] = field(default_factory=dict)

    def tool_names(self) -> set[str]:
        return {tool.name for tool in self.tools}


@dataclass(frozen=True)
class Citation:
    """The paper a study re-runs. ``note`` says where a fact comes from when the original
    does not print it (e.g. a venue known from another paper's reference list)."""

    authors: str
    title: str
    venue: str
    year: int
    seed: str = ""  # the original's file under ../shared/seeds/
    note: str = ""

    def text(self) -> str:
        text = f"{self.authors}. \u201c{self.title}.\u201d {self.venue}, {self.year}."
        return f"{text} [{self.note}]" if self.note else text


@dataclass
class RunData:
    """An archived run, loaded: its run.json and every table it wrote."""

    path: Path
    meta: dict
    tables: dict[str, pd.DataFrame]

    @property
    def results(self) -> pd.DataFrame:
        return self.tables["results"]

    @classmethod
    def load(cls, run_path: str | Path) -> RunData:
        path = Path(run_path)
        meta = json.loads((path / "run.json").read_text())
        tables = {p.stem: pd.read_parquet(p) for p in sorted(path.glob("*.parquet"))}
        return cls(path, meta, tables)


#: Every concrete :class:`Study` subclass defined so far, by name: a subclass enters it when
#: its module is imported; :mod:`harness.studies.registry` imports the modules and looks
#: studies up (it imports this module, never the other way).
DEFINED: dict[str, type[Study]] = {}


def register(cls: type[Study]) -> None:
    """Called by ``Study.__init_subclass__``: one class per name."""
    known = DEFINED.get(cls.name)
    if known is not None and known.__qualname__ != cls.__qualname__:
        raise SpecError(f"two studies are named {cls.name!r}: {known.__module__}.{known.__qualname__}"
                        f" and {cls.__module__}.{cls.__qualname__}", "rename one of them")
    DEFINED[cls.name] = cls


def _outside_regime_not_testable(claims):
    """A study's ``claims`` whose table has the claims that rest on a change a run as found
    did not make marked "not testable here" (:func:`harness.machines.as_found.mark_claims`), and each
    claim's registered regime gates applied to the run's facts (:func:`harness.verdicts.gates.registry.apply`):
    one place, so neither the archived table nor a notebook's own call can judge a claim
    outside its regime, and no study can leave the gates out; and a claim a registered change
    withdrew shown as withdrawn, never judged (:func:`harness.verdicts.withdrawal.mark`)."""
    @functools.wraps(claims)
    def wrapper(self, data: RunData) -> pd.DataFrame:
        from ..machines.as_found import mark_claims

        frame = mark_claims(claims(self, data), data.meta, type(self).as_found)
        claims_ = self.registration().claims
        registered = {c.id: tuple(c.gates) for c in claims_}
        regions = {c.id: (c.region.low, c.region.high) for c in claims_}
        frame = apply_gates(frame, data.meta, data.tables, registered, regions)
        return withdrawal.mark(frame, self.registration())  # a withdrawn claim is never judged

    return wrapper


class Study(ABC):
    """One study. Subclasses fill in the class variables and the abstract methods."""

    name: ClassVar[str]
    title: ClassVar[str]
    citation: ClassVar[Citation | None] = None
    Params: ClassVar[type[Parameters]]
    #: the study's registration file (TOML: its claims, design and changes, read by
    #: harness.verdicts.registration_file), relative to the folder of the study's module
    registration_file: ClassVar[str] = ""
    #: the module holding the study's analysis, when it is neither the study package's
    #: ``registration`` module (:func:`registration_module_name`) nor the study's own: its code
    #: is digested with the study's
    analysis_module: ClassVar[str] = ""
    #: Whether the study can measure a user's machines as found when a login is not root
    #: and may not sudo (:mod:`harness.machines.as_found`), and which of its claims then rest on a
    #: change it could not make: claim id -> the kind of change (``mtu``, ``sysctl``,
    #: ``mptcp-endpoint``...: :data:`harness.machines.privileges.OPERATIONS`). None: the study
    #: measures nothing without its changes, and such a login is refused before anything runs.
    as_found: ClassVar[dict[str, str] | None] = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "claims" in cls.__dict__:
            cls.claims = _outside_regime_not_testable(cls.__dict__["claims"])
        if "name" in cls.__dict__:  # a concrete study, not an intermediate base
            register(cls)

    # -- what the study is ------------------------------------------------------------------
    def parameters(self, namespace: dict | None = None, **given) -> Parameters:
        """Resolved parameters: from a notebook's namespace (``globals()``) and/or keywords."""
        values = {name: namespace[name] for name in self.Params.rules()
                  if namespace is not None and name in namespace}
        params = self.Params.resolve(**{**values, **given})
        if namespace is not None:  # a notebook: record its outputs from here on (notebook_run)
            from ..run.kernel_record import record

            record()
        return params

    @abstractmethod
    def topology(self, params: Parameters) -> Topology:
        """The lab (or the part of the real network an inventory must provide)."""

    @abstractmethod
    def requirements(self, params: Parameters) -> Requirements:
        """Kernel features and programs the study needs for these parameters."""

    def check_where(self, params: Parameters, inventory: str) -> None:
        """Checks of the parameters against where the run goes (a local lab, or the machines
        of ``inventory``); raise SpecError. Pure: `harness run` calls it before the run folder
        exists, :func:`harness.run.runner.run_study` again before anything else."""

    def prepare(self, params: Parameters, inventory: str) -> None:
        """Checks and local builds before any session exists (nothing changed yet)."""

    def check_testbed(self, session: Session, bed, params: Parameters) -> None:
        """Checks on the reached testbed before anything is configured (ports free, ...)."""

    def configure(self, session: Session, bed, params: Parameters) -> Any:
        """Recorded configuration for the whole measurement; the value goes to :meth:`measure`."""
        return None

    @abstractmethod
    def measure(self, session: Session, bed, params: Parameters, configured: Any) -> None:
        """Measure, archiving raw outputs (``session.raw``) and tables (``session.results``)."""

    # -- the analysis -------------------------------------------------------------------
    def load(self, run_path: str | Path) -> RunData:
        """The archived run as typed data."""
        return RunData.load(run_path)

    @abstractmethod
    def claims(self, data: RunData) -> pd.DataFrame:
        """The paper's claims beside ours, one row per claim with its verdict."""

    def claims_as_registered(self, data: RunData, claims: Mapping[str, Claim]) -> pd.DataFrame:
        """The rows of ``claims`` (ids of this study's, each as an earlier registration had it: other
        regions or gates) in the run's claims table judged as registered then: the study's analysis
        over the run's archived data, each such claim judged again against its earlier region from
        its own estimate (:func:`harness.verdicts.before_outcomes.rejudged`), then the as-found
        marks and its earlier gates applied to the run's facts, as :meth:`claims` applies today's."""
        from ..machines.as_found import mark_claims
        from ..verdicts.before_outcomes import rejudged

        analyse = type(self).claims.__wrapped__  # the study's own analysis, before its gates
        frame = analyse(self, data)
        frame = rejudged(frame[frame.claim_id.isin(list(claims))], dict(claims))
        frame = mark_claims(frame, data.meta, type(self).as_found)
        return apply_gates(frame, data.meta, data.tables, {c.id: tuple(c.gates) for c in claims.values()},
                           {c.id: (c.region.low, c.region.high) for c in claims.values()})

    def design_regions(self, data: RunData) -> dict[str, Region]:
        """The regions a run's design set, by claim id, for the claims whose registered rule makes
        the region from the design (S3's "most": at least k // 2 + 1 of the run's k points).
        A pool judges such a claim against the region where every run's design set the same one
        (:func:`harness.verdicts.run_pooling.pooled_verdict`). {}: every claim is judged against
        its registered region."""
        return {}

    @abstractmethod
    def figures(self, data: RunData) -> dict[str, Any]:
        """The figures that mirror the paper's, by name."""

    def run_conditions(self, meta: dict) -> str:
        """The condition a run's claims were measured under that the run chose itself (S4: the
        CPU limit its calibration anchored), in words, for a pooled report's table of runs:
        runs pooled under different such conditions say so where a reader compares them. ""
        when the study has none."""
        return ""

    def registration(self) -> Registration:
        """The claims and design this study registers before data (:mod:`harness.verdicts.registration`):
        its registration file, data and no code (issue 33 item 1)."""
        path = self.registration_path()
        if path is None:
            raise RegistrationError(
                f"study {self.name} names no registration file, so it registers no claim",
                "write its claims, design and changes in a TOML file beside the study's module "
                "(docs/how-to/adding-a-study.md) and set registration_file = \"registration.toml\" "
                "on the study class")
        registration = load(path)
        if registration.study != self.name:
            raise RegistrationError(
                f"{path}: field study: {registration.study!r}, but the study that names "
                f"this file is {self.name!r}", f'write study = "{self.name}"')
        return registration

    @classmethod
    def registration_path(cls) -> Path | None:
        """The registration file beside the study's module (None: the study names none)."""
        import sys

        if not cls.registration_file:
            return None
        return Path(sys.modules[cls.__module__].__file__).parent / cls.registration_file

    def code_files(self) -> list[Path]:
        """The files whose content is this study's code: its module, its registration module,
        and every module of its package (``harness/studies/s4/*.py``); for a study kept in
        one file, every ``<module>_*.py`` beside it."""
        import sys

        files = set()
        for name in {type(self).__module__, self.analysis_module
                     or registration_module_name(type(self).__module__)}:
            module = sys.modules.get(name)
            if module is None:
                try:
                    module = importlib.import_module(name)
                except ModuleNotFoundError:
                    continue
            if getattr(module, "__file__", None):
                files.add(Path(module.__file__))
        if self.registration_path() is not None:
            files.add(self.registration_path())
        own = sys.modules[type(self).__module__]
        if getattr(own, "__file__", None):
            path = Path(own.__file__)
            in_package = type(self).__module__.rpartition(".")[2] == "study"
            files.update(path.parent.glob("*.py" if in_package else f"{path.stem}_*.py"))
        return sorted(files)

    # -- running it: harness.run.runner, which imports the session; a study does not ----------
    def run(self, *args, **kwargs):
        """Refused with the line that replaces it (notebooks written before the runner)."""
        raise SpecError(f"{self.name}: Study.run() is gone, a study does not run itself",
                        "run it with `from harness.run.runner import run_study` and `run_path = "
                        "run_study(study, params, run_dir=run_dir, inventory=inventory)`")

    def dry_run(self, *args, **kwargs):
        """Refused with the line that replaces it."""
        raise SpecError(f"{self.name}: Study.dry_run() is gone, a study does not run itself",
                        "use `from harness.run.runner import dry_run_study` and "
                        "`dry_run_study(study, params, inventory)`, or `harness run NOTEBOOK "
                        "--dry-run`")

    def describe(self) -> str:
        lines = [f"{self.name}: {self.title}"]
        if self.citation:
            lines.append(f"  paper: {self.citation.text()}")
        return "\n".join(lines)
