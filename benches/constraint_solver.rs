//! Constraint solver benchmarks: block-sparse Gauss (this crate) against faer's
//! sparse Cholesky (AMD ordering, symbolic analysis reused) and a dense LDLᵀ.
//!
//! Systems: chains (body 0 pinned, revolute joints [I₂ | −r⊥] with random anchors),
//! random trees, and a 100 × 100 grid of bodies (revolute joints along x, 1-row
//! pin-in-slot joints along y: full rank, many loops), plus the all-revolute grid
//! (heavily redundant: exercises the regularised path). The grids run on the
//! supernodal kernel (chosen by the analysis), chains and trees on the block one.
//!
//! Run: `cargo bench --bench constraint_solver -- --warm-up-time 1 --measurement-time 3`
//!
//! On a loaded machine criterion's wall clock is useless; with `MX2D_SOLVER_CPU=N` the
//! bench instead prints the CPU time of its thread (`/proc/thread-self/schedstat`), mean
//! of N calls, of the two grids' full step (alternating masses, as `mx2d_full`), factor
//! and solve, and with `MX2D_SOLVER_DUMP=DIR` writes their λ (the bench's right-hand
//! side, and a consistent one A·y) to DIR as little-endian f64, for comparisons between
//! builds: `cargo bench --bench constraint_solver --no-run`, then run the binary.

#[path = "../tests/common/solver_gen.rs"]
mod solver_gen;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, Mat, Par, Side};
use mx2d::solver::{
    BlockLdl, BlockSparseSymmetric, ConstraintSolver, DenseLdl, SolveReport, SolverSettings, SparseJacobian,
    dense_matrix,
};
use solver_gen::*;
use std::hint::black_box;

struct Case {
    name: String,
    jac: SparseJacobian,
    inv_mass: Vec<[f64; 3]>,
    rhs: Vec<f64>,
}

fn case(name: &str, n_bodies: usize, build: impl FnOnce(&mut Rng, &mut SparseJacobian)) -> Case {
    let mut rng = Rng(42);
    let mut jac = SparseJacobian::new();
    build(&mut rng, &mut jac);
    let inv_mass = inv_masses(&mut rng, n_bodies);
    let rhs = (0..jac.n_rows()).map(|_| rng.range(-1.0, 1.0)).collect();
    Case { name: name.to_string(), jac, inv_mass, rhs }
}

/// Lower triangle of A as a faer matrix (scalar entries, compact rows).
fn to_faer(a: &BlockSparseSymmetric) -> SparseColMat<usize, f64> {
    let mut t = Vec::new();
    for c in 0..a.n_blocks() {
        let id = mx2d::solver::ConstraintId(c as u32);
        let (o, k) = (a.row_offset(id), a.rows(id));
        let d = a.diagonal_block(id);
        for r in 0..k {
            for s in 0..=r {
                t.push(Triplet::new(o + r, o + s, d[3 * r + s]));
            }
        }
    }
    for (i, j, b) in a.off_diagonal_blocks() {
        let (oi, ki, oj, kj) = (a.row_offset(i), a.rows(i), a.row_offset(j), a.rows(j));
        for r in 0..ki {
            for s in 0..kj {
                t.push(Triplet::new(oi + r, oj + s, b[3 * r + s]));
            }
        }
    }
    SparseColMat::try_new_from_triplets(a.n_rows(), a.n_rows(), &t).expect("valid triplets")
}

struct FaerChol {
    a: SparseColMat<usize, f64>,
    sym: SymbolicCholesky<usize>,
    l: Vec<f64>,
    fmem: MemBuffer,
    smem: MemBuffer,
    x: Mat<f64>,
}

impl FaerChol {
    fn new(a: SparseColMat<usize, f64>) -> Self {
        let sym = factorize_symbolic_cholesky(
            a.symbolic(),
            Side::Lower,
            SymmetricOrdering::Amd,
            CholeskySymbolicParams::default(),
        )
        .expect("symbolic");
        let l = vec![0.0; sym.len_val()];
        let fmem = MemBuffer::new(sym.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()));
        let smem = MemBuffer::new(sym.solve_in_place_scratch::<f64>(1, Par::Seq));
        let x = Mat::zeros(a.nrows(), 1);
        Self { a, sym, l, fmem, smem, x }
    }

    /// Numeric factorisation + one solve (symbolic reused).
    fn factor_solve(&mut self, rhs: &[f64]) {
        let llt = self
            .sym
            .factorize_numeric_llt::<f64>(
                &mut self.l,
                self.a.as_ref(),
                Side::Lower,
                LltRegularization::default(),
                Par::Seq,
                MemStack::new(&mut self.fmem),
                Default::default(),
            )
            .expect("SPD");
        for (i, v) in rhs.iter().enumerate() {
            self.x[(i, 0)] = *v;
        }
        llt.solve_in_place_with_conj(Conj::No, self.x.as_mut(), Par::Seq, MemStack::new(&mut self.smem));
    }
}

