// What the example pages share: their settings from the query string, with defaults.
//   url       the Hurray file (default: field.hurray beside the page)
//   variable  which variable (default: the first)
//   select    the leading dimensions' indices, as dim:index,dim:index (default: 0)
//   colormap, min, max   the colours (default: viridis over the values' range)
//   lon, lat, zoom       the view (default: 0, 0, 1)

/** The page's settings. */
export function exampleSettings() {
	const query = new URLSearchParams(location.search);
	const number = (/** @type {string} */ name, /** @type {number} */ otherwise) => (query.has(name) ? Number(query.get(name)) : otherwise);
	const select = Object.fromEntries(
		(query.get("select") ?? "")
			.split(",")
			.filter(Boolean)
			.map((pair) => pair.split(":"))
			.map(([dim, index]) => [dim, Number(index)]),
	);
	return {
		url: new URL(query.get("url") ?? "field.hurray", location.href).href,
		variable: query.get("variable") ?? undefined,
		select,
		colormap: query.get("colormap") ?? undefined,
		range: query.has("min") && query.has("max") ? /** @type {[number, number]} */ ([number("min", 0), number("max", 1)]) : undefined,
		center: /** @type {[number, number]} */ ([number("lon", 0), number("lat", 0)]),
		zoom: number("zoom", 1),
	};
}

/**
 * Show a failure of `ready` on the page (and in data-state, for the tests).
 * @param {Promise<unknown>} ready
 */
export function whenFailed(ready) {
	ready.catch((error) => {
		document.documentElement.dataset.state = "error";
		document.documentElement.dataset.error = String(error?.message ?? error);
		document.body.append(String(error?.message ?? error));
	});
}
