"""The sweep runner against the simulator's engine model, whose load behaviour is known:

ENGINE: 4 slots (a fifth concurrent request waits for a free one), each decode step 4 ms plus 2 ms per other
active stream, first token 20 ms after the slot is taken. Every expected figure below follows from that.
"""

import asyncio
import random
import socket
import statistics
import time

import pytest

from probe_client import transport
from probe_client.sweep import SLO, SweepLimitError, SweepLimits, SweepPlan, Workload, loops, run_sweep, runner
from tests.probe_client.conftest import config_for, run

TTFT_MS = 20.0
ITL_MS = 4.0
PER_ACTIVE_MS = 2.0
SLOTS = 4
OUTPUT_TOKENS = 20
ENGINE = {"slots": SLOTS, "itl_ms_per_active": PER_ACTIVE_MS}
SCHEDULE = {"ttft_ms": TTFT_MS, "itl_ms": ITL_MS, "precise": False, "reasoning_tokens": 0}
WORKLOAD = Workload.from_dict({"name": "fixed", "input": 120, "output": OUTPUT_TOKENS})


def expected_itl(concurrency: int) -> float:
    return ITL_MS + PER_ACTIVE_MS * (min(concurrency, SLOTS) - 1)


def service_ms(concurrency: int) -> float:
    return TTFT_MS + (OUTPUT_TOKENS - 1) * expected_itl(concurrency)


@pytest.fixture(scope="module")
def engine(simulator_factory):
    return simulator_factory("openai", schedule=SCHEDULE, engine=ENGINE)


def level_truth(sim) -> list[dict]:
    """What the simulator did for each measured request (the settling request excluded)."""
    return [r for r in sim.chat_requests if "-settle." not in r["body"]["messages"][0]["content"]]


def test_closed_loop_curve_goodput_and_knee_follow_the_engine(engine):
    engine.reset()
    plan = SweepPlan(
        mode="concurrency", levels=(1, 2, 4, 8), requests_per_level=16,
        slo=SLO(ttft_ms=100, tpot_ms=15), hourly_price_usd=1.8,
    )
    truths = {}

    def record(level):
        truths[level.level] = level_truth(engine)
        engine.reset()

    result = run(run_sweep(config_for(engine), plan=plan, workload=WORKLOAD, on_level_done=record))
    assert result.error_class == "" and result.stopped_reason == ""
    assert [level.level for level in result.levels] == [1, 2, 4, 8]
    for level in result.levels:
        assert level.ok == level.requests == 16, level.errors
        assert level.output_tokens_source == "usage"
        # The decode step grows with the streams decoding together, up to the slot count.
        assert level.itl_ms["p50"] == pytest.approx(expected_itl(level.level), abs=2.0), level.level
        truth = truths[level.level]
        served = {r["response_id"]: r for r in truth}
        for sample in level.samples:  # client's write → simulator's first token, one clock for both processes
            true_ttft = (served[sample.request_id]["timeline"]["first_token_ns"] - sample.sent_ns) / 1e6
            assert sample.ttft_ms == pytest.approx(true_ttft, abs=2.0)
        first = min(r["recv_ns"] for r in truth)
        last = max(r["timeline"]["last_token_ns"] for r in truth)
        assert level.output_tps == pytest.approx(16 * OUTPUT_TOKENS / ((last - first) / 1e9), rel=0.05)
        # The level lasts from its first write to its last token received: the server's own window (first
        # request read to last token written) give or take the loopback's and the schedulers' delays.
        written = min(sample.sent_ns for sample in level.samples)
        received = max(sample.last_token_ns for sample in level.samples)
        assert level.duration_s == pytest.approx((received - written) / 1e9)
        assert level.duration_s == pytest.approx((last - first) / 1e9, abs=0.01)
        assert level.cost_per_1m_output_usd == pytest.approx(1.8 / 3600 / level.output_tps * 1e6)
    by_level = {level.level: level for level in result.levels}
    for concurrency in (1, 2, 4):
        level = by_level[concurrency]
        assert level.ttft_ms["p50"] == pytest.approx(TTFT_MS, abs=10.0)
        assert level.tpot_ms["p50"] == pytest.approx(expected_itl(concurrency), abs=2.0)
        assert level.slo_attainment == 1.0 and level.goodput_rps == pytest.approx(level.request_rate)
    # Eight streams on four slots: after the first four, each request waits for a whole request to finish.
    crowded = by_level[8]
    assert crowded.ttft_ms["p50"] == pytest.approx(TTFT_MS + service_ms(8), rel=0.15)
    assert crowded.slo_attainment == pytest.approx(4 / 16)
    assert crowded.goodput_rps == pytest.approx(4 / crowded.duration_s)
    # Throughput saturates at the slot count: eight streams move no more tokens than four.
    assert crowded.output_tps == pytest.approx(by_level[4].output_tps, rel=0.15)
    assert by_level[4].output_tps > by_level[2].output_tps > by_level[1].output_tps
    assert by_level[4].itl_ms["p50"] > by_level[2].itl_ms["p50"] > by_level[1].itl_ms["p50"]
    assert (result.knee.level, result.knee.best) == (8, 4)
    document = result.to_dict()
    assert document["knee"] == {"level": 8, "best": 4, "reason": result.knee.reason}
    assert document["workload"] == WORKLOAD.to_dict() and document["plan"]["levels"] == [1, 2, 4, 8]


