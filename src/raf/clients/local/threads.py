"""How many threads the local model may use without oversubscribing the machine.

llama.cpp's threads spin-wait between steps, so more threads than free cores is far
worse than too few (on a busy 2-core machine two threads made generation fall from
about 50 tokens/s to 0.3). The cores counted are the fewest of: the CPUs this process
may run on, a container's CPU quota (cgroup v2 `cpu.max`, v1 `cfs_quota_us`) and, with
SMT, the physical cores among them. One is left free; `RAF_LOCAL_THREADS` overrides.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from raf.core.errors import ConfigurationError

THREADS_ENV = "RAF_LOCAL_THREADS"
_SYS = Path("/sys")
_PROC = Path("/proc")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _allowed_cpus() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return set(range(os.cpu_count() or 1))


def cgroup_cpu_limit() -> int | None:
    """The CPUs a cgroup quota allows this process (rounded up), or None without one."""
    limits: list[int] = []
    for line in (_read(_PROC / "self" / "cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, relative = parts
        if hierarchy == "0" and controllers == "":  # cgroup v2: walk up to the root
            here = relative.strip("/")
            while True:
                text = _read(_SYS / "fs" / "cgroup" / here / "cpu.max")
                quota, _, period = (text or "").partition(" ")
                if quota.isdigit() and period.isdigit() and int(period) > 0:
                    limits.append(math.ceil(int(quota) / int(period)))
                if not here:
                    break
                here = here.rpartition("/")[0]
        elif "cpu" in controllers.split(","):  # cgroup v1
            for mount in ("cpu,cpuacct", "cpu"):
                base = _SYS / "fs" / "cgroup" / mount
                for folder in (base / relative.strip("/"), base):
                    quota = _read(folder / "cpu.cfs_quota_us") or ""
                    period = _read(folder / "cpu.cfs_period_us") or ""
                    if quota.isdigit() and period.isdigit() and int(period) > 0:
                        limits.append(math.ceil(int(quota) / int(period)))
    return max(1, min(limits)) if limits else None


def physical_cores(cpus: set[int]) -> int | None:
    """Distinct physical cores among `cpus` (SMT siblings count once); None if unknown."""
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = _SYS / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
        core = _read(topology / "core_id")
        package = _read(topology / "physical_package_id")
        if core is None or package is None:
            return None
        cores.add((package, core))
    return len(cores) or None


def default_threads() -> int:
    """Threads for generation: the usable cores less one, at least 1 (see the module doc)."""
    explicit = os.environ.get(THREADS_ENV)
    if explicit:
        try:
            return max(1, int(explicit))
        except ValueError:
            raise ConfigurationError(
                f"{THREADS_ENV}={explicit!r} is not a whole number of threads"
            ) from None
    cpus = _allowed_cpus()
    usable = len(cpus)
    quota = cgroup_cpu_limit()
    if quota is not None:
        usable = min(usable, quota)
    threads = usable - 1
    physical = physical_cores(cpus)
    if physical is not None:
        threads = min(threads, physical)
    return max(1, threads)
