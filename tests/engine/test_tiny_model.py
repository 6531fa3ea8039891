"""The GGUF model we write is a real model: llama.cpp loads it, tokenizes any text and generates on request."""
import json

import gguf
import httpx
import pytest

from lab.engine.server import parse_perf_reports
from lab.engine.tiny_model import CHAT_TEMPLATE, MODEL_NAME, TinyModelSpec, write_tiny_model

pytestmark = pytest.mark.engine

ARBITRARY_TEXTS = [
    "The engine measures speed.",
    "Ünïcödé, 中文字符, emoji 🚀🦙 and\ttabs\nnewlines\r\n",
    "{\"json\": [1, 2.5e-3, null]} <html> & 'quotes' ~`|\\",
    "x" * 300,
]


def _chat(server, client, **params):
    body = {"model": server.model, "messages": [{"role": "user", "content": "tell me something"}], **params}
    response = client.post(f"{server.base_url}/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def client():
    with httpx.Client(timeout=60.0, trust_env=False) as http:
        yield http


def test_written_file_is_a_llama_gguf_with_chat_template_and_q8_0_weights(tmp_path):
    model = write_tiny_model(tmp_path / "m.gguf")
    reader = gguf.GGUFReader(model.path)

    def field(name):
        return reader.get_field(name).contents()

    assert field("general.architecture") == "llama"
    assert field("tokenizer.ggml.model") == "llama"
    assert field("tokenizer.chat_template") == CHAT_TEMPLATE
    assert len(field("tokenizer.ggml.tokens")) == model.vocab_size
    matrices = [t for t in reader.tensors if len(t.shape) == 2]
    assert matrices and all(t.tensor_type == gguf.GGMLQuantizationType.Q8_0 for t in matrices)
    assert model.quantization == "Q8_0"
    assert model.path.stat().st_size < 8_000_000


def test_same_seed_writes_the_same_bytes_and_another_seed_does_not(tmp_path):
    first = write_tiny_model(tmp_path / "a.gguf")
    again = write_tiny_model(tmp_path / "b.gguf")
    other = write_tiny_model(tmp_path / "c.gguf", TinyModelSpec(seed=7))
    assert first.path.read_bytes() == again.path.read_bytes()
    assert first.path.read_bytes() != other.path.read_bytes()


def test_server_lists_the_model(llama_server, client):
    response = client.get(f"{llama_server.base_url}/models")
    assert response.status_code == 200
    assert [item["id"] for item in response.json()["data"]] == [MODEL_NAME]


@pytest.mark.parametrize("text", ARBITRARY_TEXTS)
def test_any_text_tokenizes_and_round_trips(llama_server, client, text):
    tokens = client.post(f"{llama_server.root_url}/extras/tokenize", json={"input": text}).json()["tokens"]
    assert tokens
    back = client.post(f"{llama_server.root_url}/extras/detokenize", json={"tokens": tokens}).json()["text"]
    assert back.strip() == text.strip()


def test_english_words_cost_fewer_tokens_than_characters(llama_server, client):
    text = "the probe measures the speed of the engine and the time to first token for each request"
    tokens = client.post(f"{llama_server.root_url}/extras/tokenize", json={"input": text}).json()["tokens"]
    assert len(tokens) * 3 < len(text)


@pytest.mark.parametrize("max_tokens", [1, 17, 96])
def test_generates_exactly_the_requested_number_of_tokens(llama_server, client, max_tokens):
    answer = _chat(llama_server, client, max_tokens=max_tokens)
    assert answer["usage"]["completion_tokens"] == max_tokens
    assert answer["choices"][0]["finish_reason"] == "length"
    assert answer["choices"][0]["message"]["content"].strip()


def test_streams_one_printable_chunk_per_generated_token(llama_server, client):
    log_offset = len(llama_server.log_tail(max_chars=10**9))
    contents = []
    with client.stream(
        "POST",
        f"{llama_server.base_url}/chat/completions",
        json={"model": llama_server.model, "messages": [{"role": "user", "content": "stream please"}],
              "max_tokens": 40, "stream": True},
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                delta = json.loads(line[6:])["choices"][0]["delta"]
                if delta.get("content"):
                    contents.append(delta["content"])
    assert len(contents) == 40
    assert all(piece.isprintable() and piece.isascii() for piece in contents)
    reports = parse_perf_reports(llama_server.log_tail(max_chars=10**9)[log_offset:])
    assert reports and reports[-1].generated_tokens == 40
