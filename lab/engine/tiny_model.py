"""Write a tiny but valid llama-architecture GGUF model with deterministic random weights.

The file is a real model for llama.cpp: a SentencePiece-style vocabulary with byte fallback (so any
UTF-8 text tokenizes), control tokens for a ChatML chat template stored in `tokenizer.chat_template`,
and Q8_0-quantized weight matrices. Its answers are gibberish because the weights are random, but
every token it emits is computed by the engine, so the timings measured against it are real.

Two choices make measurements against it easy to check:
- Generation never ends early: the end-of-sequence token, the other control tokens, the byte tokens
  and `<` (the first character of the stop strings) get a strongly negative logit from a constant
  "bias" dimension of the hidden state, so a request for N tokens produces N tokens.
- Every token it can emit is printable ASCII, so a streaming server sends one chunk per token.

The vocabulary holds common English words, including the filler words of the probe workloads
(`probe_client.workloads`), so a workload of "about 1,000 input tokens" is about 1,000 tokens here too.
"""
from __future__ import annotations

import logging
import string
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

MODEL_NAME = "atlas-tiny-llama"
QUANTIZATION = "Q8_0"

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>")
UNK_ID, BOS_ID, EOS_ID, IM_START_ID, IM_END_ID = range(len(SPECIAL_TOKENS))

# Common English words become whole tokens (with every prefix, so SentencePiece merges can reach
# them); prompts then cost a realistic 3-5 characters per token instead of one per character.
WORDS = """
the of and to in is that for it as was with be by on not he this are or his from at which but have an
they you were her she there been one all we their has would when if so no will more about can them what
out up other into than then some could time these two may first only new also any my like over such our
most after made model token tokens engine speed probe measure request server time first output input
text answer question prompt stream latency test data value number system user assistant tool call json
schema function result error message check support accept reject ignore seed stop length limit fast
slow small large tiny real work make run use get set day year way people world thing part place case
point group fact hand state life right week long good great old big high different following important
local public same able here where how why who each every many much very just now well still even back
through between under while during without before again another because since until against among
was had were both years used city house water three river light family music school book field early
game line name land north south east west open night power story table sound door green black white road
write detailed lighthouse keeper keep writing stopped ignore filler random above below request
""".split()

SPACE = "\u2581"  # SentencePiece's visible space


@dataclass(frozen=True)
class TinyModelSpec:
    n_embd: int = 256
    n_layer: int = 4
    n_head: int = 8
    n_head_kv: int = 4
    n_ff: int = 768
    context_length: int = 16384
    seed: int = 20261129


@dataclass(frozen=True)
class TinyModel:
    path: Path
    name: str
    quantization: str
    vocab_size: int
    parameters: int
    context_length: int
    spec: TinyModelSpec


