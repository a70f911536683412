//! Projected Gauss–Seidel over contact blocks (seed 003 §V-C; Box2D's
//! sequential impulses, Catto 2005), solved one contact at a time **as a
//! block**: a contact's normal, friction and rolling-resistance rows are
//! solved together, exactly, by enumerating which bounds are active, and the
//! sweep goes from contact to contact until the impulses stop changing.
//!
//! Per contact, with u the row velocities (vₙ, vₜ, ω_rel), K = J M⁻¹ Jᵀ its
//! 3×3 (or 2×2 without rolling resistance) effective-mass block and b the
//! velocities with this contact's own impulse taken out, the new impulse λ
//! satisfies u = b + Kλ and
//!
//! * λₙ ≥ 0, uₙ ≥ uₙ*, λₙ(uₙ − uₙ*) = 0 (Signorini at velocity level);
//! * |λₜ| ≤ μ λₙ, and uₜ = 0 unless |λₜ| = μ λₙ (Coulomb);
//! * |λᵣ| ≤ μᵣ λₙ, and uᵣ = 0 unless |λᵣ| = μᵣ λₙ (rolling resistance, seed 000).
//!
//! Four cases (nothing clamped; friction clamped; rolling clamped; both) are
//! tried in that order, each a linear solve of at most 3×3; a clamped row
//! takes the sign of the unclamped solution. One contact alone (a ball on a
//! floor, a disc on an incline) is therefore solved exactly in one sweep —
//! that is what makes the closed-form incline and rolling tests hold to
//! 1e-9. Several contacts converge linearly; warm starting (the impulses of
//! the previous step, by contact identity) starts them near the answer.
//!
//! # Cost, and the order of a sweep
//!
//! K is formed once per solve, not per sweep. The 2-row block (no rolling
//! resistance: boxes, polygons, and every body–body pair of non-round
//! shapes) is solved in closed form — Cramer's rule for both rows held, one
//! division with friction at its bound — with no allocation: about 60 flops
//! per contact per sweep (the general elimination with its case list cost
//! 4× that and allocated, 1 s/step on the 100-row pyramid). 3-row blocks
//! keep the general path, on fixed arrays.
//!
//! A sweep goes colour by colour ([`colour`]: greedy colouring of the
//! contact graph, fixed bodies ignored, as Box2D v3's graph colouring).
//! Contacts of one colour share no dynamic body, so they are independent:
//! a colour of at least [`PARALLEL_COLOUR_MIN`] contacts is split over the
//! rayon pool, and each contact sees exactly the velocities it would on one
//! thread — the answer is bitwise the same at every pool size
//! (`tests/contact_parallel.rs`). The colour order is a fixed Gauss–Seidel
//! order, no worse than the pair order it replaces (measured on the
//! pyramids).
//!
//! What this does not change is the convergence rate of Gauss–Seidel on a
//! tall stack: the 100-row pyramid needs about 1,000 sweeps per step to stay
//! within 1 % drift (the weight has to travel 100 boxes down), 100 sweeps
//! leave 6–12 cm of sag after 1 s. Over-relaxation (ω = 1.4, 1.7) and 4
//! sub-steps of 25 sweeps were measured and did not help; Box2D v3's soft
//! step (sub-steps with soft contacts and relaxation) is the known remedy:
//! [`crate::contact::soft_step`], selected per scene (`contacts.solver`).

/// The rows of one contact: Jacobian blocks on its one or two bodies.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactBlock {
    /// First body (index into the per-body arrays).
    pub body_a: usize,
    /// Second body, `None` for a static surface.
    pub body_b: Option<usize>,
    /// Rows: normal, tangent, rolling; each (vx, vy, ω) of body a.
    pub jac_a: [[f64; 3]; 3],
    /// Same for body b.
    pub jac_b: [[f64; 3]; 3],
    /// Rows in use: 2 (normal, tangent) or 3 (with rolling resistance).
    pub rows: usize,
    /// Target normal velocity uₙ* (≥ it after the solve).
    pub target_normal: f64,
    /// Friction coefficient in force for this solve (μ_s or μ_k).
    pub friction: f64,
    /// Rolling-resistance length μᵣ (m).
    pub rolling_resistance: f64,
    /// Accumulated impulses (λₙ, λₜ, λᵣ); warm start on input.
    pub impulse: [f64; 3],
}

