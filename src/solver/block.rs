//! Fixed-size 3×3 block kernels shared by the sparse and dense solvers.
//!
//! Every constraint has at most three rows and every planar body three velocity
//! coordinates, so all blocks of J and of J M⁻¹ Jᵀ fit in a 3×3 array (rows of a
//! constraint with fewer than three rows are padded with zeros). Fixed-size blocks
//! let the compiler unroll every product, which is where the speed of the block
//! elimination (seed 003 §V-E, "matrices trois par trois") comes from.

/// A 3×3 block stored row-major: `b[3 * r + c]`.
pub type Block = [f64; 9];

/// The zero block.
pub const ZERO: Block = [0.0; 9];

/// `a · bᵀ`.
#[inline(always)]
pub fn mul_abt(a: &Block, b: &Block) -> Block {
    let mut o = ZERO;
    for r in 0..3 {
        for c in 0..3 {
            o[3 * r + c] = a[3 * r] * b[3 * c] + a[3 * r + 1] * b[3 * c + 1] + a[3 * r + 2] * b[3 * c + 2];
        }
    }
    o
}

/// `a · b`.
#[inline(always)]
pub fn mul_ab(a: &Block, b: &Block) -> Block {
    let mut o = ZERO;
    for r in 0..3 {
        for c in 0..3 {
            o[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
        }
    }
    o
}

/// `acc -= a · bᵀ`.
#[inline(always)]
pub fn sub_abt(acc: &mut Block, a: &Block, b: &Block) {
    for r in 0..3 {
        for c in 0..3 {
            acc[3 * r + c] -= a[3 * r] * b[3 * c] + a[3 * r + 1] * b[3 * c + 1] + a[3 * r + 2] * b[3 * c + 2];
        }
    }
}

/// `a · diag(d) · bᵀ` (the J M⁻¹ Jᵀ product of one body: M⁻¹ is diagonal).
#[inline(always)]
pub fn mul_adbt(a: &Block, d: &[f64; 3], b: &Block) -> Block {
    let mut o = ZERO;
    for r in 0..3 {
        let ar = [a[3 * r] * d[0], a[3 * r + 1] * d[1], a[3 * r + 2] * d[2]];
        for c in 0..3 {
            o[3 * r + c] = ar[0] * b[3 * c] + ar[1] * b[3 * c + 1] + ar[2] * b[3 * c + 2];
        }
    }
    o
}

/// `acc += a · diag(d) · bᵀ`.
#[inline(always)]
pub fn add_adbt(acc: &mut Block, a: &Block, d: &[f64; 3], b: &Block) {
    let o = mul_adbt(a, d, b);
    for (x, y) in acc.iter_mut().zip(o.iter()) {
        *x += y;
    }
}

/// `acc += a · diag(d) · bᵀ` on the leading `R × R` entries (the others of a
/// block of `R`-row constraints are zero); each entry is the same expression as
/// in [`add_adbt`], so the result is bitwise the same there.
#[inline(always)]
pub fn add_adbt_r<const R: usize>(acc: &mut Block, a: &Block, d: &[f64; 3], b: &Block) {
    for r in 0..R {
        let ar = [a[3 * r] * d[0], a[3 * r + 1] * d[1], a[3 * r + 2] * d[2]];
        for c in 0..R {
            acc[3 * r + c] += ar[0] * b[3 * c] + ar[1] * b[3 * c + 1] + ar[2] * b[3 * c + 2];
        }
    }
}

/// [`add_adbt_r`] to a block whose leading `R × R` entries are +0, without
/// reading them: each entry is written as `+0 + product` (the same bits as
/// the addition, the sign of a zero included: −0 becomes +0).
#[inline(always)]
pub fn set_adbt_r<const R: usize>(acc: &mut Block, a: &Block, d: &[f64; 3], b: &Block) {
    for r in 0..R {
        let ar = [a[3 * r] * d[0], a[3 * r + 1] * d[1], a[3 * r + 2] * d[2]];
        for c in 0..R {
            acc[3 * r + c] = 0.0 + (ar[0] * b[3 * c] + ar[1] * b[3 * c + 1] + ar[2] * b[3 * c + 2]);
        }
    }
}

/// Transpose.
#[inline(always)]
pub fn transpose(a: &Block) -> Block {
    [a[0], a[3], a[6], a[1], a[4], a[7], a[2], a[5], a[8]]
}

/// `a · x`.
#[inline(always)]
pub fn mul_vec(a: &Block, x: &[f64; 3]) -> [f64; 3] {
    [
        a[0] * x[0] + a[1] * x[1] + a[2] * x[2],
        a[3] * x[0] + a[4] * x[1] + a[5] * x[2],
        a[6] * x[0] + a[7] * x[1] + a[8] * x[2],
    ]
}

/// `aᵀ · x`.
#[inline(always)]
pub fn mul_t_vec(a: &Block, x: &[f64; 3]) -> [f64; 3] {
    [
        a[0] * x[0] + a[3] * x[1] + a[6] * x[2],
        a[1] * x[0] + a[4] * x[1] + a[7] * x[2],
        a[2] * x[0] + a[5] * x[1] + a[8] * x[2],
    ]
}

/// `a · b` restricted to the leading `R × R` sub-blocks (the rest of the result is
/// zero). With `R = 2` (systems whose constraints have at most 2 rows, e.g.
/// revolute joints) a product costs 8 multiply-adds instead of 27.
#[inline(always)]
pub fn mul_ab_r<const R: usize>(a: &Block, b: &Block) -> Block {
    let mut o = ZERO;
    for r in 0..R {
        for c in 0..R {
            let mut v = 0.0;
            for k in 0..R {
                v += a[3 * r + k] * b[3 * k + c];
            }
            o[3 * r + c] = v;
        }
    }
    o
}

/// `dst[..k] = src[..k]` for a constraint's `k` (1 to 3) rows, as scalar
/// moves: a `copy_from_slice` of a run-time length of 1–3 is a libc call, and
/// so were fixed-size `copy_from_slice`s in the arms of a `match` on `k` (the
/// compiler merged the three copies into one `memcpy` of length 8k: ≈ 4 % of
/// a small linkage's step, issue 10).
#[inline(always)]
pub fn copy_rows(dst: &mut [f64], src: &[f64], k: usize) {
    match k {
        1 => dst[0] = src[0],
        2 => {
            let (s0, s1) = (src[0], src[1]);
            dst[0] = s0;
            dst[1] = s1;
        }
        3 => {
            let (s0, s1, s2) = (src[0], src[1], src[2]);
            dst[0] = s0;
            dst[1] = s1;
            dst[2] = s2;
        }
        _ => dst[..k].copy_from_slice(&src[..k]),
    }
}

/// Copies the leading `R × R` entries of `src` into `dst` (all of it for `R = 3`).
#[inline(always)]
pub fn copy_leading<const R: usize>(dst: &mut Block, src: &Block) {
    if R >= 3 {
        *dst = *src;
    } else {
        for r in 0..R {
            for c in 0..R {
                dst[3 * r + c] = src[3 * r + c];
            }
        }
    }
}

/// `acc -= a · bᵀ` on the leading `R × R` sub-blocks.
#[inline(always)]
pub fn sub_abt_r<const R: usize>(acc: &mut Block, a: &Block, b: &Block) {
    for r in 0..R {
        for c in 0..R {
            let mut v = 0.0;
            for k in 0..R {
                v += a[3 * r + k] * b[3 * c + k];
            }
            acc[3 * r + c] -= v;
        }
    }
}

/// `acc -= a · bᵀ` for a symmetric result (lower triangle computed, mirrored),
/// on the leading `R × R` sub-blocks.
#[inline(always)]
pub fn sub_abt_sym_r<const R: usize>(acc: &mut Block, a: &Block, b: &Block) {
    for r in 0..R {
        for c in 0..=r {
            let mut v = 0.0;
            for k in 0..R {
                v += a[3 * r + k] * b[3 * c + k];
            }
            acc[3 * r + c] -= v;
            if c != r {
                acc[3 * c + r] -= v;
            }
        }
    }
}

/// `a · x` on the leading `R` rows (every row the same expression as in
/// [`mul_vec`], so bitwise the same there); the rows past `R` are `x`'s own
/// (the padded rows of a solve, left as they are).
#[inline(always)]
pub fn mul_vec_r<const R: usize>(a: &Block, x: &[f64; 3]) -> [f64; 3] {
    let mut o = *x;
    for (r, or) in o.iter_mut().enumerate().take(R) {
        *or = a[3 * r] * x[0] + a[3 * r + 1] * x[1] + a[3 * r + 2] * x[2];
    }
    o
}

/// `x -= a · y` on the leading `R` entries.
#[inline(always)]
pub fn sub_mul_vec_r<const R: usize>(x: &mut [f64; 3], a: &Block, y: &[f64; 3]) {
    for r in 0..R {
        let mut v = 0.0;
        for k in 0..R {
            v += a[3 * r + k] * y[k];
        }
        x[r] -= v;
    }
}

/// `x -= aᵀ · y` on the leading `R` entries.
#[inline(always)]
pub fn sub_mul_t_vec_r<const R: usize>(x: &mut [f64; 3], a: &Block, y: &[f64; 3]) {
    for r in 0..R {
        let mut v = 0.0;
        for k in 0..R {
            v += a[3 * k + r] * y[k];
        }
        x[r] -= v;
    }
}

/// A 2×2 block stored row-major, `b[2 * r + c]`: the leading 2×2 of a
/// [`Block`] of a system whose constraints have at most two rows (pins,
/// contacts), kept compactly by the block factorisation's L (32 bytes instead
/// of 72: a whole block is two 16-byte loads).
pub type Block2 = [f64; 4];

/// The first `v.len()` compact 2×2 blocks, stored in the memory of the padded
/// blocks `v` (4 of every 9 values' room is used, from the front): a factor
/// of two-row constraints keeps its L compactly in the buffer the padded
/// kernel uses, so the buffers, their copies and swaps are shared by both.
#[inline]
pub fn packed_two_row_blocks_mut(v: &mut [Block]) -> &mut [Block2] {
    let n = v.len();
    let flat: &mut [f64] = bytemuck::cast_slice_mut(v);
    bytemuck::cast_slice_mut(&mut flat[..4 * n])
}

/// [`packed_two_row_blocks_mut`], read only.
#[inline]
pub fn packed_two_row_blocks(v: &[Block]) -> &[Block2] {
    let flat: &[f64] = bytemuck::cast_slice(v);
    bytemuck::cast_slice(&flat[..4 * v.len()])
}

/// The leading 2×2 of `a`.
#[inline(always)]
pub fn leading2(a: &Block) -> Block2 {
    [a[0], a[1], a[3], a[4]]
}

/// The leading 2×2 of `aᵀ`.
#[inline(always)]
pub fn leading2_transposed(a: &Block) -> Block2 {
    [a[0], a[3], a[1], a[4]]
}

/// `a · b` on the leading 2×2 of `b`: each entry the sum of its two products,
/// the expression of [`mul_ab_r::<2>`](mul_ab_r) without that kernel's leading
/// `+0 +`. The compact kernels drop it because it lengthens the factorisation's
/// and the sweeps' dependency chains by an addition; it changed only the sign
/// of a zero (`+0 + p₀ + p₁` is +0 where `p₀ + p₁` is −0, i.e. when both
/// products are −0), so every non-zero value is bitwise the same.
#[inline(always)]
pub fn mul_ab2(a: &Block2, b: &Block) -> Block2 {
    let mut o = [0.0; 4];
    for r in 0..2 {
        for c in 0..2 {
            let v = a[2 * r] * b[c] + a[2 * r + 1] * b[3 + c];
            o[2 * r + c] = v;
        }
    }
    o
}

/// `acc -= a · bᵀ` for a symmetric result, on the leading 2×2 of the padded
/// `acc` (lower triangle computed, mirrored): the expressions of
/// [`sub_abt_sym_r::<2>`](sub_abt_sym_r) without the leading `+0 +` (see
/// [`mul_ab2`]).
#[inline(always)]
pub fn sub_abt_sym2(acc: &mut Block, a: &Block2, b: &Block2) {
    for r in 0..2 {
        for c in 0..=r {
            let v = a[2 * r] * b[2 * c] + a[2 * r + 1] * b[2 * c + 1];
            acc[3 * r + c] -= v;
            if c != r {
                acc[3 * c + r] -= v;
            }
        }
    }
}

/// `acc -= a · bᵀ` on compact blocks: the expressions of
/// [`sub_abt_r::<2>`](sub_abt_r) without the leading `+0 +` (see [`mul_ab2`]).
#[inline(always)]
pub fn sub_abt2(acc: &mut Block2, a: &Block2, b: &Block2) {
    for r in 0..2 {
        for c in 0..2 {
            let v = a[2 * r] * b[2 * c] + a[2 * r + 1] * b[2 * c + 1];
            acc[2 * r + c] -= v;
        }
    }
}

/// `x -= a · y` on the leading 2 entries: the expressions of
/// [`sub_mul_vec_r::<2>`](sub_mul_vec_r) without the leading `+0 +` (see
/// [`mul_ab2`]).
#[inline(always)]
pub fn sub_mul_vec2(x: &mut [f64; 3], a: &Block2, y: &[f64; 3]) {
    for r in 0..2 {
        let v = a[2 * r] * y[0] + a[2 * r + 1] * y[1];
        x[r] -= v;
    }
}

/// `x -= aᵀ · y` on the leading 2 entries: the expressions of
/// [`sub_mul_t_vec_r::<2>`](sub_mul_t_vec_r) without the leading `+0 +` (see
/// [`mul_ab2`]).
#[inline(always)]
pub fn sub_mul_t_vec2(x: &mut [f64; 3], a: &Block2, y: &[f64; 3]) {
    for r in 0..2 {
        let v = a[r] * y[0] + a[2 + r] * y[1];
        x[r] -= v;
    }
}

/// Outcome of [`ldl_inverse`] for one scalar pivot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pivot {
    /// The pivot was above the threshold and was used as is.
    Ok,
    /// The pivot was at or below the threshold.
    Small,
}

