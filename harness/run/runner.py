"""The one way a study is run: the runner drives a :class:`~harness.studies.Study` through a
session, the study never imports what runs it.

:func:`run_study` checks the parameters against where the run goes, opens a session (a
run folder, its journal, the machine's lock), archives the study's registration and
code digests before any data exists, builds or reaches the testbed, configures, verifies
every link by measurement, measures and archives the claims table -- and the session
undoes every change on the way out, also after an error or Ctrl-C. :func:`dry_run_study`
opens a dry session instead and returns the plan.

A notebook runs its study so::

    from harness.run.runner import run_study
    run_path = run_study(study, params, run_dir=run_dir, inventory=inventory)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..archive.archive import archived_notebook
from ..archive.provenance import file_digests
from ..verdicts.registration import FILE as REGISTRATION_FILE
from .notebook_run import begin
from .session import Session, open_session

if TYPE_CHECKING:
    from ..studies.base import Study
    from ..studies.parameters import Parameters


def run_study(study: Study, params: Parameters, run_dir: str = "", inventory: str = "") -> str:
    """Check, build or reach the testbed, configure, verify, measure, archive; undo all.

    Returns the run folder. ``harness run`` passes its own ``run_dir``. With an empty one
    the run folder is made here; in a notebook's kernel (JupyterLab, papermill, nbclient)
    the run then stays incomplete until the notebook's last cell has run, and its executed
    notebook and report are archived with it (:mod:`harness.run.notebook_run`).
    """
    study.check_where(params, inventory)
    study.prepare(params, inventory)
    if not run_dir:
        notebook_run = begin(study.name, params.to_dict(), study_object=study)
        run_dir = str(notebook_run.path) if notebook_run else ""
    with open_session(study.name, params.to_dict(), run_dir, inventory) as session:
        register(study, session)
        bed = testbed(study, session, params)
        study.check_testbed(session, bed, params)
        configured = study.configure(session, bed, params)
        session.verify(getattr(params, "verify_seconds", 2))
        session.mark("measure")
        study.measure(session, bed, params, configured)
        session.mark("archive")
        archive_claims(study, session)
        return str(session.run.path)


def dry_run_study(study: Study, params: Parameters, inventory: str = "") -> str:
    """Every change a run would make (the lab's build plan, then the study's ``configure``
    operations, from their diffs), as text; nothing is changed and no run is archived.

    Facts are read on machines that exist (this host, inventory machines); nodes of a lab
    that a dry run does not build show the planned value only.
    """
    with open_session(study.name, params.to_dict(), "", inventory, dry_run=True) as session:
        bed = testbed(study, session, params)
        study.configure(session, bed, params)
        return session.describe()


def testbed(study: Study, session: Session, params: Parameters):
    """The study's lab built (or its inventory machines reached), its requirements checked."""
    needs = study.requirements(params)
    return session.testbed(study.topology(params), features=set(needs.features),
                           tools=needs.tools,
                           node_features={k: set(v) for k, v in needs.node_features.items()},
                           as_found_ok=study.as_found is not None)


def register(study: Study, session: Session) -> None:
    """The claims' registration and the digests of the study's code, archived before any
    data exists (provenance reads git, which misses a study that is not committed yet)."""
    registration = study.registration()
    session.run.add_json(REGISTRATION_FILE, registration.to_dict())
    notebook = archived_notebook(session.run.meta)
    code = file_digests([*study.code_files(), *([notebook] if notebook else [])])
    session.note(registration=registration.summary(), code_digests=code)


def archive_claims(study: Study, session: Session) -> None:
    """The verdicts as a table beside the results (``claims.parquet`` and ``.csv``).

    Computed from the tables just archived, so runs can be compared claim by claim without
    parsing reports. An analysis error does not lose the measurement: the run stays
    complete, run.json says why it has no claims table.
    """
    try:
        frame = study.claims(study.load(session.run.path))
    except Exception as exc:  # noqa: BLE001 -- the data is archived; say what failed
        session.note(claims_error=f"{type(exc).__name__}: {exc}")
        return
    session.results(frame, "claims")
