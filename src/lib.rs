//! mx2d
#![warn(missing_docs)]
pub mod bench;
pub mod body;
pub mod broadphase;
pub mod constraint;
pub mod field;
pub mod gpu;
pub mod integrator;
pub mod inverse;
pub mod load;
pub mod math;
pub mod output;
pub mod run;
pub mod scene;
pub mod shape;
pub mod solver;
pub mod surface;
pub mod world;
