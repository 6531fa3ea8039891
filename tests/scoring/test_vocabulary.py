"""The vocabulary: each word defined once, read the same way everywhere, and listed by no other module."""
import ast
from decimal import Decimal
from pathlib import Path

import pytest

from scoring import vocabulary
from scoring.vocabulary import blended_price, model_slug, percentile, percentiles, workload_input_tokens

ROOT = Path(__file__).resolve().parents[2]
# Every package of the project whose modules could list a word of the vocabulary.
PACKAGES = ("probe_client", "scoring", "core", "catalog", "probes", "lab", "recommend", "config", "bin", "benchmarks")
CHECK_NAMES = frozenset(vocabulary.COMPAT_CHECKS)
OUTCOMES = frozenset(outcome.value for outcome in (*vocabulary.MEASURED_OUTCOMES, *vocabulary.DOCUMENTED_OUTCOMES))
METRIC_KEYS = frozenset(vocabulary.METRIC_BY_KEY)
# Literals that name vocabulary words for another reason than listing them: an SLO's own two objective fields,
# and a benchmark drawing random outcomes for synthetic rows.
EXEMPT = {("probe_client/sweep/stats.py", "SLO"), ("benchmarks/probe_pages.py", "_add_targets")}


@pytest.mark.parametrize(
    ("name", "slug"),
    [("GPT OSS 120B", "gpt-oss-120b"), ("gpt-oss-120B", "gpt-oss-120b"), ("openai/gpt-oss-120b", "gpt-oss-120b"),
     ("accounts/fireworks/models/gpt-oss-120b/", "gpt-oss-120b"), ("gpt_oss.120b", "gpt-oss-120b"),
     ("llama_3_70b", "llama-3-70b"), ("qwen3.8-27b", "qwen3-8-27b")],
)
def test_model_slug_names_the_model_as_catalog_slugs_spell_it(name, slug):
    assert model_slug(name) == slug


def test_model_slug_keeps_near_names_apart():
    assert model_slug("llama-3-70b") != model_slug("llama-3-70b-versatile")


def test_blended_price_weighs_input_three_to_one_for_floats_and_decimals():
    assert blended_price(1.0, 5.0) == 2.0
    assert blended_price(Decimal("0.15"), Decimal("0.60")) == Decimal("0.2625")


@pytest.mark.parametrize(
    ("name", "tokens"),
    [("in-100", 100), ("in-1k", 1000), ("in-10k", 10000), ("in-1.5k", 1500), ("in-1m", 1_000_000), ("chat", None)],
)
def test_workload_input_tokens(name, tokens):
    assert workload_input_tokens(name) == tokens


def test_percentiles_interpolate_linearly_between_closest_ranks_and_skip_missing_values():
    assert percentiles([500, 100, 400, 200, 300]) == {"p50": 300.0, "p95": 480.0, "p99": 496.0}
    assert percentile([1.0, None, float("nan"), 3.0], 50) == 2.0
    assert percentile([7.0], 99) == 7.0
    assert percentiles([]) == {"p50": None, "p95": None, "p99": None}


def test_each_metric_is_declared_once_and_every_summary_lists_registered_metrics():
    keys = [metric.key for metric in vocabulary.METRICS]
    assert len(keys) == len(set(keys)) and set(vocabulary.METRIC_BY_KEY) == set(keys)
    for selection in (
        vocabulary.RUN_SUMMARY_METRICS, vocabulary.CLIENT_SUMMARY_METRICS, vocabulary.PAGE_METRICS,
        vocabulary.HEADLINE_METRICS, vocabulary.LEVEL_METRICS,
    ):
        assert all(vocabulary.METRIC_BY_KEY[metric.key] is metric for metric in selection)
        assert len(set(selection)) == len(selection)
    assert set(vocabulary.PAGE_METRICS) == set(vocabulary.RUN_SUMMARY_METRICS)
    assert vocabulary.PAGE_METRICS[: len(vocabulary.HEADLINE_METRICS)] == vocabulary.HEADLINE_METRICS