def test_open_loop_sends_the_seeded_poisson_schedule(engine):
    engine.reset()
    plan = SweepPlan(mode="rate", levels=(25.0,), requests_per_level=20, seed=5)
    result = run(run_sweep(config_for(engine), plan=plan, workload=WORKLOAD))
    level = result.levels[0]
    assert level.ok == 20 and level.mode == "rate" and level.level == 25.0
    rng = random.Random("5:0:arrivals")
    gaps = [rng.expovariate(25.0) for _ in range(19)]
    expected = [sum(gaps[:i]) * 1000 for i in range(20)]
    # The client wrote each request at its arrival time (its own stamps; the lag is reported, not hidden) ...
    written = [s.sent_ns for s in sorted(level.samples, key=lambda s: s.index)]
    actual = [(ns - written[0]) / 1e6 for ns in written]
    lags = [a - e for a, e in zip(actual, expected)]
    # A loaded machine delays a write now and then (the level reports it as schedule_lag_ms), but the typical
    # request leaves on time and the order is the schedule's.
    typical = statistics.median(abs(lag - statistics.median(lags)) for lag in lags)
    assert typical < 3.0, [round(lag, 1) for lag in lags]
    assert written == sorted(written)
    assert level.schedule_lag_ms["p99"] >= level.schedule_lag_ms["p50"] >= 0
    # ... and the server received every one of them.
    assert len(level_truth(engine)) == 20


def test_resume_skips_done_levels_and_interrupt_drops_the_level_in_progress(engine):
    engine.reset()
    plan = SweepPlan(mode="concurrency", levels=(1, 2, 4), requests_per_level=4)
    resumed = run(run_sweep(config_for(engine), plan=plan, workload=WORKLOAD, skip_levels={1, 2}))
    assert [level.level for level in resumed.levels] == [4]
    polls = []

    def stop_after_first_level():
        polls.append(1)
        return len(polls) > 6

    stopped = run(run_sweep(config_for(engine), plan=plan, workload=WORKLOAD, should_stop=stop_after_first_level))
    assert stopped.stopped_reason == "interrupted"
    assert [level.level for level in stopped.levels] == [1]


