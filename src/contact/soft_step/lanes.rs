//! The soft constraints of one colour four manifolds wide (Box2D v3's
//! `b2ContactConstraintSIMD`, in f64): each group of [`LANES`] manifolds is
//! stored as structure of arrays (`[f64; 4]` per field, 32-byte aligned),
//! its bodies' velocities and motions are gathered into four-wide values
//! (transposes), the kernel runs on them, and the velocities are scattered
//! back. The kernel is written once over its lane arithmetic ([`Wide`]):
//! plain lane-wise arrays ([`F4`], which LLVM packs as it sees fit) on the
//! portable path, one AVX register per value written with the intrinsics
//! (`avx::A4`) where the processor has AVX — left to LLVM, the arrays had
//! been packed partly per lane (a lane's x and y in one `xmm`), at 288 ns
//! per group and sub-step against 186 now (one thread, the 100-row pyramid).
//!
//! Bitwise the same as the scalar kernel ([`SoftManifold::run`]): each lane
//! performs the same IEEE operations in the same order (no fused
//! multiply-add, so the bits do not depend on the machine; `max`, the clamp
//! and the comparisons keep the scalar's NaN and signed-zero results), a
//! point a lane does not have (a 1-point manifold's second) is computed and
//! then discarded by a lane select, rolling resistance is skipped where no
//! lane has it (the selects would keep every old value), and the
//! manifolds of one colour share no dynamic body, so reading the four
//! manifolds' velocities before writing any changes nothing. The sequential
//! overflow colour, whose manifolds may share bodies, is run one lane at a
//! time through the scalar kernel.

use std::ops::{Add, Mul, Neg, Sub};

use glam::DVec2;

use super::manifold::{NONE, Pass, Shared, SoftManifold, SoftPoint, SoftTotals};
use super::{BodyDelta, SoftState};

/// Manifolds per group.
pub(super) const LANES: usize = 4;

/// One f64 per lane, aligned to its 32 bytes (a field of a group never
/// straddles two cache lines, and the AVX kernel loads it aligned).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(align(32))]
pub(super) struct F4([f64; LANES]);

/// A lane condition: all bits set (true) or none (false) per lane, so that
/// a select is three bitwise operations on the packed register.
type Mask = [u64; LANES];

/// `[f(0), f(1), f(2), f(3)]`, unrolled.
macro_rules! lanes {
    (|$l:ident| $e:expr) => {
        [
            {
                let $l = 0;
                $e
            },
            {
                let $l = 1;
                $e
            },
            {
                let $l = 2;
                $e
            },
            {
                let $l = 3;
                $e
            },
        ]
    };
}

/// The lane arithmetic the kernel is written in: [`F4`] (plain arrays,
/// which LLVM packs as it sees fit) or, on x86-64 with AVX, [`avx::A4`] (one
/// 256-bit register, explicit `vmulpd`/`vaddpd`/…). Both perform, per lane,
/// the IEEE operation of the scalar kernel's f64 expression (no fused
/// multiply-add), and `max`, `clamp`, `gt` give the bits of `f64::max`, the
/// kernel's clamp and `>` (NaN included), so the two give the same bits.
trait Wide: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self> {
    /// A lane condition.
    type Cond: Copy;
    /// The four lanes of a stored field.
    fn load(x: &F4) -> Self;
    /// Stores the four lanes into a field.
    fn store(self, x: &mut F4);
    /// A stored lane condition.
    fn load_cond(m: &Mask) -> Self::Cond;
    fn splat(x: f64) -> Self;
    fn to_lanes(self) -> [f64; LANES];
    /// Column `k` of the four rows, for each `k` (a 4×4 transpose: four
    /// bodies' motions into one value per component).
    fn transpose(rows: [&[f64; 4]; LANES]) -> [Self; 4];
    /// The four bodies' velocities (vx, vy, ω each): one value per component.
    fn gather_velocities(rows: [&[f64; 3]; LANES]) -> [Self; 3];
    /// Writes lane `l`'s velocity (x, y, w) to `rows[l]` where `write[l]`.
    ///
    /// # Safety
    ///
    /// Each `rows[l]` with `write[l]` is valid for writes of three f64 and
    /// touched by no one else meanwhile.
    unsafe fn scatter_velocities(x: Self, y: Self, w: Self, rows: [*mut f64; LANES], write: [bool; LANES]);
    /// `f64::max` per lane.
    fn max(self, o: Self) -> Self;
    /// `if x < lo { lo } else { x }`, then `if x > hi { hi } else { x }` per
    /// lane (`f64::clamp` without its check that `lo ≤ hi`: the bounds here
    /// are ±μλ with λ ≥ 0).
    fn clamp(self, lo: Self, hi: Self) -> Self;
    fn gt(self, o: Self) -> Self::Cond;
    /// `on ? a : b` per lane.
    fn select(on: Self::Cond, a: Self, b: Self) -> Self;
    /// Whether some lane's condition holds.
    fn any(on: Self::Cond) -> bool;
}

impl F4 {
    const ZERO: F4 = F4([0.0; LANES]);
}

impl Wide for F4 {
    type Cond = Mask;

    #[inline(always)]
    fn load(x: &F4) -> F4 {
        *x
    }

    #[inline(always)]
    fn store(self, x: &mut F4) {
        *x = self;
    }

    #[inline(always)]
    fn load_cond(m: &Mask) -> Mask {
        *m
    }

    #[inline(always)]
    fn splat(x: f64) -> F4 {
        F4([x; LANES])
    }

    #[inline(always)]
    fn to_lanes(self) -> [f64; LANES] {
        self.0
    }

    #[inline(always)]
    fn transpose(rows: [&[f64; 4]; LANES]) -> [F4; 4] {
        std::array::from_fn(|k| F4(lanes!(|l| rows[l][k])))
    }

    #[inline(always)]
    fn gather_velocities(rows: [&[f64; 3]; LANES]) -> [F4; 3] {
        std::array::from_fn(|k| F4(lanes!(|l| rows[l][k])))
    }

    #[inline(always)]
    unsafe fn scatter_velocities(x: F4, y: F4, w: F4, rows: [*mut f64; LANES], write: [bool; LANES]) {
        for l in 0..LANES {
            if write[l] {
                // SAFETY: the caller's.
                unsafe { rows[l].cast::<[f64; 3]>().write([x.0[l], y.0[l], w.0[l]]) };
            }
        }
    }

    #[inline(always)]
    fn max(self, o: F4) -> F4 {
        F4(lanes!(|l| self.0[l].max(o.0[l])))
    }

