"""The layers of the project: each package imports only from the layers below it.

core (shared building blocks) < catalog (what is known about each tool) < probes and recommend (what is
measured, and what is advised). scoring is plain Python: recommend feeds it plain data, so it imports no
Django and none of the apps. The probe client (probe_client) is plain Python too: of the project it imports
only itself and the metric registry (scoring/vocabulary.py), which imports nothing of Django or of the project.
The imports are read from the source with ``ast``, including imports inside functions, so a deferred import
is no way around the rule.
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

APPS = ("core", "catalog", "probes", "recommend", "scoring")
FORBIDDEN: dict[str, frozenset[str]] = {
    "core": frozenset({"catalog", "probes", "recommend", "scoring"}),
    "catalog": frozenset({"probes", "recommend"}),
    "scoring": frozenset({"django", "rest_framework", "core", "catalog", "probes", "recommend"}),
}


@dataclass(frozen=True)
class Violation:
    path: Path
    line: int
    imported: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.imported}"


def imported_modules(path: Path, *, package_root: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module_parts = list(path.relative_to(package_root).with_suffix("").parts)
    if module_parts[-1] == "__init__":
        module_parts.pop()
    # A module's own package; for a package's __init__ that is the package itself.
    package_parts = module_parts if path.name == "__init__.py" else module_parts[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package_parts[: len(package_parts) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def layer_violations(*, package_root: Path, forbidden: dict[str, frozenset[str]]) -> list[Violation]:
    violations = []
    for layer, banned in forbidden.items():
        for path in sorted((package_root / layer).rglob("*.py")):
            for line, name in imported_modules(path, package_root=package_root):
                if name.split(".")[0] in banned:
                    violations.append(Violation(path.relative_to(package_root), line, name))
    return violations


# Pure modules inside a layer: (path under the root, the only project modules they may import).
PURE_MODULES: dict[str, tuple[str, ...]] = {
    "probe_client": ("probe_client", "scoring.vocabulary"),
    "scoring/vocabulary.py": (),
}
PROJECT_PACKAGES = frozenset({*APPS, "probe_client", "config", "django", "rest_framework"})


def pure_module_violations(*, package_root: Path, pure: dict[str, tuple[str, ...]]) -> list[Violation]:
    violations = []
    for location, allowed in pure.items():
        base = package_root / location
        paths = sorted(base.rglob("*.py")) if base.is_dir() else [base]
        for path in paths:
            for line, name in imported_modules(path, package_root=package_root):
                inside = any(name == module or name.startswith(module + ".") for module in allowed)
                if name.split(".")[0] in PROJECT_PACKAGES and not inside:
                    violations.append(Violation(path.relative_to(package_root), line, name))
    return violations


def test_no_layer_imports_a_layer_above_it():
    violations = layer_violations(package_root=ROOT, forbidden=FORBIDDEN)
    assert not violations, "\n".join(map(str, violations))


def test_the_probe_client_and_the_metric_registry_import_no_django_and_no_app():
    violations = pure_module_violations(package_root=ROOT, pure=PURE_MODULES)
    assert not violations, "\n".join(map(str, violations))


def test_the_probe_client_imports_without_django_configured():
    environment = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    script = (
        "import sys\n"
        "import probe_client, probe_client.sweep, scoring.vocabulary\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('django', 'rest_framework')))\n"
        "print(sorted(name for name in sys.modules if name.startswith('probes.') and not "
        "(name.startswith('probe_client'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "[]"]


@pytest.mark.parametrize(
    ("relative_path", "source", "expected"),
    [
        ("probe_client/speed.py", "from probes.models import ProbeRun\n", "probes.models"),
        ("probe_client/sweep/runner.py", "def run():\n    from django.conf import settings\n", "django.conf"),
        ("probe_client/http.py", "from probes.selectors.cells import excerpt\n", "probes.selectors.cells"),
        ("scoring/vocabulary.py", "from probe_client import COMPAT_CHECKS\n", "probe_client"),
    ],
)
def test_the_pure_module_checker_catches_a_planted_violation(tmp_path, relative_path, source, expected):
    planted = tmp_path / relative_path
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(source, encoding="utf-8")
    (tmp_path / "probe_client").mkdir(parents=True, exist_ok=True)
    (tmp_path / "scoring").mkdir(exist_ok=True)
    (tmp_path / "scoring" / "vocabulary.py").touch()

    violations = pure_module_violations(package_root=tmp_path, pure=PURE_MODULES)

    assert [violation.imported for violation in violations] == [expected]


def test_the_pure_module_checker_allows_the_client_and_the_registry(tmp_path):
    (tmp_path / "probe_client").mkdir()
    (tmp_path / "scoring").mkdir()
    (tmp_path / "probe_client" / "results.py").write_text(
        "import math\nimport httpx\nfrom scoring.vocabulary import METRICS\nfrom .errors import ProbeError\n"
    )
    (tmp_path / "scoring" / "vocabulary.py").write_text("import enum\nfrom dataclasses import dataclass\n")

    assert pure_module_violations(package_root=tmp_path, pure=PURE_MODULES) == []


def test_every_layer_with_rules_exists():
    for layer in FORBIDDEN:
        assert (ROOT / layer / "__init__.py").is_file(), layer
        assert set(FORBIDDEN[layer]) - {"django", "rest_framework"} <= set(APPS)


@pytest.mark.parametrize(
    ("relative_path", "source", "expected"),
    [
        ("catalog/views.py", "from probes.selectors.dashboards import tool_measurements\n", "probes.selectors.dashboards"),
        ("catalog/loading.py", "def load():\n    from recommend import loading\n", "recommend"),
        ("catalog/sub/deep.py", "import probes.models as models\n", "probes.models"),
        ("core/cache.py", "from catalog.models import Tool\n", "catalog.models"),
        ("scoring/ranking.py", "from django.db import models\n", "django.db"),
        ("scoring/ranking.py", "import core.loading\n", "core.loading"),
    ],
)
def test_the_checker_catches_a_planted_violation(tmp_path, relative_path, source, expected):
    planted = tmp_path / relative_path
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(source, encoding="utf-8")
    for layer in FORBIDDEN:
        (tmp_path / layer).mkdir(exist_ok=True)

    violations = layer_violations(package_root=tmp_path, forbidden=FORBIDDEN)

    assert [violation.imported for violation in violations] == [expected]
    assert violations[0].path == Path(relative_path)


def test_the_checker_resolves_relative_imports(tmp_path):
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "views.py").write_text("from . import selectors\nfrom .models import Tool\n")

    assert imported_modules(tmp_path / "catalog" / "views.py", package_root=tmp_path) == [
        (1, "catalog"),
        (2, "catalog.models"),
    ]
    assert layer_violations(package_root=tmp_path, forbidden=FORBIDDEN) == []


def test_the_checker_allows_imports_from_below(tmp_path):
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "models.py").write_text("from core.models import TimeStampedModel\nimport django\n")

    assert layer_violations(package_root=tmp_path, forbidden={"catalog": FORBIDDEN["catalog"]}) == []