/// Outcome of a solve.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PgsReport {
    /// Sweeps made.
    pub iterations: usize,
    /// Largest impulse change in the last sweep.
    pub last_change: f64,
    /// Colours of the contact graph (sets of contacts sharing no dynamic
    /// body), see [`colour`].
    pub colours: usize,
}

/// A colour with at least this many contacts is swept on the rayon pool;
/// smaller ones sequentially (a fork-join costs a few µs, about 100 block
/// solves). The answer is the same either way: see [`solve`].
pub const PARALLEL_COLOUR_MIN: usize = 256;

/// Colours kept in a body's bit mask; contacts that find all of them taken
/// go to one last overflow colour, swept sequentially.
const MAX_COLOURS: usize = 63;

/// K = J M⁻¹ Jᵀ of one block.
pub fn effective_mass(block: &ContactBlock, inv_mass: &[f64]) -> [[f64; 3]; 3] {
    let mut k = [[0.0; 3]; 3];
    let a = block.body_a;
    for i in 0..3 {
        for j in 0..3 {
            let mut s = (0..3).map(|d| block.jac_a[i][d] * inv_mass[3 * a + d] * block.jac_a[j][d]).sum::<f64>();
            if let Some(b) = block.body_b {
                s += (0..3).map(|d| block.jac_b[i][d] * inv_mass[3 * b + d] * block.jac_b[j][d]).sum::<f64>();
            }
            k[i][j] = s;
        }
    }
    k
}

/// v ← v + M⁻¹ Jᵀ Δλ for one block.
#[inline]
pub fn apply_impulse(block: &ContactBlock, inv_mass: &[f64], dl: [f64; 3], v: &mut [f64]) {
    let a = block.body_a;
    for d in 0..3 {
        let s = block.jac_a[0][d] * dl[0] + block.jac_a[1][d] * dl[1] + block.jac_a[2][d] * dl[2];
        v[3 * a + d] += inv_mass[3 * a + d] * s;
    }
    if let Some(b) = block.body_b {
        for d in 0..3 {
            let s = block.jac_b[0][d] * dl[0] + block.jac_b[1][d] * dl[1] + block.jac_b[2][d] * dl[2];
            v[3 * b + d] += inv_mass[3 * b + d] * s;
        }
    }
}

/// Solves the small dense system m x = r (n ≤ 3) by Gaussian elimination with
/// partial pivoting; `None` when singular.
fn solve_small(mut m: [[f64; 3]; 3], mut r: [f64; 3], n: usize) -> Option<[f64; 3]> {
    let scale = (0..n).map(|i| m[i][i].abs()).fold(0.0, f64::max);
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))?;
        if m[p][c].abs() <= 1e-14 * scale {
            return None;
        }
        m.swap(c, p);
        r.swap(c, p);
        for i in c + 1..n {
            let f = m[i][c] / m[c][c];
            for j in c..n {
                m[i][j] -= f * m[c][j];
            }
            r[i] -= f * r[c];
        }
    }
    let mut x = [0.0; 3];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|j| m[i][j] * x[j]).sum();
        x[i] = (r[i] - s) / m[i][i];
    }
    Some(x)
}

/// The exact impulse of a normal + friction block (2 rows), in closed form:
/// the same cases as [`solve_block`] — separating, both rows held (2×2
/// solve by Cramer's rule), friction clamped at ±μλₙ (1×1) — without the
/// general elimination, which costs most of a sweep otherwise.
#[inline]
fn solve_block_2(k: &[[f64; 3]; 3], b: [f64; 3], block: &ContactBlock) -> [f64; 3] {
    if b[0] >= block.target_normal {
        return [0.0; 3];
    }
    let mu = block.friction;
    let (r0, r1) = (block.target_normal - b[0], -b[1]);
    let det = k[0][0] * k[1][1] - k[0][1] * k[1][0];
    let scale = k[0][0].abs().max(k[1][1].abs());
    let mut sign = 1.0;
    if det.abs() > 1e-14 * scale * scale {
        let x0 = (k[1][1] * r0 - k[0][1] * r1) / det;
        let x1 = (k[0][0] * r1 - k[1][0] * r0) / det;
        if x0 >= 0.0 && x1.abs() <= mu * x0 {
            return [x0, x1, 0.0];
        }
        sign = if x1 >= 0.0 { 1.0 } else { -1.0 };
    }
    // Friction at its bound: λₜ = s μ λₙ, (k₀₀ + k₀₁ s μ) λₙ = r₀.
    let m = k[0][0] + k[0][1] * sign * mu;
    if m == 0.0 {
        return [0.0; 3];
    }
    let x0 = r0 / m;
    if x0 < 0.0 { [0.0; 3] } else { [x0, sign * mu * x0, 0.0] }
}