def build_vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, SentencePiece scores (longer pieces merge first) and token types."""
    tokens: list[str] = []
    scores: list[float] = []
    types: list[int] = []

    def add(piece: str, score: float, token_type: gguf.TokenType) -> None:
        tokens.append(piece)
        scores.append(score)
        types.append(int(token_type))

    add("<unk>", 0.0, gguf.TokenType.UNKNOWN)
    for piece in SPECIAL_TOKENS[1:]:
        add(piece, 0.0, gguf.TokenType.CONTROL)
    for byte in range(256):
        add(f"<0x{byte:02X}>", 0.0, gguf.TokenType.BYTE)

    pieces: list[str] = [SPACE] + [c for c in string.printable if c not in string.whitespace]
    for word in WORDS:
        for spelled in (SPACE + word, word):
            pieces.extend(spelled[:end] for end in range(2, len(spelled) + 1))
    seen: set[str] = set()
    for piece in pieces:
        if piece not in seen:
            seen.add(piece)
            add(piece, float(len(piece)), gguf.TokenType.NORMAL)
    return tokens, scores, types


def _never_generated(tokens: list[str], types: list[int]) -> np.ndarray:
    normal = np.array([t == int(gguf.TokenType.NORMAL) for t in types])
    return ~normal | np.array([piece.startswith("<") for piece in tokens])


def write_tiny_model(path: Path, spec: TinyModelSpec = TinyModelSpec()) -> TinyModel:
    """Write the model to `path` (same spec and seed → byte-identical file) and describe it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens, scores, types = build_vocabulary()
    vocab_size = len(tokens)
    rng = np.random.default_rng(spec.seed)
    head_dim = spec.n_embd // spec.n_head
    kv_dim = head_dim * spec.n_head_kv

    def matrix(rows: int, cols: int, std: float = 0.02) -> np.ndarray:
        return rng.normal(0.0, std, size=(rows, cols)).astype(np.float32)

    # Dimension 0 carries a constant that survives every layer, so the output row of a token can
    # give it a fixed logit offset (llama has no output bias): strongly negative for tokens the
    # model must never emit.
    embeddings = matrix(vocab_size, spec.n_embd, std=0.05)
    embeddings[:, 0] = 4.0
    # Ordinary tokens get logits of about +-10, like a trained model's; the never-emitted ones about -50,
    # so a +100 logit_bias still brings one of them to the top.
    output = matrix(vocab_size, spec.n_embd, std=4.0 / np.sqrt(spec.n_embd))
    output[:, 0] = 0.0
    output[_never_generated(tokens, types), 0] = -5.0

    tensors: dict[str, np.ndarray] = {"token_embd.weight": embeddings}
    for layer in range(spec.n_layer):
        prefix = f"blk.{layer}"
        tensors[f"{prefix}.attn_norm.weight"] = np.ones(spec.n_embd, dtype=np.float32)
        tensors[f"{prefix}.attn_q.weight"] = matrix(spec.n_embd, spec.n_embd)
        tensors[f"{prefix}.attn_k.weight"] = matrix(kv_dim, spec.n_embd)
        tensors[f"{prefix}.attn_v.weight"] = matrix(kv_dim, spec.n_embd)
        tensors[f"{prefix}.attn_output.weight"] = matrix(spec.n_embd, spec.n_embd)
        tensors[f"{prefix}.ffn_norm.weight"] = np.ones(spec.n_embd, dtype=np.float32)
        tensors[f"{prefix}.ffn_gate.weight"] = matrix(spec.n_ff, spec.n_embd)
        tensors[f"{prefix}.ffn_up.weight"] = matrix(spec.n_ff, spec.n_embd)
        tensors[f"{prefix}.ffn_down.weight"] = matrix(spec.n_embd, spec.n_ff)
    tensors["output_norm.weight"] = np.ones(spec.n_embd, dtype=np.float32)
    tensors["output.weight"] = output

    # The writer narrates every file it writes at INFO level; a command's output is no place for that.
    logging.getLogger("gguf.gguf_writer").setLevel(logging.WARNING)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(MODEL_NAME)
    writer.add_description("Random weights written by Inference Atlas for probing a real engine; output is gibberish.")
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_context_length(spec.context_length)
    writer.add_embedding_length(spec.n_embd)
    writer.add_block_count(spec.n_layer)
    writer.add_feed_forward_length(spec.n_ff)
    writer.add_head_count(spec.n_head)
    writer.add_head_count_kv(spec.n_head_kv)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab_size)

    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(UNK_ID)
    writer.add_bos_token_id(BOS_ID)
    writer.add_eos_token_id(EOS_ID)
    writer.add_pad_token_id(UNK_ID)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_add_space_prefix(True)
    writer.add_chat_template(CHAT_TEMPLATE)

    q8_0 = gguf.GGMLQuantizationType.Q8_0
    parameters = 0
    for name, array in tensors.items():
        parameters += array.size
        if array.ndim == 2:
            writer.add_tensor(name, gguf.quants.quantize(array, q8_0), raw_dtype=q8_0)
        else:
            writer.add_tensor(name, array)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return TinyModel(
        path=path,
        name=MODEL_NAME,
        quantization=QUANTIZATION,
        vocab_size=vocab_size,
        parameters=parameters,
        context_length=spec.context_length,
        spec=spec,
    )
