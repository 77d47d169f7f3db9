// The grid of a variable as the file describes it: which dimensions are y and x, the
// dimensions before them (time, bands), the levels of a pyramid and their factors, an
// affine transform from cell indices to the CRS for each level, the CRS and the
// nodata value.  Nothing here reads chunks of the variable itself: its coordinates
// (usually held by the first request, which reads the head) are all.
//
// The transform comes from, first to last:
// - the level's `spatial:transform` (GeoZarr, in the multiscales record's layout or
//   in the level group's attributes);
// - GDAL's `GeoTransform` attribute of the grid mapping variable;
// - regular 1-D coordinates of the y and x dimensions, in either direction (cell
//   centres, as CF has them): a coordinate whose steps differ by more than a
//   thousandth of a step is refused, naming it.
// A level of a pyramid (docs/spec/overviews.md) whose own transform is not given is
// level 0's scaled by its factors: its cell i covers level 0's cells [i F, (i + 1) F).

import { HurrayValueError } from "../errors.js";
import { crsOf, isGeographicAxis } from "./crs.js";

/**
 * An affine transform `[a, b, c, d, e, f]`: the CRS point of the cell corner at
 * (fractional) column `col` and row `row` is `x = a col + b row + c`, `y = d col + e row + f`.
 * @typedef {[number, number, number, number, number, number]} Affine
 */

/**
 * @typedef {object} Level
 * @property {string} path the variable's path at this level
 * @property {number} fy level-0 cells per cell along y
 * @property {number} fx level-0 cells per cell along x
 * @property {number} rows cells along y
 * @property {number} cols cells along x
 * @property {number} chunkRows chunk cells along y
 * @property {number} chunkCols chunk cells along x
 * @property {Affine} transform
 */

/**
 * @typedef {object} Leading
 * @property {string} dim
 * @property {number} axis its place among the variable's dimensions
 * @property {number} size
 * @property {(number | string | Date)[] | undefined} values its coordinate (times as Dates), where it has one
 * @property {Record<string, unknown>} attrs its coordinate's attributes
 */

/**
 * @typedef {object} Grid
 * @property {string} name the variable's name (its path in a file without levels)
 * @property {string[]} dims
 * @property {number} yAxis the place of the y dimension among dims
 * @property {number} xAxis the place of the x dimension
 * @property {Leading[]} leading the other dimensions, in order
 * @property {Level[]} levels finest first; one for a file without overviews
 * @property {import("./crs.js").Crs} crs
 * @property {number} nodata values equal to it are missing (NaN: none but NaN)
 * @property {number} scale stored values are multiplied by it (CF scale_factor)
 * @property {number} offset and then added to it (CF add_offset)
 * @property {Record<string, unknown>} attrs the variable's attributes
 * @property {[number, number, number, number]} bounds [xmin, ymin, xmax, ymax] of level 0 in the CRS
 */

/**
 * @typedef {object} Overviews
 * @property {string[]} assets the level groups, finest first
 * @property {number[][]} scales each level's factors, one per dimension of the pyramid
 * @property {string[] | null} dims the pyramid's dimensions, in the order of the scales (null: not said)
 * @property {(Affine | undefined)[]} transforms each level's own, where the record gives it
 */

/**
 * The variables a map can show: those of two or more dimensions that are not
 * coordinates, by name (a file with overviews: their names in level 0; else their paths).
 * @param {import("../reader.js").HurrayFile} file
 * @returns {string[]}
 */
export function mapVariables(file) {
	const overviews = overviewsOf(file);
	const group = overviews ? `${overviews.assets[0]}/` : "";
	const out = [];
	for (const path of file.variables) {
		const v = file.variable(path);
		const inGroup = path.slice(0, path.length - v.name.length);
		if (v.shape.length < 2 || (overviews && inGroup !== group) || v.dims.includes(v.name)) {
			continue;
		}
		out.push(overviews ? v.name : path);
	}
	return out;
}

/**
 * The grid of variable `name` (see mapVariables).
 * @param {import("../reader.js").HurrayFile} file
 * @param {string} name
 * @returns {Promise<Grid>}
 */
