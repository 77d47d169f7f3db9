"""The seed's CoordsToHilbert / HilbertToCoords, transcribed one point at a time.

Plain Python integers, a literal reading of the pseudo-code in the format
specification: the independent truth the vectorised implementation is tested
against.
"""


def coords_to_hilbert(coords: list[int], r: int, p: int) -> int:
    x = list(coords)
    m = 1 << (p - 1)
    q = m
    while q > 1:
        pmask = q - 1
        for i in range(r):
            if x[i] & q:
                x[0] ^= pmask
            else:
                t = (x[0] ^ x[i]) & pmask
                x[0] ^= t
                x[i] ^= t
        q >>= 1
    for i in range(1, r):
        x[i] ^= x[i - 1]
    t = 0
    q = m
    while q > 1:
        if x[r - 1] & q:
            t ^= q - 1
        q >>= 1
    for i in range(r):
        x[i] ^= t
    h = 0
    for b in range(p):
        for d in range(r):
            h |= ((x[d] >> b) & 1) << (b * r + (r - 1 - d))
    return h


def hilbert_to_coords(h: int, r: int, p: int) -> list[int]:
    x = [0] * r
    for b in range(p):
        for d in range(r):
            x[d] |= ((h >> (b * r + (r - 1 - d))) & 1) << b
    t = x[r - 1] >> 1
    for i in range(r - 1, 0, -1):
        x[i] ^= x[i - 1]
    x[0] ^= t
    q = 2
    while q != (1 << p):
        pmask = q - 1
        for i in range(r - 1, -1, -1):
            if x[i] & q:
                x[0] ^= pmask
            else:
                t = (x[0] ^ x[i]) & pmask
                x[0] ^= t
                x[i] ^= t
        q <<= 1
    return x