/// The exact impulse of one contact block given the others (see the module
/// docs): `k` its effective mass, `b` its row velocities without its own
/// impulse, `target` (uₙ*, 0, 0).
pub fn solve_block(k: &[[f64; 3]; 3], b: [f64; 3], block: &ContactBlock) -> [f64; 3] {
    let n = block.rows;
    if n == 2 {
        return solve_block_2(k, b, block);
    }
    let bounds = [0.0, block.friction, block.rolling_resistance];
    let rhs = [block.target_normal - b[0], -b[1], -b[2]];
    // Case 0: separating (or just reaching the target) without any impulse.
    if b[0] >= block.target_normal {
        return [0.0; 3];
    }
    // Case 1: all rows held.
    let free = solve_small(*k, rhs, n);
    let mut signs = [0.0, 1.0, 1.0];
    if let Some(x) = free {
        if x[0] >= 0.0 && (1..n).all(|r| x[r].abs() <= bounds[r] * x[0]) {
            return x;
        }
        for r in 1..n {
            signs[r] = if x[r] >= 0.0 { 1.0 } else { -1.0 };
        }
    }
    // Cases 2–4: clamp friction, rolling, or both, to ±bound·λₙ. Rows kept
    // (λₙ first) and rows clamped, as fixed arrays with their lengths.
    let subsets: [([usize; 3], usize, [usize; 2], usize); 3] =
        [([0, 2, 0], 2, [1, 0], 1), ([0, 1, 0], 2, [2, 0], 1), ([0, 0, 0], 1, [1, 2], 2)];
    let mut fallback = None;
    for &(kept, nk, clamped, nc) in &subsets {
        let (rows, clamped) = (&kept[..nk], &clamped[..nc]);
        // Unknowns: λ over `rows` (λₙ first); λ_c = s_c·bound_c·λₙ.
        let mut m = [[0.0; 3]; 3];
        let mut r = [0.0; 3];
        for (i, &ri) in rows.iter().enumerate() {
            r[i] = rhs[ri];
            for (j, &rj) in rows.iter().enumerate() {
                m[i][j] = k[ri][rj];
            }
            for &c in clamped.iter() {
                m[i][0] += k[ri][c] * signs[c] * bounds[c];
            }
        }
        let Some(x) = solve_small(m, r, rows.len()) else { continue };
        let mut full = [0.0; 3];
        for (i, &ri) in rows.iter().enumerate() {
            full[ri] = x[i];
        }
        for &c in clamped.iter() {
            full[c] = signs[c] * bounds[c] * full[0];
        }
        if full[0] < 0.0 {
            continue;
        }
        if rows.iter().skip(1).all(|&ri| full[ri].abs() <= bounds[ri] * full[0] * (1.0 + 1e-12)) {
            return full;
        }
        fallback.get_or_insert(full);
    }
    // No consistent case (only through round-off or a degenerate K): the
    // last fully clamped answer, or separation.
    fallback.unwrap_or([0.0; 3])
}

/// Whether a body moves under impulses (some inverse mass is not zero).
#[inline]
fn dynamic(inv_mass: &[f64], i: usize) -> bool {
    inv_mass[3 * i] != 0.0 || inv_mass[3 * i + 1] != 0.0 || inv_mass[3 * i + 2] != 0.0
}

/// Greedy colouring of the contact graph: contacts of one colour share no
/// dynamic body, so they can be solved at the same time and the result does
/// not depend on their order. Returns the contact indices grouped by colour
/// (colour by colour; within a colour in input order). Fixed bodies do not
/// count (no impulse changes their velocity). A contact finding all
/// `MAX_COLOURS` taken goes to a last colour that is swept sequentially
/// (`true` in the second field).
pub fn colour(blocks: &[ContactBlock], inv_mass: &[f64]) -> Vec<(Vec<usize>, bool)> {
    let bodies = inv_mass.len() / 3;
    let mut used = vec![0u64; bodies];
    let mut colours: Vec<(Vec<usize>, bool)> = Vec::new();
    let mut overflow = Vec::new();
    for (k, b) in blocks.iter().enumerate() {
        let da = dynamic(inv_mass, b.body_a);
        let db = b.body_b.is_some_and(|j| dynamic(inv_mass, j));
        let mut taken = if da { used[b.body_a] } else { 0 };
        if let (true, Some(j)) = (db, b.body_b) {
            taken |= used[j];
        }
        let c = (!taken).trailing_zeros() as usize;
        if c >= MAX_COLOURS {
            overflow.push(k);
            continue;
        }
        if da {
            used[b.body_a] |= 1 << c;
        }
        if let (true, Some(j)) = (db, b.body_b) {
            used[j] |= 1 << c;
        }
        if colours.len() <= c {
            colours.resize_with(c + 1, || (Vec::new(), false));
        }
        colours[c].0.push(k);
    }
    if !overflow.is_empty() {
        colours.push((overflow, true));
    }
    colours
}

