// The coordinate reference system of a variable, from what the file says of it, and
// the functions that take longitude and latitude to the CRS and back.
//
// Where a CRS is found, first to last:
// - the CF grid mapping: the variable's `grid_mapping` attribute names a variable of
//   its group whose attributes hold `crs_wkt` (or GDAL's `spatial_ref`), an EPSG code
//   (`epsg_code`, `proj:code`) or the CF parameters (`grid_mapping_name`, ...);
// - the `proj:code` / `proj:wkt2` attributes (GeoZarr's, docs/spec/overviews.md) of
//   the variable, its group or the root;
// - the coordinates: longitude and latitude where the x and y coordinates say so
//   (CF units `degrees_east` / `degrees_north` and their variants, or the standard
//   names `longitude` / `latitude`).
// Geographic CRSs and Web Mercator need nothing more; any other CRS is handed to
// proj4 (an optional dependency the caller passes in), as a PROJ string made from the
// EPSG code or the CF parameters where we know how, else as the WKT.

import { HurrayValueError } from "../errors.js";

/** The Earth's radius of Web Mercator (EPSG:3857), in metres. */
export const EARTH_RADIUS = 6378137;

/** Half the width of the Web Mercator world, in metres. */
export const MERCATOR_HALF = Math.PI * EARTH_RADIUS;

/**
 * @typedef {object} Crs
 * @property {"geographic" | "projected" | "none"} kind longitude and latitude in
 *   degrees; projected coordinates; or none known (the grid's own indices)
 * @property {string} name how the page and messages name it ("EPSG:32632", "longitude/latitude")
 * @property {string | undefined} code "EPSG:n" where known
 * @property {string | undefined} definition what proj4 is given: a PROJ string or a WKT
 * @property {string | undefined} wkt the WKT the file holds
 * @property {string} units "degrees", "m", ... (the units of the x and y coordinates)
 */

/**
 * @typedef {object} Projection
 * @property {(lon: number, lat: number) => [number, number]} forward degrees to the CRS
 * @property {(x: number, y: number) => [number, number]} inverse the CRS to degrees
 */

/**
 * proj4's default export: `proj4(definition)` converts between WGS 84 and the
 * definition; `proj4.defs(name, definition)` names a definition.
 * @typedef {((definition: string) => {forward: (p: number[]) => number[], inverse: (p: number[]) => number[]}) & {defs: (name: string, definition: string) => unknown}} Proj4
 */

const DEGREES_EAST = new Set(["degrees_east", "degree_east", "degree_e", "degrees_e", "degreee", "degreese"]);
const DEGREES_NORTH = new Set(["degrees_north", "degree_north", "degree_n", "degrees_n", "degreen", "degreesn"]);

/**
 * Whether the attributes of a coordinate say it is a longitude (`"x"`) or a latitude (`"y"`).
 * @param {Record<string, unknown> | undefined} attrs
 * @param {"x" | "y"} axis
 */
export function isGeographicAxis(attrs, axis) {
	if (!attrs) {
		return false;
	}
	const units = String(attrs.units ?? "").toLowerCase();
	const standard = String(attrs.standard_name ?? "");
	return axis === "x" ? DEGREES_EAST.has(units) || standard === "longitude" : DEGREES_NORTH.has(units) || standard === "latitude";
}

/**
 * The CRS of a variable.
 * @param {object} where
 * @param {Record<string, unknown>} where.attrs the variable's attributes
 * @param {(name: string) => Record<string, unknown> | undefined} where.sibling the
 *   attributes of a variable of its group, by name (undefined: none)
 * @param {Record<string, unknown>[]} where.outer the attributes of its group, then of the groups above it
 * @param {(Record<string, unknown> | undefined)[]} where.axes the attributes of its y and x coordinates
 * @returns {Crs}
 */
export function crsOf({ attrs, sibling, outer, axes }) {
	const mapping = gridMappingOf(attrs, sibling);
	for (const source of [mapping, attrs, ...outer]) {
		if (source === undefined) {
			continue;
		}
		const found = fromAttributes(source);
		if (found !== undefined) {
			return found;
		}
	}
	if (isGeographicAxis(axes[0], "y") && isGeographicAxis(axes[1], "x")) {
		return geographic("EPSG:4326");
	}
	return { kind: "none", name: "no CRS", code: undefined, definition: undefined, wkt: undefined, units: "" };
}

/**
 * The attributes of the variable `attrs.grid_mapping` names (CF: a name, or
 * "name: coordinates ..." pairs, of which the first is taken).
 * @param {Record<string, unknown>} attrs
 * @param {(name: string) => Record<string, unknown> | undefined} sibling
 */