def test_duration_limit_truncates_the_level_and_ends_the_sweep(engine):
    engine.reset()
    # Long enough that the settling request fits on a loaded machine, far too short for 200 requests of ~0.1 s.
    plan = SweepPlan(mode="concurrency", levels=(1, 2), requests_per_level=200, max_duration_s=2.0)
    result = run(run_sweep(config_for(engine), plan=plan, workload=WORKLOAD))
    assert result.stopped_reason == "max_duration"
    assert len(result.levels) == 1 and result.levels[0].truncated
    assert 0 < result.levels[0].requests < 200


def test_a_dead_target_is_one_classified_error(engine):
    config = config_for(engine, base_url="http://127.0.0.1:9/v1", connect_timeout_s=1.0)
    result = run(run_sweep(config, plan=SweepPlan(mode="concurrency", levels=(1, 2), requests_per_level=2),
                           workload=WORKLOAD))
    assert result.error_class == "connect_error" and result.levels == []


@pytest.mark.parametrize(
    ("plan", "field"),
    [
        ({"levels": [1, 2] * 7}, "levels"),
        ({"levels": [1, 2, 2]}, "levels"),
        ({"levels": [1, 1000]}, "levels[1]"),
        ({"levels": [1.5]}, "levels[0]"),
        ({"mode": "rate", "levels": [0]}, "levels[0]"),
        ({"mode": "burst", "levels": [1]}, "mode"),
        ({"levels": [1, 2], "requests_per_level": 3000}, "requests_per_level"),
        ({"levels": [1], "max_duration_s": 7200}, "max_duration_s"),
        ({"levels": [1], "hourly_price_usd": -1}, "hourly_price_usd"),
        ({"cap": 1024}, "cap"),
        ({"levels": [1], "slo": {"ttft_ms": 1}}, "slo.tpot_ms"),
        ({"levels": [1], "speed": 3}, "speed"),
    ],
)
def test_plans_beyond_the_limits_are_refused_naming_the_field(plan, field):
    with pytest.raises(SweepLimitError) as error:
        SweepPlan.from_dict(plan)
    assert str(error.value).startswith(field + ":")


def test_cap_gives_doubling_levels_and_output_length_is_limited():
    assert SweepPlan.from_dict({"cap": 12}).levels == (1, 2, 4, 8, 12)
    plan = SweepPlan.from_dict({"levels": [1]})
    with pytest.raises(SweepLimitError, match="^output:"):
        plan.check_workload(Workload.from_dict({"input": 10, "output": 50000}), SweepLimits())


def test_requests_begin_within_a_budget_per_turn_of_the_event_loop():
    """The loop must get round to its sockets while a high level is starting (see loops._StartBudget)."""

    async def begin(budget_s: float, requests: int, work_s: float) -> list[int]:
        turns = 0

        def tick() -> None:  # stands in for the loop's socket polling: once per turn
            nonlocal turns
            turns += 1
            asyncio.get_running_loop().call_soon(tick)

        tick()
        starts = loops._StartBudget(budget_s)
        began = []

        async def request() -> None:
            await starts.turn()
            began.append(turns)
            time.sleep(work_s)  # building and writing a request: the loop is blocked meanwhile

        await asyncio.gather(*(request() for _ in range(requests)))
        return began

    began = asyncio.run(begin(0.0025, 12, 0.001))
    assert len(began) == 12
    # 1 ms of work each under a 2.5 ms budget: two or three per turn, never all twelve in one.
    assert max(began.count(turn) for turn in set(began)) <= 3 and len(set(began)) >= 4
    # A budget already spent still lets the first request of every turn begin: one per turn.
    one_each = asyncio.run(begin(0.0, 5, 0.001))
    assert len(one_each) == len(set(one_each)) == 5


