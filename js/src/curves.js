// The Hilbert and Morton curves of docs/spec/layouts.md, on small words.  A point
// is an array of `rank` words of `order` bits; a key is held as its digits, one
// `rank`-bit digit per level (digit `b` holds bit `b` of every word, the word of
// axis 0 in the digit's most significant bit), so that keys longer than the 53 bits
// a JavaScript number holds exactly never need one.

/**
 * Skilling's fold and Gray code (layouts.md, "Index mapping", stages 1 and 2), in
 * place: afterwards the words interleave into the Hilbert index.
 * @param {number[]} X the point's words, changed in place
 * @param {number} rank
 * @param {number} order
 */
function hilbertForward(X, rank, order) {
	for (let q = order - 1; q >= 1; q--) {
		const low = (1 << q) - 1;
		for (let i = 0; i < rank; i++) {
			if ((X[i] >>> q) & 1) {
				X[0] ^= low;
			} else {
				const s = (X[0] ^ X[i]) & low;
				X[0] ^= s;
				X[i] ^= s;
			}
		}
	}
	for (let i = 1; i < rank; i++) {
		X[i] ^= X[i - 1];
	}
	let t = 0;
	for (let q = order - 1; q >= 1; q--) {
		if ((X[rank - 1] >>> q) & 1) {
			t ^= (1 << q) - 1;
		}
	}
	for (let i = 0; i < rank; i++) {
		X[i] ^= t;
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
	const X = point.slice();
	if (curve === "hilbert") {
		hilbertForward(X, rank, order);
	}
	const digits = new Array(order).fill(0);
	for (let b = 0; b < order; b++) {
		let digit = 0;
		for (let d = 0; d < rank; d++) {
			digit |= ((X[d] >>> b) & 1) << (rank - 1 - d);
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
 * The Hilbert index of `point` in the cube of side 2**order, as a number (the caller
 * keeps rank * order within 53 bits).
 * @param {number[]} point
 * @param {number} order
 */
export function hilbertIndex(point, order) {
	return digitsValue(keyDigits("hilbert", point, order), point.length);
}

/**
 * The point at Hilbert index `h` of the cube of side 2**order in `rank` dimensions.
 * @param {number} h
 * @param {number} rank
 * @param {number} order
 */
export function hilbertPoint(h, rank, order) {
	const base = 2 ** rank;
	const digits = new Array(order);
	let rest = h;
	for (let b = 0; b < order; b++) {
		digits[b] = rest % base;
		rest = Math.floor(rest / base);
	}
	return pointOfDigits("hilbert", digits, rank);
}

/**
 * The key whose digits are `digits`, as a number (exact while it has at most 53 bits).
 * @param {number[]} digits
 * @param {number} rank
 */
export function digitsValue(digits, rank) {
	const base = 2 ** rank;
	let value = 0;
	for (let b = digits.length - 1; b >= 0; b--) {
		value = value * base + digits[b];
	}
	return value;
}
