"""The cells of the probe pages: what each check sends and when it counts as supported."""
from probe_client import CHECKS
from probes.selectors.cells import CheckDescription, compat_check_description, compat_check_descriptions
from scoring.vocabulary import COMPAT_CHECKS


def test_every_client_check_is_described_for_readers_from_the_suites_registry():
    descriptions = compat_check_descriptions()

    assert [check.name for check in descriptions] == list(COMPAT_CHECKS)
    assert all(check.request and check.supported_when for check in descriptions)
    assert [(check.request, check.supported_when) for check in descriptions] == [
        (CHECKS[name].request, CHECKS[name].supported_when) for name in COMPAT_CHECKS
    ]


def test_a_check_the_suite_no_longer_runs_is_shown_without_a_description():
    assert compat_check_description("retired_check") == CheckDescription("retired_check", "", "")
