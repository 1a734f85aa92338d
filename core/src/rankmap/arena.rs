//! The caller-provided arena that lut and mlut tables live in, refcounted.

use core::sync::atomic::AtomicU32;

use super::RankMapError;

/// One table: a run of words and the number of rank maps using it.
#[derive(Clone, Copy, Debug)]
struct Block {
    start: usize,
    len: usize,
    users: u32,
}

/// Storage for lookup tables: words the caller provides (`&'a [AtomicU32]`, so a table can
/// be shared by rank maps read from many threads; a relaxed load is a plain load), carved
/// into at most `TABLES` tables, first fit.
///
/// Every table counts its users: the rank map that created it and every view or duplicate
/// made from it. [`RankMap::free`](super::RankMap::free) by the last user returns the words.
/// A full arena is an `Err`, never a panic.
#[derive(Debug)]
pub struct TableArena<'a, const TABLES: usize> {
    words: &'a [AtomicU32],
    /// Sorted by `start`, never overlapping.
    blocks: heapless::Vec<Block, TABLES>,
}

impl<'a, const TABLES: usize> TableArena<'a, TABLES> {
    /// An arena over `words`, all free.
    pub fn new(words: &'a [AtomicU32]) -> Self {
        Self { words, blocks: heapless::Vec::new() }
    }

    /// Bytes the arena holds in all.
    pub fn capacity_bytes(&self) -> usize {
        self.words.len() * 4
    }

    /// Bytes held by live tables.
    pub fn used_bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.len * 4).sum()
    }

    /// Number of live tables.
    pub fn tables(&self) -> usize {
        self.blocks.len()
    }

    /// Users of the table that `table` points into, if it is live here.
    pub fn users(&self, table: &[AtomicU32]) -> Option<u32> {
        self.find(table).map(|i| self.blocks[i].users)
    }

    /// A new table of `len` words with one user; its contents are unspecified.
    pub(crate) fn allocate(&mut self, len: usize) -> Result<&'a [AtomicU32], RankMapError> {
        if self.blocks.is_full() {
            return Err(RankMapError::ArenaTablesFull);
        }
        let mut prev_end = 0;
        let mut largest_free = 0;
        let mut slot = None;
        for (i, block) in self
            .blocks
            .iter()
            .chain([&Block { start: self.words.len(), len: 0, users: 0 }])
            .enumerate()
        {
            let gap = block.start - prev_end;
            if gap >= len {
                slot = Some((i, prev_end));
                break;
            }
            largest_free = largest_free.max(gap);
            prev_end = block.start + block.len;
        }
        let Some((index, start)) = slot else {
            return Err(RankMapError::ArenaFull { words: len, largest_free });
        };
        let block = Block { start, len, users: 1 };
        // Cannot fail: fullness was checked above.
        self.blocks.insert(index, block).map_err(|_| RankMapError::ArenaTablesFull)?;
        Ok(&self.words[start..start + len])
    }

    /// Adds a user to the table `table` points into (a view or a duplicate).
    pub(crate) fn retain(&mut self, table: &[AtomicU32]) -> Result<(), RankMapError> {
        let i = self.find(table).ok_or(RankMapError::ForeignTable)?;
        let users = &mut self.blocks[i].users;
        *users = users.checked_add(1).ok_or(RankMapError::ArenaTablesFull)?;
        Ok(())
    }

    /// Drops a user of the table `table` points into; the last one returns its words.
    /// Returns whether the table was freed.
    pub(crate) fn release(&mut self, table: &[AtomicU32]) -> Result<bool, RankMapError> {
        let i = self.find(table).ok_or(RankMapError::ForeignTable)?;
        self.blocks[i].users -= 1;
        if self.blocks[i].users == 0 {
            self.blocks.remove(i);
            return Ok(true);
        }
        Ok(false)
    }

    /// The block holding the first word of `table` (tables are never empty).
    fn find(&self, table: &[AtomicU32]) -> Option<usize> {
        let base = self.words.as_ptr() as usize;
        let at = (table.as_ptr() as usize).checked_sub(base)? / core::mem::size_of::<AtomicU32>();
        if table.is_empty() || at >= self.words.len() {
            return None;
        }
        let i = self.blocks.partition_point(|b| b.start <= at).checked_sub(1)?;
        let block = self.blocks[i];
        (at < block.start + block.len).then_some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(n: usize) -> std::vec::Vec<AtomicU32> {
        (0..n).map(|_| AtomicU32::new(0)).collect()
    }

    #[test]
    fn allocates_first_fit_and_frees_on_last_user() {
        let storage = words(10);
        let mut arena: TableArena<'_, 4> = TableArena::new(&storage);
        let a = arena.allocate(4).unwrap();
        let b = arena.allocate(4).unwrap();
        assert_eq!(arena.used_bytes(), 32);
        assert_eq!(
            arena.allocate(3).err(),
            Some(RankMapError::ArenaFull { words: 3, largest_free: 2 })
        );
        arena.retain(&a[1..]).unwrap();
        assert_eq!(arena.users(a), Some(2));
        assert_eq!(arena.release(a), Ok(false));
        assert_eq!(arena.release(&a[3..]), Ok(true));
        assert_eq!(arena.users(a), None);
        let c = arena.allocate(3).unwrap();
        assert_eq!(c.as_ptr(), a.as_ptr(), "first fit reuses the freed run");
        assert_eq!(arena.release(b), Ok(true));
        assert_eq!(arena.release(b), Err(RankMapError::ForeignTable));
        assert_eq!(arena.release(c), Ok(true));
        assert_eq!((arena.used_bytes(), arena.tables()), (0, 0));
    }

    #[test]
    fn foreign_tables_and_table_count_limits_are_errors() {
        let storage = words(8);
        let other = words(2);
        let mut arena: TableArena<'_, 2> = TableArena::new(&storage);
        assert_eq!(arena.retain(&other), Err(RankMapError::ForeignTable));
        arena.allocate(1).unwrap();
        arena.allocate(1).unwrap();
        assert_eq!(arena.allocate(1).err(), Some(RankMapError::ArenaTablesFull));
    }
}
