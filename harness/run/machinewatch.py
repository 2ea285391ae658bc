"""What else the machine was doing while a run measured: its load and other harness runs.

Why: a measurement on a shared 2-core machine is only as good as what ran
beside it. A background thread samples ``/proc/loadavg`` (1-minute load,
runnable tasks) and the machine's other lock holders and sharers
(:meth:`harness.run.machinelock.LocalLock.others`) every ``interval`` seconds,
from the moment the run takes the machine until it gives it back; the
summary (per phase: ``measure`` when the study says where its measurement
starts and ends) goes to run.json's ``machine_activity`` and to the report.
Sampling costs one small file read per interval: nothing a measurement feels.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

from .machinelock import LocalLock, Owner

LOADAVG = "/proc/loadavg"


@dataclass(frozen=True)
class Sample:
    time: float  # seconds since the watch started
    load1: float
    runnable: int  # tasks runnable now (the 4th field's numerator), this thread's included
    others: tuple[str, ...]  # run ids of other runs measuring on the machine
    phase: str


def read_loadavg(path: str = LOADAVG) -> tuple[float, int]:
    """(1-minute load average, runnable tasks) from /proc/loadavg."""
    with open(path) as fh:
        fields = fh.read().split()
    return float(fields[0]), int(fields[3].split("/")[0])


@dataclass
class MachineWatch:
    """Sample the machine in a daemon thread between :meth:`start` and :meth:`stop`."""

    lock: LocalLock | None = None
    interval: float = 5.0
    loadavg_path: str = LOADAVG
    samples: list[Sample] = field(default_factory=list)
    seen: dict[str, Owner] = field(default_factory=dict)  # run id -> other run
    phase: str = "setup"
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _started: float = 0.0

    def start(self) -> MachineWatch:
        self._started = time.monotonic()
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="machine-watch", daemon=True)
        self._thread.start()
        return self

    def mark(self, phase: str) -> None:
        """From now on, samples belong to ``phase`` (one is taken at once)."""
        self.phase = phase
        self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        try:
            load1, runnable = read_loadavg(self.loadavg_path)
        except (OSError, ValueError, IndexError):
            return
        others = self.lock.others() if self.lock is not None else []
        for owner in others:
            self.seen.setdefault(owner.run_id, owner)
        self.samples.append(Sample(round(time.monotonic() - self._started, 3), load1, runnable,
                                   tuple(o.run_id for o in others), self.phase))

    def stop(self) -> dict:
        """End sampling (one last sample) and return the summary for run.json."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=self.interval + 5)
            self._thread = None
            self.sample()
        return self.summary()

    def summary(self) -> dict:
        out = {"interval_s": self.interval, "cpus": os.cpu_count(),
               "samples": len(self.samples),
               "other_runs": [o.to_dict() for o in self.seen.values()],
               "shared": bool(self.seen), "phases": {}}
        for phase in dict.fromkeys(s.phase for s in self.samples):
            chosen = [s for s in self.samples if s.phase == phase]
            loads = [s.load1 for s in chosen]
            out["phases"][phase] = {
                "samples": len(chosen), "load1_mean": round(sum(loads) / len(loads), 2),
                "load1_max": max(loads), "runnable_max": max(s.runnable for s in chosen),
                "other_runs": sorted({r for s in chosen for r in s.others}),
            }
        return out


def describe(activity: dict | None, lock: dict | None) -> dict:
    """Rows for the report: whether the machine was shared, and its load while measuring."""
    rows: dict[str, object] = {}
    if lock:
        mode = lock.get("mode")
        holder = lock.get("holder") or {}
        rows["machine"] = lock.get("machine")
        rows["lock"] = ("exclusive: no other run measured here" if mode == "exclusive"
                        else f"SHARED with run {holder.get('run_id')} ({holder.get('study')}), "
                             "which held the machine: both runs' numbers may be disturbed")
        if lock.get("took_over"):
            rows["stale lock taken over"] = ", ".join(
                str((t.get("owner") or {}).get("run_id")) for t in lock["took_over"])
    if activity:
        others = activity.get("other_runs") or []
        if others:
            rows["other runs on the machine"] = ", ".join(
                f"{o.get('run_id')} ({o.get('study')}, pid {o.get('pid')})" for o in others)
            if not mode_shared(lock):
                rows["lock"] = ("held by this run, but SHARED: the runs below joined with "
                                "--share-machine; both runs' numbers may be disturbed")
        phases = activity.get("phases") or {}
        phase = phases.get("measure") or next(iter(phases.values()), None)
        if phase:
            rows["load while measuring (1-min average)"] = (
                f"mean {phase['load1_mean']}, max {phase['load1_max']} on "
                f"{activity.get('cpus')} CPUs ({phase['samples']} samples, every "
                f"{activity.get('interval_s')} s)")
    return rows


def mode_shared(lock: dict | None) -> bool:
    return bool(lock) and lock.get("mode") == "shared"
