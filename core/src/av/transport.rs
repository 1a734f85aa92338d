//! Per-transport state, kept once per transport instead of once per process.

use core::fmt;

use super::TransportId;

/// The table is full: it holds its capacity of transports already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportTableFull;

impl fmt::Display for TransportTableFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("transport table full")
    }
}

/// The transports a platform registers, at most `N`, each with its state `T` (eager and
/// rendezvous limits, function tables, queues). An entry names its transport with the
/// selector bits of [`Ave`](super::Ave); this table is where the selector leads.
#[derive(Debug)]
pub struct TransportTable<T, const N: usize> {
    transports: heapless::Vec<T, N>,
}

impl<T, const N: usize> TransportTable<T, N> {
    /// An empty table.
    pub const fn new() -> Self {
        Self { transports: heapless::Vec::new() }
    }

    /// Registers a transport; `Err` hands `transport` back when the table is full or when its
    /// id would not fit in an entry's selector bits.
    pub fn register(&mut self, transport: T) -> Result<TransportId, (T, TransportTableFull)> {
        let id = self.transports.len();
        if id >= 1 << super::Ave::TRANSPORT_BITS {
            return Err((transport, TransportTableFull));
        }
        self.transports.push(transport).map_err(|t| (t, TransportTableFull))?;
        // Fits: checked against TRANSPORT_BITS (7) above.
        Ok(TransportId(id as u8))
    }

    /// The state of transport `id`.
    #[inline]
    pub fn get(&self, id: TransportId) -> Option<&T> {
        self.transports.get(id.0 as usize)
    }

    /// Number of registered transports.
    pub fn len(&self) -> usize {
        self.transports.len()
    }

    /// Whether no transport is registered.
    pub fn is_empty(&self) -> bool {
        self.transports.is_empty()
    }

    /// Selector bits the registered transports need: 0 for one, 1 for two, 2 for up to four.
    pub fn selector_bits(&self) -> u32 {
        usize::BITS - self.transports.len().saturating_sub(1).leading_zeros()
    }
}

impl<T, const N: usize> Default for TransportTable<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Shm {
        eager_limit: usize,
    }

    #[test]
    fn registers_until_full_and_counts_selector_bits() {
        let mut table: TransportTable<Shm, 2> = TransportTable::new();
        assert_eq!(table.selector_bits(), 0);
        assert_eq!(table.register(Shm { eager_limit: 64 }).unwrap(), TransportId(0));
        assert_eq!(table.selector_bits(), 0);
        assert_eq!(table.register(Shm { eager_limit: 8192 }).unwrap(), TransportId(1));
        assert_eq!(table.selector_bits(), 1);
        assert_eq!(table.get(TransportId(1)), Some(&Shm { eager_limit: 8192 }));
        assert_eq!(table.get(TransportId(2)), None);
        let (back, err) = table.register(Shm { eager_limit: 1 }).unwrap_err();
        assert_eq!((back.eager_limit, err), (1, TransportTableFull));
    }
}
