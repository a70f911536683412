//! The winit 0.30 window (to come).
