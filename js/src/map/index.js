// The map layer's core, which the adapters (openlayers.js, maplibre.js, leaflet.js)
// share: a variable of a Hurray file as tiles of a tile matrix set, or as chunks in
// its own CRS, in the colours of a colormap.
export { COLORMAPS, colourise, lookupTable } from "./colours.js";
export { EARTH_RADIUS, projectionOf, WEB_MERCATOR_PROJECTION } from "./crs.js";
export { boundsOf, cfTime, gridOf, mapVariables } from "./grid.js";
export { HurrayLayer, selectionOf } from "./layer.js";
export { TileRequests } from "./requests.js";
export { planTile, WEB_MERCATOR_QUAD, WORLD_CRS84_QUAD } from "./tiles.js";