def test_two_token_events_in_one_write_are_flagged_as_merged_reads(simulator_factory):
    """A server that writes token events two at a time: one read delivers each pair under one kernel stamp, so
    the first event of a pair may be a gap late, and every such TTFT and gap is flagged."""
    paired = simulator_factory(
        "openai", schedule={"ttft_ms": 5, "itl_ms": 20, "tokens": 5, "events_per_write": 2, "precise": False,
                            "reasoning_tokens": 0},
    )
    plan = SweepPlan(mode="concurrency", levels=(2,), requests_per_level=4)
    result = run(run_sweep(config_for(paired), plan=plan, workload=Workload.from_dict(
        {"name": "paired", "input": 50, "output": 5})))
    level = result.levels[0]
    assert level.ok == 4
    for sample in level.samples:
        # Events 0+1 and 2+3 share a write; 4 comes alone: the gaps touching events 0 and 2 are flagged.
        assert sample.ttft_merged
        assert {0, 1, 2} <= set(sample.merged_gaps)
        assert sample.gaps_ms[0] == sample.gaps_ms[2] == 0.0
    assert level.ttft_ms["merged_reads"] == 4
    assert level.itl_ms["merged_reads"] >= 12


def test_the_settle_request_is_reported_and_nothing_stopped_is_null(engine):
    engine.reset()
    result = run(run_sweep(config_for(engine), plan=SweepPlan(mode="concurrency", levels=(1,), requests_per_level=2),
                           workload=WORKLOAD))
    settles = [r for r in engine.chat_requests if "-settle." in r["body"]["messages"][0]["content"]]
    assert len(settles) == 1 and len(engine.chat_requests) == 3
    document = result.to_dict()
    assert document["settle"]["ok"] is True and document["settle"]["ttft_ms"] > 0
    assert document["settle"]["output_tokens"] == OUTPUT_TOKENS and document["settle"]["error_class"] is None
    assert document["stopped_reason"] is None


def test_reads_are_taken_and_stamped_while_the_event_loop_is_busy():
    """The reading thread reads each packet as it comes, however long the loop is kept from reading: two
    messages sent apart while the loop sleeps come back as two reads with their own kernel stamps, where a read
    from the loop would have found both in the socket and carried one stamp (a merged read)."""

    async def scenario():
        server = socket.create_server(("127.0.0.1", 0))
        client = socket.create_connection(server.getsockname())
        client.setblocking(False)
        client.setsockopt(socket.SOL_SOCKET, transport.SO_TIMESTAMPNS, 1)
        peer, _ = server.accept()
        reader = transport.ReadingThread(asyncio.get_running_loop())
        stream = transport.ThreadReadStream(client, reader)
        try:
            peer.sendall(b"first")
            time.sleep(0.3)  # the event loop reads nothing meanwhile
            peer.sendall(b"second")
            time.sleep(0.3)
            reads = []
            for _ in range(2):
                reads.append((await stream.read(1024, timeout=5), stream.last_read_ns))
        finally:
            await stream.aclose()
            reader.close()
            peer.close()
            server.close()
        return reads

    (first, first_ns), (second, second_ns) = run(scenario())
    assert (first, second) == (b"first", b"second")
    assert second_ns - first_ns >= 250_000_000


@pytest.mark.parametrize(
    ("fault", "error_class"),
    [("reset_mid_stream", "connection_reset"), ("stall_mid_stream", "stall_mid_stream"),
     ("close_without_finish", "missing_done")],
)
def test_a_broken_stream_read_by_the_reading_thread_is_a_classified_error(simulator_factory, fault, error_class):
    broken = simulator_factory(
        "openai", fault=fault, schedule={"ttft_ms": 5, "itl_ms": 2, "tokens": 8, "precise": False},
    )
    plan = SweepPlan(mode="concurrency", levels=(2,), requests_per_level=2)
    result = run(run_sweep(config_for(broken, read_timeout_s=0.5), plan=plan, workload=Workload.from_dict(
        {"name": "broken", "input": 50, "output": 8})))
    assert result.error_class == "" or result.error_class == error_class
    errors = result.levels[0].errors if result.levels else {result.error_class: 1}
    assert set(errors) == {error_class}
