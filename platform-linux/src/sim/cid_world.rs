//! A simulated world of ranks and threads for context-ID allocation.