/// How [`ldl_inverse`] treats a pivot at or below its threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SmallPivot {
    /// Drop the row: infinite pivot, the row takes no part in later eliminations
    /// (rank-revealing pass: later rows are tested against the independent ones only).
    Drop,
    /// Replace the pivot by the given per-row floor (static pivoting of the
    /// regularised pass; keeps the factor positive definite and free of NaN).
    Floor,
}

/// Scalar LDLᵀ (no pivoting) of a symmetric 3×3 block `s`, returning `s⁻¹`
/// assembled from the factors, and the state of each pivot. A pivot `d_r` is small
/// when `!(d_r > thresh[r])` (so NaN counts as small). `floor` is used by
/// [`SmallPivot::Floor`].
#[inline(always)]
pub fn ldl_inverse(s: &Block, thresh: &[f64; 3], floor: &[f64; 3], mode: SmallPivot) -> (Block, [Pivot; 3]) {
    let (inv, piv, _) = ldl_inverse_pivots(s, thresh, floor, mode);
    (inv, piv)
}

/// The inverse of a pivot `d` of row `r` for [`ldl_inverse_pivots`]: `1/d` when
/// `d > thresh[r]`, else the row is marked small and dropped (0: an infinite
/// pivot) or floored (`1/floor[r]`). NaN counts as small.
#[inline(always)]
fn inverse_pivot(d: f64, r: usize, thresh: &[f64; 3], floor: &[f64; 3], mode: SmallPivot, piv: &mut [Pivot; 3]) -> f64 {
    if d > thresh[r] {
        1.0 / d
    } else {
        piv[r] = Pivot::Small;
        match mode {
            SmallPivot::Drop => 0.0,
            SmallPivot::Floor => 1.0 / floor[r],
        }
    }
}