function gridMappingOf(attrs, sibling) {
	if (typeof attrs.grid_mapping !== "string") {
		return undefined;
	}
	const name = attrs.grid_mapping.trim().split(/[\s:]+/)[0];
	const found = sibling(name);
	if (found === undefined) {
		throw new HurrayValueError(`the grid_mapping attribute names ${JSON.stringify(name)}, which is not a variable of the group`);
	}
	return found;
}

/**
 * The CRS that one set of attributes describes, if any.
 * @param {Record<string, unknown>} attrs
 * @returns {Crs | undefined}
 */
function fromAttributes(attrs) {
	const wkt = [attrs.crs_wkt, attrs.spatial_ref, attrs["proj:wkt2"]].filter((w) => typeof w === "string").find((w) => /^\s*[A-Z]+\s*\[/.test(w));
	const named = [attrs["proj:code"], attrs.epsg_code].find((c) => typeof c === "string" || typeof c === "number");
	let code = named === undefined ? undefined : normaliseCode(String(named));
	if (code === undefined && typeof wkt === "string") {
		code = codeOfWkt(wkt);
	}
	const cf = typeof attrs.grid_mapping_name === "string" ? attrs.grid_mapping_name : undefined;
	if (wkt === undefined && code === undefined && cf === undefined) {
		return undefined;
	}
	const isGeographic =
		code === "EPSG:4326" || code === "OGC:CRS84" || (typeof wkt === "string" ? /^\s*(GEOGCS|GEOGCRS|GEODCRS|GEOGRAPHICCRS)\b/.test(wkt) : cf === "latitude_longitude");
	if (isGeographic) {
		return { ...geographic(code ?? "longitude/latitude"), code, wkt };
	}
	const definition = (code && projString(code)) ?? (cf && cfProjString(attrs)) ?? wkt;
	return {
		kind: "projected",
		name: code ?? (cf ? cf.replaceAll("_", " ") : "projected"),
		code,
		definition,
		wkt,
		units: "m",
	};
}

/**
 * @param {string} name
 * @returns {Crs}
 */
function geographic(name) {
	return { kind: "geographic", name, code: "EPSG:4326", definition: undefined, wkt: undefined, units: "degrees" };
}

/**
 * "EPSG:n" for the ways codes are written ("EPSG:32632", "epsg:32632", 32632,
 * "urn:ogc:def:crs:EPSG::32632"); other authorities as they are.
 * @param {string} code
 */
function normaliseCode(code) {
	const epsg = /(?:^|[:/])EPSG(?::+|\/\d*\/)(\d+)$/i.exec(code.trim()) ?? /^(\d+)$/.exec(code.trim());
	return epsg ? `EPSG:${epsg[1]}` : code.trim();
}

/**
 * The EPSG code a WKT gives the whole CRS: its last identifier (WKT 2 `ID["EPSG",n]`,
 * WKT 1 `AUTHORITY["EPSG","n"]`), which closes the outermost object.
 * @param {string} wkt
 */
export function codeOfWkt(wkt) {
	const ids = [...wkt.matchAll(/(?:ID|AUTHORITY)\s*\[\s*"EPSG"\s*,\s*"?(\d+)"?\s*\]\s*\]\s*$/gi)];
	return ids.length ? `EPSG:${ids[ids.length - 1][1]}` : undefined;
}

/**
 * A PROJ string for the EPSG codes whose parameters follow from the code alone:
 * Web Mercator and the UTM zones on WGS 84.
 * @param {string} code
 */
function projString(code) {
	const n = Number(code.replace(/^EPSG:/, ""));
	if (n === 3857 || n === 900913) {
		return "+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +no_defs";
	}
	if ((n >= 32601 && n <= 32660) || (n >= 32701 && n <= 32760)) {
		return `+proj=utm +zone=${n % 100}${n > 32700 ? " +south" : ""} +datum=WGS84 +units=m +no_defs`;
	}
	return undefined;
}

/** CF grid mapping names and the PROJ projections they are. */
const CF_PROJECTIONS = {
	transverse_mercator: "tmerc",
	polar_stereographic: "stere",
	stereographic: "stere",
	lambert_conformal_conic: "lcc",
	mercator: "merc",
	albers_conical_equal_area: "aea",
	lambert_azimuthal_equal_area: "laea",
	lambert_cylindrical_equal_area: "cea",
	orthographic: "ortho",
	sinusoidal: "sinu",
};

