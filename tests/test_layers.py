"""The layers of the project: each package imports only from the layers below it, and no app's modules import
each other in a circle.

probe_client (the plain-Python probe client) < core (shared building blocks) < catalog (what is known about each
tool) < probes, lab and recommend (what is measured, what the lab measures on request, and what is advised);
recommend also reads the lab's published evidence.
scoring is plain Python: recommend feeds it plain data, so it imports no Django and none of the apps. Its
vocabulary (scoring/vocabulary.py) imports nothing of the project, so that the probe client, which imports no
Django and nothing of the project but the vocabulary, can read the same words. probes never imports lab: the lab
is built on the probes' targets, not the other way round.

The imports are read from the source with ``ast``, including imports inside functions, so a deferred import is no
way around the rules.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROJECT = ("probe_client", "scoring", "core", "catalog", "probes", "lab", "recommend", "config")
DJANGO = ("django", "rest_framework")
# What each package (or module) may import of the project besides itself, and whether it may import Django.
ALLOWED: dict[str, tuple[tuple[str, ...], bool]] = {
    "probe_client": (("scoring.vocabulary",), False),
    "scoring": ((), False),
    "scoring/vocabulary.py": ((), False),
    "core": (("probe_client",), True),
    "catalog": (("probe_client", "core", "scoring"), True),
    "probes": (("probe_client", "core", "catalog", "scoring"), True),
    "lab": (("probe_client", "core", "catalog", "probes", "scoring"), True),
    "recommend": (("probe_client", "core", "catalog", "probes", "lab", "scoring"), True),
}


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int
    imported: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.imported}"


def module_name(path: Path, *, package_root: Path) -> str:
    parts = list(path.relative_to(package_root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, *, package_root: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of everything the file imports, relative imports resolved; ``from a import b`` gives
    ``a.b`` (b may be a module or a name in a)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = module_name(path, package_root=package_root)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            source = ".".join([*base, node.module] if node.module else base)
            found.extend((node.lineno, f"{source}.{alias.name}") for alias in node.names)
    return found


def _within(name: str, modules: tuple[str, ...]) -> bool:
    return any(name == module or name.startswith(module + ".") for module in modules)


def layer_violations(*, package_root: Path, allowed: dict[str, tuple[tuple[str, ...], bool]]) -> list[Violation]:
    violations = []
    for location, (below, django) in allowed.items():
        base = package_root / location
        paths = [base] if base.is_file() else sorted(base.rglob("*.py"))
        own = () if base.suffix == ".py" else (location,)
        for path in paths:
            for line, name in imported_modules(path, package_root=package_root):
                top = name.split(".")[0]
                if top in DJANGO and django:
                    continue
                if (top in PROJECT or top in DJANGO) and not _within(name, (*own, *below)):
                    violations.append(Violation(path.relative_to(package_root), line, name))
    return violations


def import_graph(*, package_root: Path) -> dict[str, set[str]]:
    """Every project module (migrations aside) and the project modules it imports."""
    paths = {
        module_name(path, package_root=package_root): path
        for package in PROJECT
        for path in (package_root / package).rglob("*.py")
        if "migrations" not in path.parts
    }
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        graph[module] = set()
        for _, name in imported_modules(path, package_root=package_root):
            parts = name.split(".")
            # The longest prefix that is a module: "a.b.c" imports the module a.b when c is a name in it.
            target = next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in paths), None)
            if target is not None and target != module:
                graph[module].add(target)
    return graph


def cycles_within_packages(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles among modules of one top-level package, each as its modules in import order."""
    found = []
    state: dict[str, str] = {}
    trail: list[str] = []

    def visit(module: str) -> None:
        state[module] = "open"
        trail.append(module)
        for target in sorted(graph[module]):
            if target.split(".")[0] != module.split(".")[0]:
                continue
            if state.get(target) == "open":
                found.append(trail[trail.index(target):] + [target])
            elif target not in state:
                visit(target)
        trail.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_no_layer_imports_a_layer_above_it():
    violations = layer_violations(package_root=ROOT, allowed=ALLOWED)
    assert not violations, "\n".join(map(str, violations))


