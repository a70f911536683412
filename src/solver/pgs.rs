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
}

fn row_velocity(block: &ContactBlock, v: &[f64], r: usize) -> f64 {
    let a = block.body_a;
    let mut u = (0..3).map(|k| block.jac_a[r][k] * v[3 * a + k]).sum::<f64>();
    if let Some(b) = block.body_b {
        u += (0..3).map(|k| block.jac_b[r][k] * v[3 * b + k]).sum::<f64>();
    }
    u
}

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
pub fn apply_impulse(block: &ContactBlock, inv_mass: &[f64], dl: [f64; 3], v: &mut [f64]) {
    let a = block.body_a;
    for d in 0..3 {
        let s: f64 = (0..3).map(|r| block.jac_a[r][d] * dl[r]).sum();
        v[3 * a + d] += inv_mass[3 * a + d] * s;
    }
    if let Some(b) = block.body_b {
        for d in 0..3 {
            let s: f64 = (0..3).map(|r| block.jac_b[r][d] * dl[r]).sum();
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

/// The exact impulse of one contact block given the others (see the module
/// docs): `k` its effective mass, `b` its row velocities without its own
/// impulse, `target` (uₙ*, 0, 0).
pub fn solve_block(k: &[[f64; 3]; 3], b: [f64; 3], block: &ContactBlock) -> [f64; 3] {
    let n = block.rows;
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
    // Cases 2–4: clamp friction, rolling, or both, to ±bound·λₙ.
    let subsets: &[&[usize]] = if n == 3 { &[&[1], &[2], &[1, 2]] } else { &[&[1]] };
    let mut fallback = None;
    for clamped in subsets {
        let rows: Vec<usize> = (0..n).filter(|r| !clamped.contains(r)).collect();
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

/// Projected Gauss–Seidel over all blocks until the largest impulse change
/// in a sweep is below `tolerance` × (largest impulse) or `max_iterations`
/// sweeps are made. The blocks' `impulse` fields hold the warm start on
/// input and the answer on output; `v` (3 per body) is updated with it,
/// including the warm-start impulses.
pub fn solve(
    blocks: &mut [ContactBlock],
    inv_mass: &[f64],
    v: &mut [f64],
    max_iterations: usize,
    tolerance: f64,
) -> PgsReport {
    let ks: Vec<[[f64; 3]; 3]> = blocks.iter().map(|b| effective_mass(b, inv_mass)).collect();
    for b in blocks.iter() {
        apply_impulse(b, inv_mass, b.impulse, v);
    }
    let mut report = PgsReport::default();
    for it in 0..max_iterations {
        let mut change: f64 = 0.0;
        let mut largest: f64 = 0.0;
        for (block, k) in blocks.iter_mut().zip(&ks) {
            let u = [row_velocity(block, v, 0), row_velocity(block, v, 1), row_velocity(block, v, 2)];
            let mut b = [0.0; 3];
            for i in 0..3 {
                b[i] = u[i] - (0..3).map(|j| k[i][j] * block.impulse[j]).sum::<f64>();
            }
            let new = solve_block(k, b, block);
            let dl = [new[0] - block.impulse[0], new[1] - block.impulse[1], new[2] - block.impulse[2]];
            apply_impulse(block, inv_mass, dl, v);
            block.impulse = new;
            change = change.max(dl.iter().fold(0.0, |m, x| m.max(x.abs())));
            largest = largest.max(new.iter().fold(0.0, |m, x| m.max(x.abs())));
        }
        report = PgsReport { iterations: it + 1, last_change: change };
        if change <= tolerance * largest || largest == 0.0 {
            break;
        }
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
