pub mod solver_gen;