    #[inline(always)]
    fn clamp(self, lo: F4, hi: F4) -> F4 {
        F4(lanes!(|l| {
            let x = if self.0[l] < lo.0[l] { lo.0[l] } else { self.0[l] };
            if x > hi.0[l] { hi.0[l] } else { x }
        }))
    }

    #[inline(always)]
    fn gt(self, o: F4) -> Mask {
        lanes!(|l| if self.0[l] > o.0[l] { u64::MAX } else { 0 })
    }

    #[inline(always)]
    fn select(on: Mask, a: F4, b: F4) -> F4 {
        F4(lanes!(|l| f64::from_bits((a.0[l].to_bits() & on[l]) | (b.0[l].to_bits() & !on[l]))))
    }

    #[inline(always)]
    fn any(on: Mask) -> bool {
        on.iter().any(|&m| m != 0)
    }
}

impl Add for F4 {
    type Output = F4;
    #[inline(always)]
    fn add(self, o: F4) -> F4 {
        F4(lanes!(|l| self.0[l] + o.0[l]))
    }
}

impl Sub for F4 {
    type Output = F4;
    #[inline(always)]
    fn sub(self, o: F4) -> F4 {
        F4(lanes!(|l| self.0[l] - o.0[l]))
    }
}

impl Mul for F4 {
    type Output = F4;
    #[inline(always)]
    fn mul(self, o: F4) -> F4 {
        F4(lanes!(|l| self.0[l] * o.0[l]))
    }
}

impl Neg for F4 {
    type Output = F4;
    #[inline(always)]
    fn neg(self) -> F4 {
        F4(lanes!(|l| -self.0[l]))
    }
}

/// The lanes as one AVX register. Left to itself, LLVM packed the portable
/// kernel's arrays partly the wrong way (an `xmm` of one lane's x and y, per
/// lane, with shuffles in between) and spilled; written with the intrinsics,
/// each operation is one 256-bit instruction on the four lanes.
///
/// Every function here is `#[inline(always)]` and must only be reached from
/// code compiled with AVX enabled ([`sweep_avx`], entered after the
/// run-time check), where the intrinsics inline to single instructions.
#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;
    use std::ops::{Add, Mul, Neg, Sub};

    use super::{F4, LANES, Mask, Wide};

    /// Four f64 lanes in a `ymm` register.
    #[derive(Clone, Copy)]
    pub(super) struct A4(__m256d);

    // SAFETY (every `unsafe` block below): the intrinsics need AVX, which
    // the processor has: these functions are only inlined into
    // `sweep_avx`, called after `is_x86_feature_detected!("avx")`; the
    // loads and stores read and write four f64 within the referenced array.
    impl Wide for A4 {
        type Cond = __m256d;

        #[inline(always)]
        fn load(x: &F4) -> A4 {
            A4(unsafe { _mm256_load_pd(x.0.as_ptr()) })
        }

        #[inline(always)]
        fn store(self, x: &mut F4) {
            unsafe { _mm256_store_pd(x.0.as_mut_ptr(), self.0) }
        }

        #[inline(always)]
        fn load_cond(m: &Mask) -> __m256d {
            unsafe { _mm256_loadu_pd(m.as_ptr().cast()) }
        }

        #[inline(always)]
        fn splat(x: f64) -> A4 {
            A4(unsafe { _mm256_set1_pd(x) })
        }

        #[inline(always)]
        fn to_lanes(self) -> [f64; LANES] {
            let mut x = [0.0; LANES];
            unsafe { _mm256_storeu_pd(x.as_mut_ptr(), self.0) };
            x
        }

        #[inline(always)]
        fn transpose(rows: [&[f64; 4]; LANES]) -> [A4; 4] {
            unsafe {
                let r = rows.map(|r| _mm256_loadu_pd(r.as_ptr()));
                // [r0[0] r1[0] r0[2] r1[2]], [r0[1] r1[1] r0[3] r1[3]], same for r2, r3.
                let (t0, t1) = (_mm256_unpacklo_pd(r[0], r[1]), _mm256_unpackhi_pd(r[0], r[1]));
                let (t2, t3) = (_mm256_unpacklo_pd(r[2], r[3]), _mm256_unpackhi_pd(r[2], r[3]));
                [
                    A4(_mm256_permute2f128_pd(t0, t2, 0x20)),
                    A4(_mm256_permute2f128_pd(t1, t3, 0x20)),
                    A4(_mm256_permute2f128_pd(t0, t2, 0x31)),
                    A4(_mm256_permute2f128_pd(t1, t3, 0x31)),
                ]
            }
        }

        #[inline(always)]
        fn gather_velocities(rows: [&[f64; 3]; LANES]) -> [A4; 3] {
            unsafe {
                // [x y] of each body; [x0 y0 x2 y2] and [x1 y1 x3 y3].
                let p = rows.map(|r| _mm_loadu_pd(r.as_ptr()));
                let even = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(p[0]), p[2]);
                let odd = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(p[1]), p[3]);
                [
                    A4(_mm256_unpacklo_pd(even, odd)),
                    A4(_mm256_unpackhi_pd(even, odd)),
                    A4(_mm256_setr_pd(rows[0][2], rows[1][2], rows[2][2], rows[3][2])),
                ]
            }
        }

        #[inline(always)]
        unsafe fn scatter_velocities(x: A4, y: A4, w: A4, rows: [*mut f64; LANES], write: [bool; LANES]) {
            // SAFETY: AVX as above; the rows are the caller's.
            unsafe {
                // [x0 y0 x2 y2] and [x1 y1 x3 y3].
                let (even, odd) = (_mm256_unpacklo_pd(x.0, y.0), _mm256_unpackhi_pd(x.0, y.0));
                let xy = [
                    _mm256_castpd256_pd128(even),
                    _mm256_castpd256_pd128(odd),
                    _mm256_extractf128_pd::<1>(even),
                    _mm256_extractf128_pd::<1>(odd),
                ];
                let w = w.to_lanes();
                for l in 0..LANES {
                    if write[l] {
                        _mm_storeu_pd(rows[l], xy[l]);
                        rows[l].add(2).write(w[l]);
                    }
                }
            }
        }

        /// `f64::max(a, b)` is `b` where `a` is NaN, else `vmaxpd(b, a)`
        /// (`b > a ? b : a`: `a` on a tie, so `-0.0.max(0.0)` is `-0.0`, as
        /// the scalar's lowering gives).
        #[inline(always)]
        fn max(self, o: A4) -> A4 {
            unsafe {
                let m = _mm256_max_pd(o.0, self.0);
                let nan = _mm256_cmp_pd::<_CMP_UNORD_Q>(self.0, self.0);
                A4(_mm256_or_pd(_mm256_and_pd(nan, o.0), _mm256_andnot_pd(nan, m)))
            }
        }

        #[inline(always)]
        fn clamp(self, lo: A4, hi: A4) -> A4 {
            unsafe {
                let x = _mm256_blendv_pd(self.0, lo.0, _mm256_cmp_pd::<_CMP_LT_OQ>(self.0, lo.0));
                A4(_mm256_blendv_pd(x, hi.0, _mm256_cmp_pd::<_CMP_GT_OQ>(x, hi.0)))
            }
        }

        #[inline(always)]
        fn gt(self, o: A4) -> __m256d {
            unsafe { _mm256_cmp_pd::<_CMP_GT_OQ>(self.0, o.0) }
        }

        /// Conditions are all bits set or none per lane, so the sign bit
        /// that `vblendvpd` reads is the condition.
        #[inline(always)]
        fn select(on: __m256d, a: A4, b: A4) -> A4 {
            A4(unsafe { _mm256_blendv_pd(b.0, a.0, on) })
        }

        #[inline(always)]
        fn any(on: __m256d) -> bool {
            unsafe { _mm256_movemask_pd(on) != 0 }
        }
    }

    impl Add for A4 {
        type Output = A4;
        #[inline(always)]
        fn add(self, o: A4) -> A4 {
            A4(unsafe { _mm256_add_pd(self.0, o.0) })
        }
    }

    impl Sub for A4 {
        type Output = A4;
        #[inline(always)]
        fn sub(self, o: A4) -> A4 {
            A4(unsafe { _mm256_sub_pd(self.0, o.0) })
        }
    }

    impl Mul for A4 {
        type Output = A4;
        #[inline(always)]
        fn mul(self, o: A4) -> A4 {
            A4(unsafe { _mm256_mul_pd(self.0, o.0) })
        }
    }

    impl Neg for A4 {
        type Output = A4;
        /// The sign bit flipped, as f64's `-x`.
        #[inline(always)]
        fn neg(self) -> A4 {
            A4(unsafe { _mm256_xor_pd(self.0, _mm256_set1_pd(-0.0)) })
        }
    }
}

