//! Address vectors: one 12-byte entry per process of a process group.