def test_no_modules_of_one_app_import_each_other_in_a_circle():
    cycles = cycles_within_packages(import_graph(package_root=ROOT))
    assert not cycles, "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_every_layer_with_rules_exists():
    for location, (below, _) in ALLOWED.items():
        assert (ROOT / location).is_file() or (ROOT / location / "__init__.py").is_file(), location
        assert {module.split(".")[0] for module in below} <= set(PROJECT)


def test_the_probe_client_imports_without_django_configured():
    environment = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    script = (
        "import sys\n"
        "import probe_client, probe_client.sweep\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('django', 'rest_framework')))\n"
        f"print(sorted(name for name in sys.modules if name.split('.')[0] in {PROJECT!r} and not "
        "(name.startswith('probe_client') or name in ('scoring', 'scoring.vocabulary'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "[]"]


@pytest.mark.parametrize(
    ("relative_path", "source", "expected"),
    [
        ("probe_client/speed.py", "from probes.models import ProbeRun\n", "probes.models.ProbeRun"),
        ("probe_client/sweep/runner.py", "def run():\n    from django.conf import settings\n", "django.conf.settings"),
        ("probe_client/http.py", "from scoring import money\n", "scoring.money"),
        ("scoring/vocabulary.py", "from scoring.money import format_usd\n", "scoring.money.format_usd"),
        ("scoring/ranking.py", "from django.db import models\n", "django.db.models"),
        ("scoring/ranking.py", "import core.loading\n", "core.loading"),
        ("core/cache.py", "from catalog.models import Tool\n", "catalog.models.Tool"),
        ("catalog/views.py", "from probes.selectors import dashboards\n", "probes.selectors.dashboards"),
        ("catalog/loading.py", "def load():\n    from recommend import loading\n", "recommend.loading"),
        ("catalog/sub/deep.py", "import probes.models as models\n", "probes.models"),
        ("probes/views.py", "from lab.models import SweepRun\n", "lab.models.SweepRun"),
    ],
)
def test_the_checker_catches_a_planted_violation(tmp_path, relative_path, source, expected):
    for location in ALLOWED:
        (tmp_path / location.removesuffix("/vocabulary.py")).mkdir(exist_ok=True)
    planted = tmp_path / relative_path
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(source, encoding="utf-8")

    violations = layer_violations(package_root=tmp_path, allowed=ALLOWED)

    assert [violation.imported for violation in violations] == [expected]
    assert violations[0].path == Path(relative_path)


def test_the_checker_allows_imports_from_below_and_resolves_relative_imports(tmp_path):
    for location in ALLOWED:
        (tmp_path / location.removesuffix("/vocabulary.py")).mkdir(exist_ok=True)
    (tmp_path / "catalog" / "views.py").write_text("from . import selectors\nfrom .models import Tool\n")
    (tmp_path / "catalog" / "models.py").write_text("from core.models import TimeStampedModel\nimport django\n")
    (tmp_path / "probe_client" / "results.py").write_text(
        "import httpx\nfrom scoring import vocabulary\nfrom .errors import ProbeError\n"
    )
    (tmp_path / "scoring" / "vocabulary.py").write_text("import enum\nfrom dataclasses import dataclass\n")

    assert imported_modules(tmp_path / "catalog" / "views.py", package_root=tmp_path) == [
        (1, "catalog.selectors"),
        (2, "catalog.models.Tool"),
    ]
    assert layer_violations(package_root=tmp_path, allowed=ALLOWED) == []


def test_the_cycle_finder_catches_a_circle_of_deferred_imports_and_only_within_an_app(tmp_path):
    (tmp_path / "probes" / "services").mkdir(parents=True)
    (tmp_path / "lab").mkdir()
    (tmp_path / "probes" / "tasks.py").write_text("def task():\n    from probes.services.enqueue import send\n")
    (tmp_path / "probes" / "services" / "enqueue.py").write_text("def send():\n    from probes import tasks\n")
    (tmp_path / "probes" / "models.py").write_text("from lab import models\n")
    (tmp_path / "lab" / "models.py").write_text("from probes.models import ProbeTarget\n")

    cycles = cycles_within_packages(import_graph(package_root=tmp_path))

    assert cycles == [["probes.services.enqueue", "probes.tasks", "probes.services.enqueue"]]