/// A 2D vector per lane (the operations of `glam::DVec2`, same order);
/// stored as [`F4`]s, computed on as any [`Wide`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct V4<W = F4> {
    x: W,
    y: W,
}

impl V4 {
    #[inline(always)]
    fn load<W: Wide>(&self) -> V4<W> {
        V4 { x: W::load(&self.x), y: W::load(&self.y) }
    }
}

impl<W: Wide> V4<W> {
    /// `DVec2::dot`: x·x' + y·y'.
    #[inline(always)]
    fn dot(self, o: V4<W>) -> W {
        self.x * o.x + self.y * o.y
    }

    /// `DVec2::perp`: (−y, x).
    #[inline(always)]
    fn perp(self) -> V4<W> {
        V4 { x: -self.y, y: self.x }
    }

    #[inline(always)]
    fn select(on: W::Cond, a: V4<W>, b: V4<W>) -> V4<W> {
        V4 { x: W::select(on, a.x, b.x), y: W::select(on, a.y, b.y) }
    }
}

impl<W: Wide> Add for V4<W> {
    type Output = V4<W>;
    #[inline(always)]
    fn add(self, o: V4<W>) -> V4<W> {
        V4 { x: self.x + o.x, y: self.y + o.y }
    }
}

impl<W: Wide> Sub for V4<W> {
    type Output = V4<W>;
    #[inline(always)]
    fn sub(self, o: V4<W>) -> V4<W> {
        V4 { x: self.x - o.x, y: self.y - o.y }
    }
}

/// A scalar per lane times a vector per lane (`f64 * DVec2`).
#[inline(always)]
fn scale<W: Wide>(s: W, v: V4<W>) -> V4<W> {
    V4 { x: s * v.x, y: s * v.y }
}

/// `manifold::cross`: a.x·b.y − a.y·b.x.
#[inline(always)]
fn cross<W: Wide>(a: V4<W>, b: V4<W>) -> W {
    a.x * b.y - a.y * b.x
}

/// `manifold::cross_sv`: ω × r = (−ω·r.y, ω·r.x).
#[inline(always)]
fn cross_sv<W: Wide>(w: W, r: V4<W>) -> V4<W> {
    V4 { x: -w * r.y, y: w * r.x }
}

/// `manifold::moved`: how far the anchor `r` moved with the body's motion `d`.
#[inline(always)]
fn moved<W: Wide>(d: &[W; 4], r: V4<W>) -> V4<W> {
    V4 { x: d[0] + d[2] * r.x - d[3] * r.y - r.x, y: d[1] + d[3] * r.x + d[2] * r.y - r.y }
}

/// `on ? a : b`, or `a` where the condition is the constant all-true
/// (`FULL`: no select; the same bits).
#[inline(always)]
fn keep<W: Wide, const FULL: bool>(on: W::Cond, a: W, b: W) -> W {
    if FULL { a } else { W::select(on, a, b) }
}

/// A body's velocity (vx, vy, ω) as `Shared::get` reads it: at rest for
/// [`NONE`].
#[inline(always)]
fn velocity_of(v: &Shared, body: u32) -> &[f64; 3] {
    const AT_REST: [f64; 3] = [0.0; 3];
    if body == NONE {
        return &AT_REST;
    }
    let i = 3 * body as usize;
    assert!(i + 2 < v.len);
    // SAFETY: in bounds; no other thread writes these entries while the
    // colour is swept (`Shared`'s docs), and the reference ends before this
    // group writes them.
    unsafe { &*v.ptr.add(i).cast::<[f64; 3]>() }
}

/// Where a body's velocity lies (`Shared::set`'s place; null for [`NONE`],
/// which is never written: it is not dynamic).
#[inline(always)]
fn velocity_row(v: &Shared, body: u32) -> *mut f64 {
    if body == NONE {
        return std::ptr::null_mut();
    }
    let i = 3 * body as usize;
    assert!(i + 2 < v.len);
    // SAFETY: in bounds (checked just above).
    unsafe { v.ptr.add(i) }
}

/// The velocities of the lanes' two bodies, gathered.
#[derive(Clone, Copy)]
struct Velocities<W> {
    va: V4<W>,
    wa: W,
    vb: V4<W>,
    wb: W,
}

/// The lanes' inverse masses and inertias.
#[derive(Clone, Copy)]
struct InverseMasses<W> {
    ma: W,
    ia: W,
    mb: W,
    ib: W,
}

