"""What a serving command says about parallelism and decoding, and which of it differs inside a comparison."""
import pytest

from lab.setups import differences, setup_facts


@pytest.mark.parametrize(("command", "facts"), [
    ("vllm serve m -tp 8 --enable-expert-parallel", {"TP": "8", "EP": ""}),
    ("vllm serve m --tensor-parallel-size=4 -pp 2", {"TP": "4", "PP": "2"}),
    ("python3 -m sglang.launch_server --model-path m --tp-size 8 --enable-dp-attention", {"TP": "8", "DP attention": ""}),
    ("python3 -m sglang.launch_server --tp 4 --ep-size 4 --speculative-algorithm EAGLE",
     {"TP": "4", "EP": "4", "speculative decoding": "EAGLE"}),
    ("trtllm-serve m --tp_size 8 --ep_size 8 --pp_size 1", {"TP": "8", "EP": "8"}),
    ("trtllm-bench --tp $tp_size --pp $pp_size --ep $ep_size --model m throughput", {}),
    ("text-generation-launcher --num-shard 8 --sharded true", {"TP": "8"}),
    ("vllm serve m --speculative-config '{\"method\": \"eagle\"}'", {"speculative decoding": ""}),
])
def test_a_command_states_its_parallelism_and_decoding(command, facts):
    assert setup_facts(command) == facts


def test_a_degree_given_as_a_variable_is_filled_from_the_runs_own_fields():
    assert setup_facts("trtllm-serve m --tp_size $GPUS --ep_size 4", tensor_parallel=8) == {"TP": "8", "EP": "4"}


def test_only_what_not_every_series_shares_is_a_difference():
    assert differences([{"TP": "8"}, {"TP": "8", "DP attention": ""}, {"TP": "8", "EP": "8"}]) == [
        [], ["DP attention"], ["EP 8"]]
    assert differences([{"TP": "2"}, {"PP": "2"}]) == [["TP 2"], ["PP 2"]]