export async function gridOf(file, name) {
	const overviews = overviewsOf(file);
	const assets = overviews ? overviews.assets : [""];
	const paths = assets.map((asset) => (asset ? `${asset}/${name}` : name));
	const first = file.variable(paths[0]);
	const groupPath = first.path.slice(0, first.path.length - first.name.length);
	const groups = file.groups;
	const sibling = (/** @type {string} */ n) => (file.variables.includes(groupPath + n) ? file.variable(groupPath + n).attrs : undefined);
	const outer = ancestors(groupPath).map((g) => groups.get(g)?.attrs ?? {});
	const [yAxis, xAxis] = spatialAxes(first, sibling, file.attrs["spatial:dimensions"]);
	const axes = [first.dims[yAxis], first.dims[xAxis]].map((dim) => sibling(dim));
	const crs = crsOf({ attrs: first.attrs, sibling, outer, axes });
	const mapping = typeof first.attrs.grid_mapping === "string" ? sibling(first.attrs.grid_mapping.trim().split(/[\s:]+/)[0]) : undefined;
	const base =
		overviews?.transforms[0] ?? transformOf(outer[0], mapping) ?? (await coordinateTransform(file, groupPath, first.dims[yAxis], first.dims[xAxis]));
	const levels = paths.map((path, k) => {
		const v = file.variable(path);
		if (v.dims.join() !== first.dims.join()) {
			throw new HurrayValueError(`${path} has the dimensions ${v.dims}, level 0 has ${first.dims}`);
		}
		const [fy, fx] = overviews ? [yAxis, xAxis].map((axis, j) => factorAlong(overviews, k, first.dims[axis], j)) : [1, 1];
		const own = overviews?.transforms[k] ?? transformOf(groups.get(assets[k])?.attrs ?? {}, undefined);
		const [a, b, c, d, e, f] = base;
		return {
			path,
			fy,
			fx,
			rows: v.shape[yAxis],
			cols: v.shape[xAxis],
			chunkRows: v.chunks[yAxis],
			chunkCols: v.chunks[xAxis],
			transform: k > 0 && own ? own : /** @type {Affine} */ ([a * fx, b * fy, c, d * fx, e * fy, f]),
		};
	});
	const leading = await Promise.all(
		first.dims
			.map((dim, axis) => ({ dim, axis }))
			.filter(({ axis }) => axis !== yAxis && axis !== xAxis)
			.map(async ({ dim, axis }) => ({ dim, axis, size: first.shape[axis], ...(await coordinateValues(file, groupPath, dim)) })),
	);
	const number = (/** @type {unknown} */ v, /** @type {number} */ otherwise) => (typeof v === "number" ? v : otherwise);
	const level0 = levels[0];
	return {
		name,
		dims: first.dims,
		yAxis,
		xAxis,
		leading,
		levels,
		crs,
		nodata: number(first.attrs._FillValue, number(first.attrs.missing_value, Number.NaN)),
		scale: number(first.attrs.scale_factor, 1),
		offset: number(first.attrs.add_offset, 0),
		attrs: first.attrs,
		bounds: boundsOf(level0.transform, level0.rows, level0.cols),
	};
}

/**
 * The overview levels the root's `multiscales` record describes (docs/spec/overviews.md),
 * or null for a file without them.
 * @param {import("../reader.js").HurrayFile} file
 * @returns {Overviews | null}
 */
export function overviewsOf(file) {
	const record = parseRecord(file.attrs.multiscales);
	const layout = record && Array.isArray(record.layout) ? record.layout : null;
	if (layout === null || layout.length === 0 || file.root.variables.length > 0) {
		return null;
	}
	const groups = file.groups;
	/** @type {{asset: string, transform?: unknown, "spatial:transform"?: unknown}[]} */
	const entries = [];
	for (const entry of layout) {
		if (!isRecord(entry) || typeof entry.asset !== "string" || !groups.has(entry.asset)) {
			return null;
		}
		entries.push({ ...entry, asset: entry.asset });
	}
	const hurray = parseRecord(file.attrs.hurray_overviews);
	return {
		assets: entries.map((entry) => entry.asset),
		scales: entries.map((entry) => {
			const scale = isRecord(entry.transform) ? entry.transform.scale : undefined;
			return Array.isArray(scale) ? scale.map(Number) : [1];
		}),
		dims: hurray && Array.isArray(hurray.dims) ? hurray.dims.map(String) : null,
		transforms: entries.map((entry) => affineOf(entry["spatial:transform"])),
	};
}

/**
 * Level k's factor along dimension `dim`: the record's scale for it, where the
 * record names its dimensions; else its `j`-th (y, then x), or its only one.
 * @param {Overviews} overviews
 * @param {number} k
 * @param {string} dim
 * @param {number} j
 */
function factorAlong(overviews, k, dim, j) {
	const scale = overviews.scales[k];
	const at = overviews.dims ? overviews.dims.indexOf(dim) : -1;
	const factor = at >= 0 ? scale[at] : scale.length === 2 ? scale[j] : scale[0];
	if (!(factor >= 1)) {
		throw new HurrayValueError(`the multiscales record gives level ${k} the factor ${factor} along ${dim}`);
	}
	return factor;
}

