// The limits a reader enforces before it trusts sizes and counts a file declares
// (docs/spec/container.md, "Limits"): the same numbers as the Python reader's
// xarray_hurray/container/limits.py, so that a hostile or damaged file cannot make
// either reader allocate what its bytes do not justify.

/** Largest metadata parsed, in bytes. */
export const MAX_METADATA_BYTES = 64 * 2 ** 20;
/** Deepest nesting of JSON arrays and objects, the top-level object being level 1. */
export const MAX_NESTING = 32;
/** Most JSON arrays and objects in the metadata. */
export const MAX_METADATA_CONTAINERS = 2 ** 17;
/** Typed attributes may decode to this many times the metadata's bytes ... */
export const ATTRIBUTE_EXPANSION = 16;
/** ... plus this many bytes. */
export const ATTRIBUTE_ALLOWANCE = 2 ** 20;
/** Most axes of a variable. */
export const MAX_RANK = 32;
/** Longest axis and largest chunk side the format allows. */
export const MAX_LENGTH = 2 ** 62;
/** Longest codec chain. */
export const MAX_CODECS = 8;
/** Largest decoded chunk, padding included, in bytes. */
export const MAX_CHUNK_BYTES = 2 ** 31;
/** Largest 1.1 root: 12 bytes for each of about a million variables. */
export const MAX_ROOT_BYTES = 12 * 2 ** 20;
/** Chunk positions on an index page (1.1, 1.2). */
export const PAGE_ENTRIES = 1024;
/** Largest 1.2 index page: a full bitmap and an entry for each of its chunks. */
export const MAX_PAGE_BYTES = PAGE_ENTRIES / 8 + 20 * PAGE_ENTRIES;
/**
 * Largest count or offset this reader handles: JavaScript numbers are exact up to
 * 2**53.  Lengths, chunk counts and offsets past it (allowed by the format up to
 * 2**62) are refused with a clear error rather than computed wrongly.
 */
export const MAX_EXACT = Number.MAX_SAFE_INTEGER;