/// `SoftManifold::run`'s `apply` (impulse `p` at anchors `ra`, `rb`), kept
/// only in the lanes `on` (all, when `FULL`).
#[inline(always)]
fn apply<W: Wide, const FULL: bool>(
    on: W::Cond,
    p: V4<W>,
    ra: V4<W>,
    rb: V4<W>,
    m: &InverseMasses<W>,
    vel: &mut Velocities<W>,
) {
    let va = vel.va + scale(m.ma, p);
    vel.va = if FULL { va } else { V4::select(on, va, vel.va) };
    vel.wa = keep::<W, FULL>(on, vel.wa + m.ia * cross(ra, p), vel.wa);
    let vb = vel.vb - scale(m.mb, p);
    vel.vb = if FULL { vb } else { V4::select(on, vb, vel.vb) };
    vel.wb = keep::<W, FULL>(on, vel.wb - m.ib * cross(rb, p), vel.wb);
}

/// One point of [`LANES`] manifolds (fields as [`SoftPoint`]'s).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct PointLanes {
    normal: V4,
    ra: V4,
    rb: V4,
    base_separation: F4,
    normal_mass: F4,
    tangent_mass: F4,
    normal_impulse: F4,
    tangent_impulse: F4,
    friction: F4,
}

/// [`LANES`] manifolds of one colour, structure of arrays (fields as
/// [`SoftManifold`]'s). A colour's last group is padded with empty lanes:
/// no point, both bodies [`NONE`] (no dynamic body: read as at rest,
/// never written).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct SoftLanes {
    a: [u32; LANES],
    b: [u32; LANES],
    inv_mass_a: F4,
    inv_inertia_a: F4,
    inv_mass_b: F4,
    inv_inertia_b: F4,
    rolling_resistance: F4,
    rolling_mass: F4,
    rolling_impulse: F4,
    dynamic_a: [bool; LANES],
    dynamic_b: [bool; LANES],
    static_partner: [bool; LANES],
    count: [u8; LANES],
    /// Whether each lane has its first, second point (`count` as masks).
    has_point: [Mask; 2],
    /// `static_partner` as a mask.
    static_mask: Mask,
    points: [PointLanes; 2],
}

impl SoftLanes {
    /// A group of empty lanes.
    pub(super) const EMPTY: SoftLanes = SoftLanes {
        a: [NONE; LANES],
        b: [NONE; LANES],
        inv_mass_a: F4::ZERO,
        inv_inertia_a: F4::ZERO,
        inv_mass_b: F4::ZERO,
        inv_inertia_b: F4::ZERO,
        rolling_resistance: F4::ZERO,
        rolling_mass: F4::ZERO,
        rolling_impulse: F4::ZERO,
        dynamic_a: [false; LANES],
        dynamic_b: [false; LANES],
        static_partner: [false; LANES],
        count: [0; LANES],
        has_point: [[0; LANES]; 2],
        static_mask: [0; LANES],
        points: [PointLanes {
            normal: V4 { x: F4::ZERO, y: F4::ZERO },
            ra: V4 { x: F4::ZERO, y: F4::ZERO },
            rb: V4 { x: F4::ZERO, y: F4::ZERO },
            base_separation: F4::ZERO,
            normal_mass: F4::ZERO,
            tangent_mass: F4::ZERO,
            normal_impulse: F4::ZERO,
            tangent_impulse: F4::ZERO,
            friction: F4::ZERO,
        }; 2],
    };

    /// Writes manifold `m` into lane `l`.
    pub(super) fn set(&mut self, l: usize, m: &SoftManifold) {
        // SAFETY: `self` is a valid group, borrowed exclusively.
        unsafe { Self::write_lane(self, l, m) }
    }

    /// Writes manifold `m` into lane `l` of the group at `group`, through
    /// raw pointers to that lane's entries only (no reference to the group
    /// is formed), so that other threads may write the group's other lanes
    /// meanwhile: the prepare builds the manifolds of a colour from several
    /// threads, two neighbours in a group possibly from two.
    ///
    /// # Safety
    ///
    /// `group` points to a valid group, valid for writes, and no other
    /// thread reads or writes its lane `l` (`l < LANES`, checked) during the call.
    pub(super) unsafe fn write_lane(group: *mut SoftLanes, l: usize, m: &SoftManifold) {
        use std::ptr::addr_of_mut;
        assert!(l < LANES);
        let mask = |on: bool| if on { u64::MAX } else { 0 };
        // SAFETY: each place below is lane `l` of a field of `*group`
        // (array indexing of a place forms no reference); the caller
        // guarantees `group` valid and the lane not touched by another thread.
        unsafe {
            addr_of_mut!((*group).a[l]).write(m.a);
            addr_of_mut!((*group).b[l]).write(m.b);
            addr_of_mut!((*group).inv_mass_a.0[l]).write(m.inv_mass_a);
            addr_of_mut!((*group).inv_inertia_a.0[l]).write(m.inv_inertia_a);
            addr_of_mut!((*group).inv_mass_b.0[l]).write(m.inv_mass_b);
            addr_of_mut!((*group).inv_inertia_b.0[l]).write(m.inv_inertia_b);
            addr_of_mut!((*group).rolling_resistance.0[l]).write(m.rolling_resistance);
            addr_of_mut!((*group).rolling_mass.0[l]).write(m.rolling_mass);
            addr_of_mut!((*group).rolling_impulse.0[l]).write(m.rolling_impulse);
            addr_of_mut!((*group).dynamic_a[l]).write(m.dynamic_a);
            addr_of_mut!((*group).dynamic_b[l]).write(m.dynamic_b);
            addr_of_mut!((*group).static_partner[l]).write(m.static_partner);
            addr_of_mut!((*group).count[l]).write(m.count);
            addr_of_mut!((*group).has_point[0][l]).write(mask(m.count > 0));
            addr_of_mut!((*group).has_point[1][l]).write(mask(m.count > 1));
            addr_of_mut!((*group).static_mask[l]).write(mask(m.static_partner));
            for (k, p) in m.points.iter().enumerate() {
                let q = addr_of_mut!((*group).points[k]);
                addr_of_mut!((*q).normal.x.0[l]).write(p.normal.x);
                addr_of_mut!((*q).normal.y.0[l]).write(p.normal.y);
                addr_of_mut!((*q).ra.x.0[l]).write(p.ra.x);
                addr_of_mut!((*q).ra.y.0[l]).write(p.ra.y);
                addr_of_mut!((*q).rb.x.0[l]).write(p.rb.x);
                addr_of_mut!((*q).rb.y.0[l]).write(p.rb.y);
                addr_of_mut!((*q).base_separation.0[l]).write(p.base_separation);
                addr_of_mut!((*q).normal_mass.0[l]).write(p.normal_mass);
                addr_of_mut!((*q).tangent_mass.0[l]).write(p.tangent_mass);
                addr_of_mut!((*q).normal_impulse.0[l]).write(p.normal_impulse);
                addr_of_mut!((*q).tangent_impulse.0[l]).write(p.tangent_impulse);
                addr_of_mut!((*q).friction.0[l]).write(p.friction);
            }
        }
    }

