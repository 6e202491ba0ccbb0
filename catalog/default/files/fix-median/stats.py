"""Small statistics helpers."""


def median(values):
    """Return the median of a non-empty sequence of numbers.

    The median of an even number of values is the mean of the two middle ones.
    """
    if not values:
        raise ValueError("median of an empty sequence")
    ordered = list(values)
    middle = len(ordered) // 2
    return ordered[middle]
