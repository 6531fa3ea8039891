"""Workloads as data: distributions, presets, operator JSONL files and their errors."""

import random

import pytest

from probe_client.sweep import PRESETS, LengthDistribution, Workload, WorkloadError, lengths_from_jsonl, workload_from_jsonl


def test_each_distribution_draws_within_its_bounds_and_round_trips():
    rng = random.Random(1)
    cases = {
        "fixed": ({"kind": "fixed", "value": 300}, lambda v: v == 300),
        "uniform": ({"kind": "uniform", "low": 100, "high": 200}, lambda v: 100 <= v <= 200),
        "normal": ({"kind": "normal", "mean": 500, "stddev": 400, "min": 50, "max": 900}, lambda v: 50 <= v <= 900),
        "sample": ({"kind": "sample", "values": [7, 70, 700]}, lambda v: v in (7, 70, 700)),
    }
    for data, within in cases.values():
        distribution = LengthDistribution.from_dict(data)
        assert LengthDistribution.from_dict(distribution.to_dict()) == distribution
        assert all(within(distribution.draw(rng)) for _ in range(500))


def test_normal_distribution_is_centred_on_its_mean():
    distribution = LengthDistribution.from_dict({"kind": "normal", "mean": 1000, "stddev": 100})
    rng = random.Random(3)
    draws = [distribution.draw(rng) for _ in range(4000)]
    assert sum(draws) / len(draws) == pytest.approx(1000, abs=10)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"kind": "gamma"}, "input.kind"),
        ({"kind": "fixed", "value": 0}, "input.value"),
        ({"kind": "fixed", "value": "many"}, "input.value"),
        ({"kind": "uniform", "low": 500, "high": 100}, "input.high"),
        ({"kind": "normal", "mean": 10, "stddev": -1}, "input.stddev"),
        ({"kind": "normal", "mean": 5000, "stddev": 1, "max": 100}, "input.mean"),
        ({"kind": "sample", "values": []}, "input.values"),
        ({"kind": "sample", "values": [1, -2]}, "input.values[1]"),
        ({"kind": "fixed", "value": 10, "mean": 3}, "input.mean"),
    ],
)
def test_bad_distributions_name_the_field(data, field):
    with pytest.raises(WorkloadError) as error:
        Workload.from_dict({"input": data, "output": 10})
    assert str(error.value).startswith(field + ":")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"input": 10}, "output"),
        ({"input": 10, "output": 10, "shared_prefix_ratio": 1.0}, "shared_prefix_ratio"),
        ({"input": 10, "output": 10, "streaming": "yes"}, "streaming"),
        ({"input": 10, "output": 10, "colour": "red"}, "colour"),
    ],
)
def test_bad_workload_fields_are_named(data, field):
    with pytest.raises(WorkloadError) as error:
        Workload.from_dict(data)
    assert str(error.value).startswith(field + ":")


def test_workload_round_trips_and_shapes_repeat_for_the_same_seed():
    workload = Workload.from_dict(
        {"name": "mine", "input": {"kind": "uniform", "low": 100, "high": 4000}, "output": 64,
         "shared_prefix_ratio": 0.25, "structured_output": True, "seed": 9}
    )
    assert Workload.from_dict(workload.to_dict()) == workload
    first = workload.shapes(20, stream_seed=2)
    assert first == workload.shapes(20, stream_seed=2)
    assert first != workload.shapes(20, stream_seed=3)
    assert all(shape.prefix_tokens == int(shape.input_tokens * 0.25) for shape in first)
    assert all(shape.output_tokens == 64 for shape in first)


def test_presets_are_valid_and_say_where_their_shape_comes_from():
    assert set(PRESETS) == {"chat", "rag-8k", "coding-agent", "summarisation"}
    assert PRESETS["rag-8k"].input.to_dict() == {"kind": "fixed", "value": 8000}
    for preset in PRESETS.values():
        assert Workload.from_dict(preset.to_dict()) == preset
        assert "not measured traffic" in preset.basis


def test_jsonl_lengths_are_read_and_sampled():
    text = '{"input_tokens": 812, "output_tokens": 95}\n\n{"prompt_tokens": 40, "completion_tokens": 300, "x": 1}\n'
    assert lengths_from_jsonl(text) == ([812, 40], [95, 300])
    workload = workload_from_jsonl(text.encode(), name="support traffic")
    shapes = workload.shapes(50)
    assert {s.input_tokens for s in shapes} <= {812, 40}
    assert workload.input.kind == "sample"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"input_tokens": 10, "output_tokens": 5}\n{"input_tokens": 10,', "file line 2: not valid JSON"),
        ('{"input_tokens": 10, "output_tokens": 5}\n[1, 2]', "file line 2: must be a JSON object"),
        ('{"output_tokens": 5}', "file line 1: missing field input_tokens"),
        ('{"input_tokens": 10, "completion_tokens": -5}', "file line 1: completion_tokens: must be between"),
        ('{"input_tokens": 2.5, "output_tokens": 5}', "file line 1: input_tokens: must be a whole number"),
        ("\n\n", "file: no records"),
    ],
)
def test_bad_jsonl_files_name_the_line_and_field(text, message):
    with pytest.raises(WorkloadError) as error:
        lengths_from_jsonl(text)
    assert str(error.value).startswith(message)


def test_jsonl_that_is_not_utf8_is_refused():
    with pytest.raises(WorkloadError, match="not UTF-8"):
        lengths_from_jsonl(b"\xff\xfe{}")
