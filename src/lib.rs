//! mx2d
#![warn(missing_docs)]
pub mod field;
pub mod math;
pub mod shape;
pub mod broadphase;
pub mod gpu;
pub mod bench;
