"""Pages of the benchmark lab: the list of runs, one run, and two runs side by side. Thin: reads are in
lab.selectors; the templates show every figure as a table, and charts draw from the same rows."""
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from core.cache import cached_page
from lab import evidence, selectors
from lab.models import SOURCE_TOOL_LABELS, SweepRun

LIST_LIMIT = 100


def _run_or_404(pk) -> SweepRun:
    try:
        return selectors.sweep_run_get(pk=int(pk))
    except (SweepRun.DoesNotExist, TypeError, ValueError):
        raise Http404("No such sweep run.") from None


def _run_context(run: SweepRun) -> dict:
    levels = list(run.levels.all())
    return {
        "run": run,
        "levels": levels,
        "any_merged": any(
            (level.ttft_ms or {}).get("merged_reads") or (level.itl_ms or {}).get("merged_reads") for level in levels
        ),
        "tool_label": SOURCE_TOOL_LABELS.get(run.source_tool, run.source_tool),
        "knee": (run.results or {}).get("knee") if run.kind == SweepRun.Kind.SWEEP else None,
        "card": run.card or {},
    }


@require_safe
@cached_page()
def sweep_list(request: HttpRequest) -> HttpResponse:
    runs = list(selectors.sweep_run_list().order_by("-queued_at", "-id")[:LIST_LIMIT])
    return render(request, "lab/list.html", {"runs": runs, "limit": LIST_LIMIT, "tool_labels": SOURCE_TOOL_LABELS})


@require_safe
@cached_page()
def sweep_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _run_or_404(pk)
    context = _run_context(run)
    context["chart"] = selectors.sweep_chart(run=run) if run.kind == SweepRun.Kind.SWEEP else None
    context["history"] = selectors.sweep_history(run=run)
    context["position"] = evidence.run_position(run)
    return render(request, "lab/detail.html", context)


@require_safe
@cached_page()
def sweep_compare(request: HttpRequest) -> HttpResponse:
    first, second = request.GET.get("a"), request.GET.get("b")
    if not first or not second:
        return render(request, "lab/compare.html", {"missing": True}, status=200)
    left, right = _run_or_404(first), _run_or_404(second)
    same_setup = (
        left.kind == right.kind == SweepRun.Kind.SWEEP
        and left.hardware_id is not None
        and (left.hardware_id, left.hardware_count, left.workload_key) == (right.hardware_id, right.hardware_count, right.workload_key)
    )
    chart = None
    if same_setup:
        chart = selectors.sweep_chart(run=left)
        chart.series = [s for s in chart.series if s.run_id == left.pk]
        right_chart = selectors.sweep_chart(run=right)
        if right_chart.mode == chart.mode:
            chart.series.append(right_chart.series[0])
        else:
            chart = None
    context = {"sides": [_run_context(left), _run_context(right)], "chart": chart, "same_setup": same_setup}
    return render(request, "lab/compare.html", context)
