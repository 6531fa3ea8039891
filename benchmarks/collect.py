"""Assemble benchmarks/RESULTS.md from the latest result file each benchmark script wrote."""
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = (
    "pages-redis", "pages", "pages-sqlite", "pages-10x", "api", "api-10x", "probe_accuracy", "sweep_accuracy", "sweep_accuracy_streams",
    "sweep_accuracy_streams_loaded", "engine", "probe-pages", "probe-runs",
    "recommendations",
)
INTRO = """# Benchmark results

The latest figures of every script in `benchmarks/`, each section written by its script (`make bench`
runs them all and rebuilds this file). The machine is a shared 2-core, 24 GiB virtual machine: absolute
numbers move with its load, so every section reports ratios measured side by side within one run, and
states its own date and load. Targets come from the issues: pages and API endpoints within 2x of a
trivial view's p50 as served, and the wizard, fit and break-even answers and the recommendations API within
3x, with the first renders (page cache missed) beside them and a target of 50 ms p50 at today's catalog, on
PostgreSQL with Redis (`pages-redis`), PostgreSQL with the file cache of `make run` (`pages`) and the SQLite default, at today's catalog and at one ten
times larger (`--scale 10`, synthetic rows in the benchmark's own database); probe timing error at 100 concurrent streams with a median of at most 2 ms and a
p99 of at most 10 ms; output speed within 2%; the lab's sweep TTFT p99 error at most 1 ms at 200 streams and at least
10x smaller than GuideLLM's and AIPerf's on the same workload.
"""


def main() -> None:
    files = {path.stem: path for path in (HERE / "results").glob("*.md")}
    names = [name for name in ORDER if name in files] + sorted(set(files) - set(ORDER))
    sections = []
    for name in names:
        lines = files[name].read_text().strip().splitlines()
        # Each result file starts with its own level-1 heading; nest it under this page's.
        sections.append("\n".join(f"#{line}" if line.startswith("#") else line for line in lines))
    (HERE / "RESULTS.md").write_text(INTRO + "\n" + "\n\n".join(sections) + "\n")


if __name__ == "__main__":
    main()