/// The velocities shared by the threads of one colour: each contact of a
/// colour reads and writes only the entries of its own dynamic bodies, and no
/// two contacts of a colour share one ([`colour`]), so the accesses are
/// disjoint. Entries are read and written through the raw pointer (never as
/// overlapping `&mut` slices).
struct SharedVelocities {
    ptr: *mut f64,
    len: usize,
}

// SAFETY: see the type's docs — concurrent users touch disjoint entries, and
// the colours are swept one after the other (a join between them).
unsafe impl Sync for SharedVelocities {}

impl SharedVelocities {
    #[inline]
    fn get(&self, i: usize) -> f64 {
        assert!(i < self.len);
        // SAFETY: in bounds; no other thread writes entry i (type docs).
        unsafe { self.ptr.add(i).read() }
    }

    #[inline]
    fn add(&self, i: usize, x: f64) {
        assert!(i < self.len);
        // SAFETY: in bounds; no other thread reads or writes entry i (type docs).
        unsafe { self.ptr.add(i).write(self.ptr.add(i).read() + x) }
    }

    /// Row velocity J·v of one row of a block.
    #[inline]
    fn row(&self, block: &ContactBlock, r: usize) -> f64 {
        let a = 3 * block.body_a;
        let ja = &block.jac_a[r];
        let mut u = ja[0] * self.get(a) + ja[1] * self.get(a + 1) + ja[2] * self.get(a + 2);
        if let Some(b) = block.body_b {
            let (b, jb) = (3 * b, &block.jac_b[r]);
            u += jb[0] * self.get(b) + jb[1] * self.get(b + 1) + jb[2] * self.get(b + 2);
        }
        u
    }

    /// v ← v + M⁻¹ Jᵀ Δλ (as [`apply_impulse`]); fixed bodies are not written.
    #[inline]
    fn apply(&self, block: &ContactBlock, inv_mass: &[f64], dl: [f64; 3]) {
        let a = block.body_a;
        if dynamic(inv_mass, a) {
            for d in 0..3 {
                let s = block.jac_a[0][d] * dl[0] + block.jac_a[1][d] * dl[1] + block.jac_a[2][d] * dl[2];
                self.add(3 * a + d, inv_mass[3 * a + d] * s);
            }
        }
        if let Some(b) = block.body_b
            && dynamic(inv_mass, b)
        {
            for d in 0..3 {
                let s = block.jac_b[0][d] * dl[0] + block.jac_b[1][d] * dl[1] + block.jac_b[2][d] * dl[2];
                self.add(3 * b + d, inv_mass[3 * b + d] * s);
            }
        }
    }
}

/// One block's Gauss–Seidel update on the velocities `v`: returns (largest
/// impulse change, largest impulse).
#[inline]
fn relax(block: &mut ContactBlock, k: &[[f64; 3]; 3], inv_mass: &[f64], v: &SharedVelocities) -> (f64, f64) {
    let mut b = [0.0; 3];
    for (i, bi) in b.iter_mut().enumerate().take(block.rows) {
        let own = k[i][0] * block.impulse[0] + k[i][1] * block.impulse[1] + k[i][2] * block.impulse[2];
        *bi = v.row(block, i) - own;
    }
    let new = solve_block(k, b, block);
    let dl = [new[0] - block.impulse[0], new[1] - block.impulse[1], new[2] - block.impulse[2]];
    v.apply(block, inv_mass, dl);
    block.impulse = new;
    (dl.iter().fold(0.0, |m, x| m.max(x.abs())), new.iter().fold(0.0, |m, x| m.max(x.abs())))
}

