"""The shared terms: model names, blended price and workload sizes, read the same way everywhere."""
from decimal import Decimal

import pytest

from scoring.vocabulary import blended_price, model_key, normalize_model, workload_input_tokens


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("GPT OSS 120B", "gpt-oss-120b"),
        ("gpt-oss-120B", "gpt-oss-120b"),
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
        ("accounts/fireworks/models/gpt-oss-120b/", "gpt-oss-120b"),
        ("llama_3_70b", "llama-3-70b"),
    ],
)
def test_normalize_model_keeps_the_name_readable(name, normalized):
    assert normalize_model(name) == normalized


def test_model_key_matches_spellings_that_differ_only_in_punctuation():
    assert model_key("accounts/fireworks/models/gpt-oss-120b") == model_key("GPT OSS 120B") == "gptoss120b"
    assert model_key("llama-3-70b") != model_key("llama-3-70b-versatile")


def test_blended_price_weighs_input_three_to_one_for_floats_and_decimals():
    assert blended_price(1.0, 5.0) == 2.0
    assert blended_price(Decimal("0.15"), Decimal("0.60")) == Decimal("0.2625")


@pytest.mark.parametrize(
    ("name", "tokens"),
    [("in-100", 100), ("in-1k", 1000), ("in-10k", 10000), ("in-1.5k", 1500), ("in-1m", 1_000_000), ("chat", None)],
)
def test_workload_input_tokens(name, tokens):
    assert workload_input_tokens(name) == tokens