    /// Makes lane `l` empty, as in [`SoftLanes::EMPTY`].
    pub(super) fn clear_lane(&mut self, l: usize) {
        self.set(l, &SoftManifold { a: NONE, b: NONE, ..SoftManifold::default() });
    }

    /// The manifold in lane `l`.
    pub(super) fn get(&self, l: usize) -> SoftManifold {
        let point = |q: &PointLanes| SoftPoint {
            normal: DVec2::new(q.normal.x.0[l], q.normal.y.0[l]),
            ra: DVec2::new(q.ra.x.0[l], q.ra.y.0[l]),
            rb: DVec2::new(q.rb.x.0[l], q.rb.y.0[l]),
            base_separation: q.base_separation.0[l],
            normal_mass: q.normal_mass.0[l],
            tangent_mass: q.tangent_mass.0[l],
            normal_impulse: q.normal_impulse.0[l],
            tangent_impulse: q.tangent_impulse.0[l],
            friction: q.friction.0[l],
        };
        SoftManifold {
            a: self.a[l],
            b: self.b[l],
            inv_mass_a: self.inv_mass_a.0[l],
            inv_inertia_a: self.inv_inertia_a.0[l],
            inv_mass_b: self.inv_mass_b.0[l],
            inv_inertia_b: self.inv_inertia_b.0[l],
            dynamic_a: self.dynamic_a[l],
            dynamic_b: self.dynamic_b[l],
            rolling_resistance: self.rolling_resistance.0[l],
            rolling_mass: self.rolling_mass.0[l],
            rolling_impulse: self.rolling_impulse.0[l],
            static_partner: self.static_partner[l],
            count: self.count[l],
            points: [point(&self.points[0]), point(&self.points[1])],
        }
    }

    /// Every lane has two points (the pyramid's usual group): the point
    /// selects can be left out.
    #[inline(always)]
    fn full(&self) -> bool {
        self.has_point[1] == [u64::MAX; LANES]
    }

    /// The warm start, solve or relax pass ([`SoftManifold::run`]'s) on the
    /// four lanes at once, in the lane arithmetic `W`: velocities gathered,
    /// solved, scattered. The lanes' dynamic bodies must all differ. `FULL`:
    /// [`SoftLanes::full`] holds, and the point selects are left out (a
    /// select on all-true is its first value: the same bits).
    #[inline(always)]
    fn run<W: Wide, const FULL: bool>(&mut self, pass: Pass, v: &Shared, delta: &[BodyDelta], st: &SoftState) {
        let m = InverseMasses {
            ma: W::load(&self.inv_mass_a),
            ia: W::load(&self.inv_inertia_a),
            mb: W::load(&self.inv_mass_b),
            ib: W::load(&self.inv_inertia_b),
        };
        let has = [W::load_cond(&self.has_point[0]), W::load_cond(&self.has_point[1])];
        // The current separation of each point (solve and relax), from the
        // bodies' motions, before the velocities are gathered: it reads no
        // velocity, and the motions are then no longer held.
        let mut separation = [W::splat(0.0); 2];
        if pass != Pass::WarmStart {
            const IDENTITY: BodyDelta = [0.0, 0.0, 1.0, 0.0];
            let motion = |body: u32| if body == NONE { &IDENTITY } else { &delta[body as usize] };
            let da = W::transpose(lanes!(|l| motion(self.a[l])));
            let db = W::transpose(lanes!(|l| motion(self.b[l])));
            for (s, p) in separation.iter_mut().zip(&self.points) {
                let (ra, rb) = (p.ra.load::<W>(), p.rb.load::<W>());
                *s = W::load(&p.base_separation) + p.normal.load::<W>().dot(moved(&da, ra) - moved(&db, rb));
            }
        }
        let [vax, vay, wa] = W::gather_velocities(lanes!(|l| velocity_of(v, self.a[l])));
        let [vbx, vby, wb] = W::gather_velocities(lanes!(|l| velocity_of(v, self.b[l])));
        let mut vel = Velocities { va: V4 { x: vax, y: vay }, wa, vb: V4 { x: vbx, y: vby }, wb };
        match pass {
            Pass::WarmStart => {
                for (k, p) in self.points.iter().enumerate() {
                    let n = p.normal.load::<W>();
                    let t = n.perp();
                    let imp = scale(W::load(&p.normal_impulse), n) + scale(W::load(&p.tangent_impulse), t);
                    apply::<W, FULL>(has[k], imp, p.ra.load(), p.rb.load(), &m, &mut vel);
                }
                let rolling = W::load(&self.rolling_impulse);
                vel.wa = vel.wa + m.ia * rolling;
                vel.wb = vel.wb - m.ib * rolling;
            }
            Pass::Solve | Pass::Relax | Pass::RelaxAccumulate => {
                let use_bias = pass == Pass::Solve;
                let static_mask = W::load_cond(&self.static_mask);
                let pick = |f: fn(&super::Softness) -> f64| {
                    W::select(static_mask, W::splat(f(&st.static_soft)), W::splat(f(&st.soft)))
                };
                let inv_h = W::splat(1.0 / st.h);
                let mut total_normal = W::splat(0.0);
                for (k, p) in self.points.iter_mut().enumerate() {
                    let on = has[k];
                    let s = separation[k];
                    // As the scalar kernel: speculative, soft (solve) or rigid (relax).
                    let speculative = s.gt(W::splat(0.0));
                    let (bias, mass_scale, impulse_scale) = if use_bias {
                        let mass_scale_soft = pick(|s| s.mass_scale);
                        let bias_rate = pick(|s| s.bias_rate);
                        (
                            W::select(
                                speculative,
                                s * inv_h,
                                (mass_scale_soft * bias_rate * s).max(W::splat(-st.push_speed)),
                            ),
                            W::select(speculative, W::splat(1.0), mass_scale_soft),
                            W::select(speculative, W::splat(0.0), pick(|s| s.impulse_scale)),
                        )
                    } else {
                        (W::select(speculative, s * inv_h, W::splat(0.0)), W::splat(1.0), W::splat(0.0))
                    };
                    let (n, ra, rb) = (p.normal.load::<W>(), p.ra.load::<W>(), p.rb.load::<W>());
                    let dv = vel.va + cross_sv(vel.wa, ra) - vel.vb - cross_sv(vel.wb, rb);
                    let vn = dv.dot(n);
                    let old = W::load(&p.normal_impulse);
                    let impulse = -W::load(&p.normal_mass) * (mass_scale * vn + bias) - impulse_scale * old;
                    let new = (old + impulse).max(W::splat(0.0));
                    let d = new - old;
                    keep::<W, FULL>(on, new, old).store(&mut p.normal_impulse);
                    total_normal = keep::<W, FULL>(on, total_normal + new, total_normal);
                    apply::<W, FULL>(on, scale(d, n), ra, rb, &m, &mut vel);
                }
                let friction_here = !use_bias || st.relax_iterations == 0;
                if friction_here {
                    for (k, p) in self.points.iter_mut().enumerate() {
                        let on = has[k];
                        let (n, ra, rb) = (p.normal.load::<W>(), p.ra.load::<W>(), p.rb.load::<W>());
                        let t = n.perp();
                        let dv = vel.va + cross_sv(vel.wa, ra) - vel.vb - cross_sv(vel.wb, rb);
                        let vt = dv.dot(t);
                        let bound = W::load(&p.friction) * W::load(&p.normal_impulse);
                        let old = W::load(&p.tangent_impulse);
                        let new = (old - W::load(&p.tangent_mass) * vt).clamp(-bound, bound);
                        let d = new - old;
                        keep::<W, FULL>(on, new, old).store(&mut p.tangent_impulse);
                        apply::<W, FULL>(on, scale(d, t), ra, rb, &m, &mut vel);
                    }
                    // Rolling resistance, where some lane has it (where none
                    // has, every select below keeps the old values: skipped,
                    // the same bits).
                    let rolling_mass = W::load(&self.rolling_mass);
                    let on = rolling_mass.gt(W::splat(0.0));
                    if W::any(on) {
                        let old = W::load(&self.rolling_impulse);
                        let bound = W::load(&self.rolling_resistance) * total_normal;
                        let new = (old - rolling_mass * (vel.wa - vel.wb)).clamp(-bound, bound);
                        let d = new - old;
                        W::select(on, new, old).store(&mut self.rolling_impulse);
                        vel.wa = W::select(on, vel.wa + m.ia * d, vel.wa);
                        vel.wb = W::select(on, vel.wb - m.ib * d, vel.wb);
                    }
                }
            }
            Pass::Restitution => unreachable!("the restitution pass runs lane by lane"),
        }
        // SAFETY: each row is a dynamic body's velocity, in bounds
        // (`velocity_row`), and the lanes' dynamic bodies differ and are
        // touched by no one else during the colour's phase (`Shared`).
        unsafe {
            let rows = lanes!(|l| velocity_row(v, self.a[l]));
            W::scatter_velocities(vel.va.x, vel.va.y, vel.wa, rows, self.dynamic_a);
            let rows = lanes!(|l| velocity_row(v, self.b[l]));
            W::scatter_velocities(vel.vb.x, vel.vb.y, vel.wb, rows, self.dynamic_b);
        }
    }