/** CF grid mapping parameters and the PROJ parameters they are. */
const CF_PARAMETERS = {
	longitude_of_central_meridian: "lon_0",
	longitude_of_projection_origin: "lon_0",
	straight_vertical_longitude_from_pole: "lon_0",
	latitude_of_projection_origin: "lat_0",
	scale_factor_at_central_meridian: "k_0",
	scale_factor_at_projection_origin: "k_0",
	standard_parallel: "lat_1",
	false_easting: "x_0",
	false_northing: "y_0",
	semi_major_axis: "a",
	semi_minor_axis: "b",
	inverse_flattening: "rf",
};

/**
 * A PROJ string from CF grid mapping attributes, where CF names the projection.
 * @param {Record<string, unknown>} attrs
 */
function cfProjString(attrs) {
	const proj = CF_PROJECTIONS[/** @type {keyof CF_PROJECTIONS} */ (attrs.grid_mapping_name)];
	if (proj === undefined) {
		return undefined;
	}
	const parts = [`+proj=${proj}`];
	for (const [cf, key] of Object.entries(CF_PARAMETERS)) {
		const value = attrs[cf];
		if (cf === "standard_parallel" && Array.isArray(value)) {
			value.forEach((v, k) => parts.push(`+lat_${k + 1}=${Number(v)}`));
		} else if (value !== undefined && Number.isFinite(Number(value))) {
			parts.push(`+${key}=${Number(value)}`);
		}
	}
	if (attrs.semi_major_axis === undefined) {
		parts.push("+datum=WGS84");
	}
	if (proj === "stere" && attrs.standard_parallel !== undefined) {
		// CF's polar stereographic with a standard parallel is PROJ's latitude of true scale
		parts[parts.findIndex((p) => p.startsWith("+lat_1="))] = `+lat_ts=${Number(attrs.standard_parallel)}`;
	}
	parts.push("+units=m", "+no_defs");
	return parts.join(" ");
}

/** Web Mercator, spherical, as EPSG:3857 defines it. */
export const WEB_MERCATOR_PROJECTION = Object.freeze({
	/** @type {(lon: number, lat: number) => [number, number]} */
	forward(lon, lat) {
		const clamped = Math.max(-85.0511287798066, Math.min(85.0511287798066, lat));
		return [(lon * Math.PI * EARTH_RADIUS) / 180, EARTH_RADIUS * Math.log(Math.tan(Math.PI / 4 + (clamped * Math.PI) / 360))];
	},
	/** @type {(x: number, y: number) => [number, number]} */
	inverse(x, y) {
		return [(x / EARTH_RADIUS) * (180 / Math.PI), (2 * Math.atan(Math.exp(y / EARTH_RADIUS)) - Math.PI / 2) * (180 / Math.PI)];
	},
});

/** Longitude and latitude as they are. */
export const IDENTITY_PROJECTION = Object.freeze({
	/** @type {(lon: number, lat: number) => [number, number]} */
	forward: (lon, lat) => [lon, lat],
	/** @type {(x: number, y: number) => [number, number]} */
	inverse: (x, y) => [x, y],
});

/**
 * The functions between longitude/latitude and `crs`.
 * @param {Crs} crs
 * @param {Proj4 | undefined} proj4 proj4's default export, for projected CRSs other than Web Mercator
 * @returns {Projection}
 */
export function projectionOf(crs, proj4) {
	if (crs.kind === "geographic") {
		return IDENTITY_PROJECTION;
	}
	if (crs.kind === "none") {
		throw new HurrayValueError("the variable has no CRS (no grid_mapping, proj:code or longitude/latitude coordinates): it cannot be placed on a map");
	}
	if (crs.code === "EPSG:3857" || crs.code === "EPSG:900913") {
		return WEB_MERCATOR_PROJECTION;
	}
	if (proj4 === undefined) {
		throw new HurrayValueError(`the variable's CRS is ${crs.name}: pass proj4 (the npm package's default export) as the option proj4 to place it`);
	}
	if (crs.definition === undefined) {
		throw new HurrayValueError(`the variable's CRS (${crs.name}) has neither a WKT nor parameters proj4 could take`);
	}
	let converter;
	try {
		converter = proj4(crs.definition);
	} catch (error) {
		throw new HurrayValueError(`proj4 does not take the CRS ${crs.name} (${crs.definition.slice(0, 80)}...): ${error instanceof Error ? error.message : error}`, {
			cause: error,
		});
	}
	return {
		forward: (lon, lat) => /** @type {[number, number]} */ (converter.forward([lon, lat])),
		inverse: (x, y) => /** @type {[number, number]} */ (converter.inverse([x, y])),
	};
}
