//! # commcore-tests
//!
//! Layer: **tests**. Reference models that the integration tests in `tests/` compare
//! commcore against, composed by hand in the plainest way.

pub mod cpus;
pub mod ended;
pub mod jobs;
pub mod leftovers;
pub mod reference;
pub mod scenario;
