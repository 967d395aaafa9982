"""tests/conftest.py's `DurationGuard`: a session in which a test not marked
`slow` took longer than the limit fails, naming the test; under
pytest-xdist the controller sees the workers' tests."""

import pathlib

import pytest
from conftest import FAST_TEST_LIMIT_S
from conftest import DurationGuard

pytest_plugins = ["pytester"]

TESTS = """
import time
import pytest

def test_quick():
    pass

@pytest.mark.slow
def test_long_but_marked():
    time.sleep(0.2)

@pytest.mark.parametrize("seconds", [0, pytest.param(0.2, marks=pytest.mark.slow)])
def test_marked_by_parameter(seconds):
    time.sleep(seconds)

@pytest.fixture
def long_setup():
    time.sleep(0.1)

def test_long_setup_short_call(long_setup):
    time.sleep(0.1)
"""


# Inner sessions without the plugins they do not need: hypothesis' would
# import hypothesis anew in each (1 s), pytest-benchmark's warns under xdist.
BARE = ("-p", "no:hypothesispytest", "-p", "no:benchmark")


@pytest.fixture
def tests(pytester):
    pytester.makeini("[pytest]\nmarkers = slow: long")
    pytester.makepyfile(TESTS)
    return pytester


def test_the_readme_gives_the_fast_tier_and_its_limit():
    readme = (pathlib.Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    assert '-n 2 --dist worksteal -m "not slow"' in readme
    assert f"longer than {FAST_TEST_LIMIT_S:g} s" in readme


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one-process", "xdist"])
def test_an_unmarked_test_over_the_limit_fails_the_session(tests, workers):
    """Setup and call count together (0.1 + 0.1 s > 0.15 s); the marked
    tests, by function or by parameter, never count."""
    result = tests.runpytest(*BARE, *workers, plugins=[DurationGuard(0.15)])
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*tests over the fast tier's limit*",
        "1 test(s) not marked slow took longer than 0.15 s*",
        "*s test_an_unmarked_test_over_the_limit_fails_the_session.py::"
        "test_long_setup_short_call",
    ])
    assert "test_long_but_marked" not in result.stdout.str()


def test_a_session_within_the_limit_passes(tests):
    result = tests.runpytest(*BARE, plugins=[DurationGuard(5.0)])
    assert result.ret == pytest.ExitCode.OK
    assert "over the fast tier's limit" not in result.stdout.str()


def test_a_failed_session_keeps_its_status(tests):
    tests.makepyfile(test_fails="def test_fails():\n    assert False\n")
    result = tests.runpytest(*BARE, plugins=[DurationGuard(0.15)])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_long_setup_short_call"])
