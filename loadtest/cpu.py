"""Where the cores went during a run: CPU seconds of the stack's processes (gunicorn, the worker,
redis, the PostgreSQL backends of the scratch database), of this process and of the machine."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from .stack import Stack


def cpu_by_process(stack: Stack) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of every process of the stack: pid -> (component, seconds).

    Components are process groups (gunicorn with its workers, the worker, redis) and
    the PostgreSQL backends serving the scratch database ("postgres").
    """
    tick = os.sysconf("SC_CLK_TCK")
    groups = {proc.pid: name for name, proc in stack.procs.items()}
    backend_title = f" {stack.db_name} ".encode()  # "postgres: 15/main: user db host state"
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        used = (int(fields[11]) + int(fields[12])) / tick
        if raw.startswith(f"{entry} (postgres)") and _is_backend(entry, backend_title):
            out[int(entry)] = ("postgres", used)
        elif int(fields[2]) in groups:
            out[int(entry)] = (groups[int(fields[2])], used)
    return out


def machine_busy_seconds() -> float:
    cpu = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    idle = int(cpu[3]) + int(cpu[4])
    return (sum(int(v) for v in cpu[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class CpuMeter(threading.Thread):
    """Where the cores went during a run: samples the stack's processes twice a second (so
    short-lived ones, e.g. database connections recycled after CONN_MAX_AGE, are counted)."""

    def __init__(self, stack: Stack) -> None:
        super().__init__(daemon=True)
        self.stack, self.halt = stack, threading.Event()
        self.first = cpu_by_process(stack)
        self.last = dict(self.first)
        self.began, self.busy0, self.own0 = time.perf_counter(), machine_busy_seconds(), _own()

    def run(self) -> None:
        while not self.halt.wait(0.5):
            self.last.update(cpu_by_process(self.stack))

    def stop(self) -> dict[str, float]:
        """Average cores per component; 'others on the machine' is everything else."""
        self.halt.set()
        self.join()
        self.last.update(cpu_by_process(self.stack))
        seconds = time.perf_counter() - self.began
        used: dict[str, float] = {}
        for pid, (name, total) in self.last.items():
            used[name] = used.get(name, 0.0) + total - self.first.get(pid, (name, 0.0))[1]
        used["load client"] = _own() - self.own0
        busy = machine_busy_seconds() - self.busy0
        used["others on the machine"] = max(0.0, busy - sum(used.values()))
        return {k: round(v / seconds, 2) for k, v in sorted(used.items())}


def _own() -> float:
    own = os.times()
    return own.user + own.system


def _is_backend(pid: str, title: bytes) -> bool:
    try:
        return title in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
