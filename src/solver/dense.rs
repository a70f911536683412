//! Dense reference: dense assembly of A = J M⁻¹ Jᵀ and a dense LDLᵀ with the same
//! rank detection, regularisation and refinement as [`super::gauss`]. O(n³): for
//! tests and benchmarks on small systems only.

use super::sparse::{ConstraintId, NO_BODY, SparseJacobian, check_len};
use super::{SolverError, SolverSettings};

/// Dense row-major A = J M⁻¹ Jᵀ (+ diag(compliance)) of size `n_rows²`, computed
/// independently of the block-sparse pattern (every pair of constraints is tested
/// for shared bodies), so it can serve as a reference.
pub fn dense_matrix(
    jac: &SparseJacobian,
    inv_mass: &[[f64; 3]],
    compliance: Option<&[f64]>,
) -> Result<Vec<f64>, SolverError> {
    check_len("inv_mass", jac.n_bodies(), inv_mass.len())?;
    let m = jac.n_rows();
    let mut a = vec![0.0; m * m];
    let nc = jac.cons.len();
    for c in 0..nc {
        for d in 0..nc {
            let (ic, id) = (&jac.cons[c], &jac.cons[d]);
            for kc in 0..2 {
                for kd in 0..2 {
                    let b = ic.bodies[kc];
                    if b == NO_BODY || b != id.bodies[kd] {
                        continue;
                    }
                    let (jc, jd) = (&jac.blocks[2 * c + kc], &jac.blocks[2 * d + kd]);
                    let w = inv_mass[b as usize];
                    for r in 0..ic.rows as usize {
                        for s in 0..id.rows as usize {
                            let mut v = 0.0;
                            for t in 0..3 {
                                v += jc[3 * r + t] * w[t] * jd[3 * s + t];
                            }
                            a[(ic.row_offset as usize + r) * m + id.row_offset as usize + s] += v;
                        }
                    }
                }
            }
        }
    }
    if let Some(comp) = compliance {
        check_len("compliance", m, comp.len())?;
        for (r, v) in comp.iter().enumerate() {
            a[r * m + r] += v;
        }
    }
    Ok(a)
}

/// Dense LDLᵀ (no pivoting) of a symmetric positive semi-definite matrix, with
/// dependent rows detected, A + ε·diag(A) regularisation and refinement as in
/// [`super::BlockLdl`].
#[derive(Clone, Debug, Default)]
pub struct DenseLdl {
    n: usize,
    a: Vec<f64>,
    /// Strict lower triangle of L, row-major n×n.
    l: Vec<f64>,
    inv_d: Vec<f64>,
    scale: Vec<f64>,
    regularized: bool,
    dependent_rows: Vec<usize>,
}

impl DenseLdl {
    /// Factors the row-major `n × n` matrix `a` (copied: needed for refinement).
    pub fn factor(a: &[f64], n: usize, settings: &SolverSettings) -> Result<Self, SolverError> {
        check_len("a", n * n, a.len())?;
        if a.iter().any(|v| !v.is_finite()) {
            return Err(SolverError::NonFinite("matrix"));
        }
        let diag: Vec<f64> = (0..n).map(|i| a[i * n + i]).collect();
        let pos: Vec<f64> = diag.iter().copied().filter(|v| *v > 0.0).collect();
        let fallback = if pos.is_empty() { 1.0 } else { pos.iter().sum::<f64>() / pos.len() as f64 };
        let scale: Vec<f64> = diag.iter().map(|&v| if v > 0.0 { v } else { fallback }).collect();
        let mut me = Self {
            n,
            a: a.to_vec(),
            l: vec![0.0; n * n],
            inv_d: vec![0.0; n],
            scale: scale.clone(),
            regularized: false,
            dependent_rows: Vec::new(),
        };
        let dep = me.pass(&scale, 0.0, settings.pivot_tolerance, true);
        if !dep.is_empty() {
            me.dependent_rows = dep;
            me.regularized = true;
            me.pass(&scale, settings.regularization, 0.1 * settings.regularization, false);
        }
        Ok(me)
    }

