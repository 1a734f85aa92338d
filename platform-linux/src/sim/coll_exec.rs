//! A deterministic in-memory executor of collective schedules.