    /// `pass` on the lanes one at a time through the scalar kernel (the
    /// restitution pass; the overflow colour, whose manifolds may share a body).
    fn run_each(
        &mut self,
        totals: &mut [SoftTotals],
        pass: Pass,
        v: &Shared,
        delta: &[BodyDelta],
        st: &SoftState,
        threshold: f64,
    ) {
        for (l, t) in totals.iter_mut().enumerate() {
            let mut m = self.get(l);
            m.run(t, pass, v, delta, st, threshold);
            self.set(l, &m);
        }
    }

    /// Adds each lane's sub-step impulses to its step totals
    /// ([`SoftManifold::accumulate`]).
    pub(super) fn accumulate(&self, totals: &mut [SoftTotals]) {
        for (l, t) in totals.iter_mut().enumerate() {
            for k in 0..self.count[l] as usize {
                t.normal[k] += self.points[k].normal_impulse.0[l];
                t.tangent[k] += self.points[k].tangent_impulse.0[l];
            }
            t.rolling += self.rolling_impulse.0[l];
        }
    }
}

/// What one pass over a colour's groups reads besides the groups and their
/// totals: the pass, the bodies' velocities and motions, the soft step's
/// settings, the restitution threshold, and whether the colour's manifolds
/// share no dynamic body (every colour but the sequential overflow one), so
/// that a group runs four wide.
#[derive(Clone, Copy)]
pub(super) struct SweepInputs<'a> {
    pub pass: Pass,
    pub v: &'a Shared,
    pub delta: &'a [BodyDelta],
    pub st: &'a SoftState,
    pub threshold: f64,
    pub independent: bool,
}

/// One pass over consecutive groups of a colour, with their manifolds'
/// totals (`totals[LANES·g..]` beside group `g`).
pub(super) fn sweep(groups: &mut [SoftLanes], totals: &mut [SoftTotals], inputs: &SweepInputs<'_>) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx") {
        // SAFETY: the processor has AVX (checked just above).
        unsafe { sweep_avx(groups, totals, inputs) };
        return;
    }
    sweep_lanes::<F4>(groups, totals, inputs);
}

/// [`sweep_lanes`] compiled for AVX, in [`avx::A4`] (256-bit `vmulpd`: a
/// group's four lanes in one register; no FMA, so the same bits as without AVX).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn sweep_avx(groups: &mut [SoftLanes], totals: &mut [SoftTotals], inputs: &SweepInputs<'_>) {
    sweep_lanes::<avx::A4>(groups, totals, inputs);
}

