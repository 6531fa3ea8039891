"""What a serving command says about how an engine was set up beyond its defaults: tensor, pipeline, data and
expert parallelism, DP attention, speculative decoding. Inside one comparison, the facts not every series shares are
the setup differences a reader must see beside the figures (lab/evidence.py flags them per series).

Flags are read as vLLM, SGLang, TensorRT-LLM and TGI spell them; a value given as a shell variable (``$tp_size``) is
not stated, and the run's own tensor/pipeline parallel fields (from the fixture) fill it when set."""
from __future__ import annotations

import functools
import shlex

# Flag spellings per fact, as the engines' CLIs name them; "=" forms are split before lookup.
VALUE_FLAGS = {
    "TP": ("-tp", "--tp", "--tp-size", "--tp_size", "--tensor-parallel-size", "--tensor_parallel_size", "--num-shard"),
    "PP": ("-pp", "--pp", "--pp-size", "--pp_size", "--pipeline-parallel-size", "--pipeline_parallel_size"),
    "DP": ("-dp", "--dp", "--dp-size", "--dp_size", "--data-parallel-size", "--data_parallel_size"),
    "EP": ("--ep", "--ep-size", "--ep_size", "--expert-parallel-size", "--moe_expert_parallel_size"),
    "speculative decoding": ("--speculative-algorithm", "--speculative_algorithm"),
}
SWITCH_FLAGS = {
    "DP attention": ("--enable-dp-attention", "--enable_attention_dp"),
    "EP": ("--enable-expert-parallel", "--enable-ep-moe"),
    "speculative decoding": ("--speculative-config", "--speculative_config"),
}
# A degree of 1 is the default: no parallelism of that kind.
DEGREES = ("TP", "PP", "DP", "EP")


# Every page of published evidence reads the serving commands of every series; there are a few hundred, and
# shlex is slow enough that splitting them all again made up a fifth of the evidence matrix's render.
@functools.lru_cache(maxsize=4096)
def _tokens(command: str) -> tuple[str, ...]:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    tokens = []
    for word in words:
        tokens.extend(word.split("=", 1) if word.startswith("-") and "=" in word else [word])
    return tuple(tokens)


def setup_facts(command: str, *, tensor_parallel: int | None = None,
                pipeline_parallel: int | None = None) -> dict[str, str]:
    """{fact: value} the command states: {"TP": "8", "DP attention": "", "speculative decoding": "EAGLE"}; a
    degree of 1 is left out, being the default."""
    tokens = _tokens(command)
    facts: dict[str, str] = {}
    for position, token in enumerate(tokens):
        for fact, spellings in VALUE_FLAGS.items():
            if token in spellings and position + 1 < len(tokens) and not tokens[position + 1].startswith("-"):
                value = tokens[position + 1]
                if not value.startswith("$"):
                    facts[fact] = value
        for fact, spellings in SWITCH_FLAGS.items():
            if token in spellings:
                facts.setdefault(fact, "")
    for fact, stated in (("TP", tensor_parallel), ("PP", pipeline_parallel)):
        if stated and fact not in facts:
            facts[fact] = str(stated)
    return {fact: value for fact, value in facts.items() if not (fact in DEGREES and value == "1")}


def fact_label(fact: str, value: str) -> str:
    """A fact as a reader sees it: "TP 8", "DP attention", "EP", "speculative decoding (EAGLE)"."""
    if not value:
        return fact
    return f"{fact} ({value})" if fact == "speculative decoding" else f"{fact} {value}"


def differences(facts: list[dict[str, str]]) -> list[list[str]]:
    """For each series' facts, the labels of those not every series shares (same fact, same value)."""
    if not facts:
        return []
    shared = set.intersection(*(set(each.items()) for each in facts))
    return [[fact_label(fact, value) for fact, value in each.items() if (fact, value) not in shared] for each in facts]
