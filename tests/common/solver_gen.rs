//! Generators of constraint systems for the solver tests and benchmarks.
#![allow(dead_code)]

use mx2d::solver::SparseJacobian;

/// Small deterministic generator (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn f(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [a, b).
    pub fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.f()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Velocity Jacobian of the anchor point at offset `r` of a body: v + ω × r =
/// [I₂ | −r⊥] (vx, vy, ω), i.e. rows (1, 0, −r_y) and (0, 1, r_x).
pub fn point_block(r: [f64; 2], sign: f64) -> [[f64; 3]; 3] {
    [[sign, 0.0, -sign * r[1]], [0.0, sign, sign * r[0]], [0.0; 3]]
}

/// Random inverse masses of well-conditioned bodies (mass 0.5–2, inertia 0.05–0.5).
pub fn inv_masses(rng: &mut Rng, n: usize) -> Vec<[f64; 3]> {
    (0..n)
        .map(|_| {
            let m = rng.range(0.5, 2.0);
            let j = rng.range(0.05, 0.5);
            [1.0 / m, 1.0 / m, 1.0 / j]
        })
        .collect()
}

fn anchor(rng: &mut Rng) -> [f64; 2] {
    [rng.range(-0.6, 0.6), rng.range(-0.6, 0.6)]
}

/// Revolute joint between bodies a and b (2 rows), random anchors.
pub fn push_revolute(jac: &mut SparseJacobian, rng: &mut Rng, a: usize, b: usize) {
    let ra = anchor(rng);
    let rb = anchor(rng);
    jac.push(2, &[(a, point_block(ra, 1.0)), (b, point_block(rb, -1.0))]).expect("valid revolute");
}

/// Revolute joint of body a to the world (2 rows).
pub fn push_pin(jac: &mut SparseJacobian, rng: &mut Rng, a: usize) {
    let ra = anchor(rng);
    jac.push(2, &[(a, point_block(ra, 1.0))]).expect("valid pin");
}

/// Chain of n bodies: body 0 pinned to the world, body i hinged to body i − 1.
pub fn chain(rng: &mut Rng, n: usize, jac: &mut SparseJacobian) {
    jac.clear(n);
    push_pin(jac, rng, 0);
    for i in 1..n {
        push_revolute(jac, rng, i - 1, i);
    }
}

/// Random tree of n bodies (parent of i uniform in 0..i), root pinned.
pub fn tree(rng: &mut Rng, n: usize, jac: &mut SparseJacobian) {
    jac.clear(n);
    push_pin(jac, rng, 0);
    for i in 1..n {
        let p = rng.below(i);
        push_revolute(jac, rng, p, i);
    }
}

/// A tree built to fool plain minimum degree: hubs with many leaves, joined by
/// long paths (path nodes have degree 2 but are not simplicial).
pub fn hub_tree(rng: &mut Rng, hubs: usize, leaves: usize, path: usize, jac: &mut SparseJacobian) -> usize {
    let n = hubs * (1 + leaves) + (hubs - 1) * path;
    jac.clear(n);
    let mut next = 0;
    let mut prev_hub = None;
    for _ in 0..hubs {
        let hub = next;
        next += 1;
        if let Some(ph) = prev_hub {
            let mut last = ph;
            for _ in 0..path {
                push_revolute(jac, rng, last, next);
                last = next;
                next += 1;
            }
            push_revolute(jac, rng, last, hub);
        }
        for _ in 0..leaves {
            push_revolute(jac, rng, hub, next);
            next += 1;
        }
        prev_hub = Some(hub);
    }
    assert_eq!(next, n);
    n
}

/// w × h grid of bodies at unit spacing (jittered), joints at the (jittered) edge
/// midpoints between 4-neighbours: many closed loops. Body 0 pinned.
/// `all_revolute`: every joint is revolute (2 rows): ≈ 4 rows per body for 3
/// degrees of freedom, so the system is heavily redundant. Otherwise joints
/// along x are revolute and joints along y are pin-in-slot (1 row: the anchors stay
/// on a line of random direction), ≈ 3 rows per body: generically full rank.
pub fn grid(rng: &mut Rng, w: usize, h: usize, jac: &mut SparseJacobian, all_revolute: bool) {
    let n = w * h;
    jac.clear(n);
    let pos: Vec<[f64; 2]> =
        (0..n).map(|k| [(k % w) as f64 + rng.range(-0.1, 0.1), (k / w) as f64 + rng.range(-0.1, 0.1)]).collect();
    push_pin(jac, rng, 0);
    let mut hinge = |jac: &mut SparseJacobian, a: usize, b: usize, slot: bool| {
        let mid = [
            0.5 * (pos[a][0] + pos[b][0]) + rng.range(-0.05, 0.05),
            0.5 * (pos[a][1] + pos[b][1]) + rng.range(-0.05, 0.05),
        ];
        let ra = [mid[0] - pos[a][0], mid[1] - pos[a][1]];
        let rb = [mid[0] - pos[b][0], mid[1] - pos[b][1]];
        if slot {
            let th = rng.range(0.0, std::f64::consts::PI);
            let nrm = [th.cos(), th.sin()];
            let row = |r: [f64; 2], s: f64| {
                [[s * nrm[0], s * nrm[1], s * (r[0] * nrm[1] - r[1] * nrm[0])], [0.0; 3], [0.0; 3]]
            };
            jac.push(1, &[(a, row(ra, 1.0)), (b, row(rb, -1.0))]).expect("valid slot");
        } else {
            jac.push(2, &[(a, point_block(ra, 1.0)), (b, point_block(rb, -1.0))]).expect("valid hinge");
        }
    };
    for y in 0..h {
        for x in 0..w {
            let k = y * w + x;
            if x + 1 < w {
                hinge(jac, k, k + 1, false);
            }
            if y + 1 < h {
                hinge(jac, k, k + w, !all_revolute);
            }
        }
    }
}

/// Closed ring of n bodies (one loop), body 0 pinned.
pub fn ring(rng: &mut Rng, n: usize, jac: &mut SparseJacobian) {
    chain(rng, n, jac);
    push_revolute(jac, rng, n - 1, 0);
}

/// Random graph: m constraints of 1–2 random rows between random distinct pairs
/// of n bodies, plus a few one-body constraints; `inv_mass` gets a few static bodies.
pub fn random_graph(rng: &mut Rng, n: usize, m: usize, jac: &mut SparseJacobian, inv_mass: &mut [[f64; 3]]) {
    jac.clear(n);
    for im in inv_mass.iter_mut() {
        if rng.f() < 0.05 {
            *im = [0.0; 3];
        }
    }
    for _ in 0..m {
        let rows = 1 + rng.below(2);
        let blk = |rng: &mut Rng| {
            let mut b = [[0.0; 3]; 3];
            for row in b.iter_mut().take(rows) {
                for v in row.iter_mut() {
                    *v = rng.range(-1.0, 1.0);
                }
            }
            b
        };
        if rng.f() < 0.05 {
            let a = rng.below(n);
            let ba = blk(rng);
            jac.push(rows, &[(a, ba)]).expect("valid");
        } else {
            let a = rng.below(n);
            let mut b = rng.below(n);
            while b == a {
                b = rng.below(n);
            }
            let ba = blk(rng);
            let bb = blk(rng);
            jac.push(rows, &[(a, ba), (b, bb)]).expect("valid");
        }
    }
}