/// `s⁻¹ = Mᵀ diag(i) M` from the unit lower factor's multipliers
/// `l = [l10, l20, l21]` and the inverse pivots `i`, with
/// `M = L⁻¹ = [[1,0,0],[−l10,1,0],[l10 l21 − l20, −l21, 1]]`.
#[inline(always)]
fn inverse_from_factors(l: [f64; 3], i: [f64; 3]) -> Block {
    let [l10, l20, l21] = l;
    let [i0, i1, i2] = i;
    let m20 = l10 * l21 - l20;
    let m21 = -l21;
    let m10 = -l10;
    let a00 = i0 + m10 * m10 * i1 + m20 * m20 * i2;
    let a01 = m10 * i1 + m20 * m21 * i2;
    let a02 = m20 * i2;
    let a11 = i1 + m21 * m21 * i2;
    let a12 = m21 * i2;
    let a22 = i2;
    [a00, a01, a02, a01, a11, a12, a02, a12, a22]
}

/// [`ldl_inverse`], also returning the three scalar pivots `d_r` of the block as
/// computed (before any drop or floor): the solver's continuous regularisation
/// weighs the exact and the regularised solutions by the smallest relative pivot
/// `d_r / A_rr` (module doc of `solver`, "Continuity at the rank threshold").
#[inline(always)]
pub fn ldl_inverse_pivots(
    s: &Block,
    thresh: &[f64; 3],
    floor: &[f64; 3],
    mode: SmallPivot,
) -> (Block, [Pivot; 3], [f64; 3]) {
    let mut piv = [Pivot::Ok; 3];
    // inverse pivots; 0 means "dropped row" (infinite pivot)
    let fix = |d: f64, r: usize, piv: &mut [Pivot; 3]| inverse_pivot(d, r, thresh, floor, mode, piv);
    let d0 = s[0];
    let i0 = fix(d0, 0, &mut piv);
    let l10 = s[3] * i0;
    let l20 = s[6] * i0;
    // with a dropped row (i0 = 0) the multipliers vanish, as for an infinite pivot
    let d1 = s[4] - l10 * s[3];
    let i1 = fix(d1, 1, &mut piv);
    let l21 = (s[7] - l20 * s[3]) * i1;
    let d2 = s[8] - l20 * s[6] - l21 * (s[7] - l20 * s[3]);
    let i2 = fix(d2, 2, &mut piv);
    (inverse_from_factors([l10, l20, l21], [i0, i1, i2]), piv, [d0, d1, d2])
}