    /// One elimination pass; returns the rows whose pivot was small.
    fn pass(&mut self, scale: &[f64], eps: f64, thresh: f64, drop: bool) -> Vec<usize> {
        let n = self.n;
        let mut small = Vec::new();
        let mut u = vec![0.0; n];
        for i in 0..n {
            // u_k = L_ik d_k for k < i
            for j in 0..i {
                let lj = &self.l[j * n..j * n + j];
                let t = self.a[i * n + j] - u[..j].iter().zip(lj).map(|(x, y)| x * y).sum::<f64>();
                let lij = t * self.inv_d[j];
                self.l[i * n + j] = lij;
                // dropped pivot (inv_d = 0): L_ij = 0 and no contribution
                u[j] = if self.inv_d[j] == 0.0 { 0.0 } else { t };
            }
            let li = &self.l[i * n..i * n + i];
            let d = self.a[i * n + i] + eps * scale[i] - u[..i].iter().zip(li).map(|(x, y)| x * y).sum::<f64>();
            self.inv_d[i] = if d > thresh * scale[i] {
                1.0 / d
            } else {
                small.push(i);
                if drop { 0.0 } else { 1.0 / (eps * scale[i]) }
            };
        }
        small
    }

    /// Rows found dependent on earlier rows (empty for a regular matrix).
    pub fn dependent_rows(&self) -> &[usize] {
        &self.dependent_rows
    }

    /// Constraints owning the dependent rows.
    pub fn dependent_constraints(&self, jac: &SparseJacobian) -> Vec<ConstraintId> {
        let mut out: Vec<ConstraintId> = self
            .dependent_rows
            .iter()
            .filter_map(|&r| {
                jac.cons
                    .iter()
                    .position(|c| (c.row_offset as usize..(c.row_offset + c.rows) as usize).contains(&r))
                    .map(|c| ConstraintId(c as u32))
            })
            .collect();
        out.dedup();
        out
    }

    /// Whether the factor is of A + ε·diag(A).
    pub fn regularized(&self) -> bool {
        self.regularized
    }

    // parallel arrays indexed by the same constraint / row: index loops are clearer
    #[allow(clippy::needless_range_loop)]
    fn solve_once(&self, b: &mut [f64]) {
        let n = self.n;
        for i in 0..n {
            let li = &self.l[i * n..i * n + i];
            b[i] -= li.iter().zip(&b[..i]).map(|(x, y)| x * y).sum::<f64>();
        }
        for i in 0..n {
            b[i] *= self.inv_d[i];
        }
        for i in (0..n).rev() {
            let xi = b[i];
            for k in 0..i {
                b[k] -= self.l[i * n + k] * xi;
            }
        }
    }

    fn residual(&self, b: &[f64], x: &[f64], r: &mut [f64]) -> f64 {
        let n = self.n;
        for i in 0..n {
            r[i] = b[i] - self.a[i * n..(i + 1) * n].iter().zip(x).map(|(p, q)| p * q).sum::<f64>();
        }
        r.iter().map(|v| v * v).sum::<f64>().sqrt()
    }

    /// Solves A x = b, with the same refinement policy as the sparse solver
    /// (projected refinement towards the diag(A)-weighted minimal-norm solution when
    /// regularised; see [`super::BlockLdl::solve`]).
    pub fn solve(&self, b: &[f64], settings: &SolverSettings) -> Result<Vec<f64>, SolverError> {
        check_len("b", self.n, b.len())?;
        let n = self.n;
        let bn = b.iter().map(|v| v * v).sum::<f64>().sqrt();
        let mut r = vec![0.0; n];
        if !self.regularized {
            let mut x = b.to_vec();
            self.solve_once(&mut x);
            let mut res = self.residual(b, &x, &mut r);
            for _ in 0..settings.refine_steps {
                if res <= settings.refine_tolerance * bn {
                    break;
                }
                self.solve_once(&mut r);
                let xn: Vec<f64> = x.iter().zip(&r).map(|(p, q)| p + q).collect();
                let rn = self.residual(b, &xn, &mut r);
                if rn < res {
                    x = xn;
                    res = rn;
                } else {
                    break;
                }
            }
            return Ok(x);
        }
        let eps = settings.regularization;
        let mut x = vec![0.0; n];
        r.copy_from_slice(b);
        let mut res = bn;
        for _ in 0..settings.max_refine_steps {
            if res <= settings.refine_tolerance * bn {
                break;
            }
            let mut dx = r.clone();
            self.solve_once(&mut dx);
            for _ in 0..2 {
                let mut t: Vec<f64> = dx.iter().zip(&self.scale).map(|(d, s)| eps * s * d).collect();
                self.solve_once(&mut t);
                for (d, tt) in dx.iter_mut().zip(&t) {
                    *d -= tt;
                }
            }
            let xn: Vec<f64> = x.iter().zip(&dx).map(|(p, q)| p + q).collect();
            let mut rn_v = vec![0.0; n];
            let rn = self.residual(b, &xn, &mut rn_v);
            if rn < res {
                x = xn;
                r = rn_v;
                let stalled = rn > 0.5 * res;
                res = rn;
                if stalled {
                    break;
                }
            } else {
                break;
            }
        }
        Ok(x)
    }
}
