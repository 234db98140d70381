"""Path segments of the API's URLs."""

from urllib.parse import quote


def segment(value: str) -> str:
    """`value` as one path segment: ids may hold `/`, `:` and `@`, which must not split it."""
    return quote(str(value), safe="")