/// The block-sparse full step with the analysis reused (`mx2d_full`, and the
/// `MX2D_SOLVER_CPU` mode's "full"). `ConstraintSolver` keeps the factors of
/// a system it sees twice in a row, so the calls alternate between two mass
/// sets (values differ, pattern and cost do not) to measure a real assembly
/// + factorisation every time.
struct FullStep {
    solver: ConstraintSolver,
    inv_mass_2: Vec<[f64; 3]>,
    flip: bool,
}

impl FullStep {
    /// A solver that has seen `k` once (its analysis done).
    fn new(k: &Case, lam: &mut [f64]) -> Self {
        let mut solver = ConstraintSolver::new();
        solver.solve(&k.jac, &k.inv_mass, None, &k.rhs, lam).expect("solve");
        let inv_mass_2 = k.inv_mass.iter().map(|w| w.map(|x| x * 1.25)).collect();
        FullStep { solver, inv_mass_2, flip: false }
    }

    /// One full step on the other mass set than the last call's.
    fn call(&mut self, k: &Case, lam: &mut [f64]) -> SolveReport {
        self.flip = !self.flip;
        let w = if self.flip { &self.inv_mass_2 } else { &k.inv_mass };
        self.solver.solve(&k.jac, w, None, black_box(&k.rhs), lam).expect("solve")
    }
}

fn bench_case(c: &mut Criterion, k: &Case, dense: bool, faer: bool) {
    let mut g = c.benchmark_group(&k.name);
    g.sample_size(20);
    let st = SolverSettings::default();
    let m = k.jac.n_rows();
    let mut lam = vec![0.0; m];
    let mut full = FullStep::new(k, &mut lam);
    g.bench_function(BenchmarkId::new("mx2d_full", m), |b| b.iter(|| full.call(k, &mut lam)));
    // components
    let mut a = BlockSparseSymmetric::new();
    a.assemble(&k.jac, &k.inv_mass, None).expect("assemble");
    g.bench_function(BenchmarkId::new("mx2d_assemble", m), |b| {
        b.iter(|| a.assemble(&k.jac, black_box(&k.inv_mass), None).expect("assemble"))
    });
    let mut ldl = BlockLdl::new();
    g.bench_function(BenchmarkId::new("mx2d_analyze", m), |b| b.iter(|| ldl.analyze(black_box(&a))));
    ldl.factor(&a, &st).expect("factor");
    g.bench_function(BenchmarkId::new("mx2d_factor", m), |b| {
        b.iter(|| ldl.factor(black_box(&a), &st).expect("factor"))
    });
    g.bench_function(BenchmarkId::new("mx2d_solve", m), |b| {
        b.iter(|| ldl.solve(&a, &st, black_box(&k.rhs), &mut lam).expect("solve"))
    });
    if faer {
        let fa = to_faer(&a);
        g.bench_function(BenchmarkId::new("faer_symbolic_amd", m), |b| {
            b.iter(|| {
                factorize_symbolic_cholesky(
                    black_box(fa.symbolic()),
                    Side::Lower,
                    SymmetricOrdering::Amd,
                    CholeskySymbolicParams::default(),
                )
                .expect("symbolic")
            })
        });
        let mut f = FaerChol::new(fa);
        g.bench_function(BenchmarkId::new("faer_factor_solve", m), |b| b.iter(|| f.factor_solve(black_box(&k.rhs))));
        g.bench_function(BenchmarkId::new("mx2d_factor_solve", m), |b| {
            b.iter(|| {
                ldl.factor(&a, &st).expect("factor");
                ldl.solve(&a, &st, black_box(&k.rhs), &mut lam).expect("solve")
            })
        });
    }
    if dense {
        g.sample_size(10);
        g.bench_function(BenchmarkId::new("dense_assemble_factor_solve", m), |b| {
            b.iter(|| {
                let ad = dense_matrix(&k.jac, &k.inv_mass, None).expect("dense");
                let d = DenseLdl::factor(&ad, m, &st).expect("factor");
                d.solve(black_box(&k.rhs), &st).expect("solve")
            })
        });
    }
    g.finish();
}

/// CPU time of the calling thread (s), from `/proc/thread-self/schedstat`.
fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()))
        .map_or(0.0, |ns| ns * 1e-9)
}

/// Mean thread CPU time of `calls` calls of `f` (ms).
fn cpu_ms(calls: usize, mut f: impl FnMut()) -> f64 {
    let t0 = thread_cpu_seconds();
    for _ in 0..calls {
        f();
    }
    (thread_cpu_seconds() - t0) * 1e3 / calls as f64
}

