// The map layer's core, which the adapters (openlayers.js, maplibre.js, leaflet.js)
// share: a variable of a Hurray file as tiles of a tile matrix set, or as chunks in
// its own CRS, in the colours of a colormap.
export { COLORMAPS, colourise, lookupTable } from "./colours.js";
export { EARTH_RADIUS, projectionOf, WEB_MERCATOR_PROJECTION } from "./crs.js";
export { boundsOf, cfTime, gridOf, mapVariables } from "./grid.js";
export { HurrayLayer, selectionOf } from "./layer.js";
export { TileRequests } from "./requests.js";
export { planTile, WEB_MERCATOR_QUAD, WORLD_CRS84_QUAD } from "./tiles.js";

// The types of the layer's options and results, for JSDoc and TypeScript users
/** @typedef {import("./layer.js").LayerOptions} LayerOptions */
/** @typedef {import("./layer.js").Selection} Selection */
/** @typedef {import("./layer.js").TileValues} TileValues */
/** @typedef {import("./grid.js").Grid} Grid */
/** @typedef {import("./crs.js").Crs} Crs */
/** @typedef {import("./crs.js").Proj4} Proj4 */
/** @typedef {import("./tiles.js").TileMatrixSet} TileMatrixSet */
