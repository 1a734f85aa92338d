//! Collective components and schedules.