/// Projected Gauss–Seidel over all blocks until the largest impulse change
/// in a sweep is below `tolerance` × (largest impulse) or `max_iterations`
/// sweeps are made. The blocks' `impulse` fields hold the warm start on
/// input and the answer on output; `v` (3 per body) is updated with it,
/// including the warm-start impulses.
///
/// A sweep visits the contacts colour by colour ([`colour`]); colours with
/// at least [`PARALLEL_COLOUR_MIN`] contacts are split over the rayon pool.
/// Within a colour no two contacts share a dynamic body, so each contact
/// sees the same velocities whatever the thread count and the answer is
/// bitwise the same on every pool size. Unused rows (`rows` = 2) must have a
/// zero impulse.
pub fn solve(
    blocks: &mut [ContactBlock],
    inv_mass: &[f64],
    v: &mut [f64],
    max_iterations: usize,
    tolerance: f64,
) -> PgsReport {
    use rayon::prelude::*;
    let ks: Vec<[[f64; 3]; 3]> = blocks.iter().map(|b| effective_mass(b, inv_mass)).collect();
    for b in blocks.iter() {
        apply_impulse(b, inv_mass, b.impulse, v);
    }
    let colours = colour(blocks, inv_mass);
    // Blocks and their K in sweep order (colour by colour), so each colour is
    // one contiguous slice that can be split among threads.
    let order: Vec<usize> = colours.iter().flat_map(|c| c.0.iter().copied()).collect();
    let mut sorted: Vec<(ContactBlock, [[f64; 3]; 3])> = order.iter().map(|&k| (blocks[k], ks[k])).collect();
    let mut report = PgsReport { colours: colours.len(), ..PgsReport::default() };
    let parallel = rayon::current_num_threads() > 1;
    let shared = SharedVelocities { ptr: v.as_mut_ptr(), len: v.len() };
    for it in 0..max_iterations {
        let mut change: f64 = 0.0;
        let mut largest: f64 = 0.0;
        let mut offset = 0;
        for (members, overflow) in &colours {
            let slice = &mut sorted[offset..offset + members.len()];
            offset += members.len();
            let (c, l) = if parallel && !overflow && slice.len() >= PARALLEL_COLOUR_MIN {
                let shared = &shared;
                slice
                    .par_chunks_mut(64)
                    .map(|chunk| {
                        chunk.iter_mut().fold((0.0f64, 0.0f64), |(c, l), (block, k)| {
                            let (dc, dl) = relax(block, k, inv_mass, shared);
                            (c.max(dc), l.max(dl))
                        })
                    })
                    .reduce(|| (0.0, 0.0), |x, y| (x.0.max(y.0), x.1.max(y.1)))
            } else {
                slice.iter_mut().fold((0.0f64, 0.0f64), |(c, l), (block, k)| {
                    let (dc, dl) = relax(block, k, inv_mass, &shared);
                    (c.max(dc), l.max(dl))
                })
            };
            change = change.max(c);
            largest = largest.max(l);
        }
        report.iterations = it + 1;
        report.last_change = change;
        if change <= tolerance * largest || largest == 0.0 {
            break;
        }
    }
    for (&k, (block, _)) in order.iter().zip(&sorted) {
        blocks[k].impulse = block.impulse;
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disc (m = 2, r = 0.5, J = ½ m r²) sliding at 3 m/s on a floor with
    /// μ = 0.1 for one impulse step: the block solve clamps friction at
    /// μλₙ and the normal impulse cancels the approach exactly.
    #[test]
    fn one_contact_is_solved_exactly() {
        let (m, r) = (2.0, 0.5);
        let j = 0.5 * m * r * r;
        let inv = [1.0 / m, 1.0 / m, 1.0 / j];
        // Contact point below the centre: r_a = (0, −r); n = (0, 1), t = (−1, 0).
        let block = ContactBlock {
            body_a: 0,
            body_b: None,
            jac_a: [[0.0, 1.0, 0.0], [-1.0, 0.0, -r], [0.0, 0.0, 1.0]],
            jac_b: [[0.0; 3]; 3],
            rows: 2,
            target_normal: 0.0,
            friction: 0.1,
            rolling_resistance: 0.0,
            impulse: [0.0; 3],
        };
        let mut v = vec![3.0, -0.01, 0.0];
        let mut blocks = [block];
        solve(&mut blocks, &inv, &mut v, 10, 1e-15);
        let [ln, lt, _] = blocks[0].impulse;
        assert!((ln - m * 0.01).abs() < 1e-15, "normal impulse {ln}");
        assert!((lt.abs() - 0.1 * ln).abs() < 1e-15, "friction {lt} at its bound");
        assert!(v[1].abs() < 1e-15);
        assert!((v[0] - (3.0 - 0.1 * ln / m)).abs() < 1e-14);
    }
}
