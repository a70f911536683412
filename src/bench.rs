//! `mx2d bench` (placeholder while the GPU path lands).
