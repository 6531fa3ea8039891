"""GuideLLM and AIPerf, the peer benchmark tools, run from virtualenvs of their own (never the project's).

- :func:`ensure_tool` creates ``var/peer-tools/<tool>`` and installs the pinned release from PyPI when its
  command is missing. GuideLLM requires PyTorch: when a CPU-only wheel is offered by pip's ``find-links`` folder
  it is installed first, so that pip does not pull the CUDA build and its gigabytes of libraries.
- :func:`write_word_tokenizer` writes a Hugging Face tokenizer (``tokenizer.json``) that counts one token per
  whitespace-separated word, as the simulator does, so both tools can synthesise prompts of exact length
  without downloading a model's tokenizer (this machine reaches no model hub).
- :func:`run_guidellm` / :func:`run_aiperf` run one closed-loop sweep (one or several concurrency levels) and
  return the path of the result file the tool wrote.

``python benchmarks/peer_tools.py fixtures`` regenerates the result files the import tests read
(tests/probe_client/fixtures/peer_results/) against the simulator with a schedule whose latency rises with load.
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = ROOT / "var" / "peer-tools"
VERSIONS = {"guidellm": "0.8.1", "aiperf": "0.13.0"}
WHEEL_FOLDERS = ("/opt/wheels",)
FIXTURES = ROOT / "tests" / "probe_client" / "fixtures" / "peer_results"

TOKENIZER_SCRIPT = """
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

vocabulary = {"[UNK]": 0}
tokenizer = Tokenizer(models.WordLevel(vocab=vocabulary, unk_token="[UNK]"))
tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tokenizer.decoder = decoders.WordPiece(prefix="##")
PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=1_000_000).save_pretrained(sys.argv[1])
"""


def tool_python(tool: str) -> Path:
    return TOOLS_DIR / tool / "bin" / "python"


def tool_command(tool: str) -> Path:
    return TOOLS_DIR / tool / "bin" / tool


def _pip(tool: str, *arguments: str) -> None:
    subprocess.run([str(tool_python(tool)), "-m", "pip", "install", "--quiet", *arguments], check=True)


def _cpu_torch_wheel() -> str | None:
    for folder in WHEEL_FOLDERS:
        wheels = sorted(glob.glob(os.path.join(folder, "torch-*+cpu-*.whl")))
        if wheels:
            return wheels[-1]
    return None


def ensure_tool(tool: str) -> Path:
    """The tool's command, installed into its own virtualenv on first use."""
    command = tool_command(tool)
    if command.exists():
        return command
    print(f"installing {tool}=={VERSIONS[tool]} into {TOOLS_DIR / tool} ...", file=sys.stderr, flush=True)
    venv.EnvBuilder(with_pip=True, clear=True).create(TOOLS_DIR / tool)
    if tool == "guidellm":
        wheel = _cpu_torch_wheel()
        if wheel:
            _pip(tool, wheel)
        _pip(tool, f"guidellm=={VERSIONS[tool]}", "jinja2")
    else:
        _pip(tool, f"aiperf=={VERSIONS[tool]}")
    return command


def tool_version(tool: str) -> str:
    result = subprocess.run(
        [str(tool_python(tool)), "-c", f"import importlib.metadata as m; print(m.version('{tool}'))"],
        capture_output=True, text=True, check=True,
    )
    return result.stdout.strip()


def write_word_tokenizer(folder: Path) -> Path:
    if not (folder / "tokenizer.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(tool_python("aiperf")), "-c", TOKENIZER_SCRIPT, str(folder)], check=True,
                       capture_output=True)
    return folder


def _quiet_env() -> dict:
    # HF_HUB_OFFLINE stays unset: with it, AIPerf refuses a local tokenizer folder as an invalid repository id.
    return {**os.environ, "TRANSFORMERS_VERBOSITY": "error", "TOKENIZERS_PARALLELISM": "false"}


