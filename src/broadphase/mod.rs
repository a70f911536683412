//! Broadphase: candidate pairs of overlapping axis-aligned bounding boxes.
//!
//! Three implementations share one definition of a pair, so their outputs can
//! be compared as sets, bit for bit:
//!
//! * [`GridBroadphase`]: a uniform grid, run in parallel with rayon. Each box
//!   is inserted once, at its min-corner cell (counting sort). A half-stencil
//!   sweep over the cells follows, then a radix sort of the pairs. It is the
//!   CPU twin of the WGSL kernels in `shaders/broadphase.wgsl` (see
//!   [`crate::gpu::broadphase`]): it reports the same pair set, although the
//!   GPU uses multi-cell insertion with a reference cell.
//! * [`SweepAndPrune`]: the classic sort along x and sweep, the reference.
//! * [`brute_force_pairs`]: all N(N−1)/2 tests, for small N in tests.
//!
//! [`FatBoxPairs`] keeps the pairs between calls (Box2D v3's fat boxes): a
//! superset found by one of the above on boxes grown by a margin, updated
//! only for the bodies that left their grown box, and filtered each call
//! down to the pairs of the current boxes — the same pairs in the same
//! order as a run from scratch (the contact stage's broadphase).
//!
//! **Pair semantics.** `[i, j]` with `i < j` is reported iff both boxes are
//! valid ([`Aabb::is_valid`]: finite-or-infinite but not NaN, `min ≤ max` on
//! both axes) and their closed intervals intersect on both axes, i.e.
//! `a.min.x ≤ b.max.x ∧ b.min.x ≤ a.max.x ∧ a.min.y ≤ b.max.y ∧ b.min.y ≤ a.max.y`
//! (touching counts). Every pair is reported once; outputs are sorted
//! lexicographically.

mod fat;
mod grid;
mod sap;

pub use fat::{FAT_MARGIN, FatBoxPairs, FatPairStats, Rebuild};
#[cfg(test)]
pub(crate) use grid::CELL_COORD_LIMIT;
pub use grid::{GridBroadphase, GridParams};
pub use sap::SweepAndPrune;

use bytemuck::{Pod, Zeroable};
use glam::Vec2;

/// An axis-aligned bounding box in f32, laid out as the WGSL struct
/// `Aabb { min: vec2<f32>, max: vec2<f32> }` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Aabb {
    /// Lower-left corner (m).
    pub min: Vec2,
    /// Upper-right corner (m).
    pub max: Vec2,
}

impl Aabb {
    /// The box from `min` to `max`.
    #[inline]
    pub fn new(min: Vec2, max: Vec2) -> Self {
        Self { min, max }
    }

    /// The tight box around a disc of centre `center` and radius `radius`.
    #[inline]
    pub fn from_disc(center: Vec2, radius: f32) -> Self {
        let r = Vec2::splat(radius);
        Self { min: center - r, max: center + r }
    }

    /// A box takes part in the broadphase iff `min ≤ max` on both axes (which
    /// also rules out NaN). Invalid boxes never pair.
    #[inline]
    pub fn is_valid(&self) -> bool {
        self.min.x <= self.max.x && self.min.y <= self.max.y
    }

    /// Whether the two closed boxes intersect (touching counts); the one
    /// predicate that all broadphases use, see the module documentation.
    #[inline]
    pub fn overlaps(&self, other: &Aabb) -> bool {
        self.is_valid()
            && other.is_valid()
            && self.min.x <= other.max.x
            && other.min.x <= self.max.x
            && self.min.y <= other.max.y
            && other.min.y <= self.max.y
    }
}

/// Fills `out` with the boxes of discs (`centers[i]`, `radii[i]`).
///
/// # Panics
/// If the two slices differ in length.
pub fn aabbs_from_discs(centers: &[Vec2], radii: &[f32], out: &mut Vec<Aabb>) {
    assert_eq!(centers.len(), radii.len(), "one radius per disc centre");
    out.clear();
    out.extend(centers.iter().zip(radii).map(|(&c, &r)| Aabb::from_disc(c, r)));
}

/// Every overlapping pair by testing all N(N−1)/2 pairs; sorted. For tests.
pub fn brute_force_pairs(aabbs: &[Aabb]) -> Vec<[u32; 2]> {
    let mut pairs = Vec::new();
    for (i, a) in aabbs.iter().enumerate() {
        for (j, b) in aabbs.iter().enumerate().skip(i + 1) {
            if a.overlaps(b) {
                pairs.push([i as u32, j as u32]);
            }
        }
    }
    pairs
}