/// The `MX2D_SOLVER_CPU` mode (module doc): thread CPU times and, with
/// `MX2D_SOLVER_DUMP`, the multipliers.
fn cpu_probe(calls: usize) {
    let dump = std::env::var("MX2D_SOLVER_DUMP").ok();
    let st = SolverSettings::default();
    for (name, all_revolute) in [("grid_100x100", false), ("grid_100x100_all_revolute", true)] {
        let k = case(name, 10_000, |r, j| grid(r, 100, 100, j, all_revolute));
        let m = k.jac.n_rows();
        let mut lam = vec![0.0; m];
        let mut step = FullStep::new(&k, &mut lam);
        let full = cpu_ms(calls, || {
            step.call(&k, &mut lam);
        });
        let mut a = BlockSparseSymmetric::new();
        a.assemble(&k.jac, &k.inv_mass, None).expect("assemble");
        let mut ldl = BlockLdl::new();
        let rep = ldl.factor(&a, &st).expect("factor");
        let factor = cpu_ms(calls, || {
            ldl.factor(black_box(&a), &st).expect("factor");
        });
        let mut srep = None;
        let solve = cpu_ms(calls, || srep = Some(ldl.solve(&a, &st, black_box(&k.rhs), &mut lam).expect("solve")));
        let srep = srep.expect("solved");
        println!(
            "{name}: rows {m}, dependent constraints {}, full {full:.2} ms, factor {factor:.2} ms, solve {solve:.2} ms \
             (refinement steps {}, residual {:.2e})",
            rep.rank_deficient.len(),
            srep.refine_steps,
            srep.relative_residual
        );
        // one numeric pass with nothing dropped (a negative tolerance: no pivot is
        // small and the blend weight is 0) and one triangular solve pair on it
        let plain = SolverSettings { pivot_tolerance: -1.0, ..SolverSettings::default() };
        ldl.factor(&a, &plain).expect("factor");
        let pass = cpu_ms(calls, || {
            ldl.factor(black_box(&a), &plain).expect("factor");
        });
        let pair = cpu_ms(calls, || {
            ldl.solve(&a, &plain, black_box(&k.rhs), &mut lam).expect("solve");
        });
        println!(
            "  one pass without drops {pass:.2} ms, one solve pair {pair:.2} ms, L entries {}",
            ldl.supernodal_entries()
        );
        // a consistent right-hand side, b = A y (what a mechanism's compatible
        // constraints give)
        let y: Vec<f64> = (0..m).map(|i| ((i * 7919) % 1000) as f64 / 500.0 - 1.0).collect();
        let mut b_cons = vec![0.0; m];
        a.mul(&y, &mut b_cons).expect("A y");
        ldl.factor(&a, &st).expect("factor");
        let mut crep = None;
        let solve_cons =
            cpu_ms(calls, || crep = Some(ldl.solve(&a, &st, black_box(&b_cons), &mut lam).expect("solve")));
        let crep = crep.expect("solved");
        println!(
            "  consistent b: solve {solve_cons:.2} ms (refinement steps {}, residual {:.2e})",
            crep.refine_steps, crep.relative_residual
        );
        if let Some(dir) = &dump {
            // the bench's b, then the consistent one
            for (tag, b) in [("b", &k.rhs), ("consistent", &b_cons)] {
                ldl.factor(&a, &st).expect("factor");
                ldl.solve(&a, &st, b, &mut lam).expect("solve");
                let bytes: Vec<u8> = lam.iter().flat_map(|v| v.to_le_bytes()).collect();
                std::fs::write(format!("{dir}/{name}_{tag}.f64"), bytes).expect("write λ");
            }
        }
    }
}

fn benches(c: &mut Criterion) {
    if let Some(calls) = std::env::var("MX2D_SOLVER_CPU").ok().and_then(|v| v.parse::<usize>().ok()) {
        cpu_probe(calls.max(1));
        return;
    }
    for &n in &[1_000usize, 10_000, 100_000] {
        let k = case(&format!("chain_{n}"), n, |r, j| chain(r, n, j));
        bench_case(c, &k, false, true);
    }
    let k = case("chain_500", 500, |r, j| chain(r, 500, j));
    bench_case(c, &k, true, false);
    let k = case("chain_1000_dense", 1000, |r, j| chain(r, 1000, j));
    bench_case(c, &k, true, false);
    for &n in &[10_000usize, 100_000] {
        let k = case(&format!("tree_{n}"), n, |r, j| tree(r, n, j));
        bench_case(c, &k, false, true);
    }
    let k = case("grid_100x100", 10_000, |r, j| grid(r, 100, 100, j, false));
    bench_case(c, &k, false, true);
    // heavily redundant: faer's LLᵀ would fail (singular), so no comparison
    let k = case("grid_100x100_all_revolute", 10_000, |r, j| grid(r, 100, 100, j, true));
    bench_case(c, &k, false, false);
}

criterion_group!(solver_benches, benches);
criterion_main!(solver_benches);