def test_percentile_names_are_read_off_the_summary_shapes():
    assert vocabulary.PERCENTILES == {"p50": 50, "p95": 95, "p99": 99}
    assert tuple(vocabulary.TargetFigures.__annotations__) == (*vocabulary.PERCENTILES, "median_72h")
    assert tuple(vocabulary.LevelFigures.__annotations__) == (*vocabulary.PERCENTILES, "mean")
    assert vocabulary.TTFT.percentile_field("p50") == "ttft_p50_ms"
    assert vocabulary.OUTPUT_SPEED.percentile_field("p99") == "output_speed_p99_tps"


def test_outcomes_are_named_once_with_a_label_and_every_measured_one_with_a_symbol_and_a_meaning():
    for outcomes in (vocabulary.MEASURED_OUTCOMES, vocabulary.DOCUMENTED_OUTCOMES):
        assert len({outcome.value for outcome in outcomes}) == len(outcomes)
        assert all(outcome.label for outcome in outcomes)
    assert all(outcome.symbol and outcome.meaning for outcome in vocabulary.MEASURED_OUTCOMES)


def listed_words(path: Path, *, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, what) of every literal listing vocabulary words: a tuple, list or set, or a dict's values, naming three
    or more check names or outcomes or two or more metric keys; a dict keyed by three or more check names or
    outcomes (one keyed by metric keys is a record's figures, not a list); a class whose attributes are three or
    more check names or outcomes (choices written out member by member). A (value, label) pair counts as its
    value; the scopes in EXEMPT are skipped."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    relative = path.relative_to(root).as_posix()
    exempt = {
        id(node)
        for scope in ast.walk(tree)
        if isinstance(scope, ast.ClassDef | ast.FunctionDef) and (relative, scope.name) in EXEMPT
        for node in ast.walk(scope)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            groups = [(node.elts, True)]
        elif isinstance(node, ast.Dict):
            groups = [([key for key in node.keys if key is not None], False), (node.values, True)]
        elif isinstance(node, ast.ClassDef):
            values = [statement.value for statement in node.body if isinstance(statement, ast.Assign)]
            groups = [(values, False)]
        else:
            continue
        for items, counts_metric_keys in groups:
            # A (value, label) pair names its value first.
            firsts = [item.elts[0] if isinstance(item, ast.Tuple) and item.elts else item for item in items]
            words = {item.value for item in firsts if isinstance(item, ast.Constant) and isinstance(item.value, str)}
            if len(words & CHECK_NAMES) >= 3:
                found.append((node.lineno, "check names"))
            if len(words & OUTCOMES) >= 3:
                found.append((node.lineno, "outcomes"))
            if counts_metric_keys and len(words & METRIC_KEYS) >= 2:
                found.append((node.lineno, "metric keys"))
    return sorted(found)


def test_no_module_but_the_vocabulary_lists_its_words():
    listed = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts or path == ROOT / "scoring" / "vocabulary.py":
                continue
            if found := listed_words(path):
                listed[path.relative_to(ROOT).as_posix()] = found
    assert not listed, f"vocabulary words listed outside scoring/vocabulary.py: {listed}"


def test_the_scan_catches_planted_lists(tmp_path):
    planted = tmp_path / "probes" / "views.py"
    planted.parent.mkdir()
    planted.write_text(
        'ORDER = ("ttft_ms", "e2e_ms")\n'
        'LABELS = {"TTFT": "ttft_ms", "E2E": "e2e_ms"}\n'
        'NEEDS = ["seed", "stop", "n"]\n'
        'SYMBOLS = {"supported": "+", "ignored": "?", "rejected": "x"}\n'
        'PAIR = ("supported", "rejected")\n'
        'CHOICES = (("n", "Several"), ("seed", "Seeded"), ("stop", "Stopped"))\n'
        'class Outcome(TextChoices):\n    SUPPORTED = "supported", "Yes"\n    IGNORED = "ignored", "No"\n'
        '    ERROR = "error", "Error"\n'
    )

    assert listed_words(planted, root=tmp_path) == [
        (1, "metric keys"), (2, "metric keys"), (3, "check names"), (4, "outcomes"), (6, "check names"),
        (7, "outcomes"),
    ]
