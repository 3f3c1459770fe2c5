"""Reporting helpers shared by the evaluation and the benchmarks: Markdown tables, medians and percentiles, and
the description of the machine they were measured on."""

from __future__ import annotations

import os
import platform
import statistics
import time

import numpy as np


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.system()} {platform.release()}, " \
           f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}"


def median(values: list[float]) -> float:
    return statistics.median(values)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (numpy's linear interpolation)."""
    return float(np.percentile(values, q))


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
