//! Emptied byte buffers kept for reuse, so that small messages cost no allocation.

/// Spare buffers kept for reuse, at most this many of at most this many bytes each.
const SPARE_BUFFERS: usize = 256;
const SPARE_BYTES: usize = 64 * 1024;

/// A bounded stack of spare buffers.
#[derive(Default)]
pub(super) struct BufferPool {
    spare: Vec<Vec<u8>>,
}

impl BufferPool {
    /// An empty buffer, reused when one is spare.
    pub(super) fn take(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// Keeps `buffer` for reuse unless it is large or enough are kept already.
    #[inline]
    pub(super) fn recycle(&mut self, mut buffer: Vec<u8>) {
        if buffer.capacity() != 0
            && buffer.capacity() <= SPARE_BYTES
            && self.spare.len() < SPARE_BUFFERS
        {
            buffer.clear();
            self.spare.push(buffer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_empty_and_the_pool_stays_bounded() {
        let mut pool = BufferPool::default();
        let mut buffer = pool.take();
        buffer.extend_from_slice(b"payload");
        let address = buffer.as_ptr();
        pool.recycle(buffer);
        let again = pool.take();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), address, "the same allocation is reused");
        pool.recycle(vec![0; SPARE_BYTES + 1]);
        pool.recycle(Vec::new());
        assert!(pool.spare.is_empty(), "large and unallocated buffers are not kept");
        for _ in 0..SPARE_BUFFERS + 10 {
            pool.recycle(vec![1; 8]);
        }
        assert_eq!(pool.spare.len(), SPARE_BUFFERS);
    }
}