def run_guidellm(
    *, root_url: str, model: str, tokenizer: Path, levels: list[int], requests: int, input_tokens: int,
    output_tokens: int, output: Path,
) -> Path:
    """One GuideLLM concurrent benchmark per level, ``requests`` each; returns its benchmarks.json."""
    command = [
        str(ensure_tool("guidellm")), "run",
        "--backend", f"kind=openai_http,target={root_url},model={model},request_format=/v1/chat/completions,"
        "validate_backend=false",
        "--profile", f"kind=concurrent,streams={levels[0]}",
        "--constraint", f"kind=max_requests,count={requests}",
        "--data", f"kind=synthetic_text,prompt_tokens={input_tokens},output_tokens={output_tokens}",
        "--tokenizer", f"kind=huggingface_auto,model={tokenizer}",
        "--output", f"kind=json,path={output}",
        "--disable-console",
    ]
    if len(levels) > 1:
        command += ["--override", "profile.streams", ",".join(str(level) for level in levels)]
    subprocess.run(command, check=True, capture_output=True, env=_quiet_env(), cwd=output.parent)
    return output


def run_aiperf(
    *, root_url: str, model: str, tokenizer: Path, levels: list[int], requests: int, input_tokens: int,
    output_tokens: int, artifacts: Path,
) -> Path:
    """AIPerf at each level, ``requests`` each; returns profile_export_aiperf.json (one level) or the sweep
    aggregate (several)."""
    command = [
        str(ensure_tool("aiperf")), "profile",
        "--model", model, "--url", root_url, "--endpoint-type", "chat", "--streaming",
        "--tokenizer", str(tokenizer),
        "--concurrency", ",".join(str(level) for level in levels),
        "--request-count", str(requests),
        "--isl", str(input_tokens), "--osl", str(output_tokens),
        "--artifact-dir", str(artifacts), "--ui", "none",
    ]
    subprocess.run(command, check=True, capture_output=True, env=_quiet_env(), cwd=artifacts.parent)
    if len(levels) > 1:
        return artifacts / "sweep_aggregate" / "profile_export_aiperf_sweep.json"
    return artifacts / "profile_export_aiperf.json"


FIXTURE_ENGINE = {"slots": 2, "itl_ms_per_active": 1.0, "prefill_ms_per_token": 0.02}
FIXTURE_SCHEDULE = {"ttft_ms": 10, "itl_ms": 4, "tokens": 16, "reasoning_tokens": 0}


def write_fixtures() -> None:
    """The import tests' files: each tool's own output of a 1, 2, 4-stream sweep against the simulator."""
    sys.path.insert(0, str(ROOT))
    import shutil
    import tempfile

    from tests.simulator import start_simulator

    FIXTURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder, start_simulator(
        "openai", engine=FIXTURE_ENGINE, schedule=FIXTURE_SCHEDULE
    ) as sim:
        work = Path(folder)
        tokenizer = write_word_tokenizer(work / "tokenizer")
        root = sim.base_url.removesuffix("/v1")
        common = {"root_url": root, "model": "sim-model", "tokenizer": tokenizer, "levels": [1, 2, 4],
                  "requests": 8, "input_tokens": 128, "output_tokens": 16}
        shutil.copy(run_guidellm(output=work / "benchmarks.json", **common),
                    FIXTURES / f"guidellm-{tool_version('guidellm')}-benchmarks.json")
        sweep = run_aiperf(artifacts=work / "aiperf", **common)
        version = tool_version("aiperf")
        shutil.copy(sweep, FIXTURES / f"aiperf-{version}-profile_export_aiperf_sweep.json")
        shutil.copy(work / "aiperf" / "concurrency_2" / "profile_export_aiperf.json",
                    FIXTURES / f"aiperf-{version}-profile_export_aiperf.json")
    print(f"wrote the peer tools' result files to {FIXTURES}")


if __name__ == "__main__":
    if sys.argv[1:] != ["fixtures"]:
        sys.exit("usage: python benchmarks/peer_tools.py fixtures")
    write_fixtures()