/// The pass is matched once, outside the loop: each arm runs an inlined
/// copy of [`SoftLanes::run`] with the pass a constant, so the sweep
/// carries no per-group branch on it.
#[inline(always)]
fn sweep_lanes<W: Wide>(groups: &mut [SoftLanes], totals: &mut [SoftTotals], inputs: &SweepInputs<'_>) {
    let &SweepInputs { pass, v, delta, st, threshold, independent } = inputs;
    if !independent || pass == Pass::Restitution {
        for (g, t) in groups.iter_mut().zip(totals.chunks_mut(LANES)) {
            g.run_each(t, pass, v, delta, st, threshold);
        }
        return;
    }
    macro_rules! each {
        ($pass:expr) => {
            for g in groups.iter_mut() {
                if g.full() {
                    g.run::<W, true>($pass, v, delta, st);
                } else {
                    g.run::<W, false>($pass, v, delta, st);
                }
            }
        };
    }
    match pass {
        Pass::WarmStart => each!(Pass::WarmStart),
        Pass::Solve => each!(Pass::Solve),
        Pass::Relax => each!(Pass::Relax),
        Pass::RelaxAccumulate => {
            for (g, t) in groups.iter_mut().zip(totals.chunks_mut(LANES)) {
                if g.full() {
                    g.run::<W, true>(Pass::RelaxAccumulate, v, delta, st);
                } else {
                    g.run::<W, false>(Pass::RelaxAccumulate, v, delta, st);
                }
                g.accumulate(t);
            }
        }
        Pass::Restitution => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::soft_step::Softness;

    use crate::math::Lcg;

    /// Seven manifolds on distinct bodies (two groups, the second padded):
    /// one and two points, body–body, against a fixed body and against a
    /// surface, speculative and penetrating points, rolling resistance in
    /// some, warm impulses. A 1-point manifold's second point holds values
    /// too (which the scalar kernel never reads): the lanes must discard
    /// what they compute with them.
    fn scene(seed: u64, all_two: bool) -> (Vec<SoftManifold>, Vec<f64>, Vec<BodyDelta>) {
        let mut r = Lcg(seed);
        let n = 7;
        let bodies = 2 * n;
        let v: Vec<f64> = (0..3 * bodies).map(|_| r.uniform(-1.0, 1.0)).collect();
        let delta: Vec<BodyDelta> = (0..bodies)
            .map(|_| {
                let phi = r.uniform(-0.05, 0.05);
                [r.uniform(-0.01, 0.01), r.uniform(-0.01, 0.01), phi.cos(), phi.sin()]
            })
            .collect();
        let manifolds = (0..n)
            .map(|i| {
                let a = 2 * i as u32;
                let (b, dynamic_b) = match i % 3 {
                    0 => (a + 1, true),
                    1 => (a + 1, false),
                    _ => (NONE, false),
                };
                let count = if all_two { 2 } else { 1 + (i % 2) as u8 };
                let mut m = SoftManifold {
                    a,
                    b,
                    inv_mass_a: r.uniform(0.5, 2.0),
                    inv_inertia_a: r.uniform(0.5, 5.0),
                    inv_mass_b: if dynamic_b { r.uniform(0.5, 2.0) } else { 0.0 },
                    inv_inertia_b: if dynamic_b { r.uniform(0.5, 5.0) } else { 0.0 },
                    dynamic_a: true,
                    dynamic_b,
                    rolling_resistance: r.uniform(0.0, 0.1),
                    rolling_mass: if i % 4 == 1 { r.uniform(0.1, 1.0) } else { 0.0 },
                    rolling_impulse: r.uniform(-0.01, 0.01),
                    static_partner: !dynamic_b,
                    count,
                    points: [SoftPoint::default(); 2],
                };
                for p in &mut m.points {
                    let angle = r.uniform(0.0, std::f64::consts::TAU);
                    *p = SoftPoint {
                        normal: DVec2::new(angle.cos(), angle.sin()),
                        ra: DVec2::new(r.uniform(-0.5, 0.5), r.uniform(-0.5, 0.5)),
                        rb: if b == NONE {
                            DVec2::ZERO
                        } else {
                            DVec2::new(r.uniform(-0.5, 0.5), r.uniform(-0.5, 0.5))
                        },
                        base_separation: r.uniform(-0.02, 0.01),
                        normal_mass: r.uniform(0.2, 1.0),
                        tangent_mass: r.uniform(0.2, 1.0),
                        normal_impulse: r.uniform(0.0, 0.5),
                        tangent_impulse: r.uniform(-0.1, 0.1),
                        friction: r.uniform(0.1, 0.8),
                    };
                }
                m
            })
            .collect();
        (manifolds, v, delta)
    }

    /// Every pass four wide gives the bits of the scalar kernel, manifold by
    /// manifold (velocities, impulses, totals), with and without AVX, with
    /// friction in the relax sweeps and in the solve, in groups with a
    /// 1-point manifold (masked) and in groups of 2-point ones only (the
    /// unmasked copy).
    #[test]
    fn four_lanes_give_the_bits_of_the_scalar_kernel() {
        let passes = [Pass::WarmStart, Pass::Solve, Pass::Relax, Pass::RelaxAccumulate, Pass::Restitution];
        for (seed, all_two) in (0..40).map(|k| (k / 2, k % 2 == 1)) {
            for relax_iterations in [0, 1] {
                let st = SoftState {
                    h: 1.0 / 240.0,
                    soft: Softness::new(30.0, 10.0, 1.0 / 240.0),
                    static_soft: Softness::new(60.0, 10.0, 1.0 / 240.0),
                    push_speed: 3.0,
                    relax_iterations,
                    ..SoftState::default()
                };
                let (mut scalar, v0, delta) = scene(seed, all_two);
                assert_eq!(
                    all_two,
                    SoftLanes::full(&{
                        let mut g = SoftLanes::EMPTY;
                        for (l, m) in scalar.iter().take(LANES).enumerate() {
                            g.set(l, m);
                        }
                        g
                    })
                );
                let mut totals: Vec<SoftTotals> = (0..scalar.len())
                    .map(|i| SoftTotals {
                        restitution: 0.5,
                        relative_velocity: [-2.0, -0.5 * i as f64],
                        normal: [0.1, 0.0],
                        ..SoftTotals::default()
                    })
                    .collect();
                let mut groups = vec![SoftLanes::EMPTY; scalar.len().div_ceil(LANES)];
                for (i, m) in scalar.iter().enumerate() {
                    groups[i / LANES].set(i % LANES, m);
                }
                let mut lane_totals = totals.clone();
                let (mut v_scalar, mut v_lanes) = (v0.clone(), v0.clone());
                let mut v_portable = v0.clone();
                let mut portable_groups = groups.clone();
                let mut portable_totals = totals.clone();
                for pass in passes {
                    let shared = Shared { ptr: v_scalar.as_mut_ptr(), len: v_scalar.len() };
                    for (m, t) in scalar.iter_mut().zip(&mut totals) {
                        m.run(t, pass, &shared, &delta, &st, 0.1);
                    }
                    let shared = Shared { ptr: v_lanes.as_mut_ptr(), len: v_lanes.len() };
                    sweep(
                        &mut groups,
                        &mut lane_totals,
                        &SweepInputs { pass, v: &shared, delta: &delta, st: &st, threshold: 0.1, independent: true },
                    );
                    let shared = Shared { ptr: v_portable.as_mut_ptr(), len: v_portable.len() };
                    sweep_lanes::<F4>(
                        &mut portable_groups,
                        &mut portable_totals,
                        &SweepInputs { pass, v: &shared, delta: &delta, st: &st, threshold: 0.1, independent: true },
                    );
                    let bits = |x: &[f64]| x.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    let what = format!(
                        "seed {seed}, two points {all_two}, relax_iterations {relax_iterations}, pass {}",
                        pass as u8
                    );
                    assert_eq!(bits(&v_scalar), bits(&v_lanes), "velocities, {what}");
                    assert_eq!(bits(&v_scalar), bits(&v_portable), "velocities without AVX, {what}");
                    for (i, m) in scalar.iter().enumerate() {
                        let (lane, portable) =
                            (groups[i / LANES].get(i % LANES), portable_groups[i / LANES].get(i % LANES));
                        assert_eq!(format!("{m:?}"), format!("{lane:?}"), "manifold {i}, {what}");
                        assert_eq!(format!("{m:?}"), format!("{portable:?}"), "manifold {i} without AVX, {what}");
                    }
                    assert_eq!(format!("{totals:?}"), format!("{lane_totals:?}"), "totals, {what}");
                    assert_eq!(format!("{totals:?}"), format!("{portable_totals:?}"), "totals without AVX, {what}");
                }
                // The padding lane stayed empty.
                assert_eq!(groups[1].a[3], NONE);
                assert_eq!(groups[1].count[3], 0);
            }
        }
    }

    /// Not a check: the time of one sub-step's sweeps (warm start, solve,
    /// relax with the step totals) over the 100-row pyramid's lane groups
    /// after 60 steps at Box2D's settings, on one thread: wall time per group
    /// and pass, the median and the least of 40 rounds of 5 sub-steps (the
    /// least is the one a loaded machine disturbs least). Run with
    /// `cargo test --release --lib sweep_speed -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn sweep_speed_on_the_pyramid() {
        let overrides = [
            format!("piles[0].rows={}", std::env::var("SWEEP_SPEED_ROWS").unwrap_or_else(|_| "100".into())),
            "contacts.solver.substeps=4".to_string(),
            "contacts.solver.hertz=30".to_string(),
        ];
        let scene = crate::scene::Scene::load(std::path::Path::new("scenes/pyramid.ron"), &overrides).expect("scene");
        let mut world = scene.build_world().expect("world");
        for _ in 0..60 {
            world.step().expect("step");
        }
        let mut v = world.state_vectors().1.to_vec();
        let soft = &mut world.contacts.soft;
        let by_colour0 = std::mem::take(&mut soft.by_colour);
        let totals_by_colour0 = std::mem::take(&mut soft.totals_by_colour);
        let st = &*soft;
        let groups: usize = by_colour0.iter().map(Vec::len).sum();
        let v0 = v.clone();
        let passes = [Pass::WarmStart, Pass::Solve, Pass::RelaxAccumulate];
        // Per round: ns per group for each pass, and for the three together.
        let mut rounds: Vec<[f64; 4]> = Vec::new();
        for _ in 0..40 {
            // Each round from the state after the 60 steps (repeated
            // sweeps without the position update drive the velocities
            // towards subnormal values).
            let (mut by_colour, mut totals_by_colour) = (by_colour0.clone(), totals_by_colour0.clone());
            v.copy_from_slice(&v0);
            let shared = Shared { ptr: v.as_mut_ptr(), len: v.len() };
            let mut round = [0.0; 4];
            for _ in 0..5 {
                for (k, &pass) in passes.iter().enumerate() {
                    let start = std::time::Instant::now();
                    for (c, (colour, totals)) in by_colour.iter_mut().zip(&mut totals_by_colour).enumerate() {
                        let inputs = SweepInputs {
                            pass,
                            v: &shared,
                            delta: &st.delta,
                            st,
                            threshold: 0.0,
                            independent: c < super::super::manifold::MAX_COLOURS as usize,
                        };
                        sweep(colour, totals, &inputs);
                    }
                    round[k] += start.elapsed().as_secs_f64() * 1e9 / (5.0 * groups as f64);
                }
            }
            round[3] = round[0] + round[1] + round[2];
            rounds.push(round);
        }
        let median = |k: usize| {
            let mut x: Vec<f64> = rounds.iter().map(|r| r[k]).collect();
            x.sort_by(f64::total_cmp);
            (x[x.len() / 2], x[0])
        };
        let [w, s, r, all] = [0, 1, 2, 3].map(median);
        println!(
            "sweep: {groups} groups, ns per group, median (min): warm start {:.1} ({:.1}), solve {:.1} ({:.1}), \
             relax {:.1} ({:.1}), the three {:.1} ({:.1})",
            w.0, w.1, s.0, s.1, r.0, r.1, all.0, all.1
        );
    }

    /// The AVX lane operations whose scalar counterparts have special cases
    /// (`f64::max`'s NaN and signed-zero results, the clamp, `>`, negation,
    /// selects) give the portable lanes' bits on every pair of special and
    /// ordinary values; random scenes hardly ever meet these cases. Fails
    /// if, say, `max`'s operands are swapped (−0.0 against 0.0).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx_lane_operations_give_the_scalar_bits() {
        if !std::is_x86_feature_detected!("avx") {
            return;
        }
        use avx::A4;
        let special = [0.0, -0.0, 1.0, -1.0, 0.5, f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-310];
        let bits = |x: [f64; LANES]| x.map(f64::to_bits);
        // SAFETY: the processor has AVX (checked above).
        #[target_feature(enable = "avx")]
        unsafe fn check(a: F4, b: F4, c: F4, bits: impl Fn([f64; LANES]) -> [u64; LANES]) {
            let (x, y, z) = (A4::load(&a), A4::load(&b), A4::load(&c));
            let on = a.gt(b);
            let what = format!("{a:?} {b:?} {c:?}");
            assert_eq!(bits(x.max(y).to_lanes()), bits(a.max(b).0), "max {what}");
            assert_eq!(bits(x.clamp(-z, z).to_lanes()), bits(a.clamp(-c, c).0), "clamp {what}");
            assert_eq!(bits(x.clamp(y, z).to_lanes()), bits(a.clamp(b, c).0), "clamp {what}");
            assert_eq!(bits((-x).to_lanes()), bits((-a).0), "neg {what}");
            let on_wide = x.gt(y);
            assert_eq!(A4::any(on_wide), F4::any(on), "gt {what}");
            assert_eq!(bits(A4::select(on_wide, y, z).to_lanes()), bits(F4::select(on, b, c).0), "select {what}");
        }
        for (i, &p) in special.iter().enumerate() {
            for (j, &q) in special.iter().enumerate() {
                let a = F4([p, q, special[(i + j) % special.len()], -p]);
                let b = F4([q, p, special[(i + 2 * j + 1) % special.len()], q]);
                let c = F4([special[(i + 3) % special.len()], q.abs(), p.abs(), 1.0]);
                // SAFETY: as above.
                unsafe { check(a, b, c, bits) };
            }
        }
    }
}