/**
 * A JSON text or object, as a record (null where it is neither).
 * @param {unknown} value
 * @returns {Record<string, unknown> | null}
 */
function parseRecord(value) {
	if (typeof value === "string") {
		try {
			const parsed = JSON.parse(value);
			return isRecord(parsed) ? parsed : null;
		} catch {
			return null;
		}
	}
	return isRecord(value) ? value : null;
}

/**
 * Whether `value` is an object (not null).
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
function isRecord(value) {
	return typeof value === "object" && value !== null;
}

/**
 * The places of the y and x dimensions among the variable's: those the root's
 * `spatial:dimensions` names ([Y, X], GeoZarr), else those whose coordinates say so
 * (CF axis, standard names, degrees units), else the last two.
 * @param {import("../metadata.js").Variable} v
 * @param {(name: string) => Record<string, unknown> | undefined} sibling
 * @param {unknown} named the root's `spatial:dimensions`
 * @returns {[number, number]}
 */
function spatialAxes(v, sibling, named) {
	if (Array.isArray(named) && named.length === 2) {
		const [y, x] = named.map((dim) => v.dims.indexOf(String(dim)));
		if (y >= 0 && x >= 0 && y !== x) {
			return [y, x];
		}
	}
	const says = (/** @type {"x" | "y"} */ axis) =>
		v.dims.findIndex((dim) => {
			const attrs = sibling(dim);
			const standard = String(attrs?.standard_name ?? "");
			return (
				attrs !== undefined &&
				(String(attrs.axis ?? "").toLowerCase() === axis ||
					isGeographicAxis(attrs, axis) ||
					standard === `projection_${axis}_coordinate` ||
					standard === `grid_${axis === "x" ? "longitude" : "latitude"}`)
			);
		});
	const y = says("y");
	const x = says("x");
	return y >= 0 && x >= 0 && y !== x ? [y, x] : [v.dims.length - 2, v.dims.length - 1];
}

/**
 * The paths of a group and of the groups above it, nearest first.
 * @param {string} groupPath "a/b/" ("" for the root)
 */
function ancestors(groupPath) {
	const parts = groupPath.split("/").filter(Boolean);
	return parts.map((_, k) => parts.slice(0, parts.length - k).join("/")).concat([""]);
}

/**
 * A transform given as attributes: GeoZarr's `spatial:transform` (of the group), or
 * GDAL's `GeoTransform` (of the grid mapping variable).
 * @param {Record<string, unknown>} group
 * @param {Record<string, unknown> | undefined} mapping
 * @returns {Affine | undefined}
 */
function transformOf(group, mapping) {
	const own = affineOf(group["spatial:transform"]);
	if (own) {
		return own;
	}
	const gdal = mapping?.GeoTransform;
	if (typeof gdal === "string") {
		const g = gdal.trim().split(/\s+/).map(Number);
		if (g.length === 6 && g.every(Number.isFinite)) {
			// GDAL's order: x0, dx/dcol, dx/drow, y0, dy/dcol, dy/drow
			return [g[1], g[2], g[0], g[4], g[5], g[3]];
		}
		throw new HurrayValueError(`the GeoTransform attribute ${JSON.stringify(gdal)} is not six numbers`);
	}
	return undefined;
}

/**
 * `[a, b, c, d, e, f]` from a `spatial:transform` value (six numbers, or the nine of a
 * 3 x 3 matrix), else undefined.
 * @param {unknown} value
 * @returns {Affine | undefined}
 */
function affineOf(value) {
	const flat = Array.isArray(value) ? value.flat().map(Number) : null;
	if (flat && (flat.length === 6 || flat.length === 9) && flat.every(Number.isFinite)) {
		return /** @type {Affine} */ (flat.slice(0, 6));
	}
	return undefined;
}

/**
 * The transform that the 1-D coordinates of the y and x dimensions give (cell
 * centres, regularly spaced); the grid's own indices (x = column, y = -row: north up,
 * as an image) where a dimension has no coordinate.
 * @param {import("../reader.js").HurrayFile} file
 * @param {string} groupPath
 * @param {string} yDim
 * @param {string} xDim
 * @returns {Promise<Affine>}
 */
async function coordinateTransform(file, groupPath, yDim, xDim) {
	const [y, x] = await Promise.all([regularAxis(file, groupPath, yDim), regularAxis(file, groupPath, xDim)]);
	const [x0, dx] = x ?? [0, 1];
	const [y0, dy] = y ?? [0, -1];
	return [dx, 0, x0 - dx / 2, 0, dy, y0 - dy / 2];
}

/**
 * `[first centre, step]` of a 1-D coordinate, checked to be regular; null where the
 * dimension has none.
 * @param {import("../reader.js").HurrayFile} file
 * @param {string} groupPath
 * @param {string} dim
 * @returns {Promise<[number, number] | null>}
 */
