//! Deterministic simulated worlds, shared by the tests and the benchmarks.
