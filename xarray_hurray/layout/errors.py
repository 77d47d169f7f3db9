"""The error raised for invalid layout descriptors, coordinates and indices."""


class LayoutError(ValueError):
    """A layout descriptor, coordinate or curve index violates a rule of the format.

    The message names the violated rule, for example
    ``"hilbert constraint 1: shape[1] = 12 is not 2**hilbert_order = 16"``.
    """
