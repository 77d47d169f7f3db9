// Colours: colormaps as lookup tables of 256 RGBA colours, each interpolated linearly
// between a few anchor colours, and values turned into pixels through one of them
// over a range (missing values transparent).

/** Anchor colours of each colormap, from the low end to the high end. */
const ANCHORS = {
	viridis: ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725"],
	magma: ["#000004", "#1c1044", "#4f127b", "#812581", "#b5367a", "#e55964", "#fb8761", "#fec287", "#fcfdbf"],
	gray: ["#000000", "#ffffff"],
	coolwarm: ["#3b4cc0", "#7396f5", "#b0cbfc", "#dddddd", "#f6bfa6", "#e7745b", "#b40426"],
};

/**
 * RGBA bytes, 4 a pixel, in a buffer of their own: what `ImageData` takes.
 * @typedef {Uint8ClampedArray<ArrayBuffer>} Pixels
 */

/** The names of the colormaps. */
export const COLORMAPS = Object.keys(ANCHORS);

/**
 * The 256 colours of colormap `name`, as RGBA bytes (alpha 255).
 * @param {string} name
 * @returns {Pixels}
 */
export function lookupTable(name) {
	const anchors = (ANCHORS[/** @type {keyof ANCHORS} */ (name)] ?? ANCHORS.viridis).map((hex) => [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)));
	const table = new Uint8ClampedArray(256 * 4);
	for (let k = 0; k < 256; k++) {
		const t = (k / 255) * (anchors.length - 1);
		const i = Math.min(Math.floor(t), anchors.length - 2);
		const f = t - i;
		for (let c = 0; c < 3; c++) {
			table[4 * k + c] = Math.round(anchors[i][c] + f * (anchors[i + 1][c] - anchors[i][c]));
		}
		table[4 * k + 3] = 255;
	}
	return table;
}

/**
 * The pixels of `values` under `table` over `[low, high]`: a value at `low` or below
 * takes the first colour, at `high` or above the last, and between them the colour
 * of its place rounded to the nearest of the 256; NaN is transparent.
 * @param {ArrayLike<number>} values
 * @param {Pixels} table
 * @param {[number, number]} range
 * @param {Pixels} [out] where to write (4 bytes a value)
 * @returns {Pixels}
 */
export function colourise(values, table, [low, high], out = new Uint8ClampedArray(4 * values.length)) {
	const step = high > low ? 255 / (high - low) : 0;
	for (let i = 0; i < values.length; i++) {
		const v = values[i];
		if (v !== v) {
			out[4 * i + 3] = 0;
			continue;
		}
		const k = 4 * Math.min(255, Math.max(0, Math.round((v - low) * step)));
		out[4 * i] = table[k];
		out[4 * i + 1] = table[k + 1];
		out[4 * i + 2] = table[k + 2];
		out[4 * i + 3] = 255;
	}
	return out;
}