async function regularAxis(file, groupPath, dim) {
	const path = groupPath + dim;
	if (!file.variables.includes(path) || file.variable(path).shape.length !== 1) {
		return null;
	}
	const { data } = await file.read(path);
	const values = Array.from(/** @type {ArrayLike<number | bigint>} */ (data), Number);
	const n = values.length;
	if (n < 2) {
		throw new HurrayValueError(`the coordinate ${path} has ${n} value: the cell size cannot be known (give a spatial:transform or GeoTransform)`);
	}
	const step = (values[n - 1] - values[0]) / (n - 1);
	for (let i = 0; i < n; i++) {
		const off = Math.abs(values[i] - (values[0] + i * step));
		if (!(off <= Math.abs(step) * 1e-3)) {
			throw new HurrayValueError(
				`the coordinate ${path} is not regularly spaced: its value ${values[i]} at ${i} is ${off} from the step ${step} of its ends; a map needs a regular grid`,
			);
		}
	}
	return [values[0], step];
}

/**
 * The coordinate values of a dimension (times decoded where CF units say "... since ..."),
 * and their attributes.
 * @param {import("../reader.js").HurrayFile} file
 * @param {string} groupPath
 * @param {string} dim
 */
async function coordinateValues(file, groupPath, dim) {
	const path = groupPath + dim;
	if (!file.variables.includes(path) || file.variable(path).shape.length !== 1) {
		return { values: undefined, attrs: {} };
	}
	const v = file.variable(path);
	const { data } = await file.read(path);
	const raw = Array.from(/** @type {ArrayLike<unknown>} */ (data), (x) => (typeof x === "bigint" ? Number(x) : /** @type {number | string} */ (x)));
	const time = typeof v.attrs.units === "string" ? cfTime(v.attrs.units, v.attrs.calendar) : null;
	return { values: time ? raw.map((t) => time(Number(t))) : raw, attrs: v.attrs };
}

/** Milliseconds in the CF time units. */
const UNIT_MS = {
	millisecond: 1,
	second: 1000,
	minute: 60_000,
	hour: 3_600_000,
	day: 86_400_000,
};

/**
 * The function that takes a number of CF time units ("days since 2000-01-01") to a
 * Date, for the calendars JavaScript's Date keeps; null for others (their values are
 * shown as numbers).
 * @param {string} units
 * @param {unknown} calendar
 * @returns {((t: number) => Date) | null}
 */
export function cfTime(units, calendar) {
	const match = /^\s*(\w+?)s?\s+since\s+(.+?)\s*$/i.exec(units);
	const cal = String(calendar ?? "standard").toLowerCase();
	if (match === null || !["standard", "gregorian", "proleptic_gregorian"].includes(cal)) {
		return null;
	}
	const ms = UNIT_MS[/** @type {keyof UNIT_MS} */ (match[1].toLowerCase())];
	let text = match[2].replace(" ", "T");
	if (/^\d{4}-\d{1,2}-\d{1,2}$/.test(text)) {
		text += "T00:00:00";
	}
	text = text.replace(/^(\d{4})-(\d)-/, "$1-0$2-").replace(/-(\d)T/, "-0$1T").replace(/T(\d):/, "T0$1:");
	if (!/(Z|[+-]\d\d:?\d\d)$/.test(text)) {
		text += "Z"; // CF: without a time zone, UTC
	}
	const epoch = Date.parse(text);
	if (ms === undefined || !Number.isFinite(epoch)) {
		return null;
	}
	return (t) => new Date(epoch + t * ms);
}

/**
 * [xmin, ymin, xmax, ymax] of a rows x cols grid under `transform`.
 * @param {Affine} transform
 * @param {number} rows
 * @param {number} cols
 * @returns {[number, number, number, number]}
 */
export function boundsOf(transform, rows, cols) {
	const [a, b, c, d, e, f] = transform;
	const xs = [0, cols].flatMap((col) => [0, rows].map((row) => a * col + b * row + c));
	const ys = [0, cols].flatMap((col) => [0, rows].map((row) => d * col + e * row + f));
	return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}

/**
 * The inverse of `transform`: CRS point to fractional (column, row).
 * @param {Affine} transform
 * @returns {Affine}
 */
export function invert(transform) {
	const [a, b, c, d, e, f] = transform;
	const det = a * e - b * d;
	if (det === 0) {
		throw new HurrayValueError(`the transform ${transform} has no inverse`);
	}
	return [e / det, -b / det, (b * f - c * e) / det, -d / det, a / det, (c * d - a * f) / det];
}
