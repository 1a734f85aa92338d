//! The one place core reaches for synchronisation primitives.
//!
//! Under `--cfg loom` the primitives come from loom so its models explore every
//! interleaving of the thread-shared state; otherwise they are `spin` locks, which need
//! neither std nor an allocator.

#[cfg(not(loom))]
pub use spin::Mutex;

#[cfg(loom)]
pub use loom_mutex::Mutex;

#[cfg(loom)]
mod loom_mutex {
    /// A loom mutex with the `spin::Mutex` surface that core uses.
    #[derive(Debug)]
    pub struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        /// Wraps `value`.
        pub fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }

        /// Locks; loom panics on a deadlock, which fails the model.
        pub fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
            self.0.lock().expect("loom mutex poisoned")
        }
    }
}
