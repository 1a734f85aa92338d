//! What collective selection reuses from one communicator to the next: the control string,
//! read from the environment once per process (as MPI implementations read their parameters
//! at start-up), and the tables selected for communicators on one node, which depend on
//! nothing but the member's rank, the size and whether it was granted an area. A split
//! benchmark makes thousands of communicators of a few shapes, and each selection took
//! about 0.45 µs.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use commcore::coll::CollTable;

use super::error::CollectiveError;

/// The control string of this process (`COMMCORE_COLL`), read once with the settings.
pub(super) fn control_text() -> &'static str {
    &super::settings::current().coll
}

/// A communicator shape on one node, as selection sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Shape {
    pub rank: u32,
    pub size: u32,
    pub area: bool,
}

/// The selections of the shapes this process met last.
#[derive(Default)]
pub(super) struct SelectionCache {
    recent: Mutex<VecDeque<(Shape, CollTable<'static>)>>,
}

impl SelectionCache {
    /// Shapes kept: an 8-rank job has at most 72 (rank, size, area) shapes.
    const CAPACITY: usize = 128;

    /// The selection for `shape`, from the cache or from `select` (which is then kept).
    pub(super) fn get_or_select(
        &self,
        shape: Shape,
        select: impl FnOnce() -> Result<CollTable<'static>, CollectiveError>,
    ) -> Result<CollTable<'static>, CollectiveError> {
        let lookup = |recent: &VecDeque<(Shape, CollTable<'static>)>| {
            recent.iter().find(|(s, _)| *s == shape).map(|(_, selection)| selection.clone())
        };
        if let Some(selection) = lookup(&self.lock()) {
            return Ok(selection);
        }
        // Selected outside the lock: another thread may select the same shape meanwhile,
        // which costs time but never a wrong table.
        let selection = select()?;
        let mut recent = self.lock();
        if lookup(&recent).is_none() {
            if recent.len() == Self::CAPACITY {
                recent.pop_front();
            }
            recent.push_back((shape, selection.clone()));
        }
        Ok(selection)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Shape, CollTable<'static>)>> {
        self.recent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use commcore::coll::component::BUILTIN;
    use commcore::coll::{CollOp, CommInfo, Component, Control};

    use super::*;

    /// A selection for `size` ranks (its size tells a test which one came back).
    fn selection(size: u32) -> Result<CollTable<'static>, CollectiveError> {
        let components: [&dyn Component; 4] = [BUILTIN[0], BUILTIN[1], BUILTIN[2], BUILTIN[3]];
        let control = Control::parse("", &[]).map_err(|_| CollectiveError::BadControl)?;
        CollTable::select(&CommInfo::intra(0, size), &components, &control)
            .map_err(CollectiveError::Coll)
    }

    #[test]
    fn a_shape_is_selected_once_and_kept_until_newer_ones_push_it_out() {
        let cache = SelectionCache::default();
        let shape = |size| Shape { rank: 0, size, area: false };
        let selections = std::cell::Cell::new(0);
        let get = |size| {
            cache
                .get_or_select(shape(size), || {
                    selections.set(selections.get() + 1);
                    selection(size)
                })
                .map(|t| t.size())
        };
        assert_eq!(get(4).ok(), Some(4));
        assert_eq!(get(4).ok(), Some(4));
        assert_eq!(selections.get(), 1);
        for size in 5..5 + SelectionCache::CAPACITY as u32 {
            assert_eq!(get(size).ok(), Some(size));
        }
        assert_eq!(selections.get(), 1 + SelectionCache::CAPACITY);
        // Size 4 went out first; the newest stay.
        assert_eq!(get(4).ok(), Some(4));
        let newest = 4 + SelectionCache::CAPACITY as u32;
        assert_eq!(get(newest).ok(), Some(newest));
        assert_eq!(selections.get(), 2 + SelectionCache::CAPACITY);
    }

    #[test]
    fn a_failed_selection_is_an_error_and_is_not_kept() {
        let cache = SelectionCache::default();
        let shape = Shape { rank: 0, size: 2, area: true };
        let failed = cache.get_or_select(shape, || Err(CollectiveError::BadControl));
        assert!(matches!(failed, Err(CollectiveError::BadControl)));
        let table = cache.get_or_select(shape, || selection(2));
        assert!(table.is_ok_and(|t| t.provider(CollOp::Barrier).is_some()));
    }
}