/// [`ldl_inverse_pivots`] of a block whose third row and column are padding
/// (`s[2] = s[5] = s[6] = s[7] = 0`, `s[8] = 1`, as the elimination of
/// constraints of at most two rows keeps them), when `R = 2`; the general
/// kernel otherwise. With that padding the general kernel's `l20` and `l21`
/// are +0 and its third pivot is exactly 1 (above any threshold below 1), so
/// its last division and the chain that leads to it are skipped; every other
/// expression is the general kernel's, so the result is bitwise the same.
#[inline(always)]
pub fn ldl_inverse_pivots_r<const R: usize>(
    s: &Block,
    thresh: &[f64; 3],
    floor: &[f64; 3],
    mode: SmallPivot,
) -> (Block, [Pivot; 3], [f64; 3]) {
    if R != 2 || thresh[2].is_nan() || thresh[2] >= 1.0 {
        return ldl_inverse_pivots(s, thresh, floor, mode);
    }
    let mut piv = [Pivot::Ok; 3];
    let fix = |d: f64, r: usize, piv: &mut [Pivot; 3]| inverse_pivot(d, r, thresh, floor, mode, piv);
    let d0 = s[0];
    let i0 = fix(d0, 0, &mut piv);
    let l10 = s[3] * i0;
    let d1 = s[4] - l10 * s[3];
    let i1 = fix(d1, 1, &mut piv);
    // padding: l20 = 0·i0 = +0, l21 = (0 − l20·s3)·i1 = +0, d2 = i2 = 1
    let (l20, l21, i2) = (0.0, 0.0, 1.0);
    (inverse_from_factors([l10, l20, l21], [i0, i1, i2]), piv, [d0, d1, 1.0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldl_inverse_inverts_spd_block() {
        let s = [4.0, 1.0, 0.5, 1.0, 3.0, 0.2, 0.5, 0.2, 2.0];
        let (inv, piv) = ldl_inverse(&s, &[1e-12; 3], &[1.0; 3], SmallPivot::Drop);
        assert_eq!(piv, [Pivot::Ok; 3]);
        let p = mul_ab(&s, &inv);
        for r in 0..3 {
            for c in 0..3 {
                let e = if r == c { 1.0 } else { 0.0 };
                // well-conditioned 3×3: products exact to a few ulps
                assert!((p[3 * r + c] - e).abs() < 1e-14, "{p:?}");
            }
        }
    }

    /// The two-row kernel is the general one, bit for bit, on padded blocks
    /// (both modes, a dropped and a floored pivot included; signs of zeros too).
    #[test]
    fn two_row_kernel_is_the_general_one_on_padded_blocks() {
        let blocks = [
            [4.0, 1.0, 0.0, 1.0, 3.0, 0.0, 0.0, 0.0, 1.0],
            [2.0, -2.0, 0.0, -2.0, 2.0, 0.0, 0.0, 0.0, 1.0],
            [5.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            [1e-20, 3.0, 0.0, 3.0, 7.0, 0.0, 0.0, 0.0, 1.0],
            [1.0, -0.0, 0.0, -0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        ];
        for s in &blocks {
            for mode in [SmallPivot::Drop, SmallPivot::Floor] {
                let (t, f) = ([1e-10; 3], [1e-8; 3]);
                let (a, pa, da) = ldl_inverse_pivots(s, &t, &f, mode);
                let (b, pb, db) = ldl_inverse_pivots_r::<2>(s, &t, &f, mode);
                assert_eq!(pa, pb);
                assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "{s:?}");
                assert_eq!(da.map(f64::to_bits), db.map(f64::to_bits));
            }
        }
    }

    /// The compact 2×2 kernels give the padded `R = 2` kernels' values: the
    /// same bits wherever the value is not zero (zeros may differ in sign
    /// only), on blocks with negative, zero and mixed-magnitude entries.
    /// `set_adbt_r` writes what `add_adbt_r` adds to a zeroed block, bit
    /// for bit, the sign of a zero product included (−0 + +0 is +0), for
    /// R = 2 and 3, leaving the entries outside the leading R × R alone.
    #[test]
    fn set_adbt_is_an_addition_to_zero() {
        let a: Block = [1.0, -0.0, -0.25, 0.0, -1.0, 3.5, 0.5, 2.0, -0.0];
        let b: Block = [-1.0, 0.0, 0.75, -0.0, 1.0, -2.5, 1.5, 0.0, 4.0];
        let bits = |v: &Block| v.map(f64::to_bits);
        for d in [[2.0, 2.0, 5.0], [0.0, 0.0, 3.0], [0.5, 0.5, 0.0]] {
            let mut added = ZERO;
            add_adbt_r::<2>(&mut added, &a, &d, &b);
            let mut set = [7.0; 9];
            set_adbt_r::<2>(&mut set, &a, &d, &b);
            assert_eq!(bits(&[set[0], set[1], 7.0, set[3], set[4], 7.0, 7.0, 7.0, 7.0]), bits(&set));
            assert_eq!(
                [set[0], set[1], set[3], set[4]].map(f64::to_bits),
                [added[0], added[1], added[3], added[4]].map(f64::to_bits)
            );
            let mut added = ZERO;
            add_adbt_r::<3>(&mut added, &a, &d, &b);
            let mut set = [7.0; 9];
            set_adbt_r::<3>(&mut set, &a, &d, &b);
            assert_eq!(bits(&set), bits(&added));
        }
        // a −0 product: the addition to +0 makes it +0, and so does the store
        let (neg, one): (Block, Block) = ([-0.0; 9], [1.0; 9]);
        let mut set = ZERO;
        set_adbt_r::<3>(&mut set, &neg, &[1.0; 3], &one);
        assert!(set.iter().all(|x| x.to_bits() == 0), "+0, not −0");
    }

    #[test]
    fn compact_kernels_are_the_padded_ones() {
        let same = |x: f64, y: f64| x == y && (x == 0.0 || x.to_bits() == y.to_bits());
        let pad = |b: &Block2| [b[0], b[1], 0.0, b[2], b[3], 0.0, 0.0, 0.0, 0.0];
        let blocks: [Block2; 5] =
            [[4.0, 1.0, -0.5, 3.0], [1e-3, -7.0, 2.5, 0.0], [-0.0, 0.1, 0.2, -0.3], [1e10, 3.0, -2.0, 1e-12], [0.0; 4]];
        for a in &blocks {
            for b in &blocks {
                let (pa, pb) = (pad(a), pad(b));
                let m = mul_ab2(a, &pb);
                let mp = mul_ab_r::<2>(&pa, &pb);
                for (x, y) in m.iter().zip(leading2(&mp)) {
                    assert!(same(*x, y), "{a:?} {b:?}");
                }
                let (mut acc, mut accp) = (*b, pb);
                sub_abt2(&mut acc, a, b);
                sub_abt_r::<2>(&mut accp, &pa, &pb);
                assert!(acc.iter().zip(leading2(&accp)).all(|(x, y)| same(*x, y)));
                let mut sym = pb;
                let mut symp = pb;
                sub_abt_sym2(&mut sym, a, b);
                sub_abt_sym_r::<2>(&mut symp, &pa, &pb);
                assert!(sym.iter().zip(&symp).all(|(x, y)| same(*x, *y)));
                let y = [b[0], b[3], 0.0];
                let (mut x, mut xp) = ([a[1], a[2], 0.0], [a[1], a[2], 0.0]);
                sub_mul_vec2(&mut x, a, &y);
                sub_mul_vec_r::<2>(&mut xp, &pa, &y);
                assert!(x.iter().zip(&xp).all(|(u, v)| same(*u, *v)));
                sub_mul_t_vec2(&mut x, a, &y);
                sub_mul_t_vec_r::<2>(&mut xp, &pa, &y);
                assert!(x.iter().zip(&xp).all(|(u, v)| same(*u, *v)));
            }
        }
        // packed views: n compact blocks in the room of n padded ones
        let mut padded = vec![ZERO; 3];
        packed_two_row_blocks_mut(&mut padded)[2] = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(packed_two_row_blocks(&padded).len(), 3);
        assert_eq!(packed_two_row_blocks(&padded)[2], [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn ldl_inverse_drops_dependent_row() {
        // row 1 equals row 0: second pivot is exactly 0
        let s = [2.0, 2.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 1.0];
        let (inv, piv) = ldl_inverse(&s, &[1e-12; 3], &[1.0; 3], SmallPivot::Drop);
        assert_eq!(piv, [Pivot::Ok, Pivot::Small, Pivot::Ok]);
        assert!(inv.iter().all(|v| v.is_finite()));
        assert!((inv[0] - 0.5).abs() < 1e-15 && inv[4] == 0.0 && (inv[8] - 1.0).abs() < 1e-15);
    }
}
