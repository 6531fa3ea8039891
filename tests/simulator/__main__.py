"""``python -m tests.simulator --profile groq --port 0 [--options JSON]``: serve until terminated."""

import argparse
import json
import sys

from .profiles import PROFILES
from .server import serve_forever


def main() -> None:
    parser = argparse.ArgumentParser(description="Local simulator of hosted OpenAI-compatible providers.")
    parser.add_argument("--profile", default="openai", choices=sorted(PROFILES))
    parser.add_argument("--port", type=int, default=0, help="0 = a free port chosen by the OS")
    parser.add_argument("--options", default="{}", help="JSON object of simulator options (see tests/simulator)")
    args = parser.parse_args()

    def ready(url: str) -> None:
        print(f"SIMULATOR_URL {url}", flush=True)

    serve_forever(args.profile, args.port, json.loads(args.options), ready)


if __name__ == "__main__":
    sys.exit(main())
