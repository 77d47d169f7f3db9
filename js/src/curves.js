// The Hilbert and Morton curves of docs/spec/layouts.md, on small words.  A point
// is an array of `rank` words of `order` bits; a key is held as its digits, one
// `rank`-bit digit per level (digit `b` holds bit `b` of every word, the word of
// axis 0 in the digit's most significant bit), so that keys longer than the 53 bits
// a JavaScript number holds exactly never need one.  The Hilbert keys of many points
// (a box of a chunk) are computed together, on columns of coordinates.
//
// Words are at most 30 bits; where a value may reach bit 31 (a digit of 32 axes,
// a key) it is built by arithmetic or kept in a Uint32Array, never by a shift, whose
// result is a signed 32-bit number.

/**
 * Skilling's fold and Gray code (layouts.md, "Index mapping", stages 1 and 2), in
 * place on the points given as columns (one array of words per axis, the same
 * length each): afterwards the words interleave into the Hilbert index.
 * @param {Uint32Array[]} X the columns, axis 0 first, changed in place
 * @param {number} order
 */
function hilbertForward(X, order) {
	const rank = X.length;
	const x0 = X[0];
	const n = x0.length;
	for (let q = order - 1; q >= 1; q--) {
		const low = (1 << q) - 1; // q < order ≤ 30: within 31 bits
		for (let i = 0; i < rank; i++) {
			const xi = X[i];
			for (let k = 0; k < n; k++) {
				if ((xi[k] >>> q) & 1) {
					x0[k] ^= low;
				} else {
					const s = (x0[k] ^ xi[k]) & low;
					x0[k] ^= s;
					xi[k] ^= s;
				}
			}
		}
	}
	for (let i = 1; i < rank; i++) {
		const [xi, before] = [X[i], X[i - 1]];
		for (let k = 0; k < n; k++) xi[k] ^= before[k];
	}
	const last = X[rank - 1];
	for (let k = 0; k < n; k++) {
		let t = 0;
		for (let q = order - 1; q >= 1; q--) {
			if ((last[k] >>> q) & 1) t ^= (1 << q) - 1;
		}
		if (t !== 0) {
			for (let i = 0; i < rank; i++) X[i][k] ^= t;
		}
	}
}

/**
 * The inverse of hilbertForward: undo the Gray code, then unfold, in place.
 * @param {number[]} X de-interleaved words, changed in place into the point
 * @param {number} rank
 * @param {number} order
 */
function hilbertBackward(X, rank, order) {
	const t = X[rank - 1] >>> 1;
	for (let i = rank - 1; i >= 1; i--) {
		X[i] ^= X[i - 1];
	}
	X[0] ^= t;
	for (let q = 1; q < order; q++) {
		const low = (1 << q) - 1;
		for (let i = rank - 1; i >= 0; i--) {
			if ((X[i] >>> q) & 1) {
				X[0] ^= low;
			} else {
				const s = (X[0] ^ X[i]) & low;
				X[0] ^= s;
				X[i] ^= s;
			}
		}
	}
}

/**
 * The digits of the key of `point` on `curve` over the cube of side 2**order.
 * @param {"hilbert" | "morton"} curve
 * @param {number[]} point
 * @param {number} order
 * @returns {number[]} digit `b` for each level `b`, lowest level first
 */
export function keyDigits(curve, point, order) {
	const rank = point.length;
	const X = point.map((x) => Uint32Array.of(x));
	if (curve === "hilbert") {
		hilbertForward(X, order);
	}
	const digits = new Array(order).fill(0);
	for (let b = 0; b < order; b++) {
		// by arithmetic, not shifts: a digit of 32 axes needs all 32 bits, and a shift
		// into bit 31 gives a negative number
		let digit = 0;
		for (let d = 0; d < rank; d++) {
			digit = digit * 2 + ((X[d][0] >>> b) & 1);
		}
		digits[b] = digit;
	}
	return digits;
}

/**
 * The point whose key has `digits` on `curve`: the inverse of keyDigits.
 * @param {"hilbert" | "morton"} curve
 * @param {number[]} digits
 * @param {number} rank
 * @returns {number[]}
 */
export function pointOfDigits(curve, digits, rank) {
	const order = digits.length;
	const X = new Array(rank).fill(0);
	for (let b = 0; b < order; b++) {
		for (let d = 0; d < rank; d++) {
			X[d] |= ((digits[b] >>> (rank - 1 - d)) & 1) << b;
		}
	}
	if (curve === "hilbert") {
		hilbertBackward(X, rank, order);
	}
	return X;
}

/**
 * The Hilbert keys of `n` points given as columns of coordinates (one array of `n`
 * words per axis, each word below 2**order, changed in place), in the cube of side
 * 2**order: Skilling's transform, then the bits interleaved, for keys of at most
 * 32 bits.
 * @param {Uint32Array[]} X the columns, axis 0 first
 * @param {number} order
 * @param {Uint32Array} out the keys, one per point
 */
export function hilbertKeys(X, order, out) {
	hilbertForward(X, order);
	const n = out.length;
	out.fill(0);
	// the key's bits from the most significant: bit b of axis 0, ..., of axis rank - 1
	// (a shift into bit 31 gives a negative number, whose bits a Uint32Array keeps)
	for (let b = order - 1; b >= 0; b--) {
		for (const xd of X) {
			for (let k = 0; k < n; k++) out[k] = (out[k] << 1) | ((xd[k] >>> b) & 1);
		}
	}
}
