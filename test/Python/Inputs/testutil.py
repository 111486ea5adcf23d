"""Helpers shared by the NumPy-model tests (not a test itself: lit skips Inputs/)."""


def expect_value_errors(calls):
    """Asserts that each callable raises ValueError."""
    for call in calls:
        try:
            call()
        except ValueError:
            continue
        raise AssertionError("expected ValueError")
