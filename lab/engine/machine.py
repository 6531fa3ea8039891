"""Describe the machine a local engine runs on, for the hardware column of its probe target."""
from __future__ import annotations

import os
import platform
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def cpu_model_name(cpuinfo_text: str | None = None) -> str:
    """The CPU's marketing name from /proc/cpuinfo (x86 `model name`, Arm `Model`/`Hardware`), else the platform's."""
    if cpuinfo_text is None:
        try:
            cpuinfo_text = CPUINFO.read_text(errors="replace")
        except OSError:
            cpuinfo_text = ""
    for key in ("model name", "Model", "Hardware", "cpu model"):
        for line in cpuinfo_text.splitlines():
            name, _, value = line.partition(":")
            if name.strip() == key and value.strip():
                return " ".join(value.split())
    return platform.processor() or platform.machine() or "unknown CPU"


def machine_hardware_description(cpuinfo_text: str | None = None) -> str:
    """e.g. 'CPU: AMD EPYC 7B13 (2 logical cores, x86_64)'."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"CPU: {cpu_model_name(cpuinfo_text)} ({cores} logical cores, {platform.machine()})"
