//! Naive reference models.
