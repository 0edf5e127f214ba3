//! Buffers a writer reuses from message to message (per thread), instead of allocating
//! them for every message.

use std::cell::RefCell;
use std::thread::LocalKey;

/// A writer's reusable buffers.
pub(crate) trait Scratch: Default + 'static {
    /// Empties every buffer (keeping its capacity).
    fn clear(&mut self);
}

/// ``f`` with this thread's buffers in ``key``, cleared (a nested call gets fresh ones).
pub(crate) fn with<S: Scratch, T>(key: &'static LocalKey<RefCell<S>>, f: impl FnOnce(&mut S) -> T) -> T {
    key.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            scratch.clear();
            f(&mut scratch)
        }
        Err(_) => f(&mut S::default()),
    })
}
